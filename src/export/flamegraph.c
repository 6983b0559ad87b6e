/* SPDX-License-Identifier: MIT */
/*
 * The SVG flame graph.  Each frame is a <g class="f"> holding a <title>
 * (the tooltip: name, weight and share, then file:line and module), a
 * <rect> and a <text>; its start, width (in units of the metric) and depth
 * are data attributes, from which the script in the file lays frames out
 * again when zooming.  Frames narrower than a tenth of a pixel at full
 * width are left out, as flamegraph.pl does.
 *
 * The graph is an icicle, the root on top, and as tall as its deepest
 * frame at least a pixel wide, not as its deepest stack: the frames
 * below that one (all narrower) are in the file, hidden, for zooming and
 * searching.  So the first screen shows the root and the widest frames
 * whatever the depth: a C++ compile's 2,450-px page of slivers became
 * the part that carries the time (doc/EXPORTS.md).
 */
#include "export/flamegraph.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "model/module.h"
#include "util/strbuf.h"

#define FRAME_H 16         /* pixels per level */
#define FONT_PX 12
#define CHAR_W 7.2         /* advance of a 12px monospace character */
#define XPAD 10
#define MIN_PX 0.1         /* narrower frames are not drawn */
#define SHOWN_PX 1.0       /* the graph is as deep as the deepest frame this wide */
#define FOOT_H 50          /* the details line and the legend below the frames */

/* ---- text ---- */

/* Appends @s to @b with XML's special characters escaped, made valid UTF-8. */
static void sb_xml(struct nw_strbuf *b, const char *s)
{
	char *c = nw_export_clean(s ? s : "", NULL);

	if (!c) {
		b->failed = true;
		return;
	}
	for (char *q = c, *run = c;; q++) {
		const char *esc;

		switch (*q) {
		case '&':
			esc = "&amp;";
			break;
		case '<':
			esc = "&lt;";
			break;
		case '>':
			esc = "&gt;";
			break;
		case '"':
			esc = "&quot;";
			break;
		case '\'':
			esc = "&apos;";
			break;
		case '\0':
			nw_sb_puts(b, run);
			free(c);
			return;
		default:
			continue;
		}
		if (q > run) {
			char keep = *q;

			/* The run before the special character, as it is. */
			*q = '\0';
			nw_sb_puts(b, run);
			*q = keep;
		}
		nw_sb_puts(b, esc);
		run = q + 1;
	}
}

/* Writes @s escaped (sb_xml) to @out. */
static int put_xml(FILE *out, const char *s)
{
	struct nw_strbuf b = { 0 };
	int ret;

	sb_xml(&b, s);
	ret = b.failed ? -ENOMEM : 0;
	if (!ret)
		fputs(nw_sb_str(&b), out);
	nw_sb_fini(&b);
	return ret;
}

/* The number of bytes of @s that hold its first @nchars characters (UTF-8). */
static size_t utf8_prefix(const char *s, size_t nchars)
{
	size_t i = 0;

	while (s[i] && nchars > 0) {
		i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		nchars--;
	}
	return i;
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Appends the label of a frame @px wide: the name, cut with ".." to fit, or nothing. */
static void sb_label(struct nw_strbuf *b, const char *name, const char *escaped, double px)
{
	double fit = (px - 6) / CHAR_W;
	size_t n = fit > 0 ? (size_t)fit : 0, len;
	char *cut;

	if (n < 3)
		return;
	if (utf8_chars(name) <= n) {
		nw_sb_puts(b, escaped);
		return;
	}
	len = utf8_prefix(name, n - 2);
	cut = malloc(len + 3);
	if (!cut) {
		b->failed = true;
		return;
	}
	memcpy(cut, name, len);
	memcpy(cut + len, "..", 3);
	sb_xml(b, cut);
	free(cut);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* ---- colours ---- */

struct rgb {
	int r, g, b;
};

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static double absd(double v)
{
	return v < 0 ? -v : v;
}

/* HSL (hue in degrees, saturation and lightness in [0, 1]) to RGB. */
static struct rgb hsl(double h, double s, double l)
{
	double c = (1 - absd(2 * l - 1)) * s, hp = h / 60;
	double x = c * (1 - absd(hp - 2 * (double)(int)(hp / 2) - 1)), m = l - c / 2;
	double r = 0, g = 0, b = 0;

	switch ((int)hp % 6) {
	case 0:
		r = c, g = x;
		break;
	case 1:
		r = x, g = c;
		break;
	case 2:
		g = c, b = x;
		break;
	case 3:
		g = x, b = c;
		break;
	case 4:
		r = x, b = c;
		break;
	default:
		r = c, b = x;
		break;
	}
	return (struct rgb){ (int)((r + m) * 255 + 0.5), (int)((g + m) * 255 + 0.5),
			     (int)((b + m) * 255 + 0.5) };
}

/*
 * The colour of a frame: a hue per module (from its file name, so the same
 * library has the same colour in every graph), lightness varied a little
 * per function so that neighbours stand apart.
 */
static struct rgb module_colour(const struct nw_func *f)
{
	uint32_t hm, hf;

	if (!f->module || !f->module[0])
		return (struct rgb){ 170, 170, 170 };
	hf = hash_str(f->name);
	/* The kernel in orange, as flamegraph.pl and perf's graphs show it. */
	if (!strcmp(f->module, NW_KERNEL_MODULE))
		return hsl(28, 0.9, 0.6 + ((double)(hf % 9) - 4) * 0.012);
	hm = hash_str(base_name(f->module));
	/*
	 * Light enough for black text to read on every hue.  Hues from yellow
	 * on round to magenta: the reds and oranges below 60 degrees, which a
	 * reader takes for the kernel's, are left to it.
	 */
	return hsl(60 + (double)(hm % 300), 0.55 + (double)(hm / 300 % 4) * 0.08,
		   0.68 + ((double)(hf % 9) - 4) * 0.012);
}

/* Grey for no change, to red (grew) or blue (shrank) as @t goes to +-1. */
static struct rgb diff_colour(double t)
{
	static const struct rgb grey = { 222, 222, 222 }, red = { 214, 39, 40 },
				blue = { 40, 90, 214 };
	const struct rgb *to = t >= 0 ? &red : &blue;
	double a = t < 0 ? -t : t;

	if (a > 1)
		a = 1;
	return (struct rgb){ (int)(grey.r + (to->r - grey.r) * a + 0.5),
			     (int)(grey.g + (to->g - grey.g) * a + 0.5),
			     (int)(grey.b + (to->b - grey.b) * a + 0.5) };
}

/* ---- layout ---- */

/*
 * What every drawn node of one frame writes alike, made once: a graph
 * draws a frame in many places, and cleaning and escaping its strings
 * each time was most of the writing.
 */
struct ftext {
	char *name;        /* escaped */
	char *where;       /* "\nfile:line module", escaped; "" when unknown */
	struct rgb c;
};

struct layout {
	const struct nw_frames *p;
	const struct nw_cct *t;
	uint32_t *order;   /* preorder */
	uint64_t *incl;    /* of the drawn metric */
	uint64_t *base;    /* of the base metric (differential), else NULL */
	uint64_t *start;   /* in metric units from the left */
	uint32_t *depth;
	uint32_t *kids;    /* scratch for sorting children */
	struct ftext *text; /* per frame of the table, made when first drawn */
	struct nw_strbuf line; /* the frame being written */
	unsigned metric;
	double scale;      /* pixels per unit */
	double maxd;       /* differential: the largest change of share drawn */
	uint64_t total, base_total;
	uint32_t shown;    /* depth of the deepest frame SHOWN_PX wide; deeper ones are hidden */
};

static void layout_fini(struct layout *l)
{
	free(l->order);
	free(l->incl);
	free(l->base);
	free(l->start);
	free(l->depth);
	free(l->kids);
	for (uint32_t i = 0; l->text && i < l->p->n; i++) {
		free(l->text[i].name);
		free(l->text[i].where);
	}
	free(l->text);
	nw_sb_fini(&l->line);
}

static const char *node_name(const struct layout *l, uint32_t node)
{
	return node == NW_CCT_ROOT ? "all" : l->p->v[l->t->nodes[node].ip].name;
}

static int cmp_kid(const void *a, const void *b, void *arg)
{
	const struct layout *l = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int r = strcmp(node_name(l, x), node_name(l, y));

	if (r)
		return r;
	return l->t->nodes[x].ip < l->t->nodes[y].ip ? -1 : l->t->nodes[x].ip > l->t->nodes[y].ip;
}

static int sum_incl(const struct nw_cct *t, const uint32_t *order, unsigned m, uint64_t **ret)
{
	uint64_t *v = malloc((size_t)t->n * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++)
		v[i] = nw_cct_metrics(t, i)[m];
	for (uint32_t k = t->n; k-- > 1;)
		v[t->nodes[order[k]].parent] += v[order[k]];
	*ret = v;
	return 0;
}

static bool drawn(const struct layout *l, uint32_t node)
{
	return node == NW_CCT_ROOT || (l->incl[node] && (double)l->incl[node] * l->scale >= MIN_PX);
}

static int layout_init(struct layout *l, const struct nw_frames *p, const struct nw_cct *t,
		       const struct nw_flamegraph_opts *o, double width)
{
	memset(l, 0, sizeof(*l));
	l->p = p;
	l->t = t;
	l->metric = o->metric;
	if (o->metric >= t->nmetrics || t->n == 0 ||
	    (o->base_metric >= 0 && (unsigned)o->base_metric >= t->nmetrics))
		return -EINVAL;
	for (uint32_t i = 1; i < t->n; i++)
		if (t->nodes[i].ip >= p->n)
			return -EINVAL;
	l->order = malloc((size_t)t->n * sizeof(*l->order));
	l->start = calloc(t->n, sizeof(*l->start));
	l->depth = calloc(t->n, sizeof(*l->depth));
	l->kids = malloc((size_t)t->n * sizeof(*l->kids));
	l->text = calloc(p->n ? p->n : 1, sizeof(*l->text));
	if (!l->order || !l->start || !l->depth || !l->kids || !l->text)
		return -ENOMEM;
	nw_cct_preorder(t, l->order);
	if (sum_incl(t, l->order, o->metric, &l->incl))
		return -ENOMEM;
	if (o->base_metric >= 0 && sum_incl(t, l->order, (unsigned)o->base_metric, &l->base))
		return -ENOMEM;
	l->total = l->incl[NW_CCT_ROOT];
	l->base_total = l->base ? l->base[NW_CCT_ROOT] : 0;
	l->scale = l->total ? width / (double)l->total : 0;
	/* Children left to right in name order, after their parent's start. */
	for (uint32_t k = 0; k < t->n; k++) {
		uint32_t node = l->order[k], n = 0;
		uint64_t x;

		if (!drawn(l, node))
			continue;
		if (l->depth[node] > l->shown &&
		    (node == NW_CCT_ROOT || (double)l->incl[node] * l->scale >= SHOWN_PX))
			l->shown = l->depth[node];
		for (uint32_t c = t->nodes[node].first_child; c != NW_CCT_NONE;
		     c = t->nodes[c].next_sibling)
			l->kids[n++] = c;
		qsort_r(l->kids, n, sizeof(*l->kids), cmp_kid, l);
		x = l->start[node];
		for (uint32_t j = 0; j < n; j++) {
			l->start[l->kids[j]] = x;
			l->depth[l->kids[j]] = l->depth[node] + 1;
			x += l->incl[l->kids[j]];
		}
	}
	return 0;
}

static double share(uint64_t v, uint64_t total)
{
	return total ? (double)v / (double)total : 0.0;
}

/* ---- output ---- */

static const char script[] =
	"\"use strict\";\n"
	"(function () {\n"
	"var svg = document.documentElement;\n"
	"var W = +svg.getAttribute(\"data-fw\"), X0 = XPAD_PX, CW = CHAR_PX;\n"
	"var total = +svg.getAttribute(\"data-total\");\n"
	"var TOP = +svg.getAttribute(\"data-top\"), FH = +svg.getAttribute(\"data-fh\");\n"
	"var FOOT = +svg.getAttribute(\"data-foot\");\n"
	"var foot = document.getElementById(\"foot\");\n"
	"var MATCH = \"rgb(230,0,230)\";\n"
	"var details = document.getElementById(\"details\");\n"
	"var matched = document.getElementById(\"matched\");\n"
	"var reset = document.getElementById(\"reset\");\n"
	"var search = document.getElementById(\"search\");\n"
	"var frames = [];\n"
	"Array.prototype.forEach.call(document.querySelectorAll(\"g.f\"), function (g) {\n"
	"  var r = g.querySelector(\"rect\"), tip = g.querySelector(\"title\").textContent;\n"
	"  var f = { g: g, r: r, t: g.querySelector(\"text\"), s: +g.getAttribute(\"data-s\"),\n"
	"            w: +g.getAttribute(\"data-w\"), d: +g.getAttribute(\"data-d\"),\n"
	"            name: tip.split(\"\\n\")[0], tip: tip, fill: r.getAttribute(\"fill\"),\n"
	"            px: +r.getAttribute(\"width\") };\n"
	"  g.nwFrame = f;\n"
	"  frames.push(f);\n"
	"});\n"
	"function label(f, px) {\n"
	"  var n = Math.floor((px - 6) / CW), c = Array.from(f.name);\n"
	"  if (n < 3) return \"\";\n"
	"  return c.length <= n ? f.name : c.slice(0, n - 2).join(\"\") + \"..\";\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  f.r.setAttribute(\"x\", x.toFixed(2));\n"
	"  f.r.setAttribute(\"width\", w.toFixed(2));\n"
	"  f.t.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"  f.t.textContent = label(f, w);\n"
	"  f.px = w;\n"
	"}\n"
	"/* As deep as the deepest frame shown at least a pixel wide (SHOWN_PX): those below it\n"
	"   are hidden, the foot comes after it. */\n"
	"function fit() {\n"
	"  var deep = 0, h, vb;\n"
	"  frames.forEach(function (f) {\n"
	"    if (f.g.style.display !== \"none\" && f.px >= 1 && f.d > deep) deep = f.d;\n"
	"  });\n"
	"  frames.forEach(function (f) { if (f.d > deep) f.g.style.display = \"none\"; });\n"
	"  h = TOP + (deep + 1) * FH;\n"
	"  foot.setAttribute(\"transform\", \"translate(0,\" + h + \")\");\n"
	"  vb = svg.getAttribute(\"viewBox\").split(\" \");\n"
	"  vb[3] = String(h + FOOT);\n"
	"  svg.setAttribute(\"viewBox\", vb.join(\" \"));\n"
	"  svg.setAttribute(\"height\", String(h + FOOT));\n"
	"}\n"
	"function zoom(z) {\n"
	"  frames.forEach(function (f) {\n"
	"    var ancestor = f.d < z.d && f.s <= z.s && f.s + f.w >= z.s + z.w;\n"
	"    var inside = f.d >= z.d && f.s >= z.s && f.s + f.w <= z.s + z.w && z.w > 0;\n"
	"    f.g.classList.toggle(\"anc\", ancestor);\n"
	"    f.g.style.display = ancestor || inside ? \"\" : \"none\";\n"
	"    if (ancestor) place(f, X0, W);\n"
	"    else if (inside) place(f, X0 + (f.s - z.s) / z.w * W, f.w / z.w * W);\n"
	"  });\n"
	"  fit();\n"
	"  reset.style.display = \"\";\n"
	"}\n"
	"function unzoom() {\n"
	"  frames.forEach(function (f) {\n"
	"    f.g.classList.remove(\"anc\");\n"
	"    f.g.style.display = \"\";\n"
	"    place(f, X0 + (total ? f.s / total * W : 0), total ? f.w / total * W : W);\n"
	"  });\n"
	"  fit();\n"
	"  reset.style.display = \"none\";\n"
	"}\n"
	"function highlight(q) {\n"
	"  var re = null, spans = [], sum = 0, end = -1;\n"
	"  if (q) {\n"
	"    try { re = new RegExp(q, \"i\"); }\n"
	"    catch (e) {\n"
	"      re = new RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g, \"\\\\$&\"), \"i\");\n"
	"    }\n"
	"  }\n"
	"  frames.forEach(function (f) {\n"
	"    var m = re !== null && re.test(f.name);\n"
	"    f.r.setAttribute(\"fill\", m ? MATCH : f.fill);\n"
	"    f.g.classList.toggle(\"hit\", m);\n"
	"    if (m) spans.push([f.s, f.s + f.w]);\n"
	"  });\n"
	"  /* Nested matches count once: the union of their spans. */\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[1] <= end) return;\n"
	"    sum += s[1] - Math.max(s[0], end);\n"
	"    end = s[1];\n"
	"  });\n"
	"  matched.textContent = re ? \"Matched: \" +\n"
	"    (total ? 100 * sum / total : 0).toFixed(2) + \"%\" : \"\";\n"
	"}\n"
	"document.documentElement.addEventListener(\"click\", function (e) {\n"
	"  var g = e.target.closest ? e.target.closest(\"g.f\") : null;\n"
	"  if (e.target === reset) unzoom();\n"
	"  else if (g) zoom(g.nwFrame);\n"
	"});\n"
	"document.documentElement.addEventListener(\"mouseover\", function (e) {\n"
	"  var g = e.target.closest ? e.target.closest(\"g.f\") : null;\n"
	"  if (g) details.textContent = g.nwFrame.tip.split(\"\\n\").slice(0, 2).join(\": \");\n"
	"});\n"
	"document.documentElement.addEventListener(\"mouseout\", function () {\n"
	"  details.textContent = \" \";\n"
	"});\n"
	"search.addEventListener(\"input\", function () { highlight(search.value); });\n"
	"document.addEventListener(\"keydown\", function (e) {\n"
	"  if (e.key === \"Escape\") { unzoom(); search.value = \"\"; highlight(\"\"); }\n"
	"  else if ((e.ctrlKey || e.metaKey) && e.key === \"f\") {\n"
	"    e.preventDefault();\n"
	"    search.focus();\n"
	"  }\n"
	"});\n"
	"window.nwFlame = { zoom: function (i) { zoom(frames[i]); }, unzoom: unzoom,\n"
	"                   search: function (q) { search.value = q; highlight(q); } };\n"
	"})();\n";

/* The script with the layout's numbers in place of its two placeholders. */
static int put_script(FILE *out)
{
	const char *s = script, *a = strstr(s, "XPAD_PX"), *b = strstr(s, "CHAR_PX");

	if (!a || !b || b < a)
		return -EINVAL;
	fwrite(s, 1, (size_t)(a - s), out);
	fprintf(out, "%d", XPAD);
	a += strlen("XPAD_PX");
	fwrite(a, 1, (size_t)(b - a), out);
	fprintf(out, "%.2f", CHAR_W);
	fputs(b + strlen("CHAR_PX"), out);
	return 0;
}

/* The text of frame @fi, made on its first use; NULL on ENOMEM. */
static const struct ftext *frame_text(struct layout *l, uint32_t fi)
{
	const struct nw_func *f = &l->p->v[fi];
	struct ftext *t = &l->text[fi];
	struct nw_strbuf b = { 0 };

	if (t->name)
		return t;
	sb_xml(&b, f->name);
	t->name = nw_sb_take(&b);
	if (f->file || f->module)
		nw_sb_putc(&b, '\n');
	if (f->file) {
		sb_xml(&b, base_name(f->file));
		if (f->line)
			nw_sb_printf(&b, ":%u", f->line);
		if (f->module)
			nw_sb_putc(&b, ' ');
	}
	if (f->module)
		sb_xml(&b, base_name(f->module));
	t->where = b.len ? nw_sb_take(&b) : strdup("");
	nw_sb_fini(&b);
	t->c = module_colour(f);
	if (!t->name || !t->where) {
		free(t->name);
		free(t->where);
		t->name = t->where = NULL;
		return NULL;
	}
	return t;
}

static int put_frame(FILE *out, struct layout *l, uint32_t node, double width, int top,
		     const struct nw_flamegraph_opts *o)
{
	const struct ftext *ft = NULL;
	const char *unit = o->unit ? o->unit : "samples";
	double x = XPAD + (double)l->start[node] * l->scale;
	double w = node == NW_CCT_ROOT || !l->total ? width : (double)l->incl[node] * l->scale;
	int y = top + (int)l->depth[node] * FRAME_H;
	double sh = share(l->incl[node], l->total);
	struct nw_strbuf *b = &l->line;
	struct rgb c = { 200, 200, 200 };
	char *q;

	if (node != NW_CCT_ROOT) {
		ft = frame_text(l, (uint32_t)l->t->nodes[node].ip);
		if (!ft)
			return -ENOMEM;
		c = ft->c;
	}
	if (l->base) {
		double d = sh - share(l->base[node], l->base_total);

		c = diff_colour(l->maxd > 0 ? d / l->maxd : 0);
	}
	nw_sb_reset(b);
	q = nw_sb_room(b, 160);
	if (!q)
		return -ENOMEM;
	q = stpcpy(q, "<g class=\"f\" data-s=\"");
	q = nw_put_u64(q, l->start[node]);
	q = stpcpy(q, "\" data-w=\"");
	q = nw_put_u64(q, l->incl[node]);
	q = stpcpy(q, "\" data-d=\"");
	q = nw_put_u64(q, l->depth[node]);
	/* Below the deepest frame a pixel wide: in the file, hidden until a zoom widens it. */
	q = stpcpy(q, l->depth[node] > l->shown ? "\" style=\"display:none\"><title>" : "\"><title>");
	nw_sb_end(b, q);
	nw_sb_puts(b, ft ? ft->name : "all");
	q = nw_sb_room(b, 64);
	if (!q)
		return -ENOMEM;
	*q++ = '\n';
	q = nw_put_u64(q, l->incl[node]);
	*q++ = ' ';
	nw_sb_end(b, q);
	nw_sb_puts(b, unit);
	q = nw_sb_room(b, 64);
	if (!q)
		return -ENOMEM;
	q = stpcpy(q, " (");
	q = nw_put_fixed2(q, 100 * sh);
	*q++ = '%';
	nw_sb_end(b, q);
	if (l->base) {
		double bs = share(l->base[node], l->base_total);

		nw_sb_printf(b, "; base %.2f%%, change %+.2f%%", 100 * bs, 100 * (sh - bs));
	}
	nw_sb_putc(b, ')');
	if (ft)
		nw_sb_puts(b, ft->where);
	q = nw_sb_room(b, 256);
	if (!q)
		return -ENOMEM;
	q = stpcpy(q, "</title><rect x=\"");
	q = nw_put_fixed2(q, x);
	q = stpcpy(q, "\" y=\"");
	q = nw_put_u64(q, (uint64_t)y);
	q = stpcpy(q, "\" width=\"");
	q = nw_put_fixed2(q, w);
	q = stpcpy(q, "\" height=\"");
	q = nw_put_u64(q, FRAME_H - 1);
	q = stpcpy(q, "\" fill=\"rgb(");
	q = nw_put_u64(q, (uint64_t)c.r);
	*q++ = ',';
	q = nw_put_u64(q, (uint64_t)c.g);
	*q++ = ',';
	q = nw_put_u64(q, (uint64_t)c.b);
	q = stpcpy(q, ")\" rx=\"2\"/><text x=\"");
	q = nw_put_fixed2(q, x + 3);
	q = stpcpy(q, "\" y=\"");
	q = nw_put_u64(q, (uint64_t)(y + FRAME_H - 4));
	q = stpcpy(q, "\">");
	nw_sb_end(b, q);
	sb_label(b, node_name(l, node), ft ? ft->name : "all", w);
	nw_sb_puts(b, "</text></g>\n");
	if (b->failed)
		return -ENOMEM;
	fwrite(b->s, 1, b->len, out);
	return 0;
}

/* The largest change of share over the drawn frames, for scaling colours. */
static double max_change(const struct layout *l)
{
	double m = 0;

	for (uint32_t i = 1; l->base && i < l->t->n; i++) {
		double d;

		if (!drawn(l, i))
			continue;
		d = share(l->incl[i], l->total) - share(l->base[i], l->base_total);
		if (d < 0)
			d = -d;
		if (d > m)
			m = d;
	}
	return m;
}

struct legend_mod {
	const char *module;
	uint64_t weight;
	struct rgb c;
};

static int cmp_legend(const void *a, const void *b)
{
	const struct legend_mod *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return strcmp(x->module, y->module);
}

/* One swatch per module, heaviest (by self weight) first, as many as fit. */
static int put_legend(FILE *out, const struct layout *l, int y, double width)
{
	struct legend_mod *v = calloc(l->t->n, sizeof(*v));
	uint32_t n = 0;
	double x = XPAD;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 1; i < l->t->n; i++) {
		const struct nw_func *f = &l->p->v[l->t->nodes[i].ip];
		uint64_t self = nw_cct_metrics(l->t, i)[l->metric];
		uint32_t j;

		if (!f->module || !f->module[0])
			continue;
		for (j = 0; j < n && strcmp(base_name(v[j].module), base_name(f->module)); j++)
			;
		if (j == n)
			v[n++] = (struct legend_mod){
				.module = f->module,
				.c = module_colour(
					&(struct nw_func){ .name = "", .module = f->module }),
			};
		v[j].weight += self;
	}
	qsort(v, n, sizeof(*v), cmp_legend);
	fprintf(out, "<g id=\"legend\">");
	for (uint32_t j = 0; j < n; j++) {
		const char *name = base_name(v[j].module);
		double w = 16 + CHAR_W * (double)utf8_chars(name) + 14;

		if (x + w > XPAD + width)
			break;
		fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"11\" height=\"11\" "
			     "fill=\"rgb(%d,%d,%d)\"/><text x=\"%.1f\" y=\"%d\">",
			x, y - 10, v[j].c.r, v[j].c.g, v[j].c.b, x + 15, y);
		ret = put_xml(out, name);
		if (ret)
			break;
		fputs("</text>", out);
		x += w;
	}
	fputs("</g>\n", out);
	free(v);
	return ret;
}

/* The width frames are drawn in, pixels. */
static double frames_width(const struct nw_flamegraph_opts *o)
{
	double width = (double)((o->width ? o->width : 1200) - 2 * XPAD);

	return width < 100 ? 100 : width;
}

double nw_flamegraph_min_share(const struct nw_flamegraph_opts *o)
{
	/* Half of it: rounding never leaves out a frame that is drawn. */
	return MIN_PX / frames_width(o) / 2;
}

int nw_flamegraph_write(FILE *out, const struct nw_stacks *s, const struct nw_flamegraph_opts *o)
{
	const struct nw_cct *tree = s->tree;
	double width = frames_width(o);
	int top = o->subtitle ? 66 : 50, frames_h, height, total_w, ret;
	struct layout l;

	ret = layout_init(&l, &s->frames, tree, o, width);
	if (ret)
		goto out;
	frames_h = (int)(l.shown + 1) * FRAME_H;
	height = top + frames_h + FOOT_H;
	total_w = (int)width + 2 * XPAD;
	l.maxd = max_change(&l);

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		     "height=\"%d\" viewBox=\"0 0 %d %d\" data-fw=\"%.2f\" data-total=\"%llu\" "
		     "data-top=\"%d\" data-fh=\"%d\" data-foot=\"%d\">\n",
		total_w, height, total_w, height, width, (unsigned long long)l.total, top, FRAME_H,
		FOOT_H);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n"
		     "text { font-family: monospace; font-size: %dpx; fill: #000; }\n"
		     "#title { font-size: 17px; text-anchor: middle; }\n"
		     "#subtitle { fill: #555; text-anchor: middle; }\n"
		     "#matched { text-anchor: end; }\n"
		     "g.f text { pointer-events: none; }\n"
		     "g.f rect { cursor: pointer; }\n"
		     "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		     "g.anc rect { opacity: 0.55; }\n"
		     "#reset { fill: #1a5fb4; cursor: pointer; text-decoration: underline; }\n"
		     "]]></style>\n",
		FONT_PX);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f6\"/>\n");
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"26\">", total_w / 2);
	ret = put_xml(out, o->title ? o->title : "Flame Graph");
	if (ret)
		goto out;
	fputs("</text>\n", out);
	if (o->subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%d\" y=\"46\">", total_w / 2);
		ret = put_xml(out, o->subtitle);
		if (ret)
			goto out;
		fputs("</text>\n", out);
	}
	fprintf(out,
		"<text id=\"reset\" x=\"%d\" y=\"26\" style=\"display:none\">Reset Zoom</text>\n",
		XPAD);
	fprintf(out, "<foreignObject x=\"%d\" y=\"8\" width=\"240\" height=\"26\">"
		     "<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
		     "placeholder=\"Search (regex)\" "
		     "title=\"Highlight the frames whose name matches\" "
		     "style=\"width:230px;font:12px monospace\"/></foreignObject>\n",
		total_w - XPAD - 240);

	fputs("<g id=\"frames\">\n", out);
	for (uint32_t k = 0; k < tree->n; k++) {
		uint32_t node = l.order[k];

		if (!drawn(&l, node))
			continue;
		ret = put_frame(out, &l, node, width, top, o);
		if (ret)
			goto out;
	}
	fputs("</g>\n", out);

	/* Below the frames, moved by the script when a zoom changes their depth. */
	fprintf(out, "<g id=\"foot\" transform=\"translate(0,%d)\">\n", top + frames_h);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"18\"> </text>\n", XPAD);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"18\"></text>\n", total_w - XPAD);
	if (l.base) {
		fprintf(out, "<text id=\"legend\" x=\"%d\" y=\"40\">Red: share grew, blue: "
			     "share shrank; full colour = %.2f%%, the largest change. "
			     "Widths: new.</text>\n",
			XPAD, 100 * l.maxd);
	} else {
		ret = put_legend(out, &l, 40, width);
		if (ret)
			goto out;
	}
	fputs("</g>\n", out);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
	ret = put_script(out);
	if (ret)
		goto out;
	fputs("]]></script>\n</svg>\n", out);
	if (fflush(out) != 0 || ferror(out))
		ret = -EIO;
out:
	layout_fini(&l);
	return ret;
}
