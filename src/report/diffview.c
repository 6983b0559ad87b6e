/* SPDX-License-Identifier: MIT */
/* The views of a diff, each change with its noise: flat, by module, tree, callers; see diff.h. */
#include "report/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/callers.h"
#include "report/diffstat.h"
#include "report/views.h"
#include "util/strbuf.h"

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static int finish(FILE *out)
{
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}

/* Each run of a side's value of a row (share points, or weights with @absolute), into @out. */
static void run_values(const struct nw_diff *d, bool absolute, const uint64_t *v, unsigned first,
		       unsigned n, double *out)
{
	for (unsigned r = 0; r < n; r++) {
		unsigned m = NW_DIFF_RUN + first + r;

		out[r] = absolute ? (double)v[m] : pct(v[m], d->total[m]);
	}
}

/* Samples in all below which a side's per-run shares are too coarse for Welch's spread. */
#define NW_DIFF_FEW 30

struct nw_change nw_diff_change(const struct nw_diff *d, bool absolute, const uint64_t *v)
{
	uint64_t b = v[NW_DIFF_BASE], n = v[NW_DIFF_NEW];
	uint64_t bn = v[NW_DIFF_BASE_N], nn = v[NW_DIFF_NEW_N];
	double bv[NW_DIFF_MAX_RUNS], nv[NW_DIFF_MAX_RUNS];
	struct nw_change c = { 0 };

	if (d->runs) {
		struct nw_change s = absolute ? nw_change_count(bn, nn, 1)
					      : nw_change_share(bn, d->total[NW_DIFF_BASE_N], nn,
								d->total[NW_DIFF_NEW_N]);

		run_values(d, absolute, v, 0, d->nbase, bv);
		run_values(d, absolute, v, d->nbase, d->nnew, nv);
		c = nw_change_welch(bv, d->nbase, nv, d->nnew);
		/*
		 * A function seen a few times (in all, on either side) has runs
		 * that agree by the discreteness of its counts: one sample in
		 * each new run and none in the base ones gives Welch's SE near
		 * 0.  Its noise is at least the sampling noise.
		 */
		if (c.se > 0 && s.se > c.se && (bn < NW_DIFF_FEW || nn < NW_DIFF_FEW))
			c = s;
	}
	/* Runs that agree exactly (a function in none of them, or one sample each) tell nothing. */
	if (!(c.se > 0) && absolute)
		c = nw_change_count(bn, nn, 1);
	else if (!(c.se > 0))
		c = nw_change_share(bn, d->total[NW_DIFF_BASE_N], nn, d->total[NW_DIFF_NEW_N]);
	/* The merged runs' change, whatever estimated its noise. */
	c.delta = absolute ? (double)n - (double)b
			   : pct(n, d->total[NW_DIFF_NEW]) - pct(b, d->total[NW_DIFF_BASE]);
	/* A change the samples show none of (z 0) stays 0, whatever the weights say. */
	if (c.z == 0 && !nn && !bn)
		c.delta = 0;
	return c;
}

/* The change, its standard error and its z: points, or a count or time with @absolute (ms). */
static void put_change(FILE *out, const struct nw_diff *d, bool absolute, const struct nw_change *c)
{
	if (!absolute)
		fprintf(out, "%+7.1f  %5.1f", c->delta, c->se);
	else if (d->time)
		fprintf(out, "%+8.1fms  %6.1fms", c->delta / 1e6, c->se / 1e6);
	else
		fprintf(out, "%+10.0f  %8.0f", c->delta, c->se);
	if (isinf(c->z))
		fprintf(out, "  %5s", c->z > 0 ? "+inf" : "-inf");
	else
		fprintf(out, "  %+5.1f", c->z);
}

/* The columns put_change() fills. */
static void put_change_head(FILE *out, const struct nw_diff *d, bool absolute)
{
	fputs(absolute ? "     DELTA        SE      Z" : "  DELTA     SE      Z", out);
}

static const char *noise_of(const struct nw_diff *d)
{
	return d->runs ? "run-to-run" : "sampling";
}

/* The header: what is compared, and how noise is told. */
static void header(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		   const char *what)
{
	const char *label[2] = { o->base_label ? o->base_label : "base",
				 o->new_label ? o->new_label : "new" };
	unsigned runs[2] = { d->nbase, d->nnew };
	char noise[128];

	for (unsigned k = 0; k < 2; k++) {
		fprintf(out, "%s%s (%llu samples", k ? "New:  " : "Base: ", label[k],
			(unsigned long long)d->total[k ? NW_DIFF_NEW_N : NW_DIFF_BASE_N]);
		if (runs[k] > 1)
			fprintf(out, " in %u runs", runs[k]);
		fputs(")\n", out);
	}
	fprintf(out, "Change of each %s, %s; SE: its standard error; Z: the change over it, "
		     "|Z| >= %.0f is beyond noise.\n",
		what, o->absolute ? (d->time ? "in time" : "in samples") : "in points of share",
		NW_DIFF_Z);
	nw_diff_noise(d, o->absolute, noise, sizeof(noise));
	fprintf(out, "Noise: %s%s.\n\n", noise,
		d->runs ? "; Z: the normal score of the tail of Welch's t" : "");
}

/* "(N functions changed within sampling noise; --all lists them)" */
static void footer(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		   uint32_t quiet, const char *what)
{
	if (!o->all)
		fprintf(out, "(%u %s%s changed within %s noise; --all lists them)\n", quiet, what,
			quiet == 1 ? "" : "s", noise_of(d));
}

/* ---- rows: flat, by module, lines ---- */

static int cmp_entry(const void *a, const void *b)
{
	const struct nw_diff_entry *x = a, *y = b;
	double dx = fabs(x->c.delta), dy = fabs(y->c.delta);
	int r;

	if (x->beyond != y->beyond)
		return x->beyond ? -1 : 1;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	r = strcmp(x->name, y->name);
	return r ? r : (x->name > y->name) - (x->name < y->name);
}

int nw_diff_entries(const struct nw_diff *d, bool absolute, const struct nw_diff_row *rows,
		    uint32_t nrows, struct nw_diff_entry **ret, uint32_t *ret_n)
{
	struct nw_diff_entry *v = malloc((nrows ? nrows : 1) * sizeof(*v));
	uint32_t n = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < nrows; i++) {
		const uint64_t *s = rows[i].self, *c = rows[i].cumul;
		struct nw_diff_entry *r = &v[n];

		if (!c[NW_DIFF_BASE] && !c[NW_DIFF_NEW])
			continue;
		r->name = rows[i].name;
		r->c = nw_diff_change(d, absolute, s);
		r->beyond = nw_change_significant(&r->c);
		r->bself = pct(s[NW_DIFF_BASE], d->total[NW_DIFF_BASE]);
		r->nself = pct(s[NW_DIFF_NEW], d->total[NW_DIFF_NEW]);
		r->bcum = pct(c[NW_DIFF_BASE], d->total[NW_DIFF_BASE]);
		r->ncum = pct(c[NW_DIFF_NEW], d->total[NW_DIFF_NEW]);
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_entry);
	*ret = v;
	*ret_n = n;
	return 0;
}

int nw_diff_rows(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		 const char *what, const struct nw_diff_row *rows, uint32_t nrows)
{
	struct nw_diff_entry *v;
	uint32_t n, quiet = 0;
	char title[64];
	int ret = nw_diff_entries(d, o->absolute, rows, nrows, &v, &n);

	if (ret)
		return ret;
	snprintf(title, sizeof(title), "%s's self weight", what);
	header(out, d, o, title);
	put_change_head(out, d, o->absolute);
	fputs("   BASE%    NEW%  BCUM%   NCUM%   DCUM  ", out);
	for (const char *c = what; *c; c++)
		fputc(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c, out);
	fputc('\n', out);
	for (uint32_t i = 0; i < n; i++) {
		const struct nw_diff_entry *r = &v[i];

		quiet += !r->beyond;
		if (!r->beyond && !o->all)
			continue;
		put_change(out, d, o->absolute, &r->c);
		fprintf(out, "  %5.1f%%  %5.1f%%  %5.1f%%  %5.1f%%  %+5.1f  %s", r->bself, r->nself,
			r->bcum, r->ncum, r->ncum - r->bcum, r->name);
		if (!r->bcum)
			fputs(" (new)", out);
		else if (!r->ncum)
			fputs(" (gone)", out);
		fputc('\n', out);
	}
	footer(out, d, o, quiet, what);
	free(v);
	return finish(out);
}

/*
 * The rows of the joined tree's frames (their flat sums: *@f, the
 * caller's to finish; the rows' metrics point into it).  -ENOMEM.
 */
static int frame_rows(const struct nw_diff *d, bool full_names, struct nw_flat_sums *f,
		      struct nw_diff_row **ret)
{
	const struct nw_frames *fr = &d->stacks->frames;
	unsigned nm = d->nmetrics, metrics[NW_DIFF_METRICS + 2 * NW_DIFF_MAX_RUNS];
	struct nw_diff_row *rows;
	int err;

	for (unsigned m = 0; m < nm; m++)
		metrics[m] = m;
	err = nw_flat_sums(d->stacks, metrics, nm, f);
	if (err)
		return err;
	rows = malloc((f->nframes ? f->nframes : 1) * sizeof(*rows));
	if (!rows) {
		nw_flat_sums_fini(f);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < f->nframes; i++)
		rows[i] = (struct nw_diff_row){ .name = nw_func_name(&fr->v[i], full_names),
						.self = &f->self[(size_t)i * nm],
						.cumul = &f->cumul[(size_t)i * nm] };
	*ret = rows;
	return 0;
}

int nw_diff_flat(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o)
{
	struct nw_diff_row *rows;
	struct nw_flat_sums f;
	int ret = frame_rows(d, o->full_names, &f, &rows);

	if (ret)
		return ret;
	ret = nw_diff_rows(out, d, o, d->modules ? "module" : "function", rows, f.nframes);
	free(rows);
	nw_flat_sums_fini(&f);
	return ret;
}

int nw_diff_flat_entries(const struct nw_diff *d, bool absolute, struct nw_diff_entry **ret,
			 uint32_t *ret_n)
{
	struct nw_diff_row *rows;
	struct nw_flat_sums f;
	int err = frame_rows(d, true, &f, &rows);

	if (err)
		return err;
	err = nw_diff_entries(d, absolute, rows, f.nframes, ret, ret_n);
	free(rows);
	nw_flat_sums_fini(&f);
	return err;
}

void nw_diff_noise(const struct nw_diff *d, bool absolute, char *buf, size_t len)
{
	if (d->runs)
		snprintf(buf, len, "run-to-run spread (Welch, %u base runs, %u new runs)", d->nbase,
			 d->nnew);
	else
		snprintf(buf, len, "sampling (%s, from the sample counts)",
			 absolute ? "Poisson" : "binomial");
}

/* ---- trees: the joined tree, callers and callees ---- */

/* A tree to print: @t's nodes with the inclusive metrics @incl (d->nmetrics each). */
struct dtree {
	FILE *out;
	const struct nw_diff *d;
	const struct nw_diff_opts *o;
	const struct nw_cct *t;
	const uint64_t *incl;
	uint32_t top;     /* where it starts */
	bool show_top;    /* printed itself (else only below it) */
	bool *keep;       /* per node: printed */
	uint32_t quiet;   /* nodes within noise, not printed */
};

static const uint64_t *incl_of(const struct dtree *t, uint32_t node)
{
	return &t->incl[(size_t)node * t->d->nmetrics];
}

/* The larger of a node's shares in the two runs. */
static double share_of(const struct dtree *t, uint32_t node)
{
	const uint64_t *in = incl_of(t, node);

	return fmax(pct(in[NW_DIFF_BASE], t->d->total[NW_DIFF_BASE]),
		    pct(in[NW_DIFF_NEW], t->d->total[NW_DIFF_NEW]));
}

/* Children by their larger inclusive share, heaviest first. */
static int cmp_kid(const void *a, const void *b, void *arg)
{
	const struct dtree *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	double sx = share_of(t, x), sy = share_of(t, y);

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return (x > y) - (x < y);
}

/*
 * Which nodes below @top are printed: over o->percent_limit in a run,
 * and beyond noise or above a node that is (every one with --all).
 * -ENOMEM.
 */
static int choose_nodes(struct dtree *t, uint32_t top)
{
	uint32_t *order = malloc((size_t)t->t->n * sizeof(*order));
	uint32_t n;

	if (!order)
		return -ENOMEM;
	n = nw_cct_preorder(t->t, order);
	for (uint32_t k = n; k-- > 0;) {
		uint32_t i = order[k], p = t->t->nodes[i].parent;
		struct nw_change c;

		if (i == NW_CCT_ROOT || i == top || share_of(t, i) < t->o->percent_limit)
			continue;
		c = nw_diff_change(t->d, t->o->absolute, incl_of(t, i));
		if (!nw_change_significant(&c) && !t->keep[i]) {
			t->quiet++;
			t->keep[i] = t->o->all;
		} else {
			t->keep[i] = true;
		}
		if (t->keep[i] && p != NW_CCT_NONE)
			t->keep[p] = true;
	}
	t->keep[top] = true;
	free(order);
	return 0;
}

static int print_node(void *arg, uint32_t node, uint32_t dep)
{
	const struct dtree *t = arg;
	const uint64_t *in = incl_of(t, node);
	struct nw_change c;
	uint32_t indent;

	if (node == t->top && !t->show_top)
		return 1;
	if (!t->keep[node])
		return 0;
	c = nw_diff_change(t->d, t->o->absolute, in);
	indent = 2 * (t->show_top ? dep : dep - 1);
	put_change(t->out, t->d, t->o->absolute, &c);
	fprintf(t->out, "  %5.1f%%  %5.1f%%  %*s%s\n",
		pct(in[NW_DIFF_BASE], t->d->total[NW_DIFF_BASE]),
		pct(in[NW_DIFF_NEW], t->d->total[NW_DIFF_NEW]), (int)(indent < 2000 ? indent : 2000),
		"", nw_func_name(&t->d->stacks->frames.v[t->t->nodes[node].ip], t->o->full_names));
	return 1;
}

/* Chooses and prints @t's tree @top (with @incl), counting what is within noise into *@quiet. */
static int print_dtree(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		       const struct nw_cct *tree, const uint64_t *incl, uint32_t top, bool show_top,
		       uint32_t *quiet)
{
	struct dtree t = { out, d, o, tree, incl, top, show_top };
	int ret = -ENOMEM;

	t.keep = calloc(tree->n, sizeof(*t.keep));
	if (t.keep)
		ret = choose_nodes(&t, top);
	if (!ret)
		ret = nw_callers_walk(tree, top, cmp_kid, print_node, &t);
	*quiet += t.quiet;
	free(t.keep);
	return ret;
}

/* The inclusive metrics of the joined tree's nodes, and its preorder.  -ENOMEM. */
static int inclusive(const struct nw_diff *d, uint64_t **ret_incl, uint32_t **ret_order)
{
	const struct nw_cct *tree = d->stacks->tree;
	unsigned nm = d->nmetrics;
	uint32_t *order = malloc((size_t)tree->n * sizeof(*order));
	uint64_t *incl = malloc((size_t)tree->n * nm * sizeof(*incl));

	if (!order || !incl) {
		free(order);
		free(incl);
		return -ENOMEM;
	}
	memcpy(incl, tree->metrics, (size_t)tree->n * nm * sizeof(*incl));
	/* Each node added to its parent, children first. */
	for (uint32_t k = nw_cct_preorder(tree, order); k-- > 1;) {
		uint32_t i = order[k], p = tree->nodes[i].parent;

		for (unsigned m = 0; m < nm; m++)
			incl[(size_t)p * nm + m] += incl[(size_t)i * nm + m];
	}
	*ret_incl = incl;
	*ret_order = order;
	return 0;
}

int nw_diff_tree(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o)
{
	uint64_t *incl;
	uint32_t *order, quiet = 0;
	int ret = inclusive(d, &incl, &order);

	if (ret)
		return ret;
	header(out, d, o, "calling context's inclusive weight");
	put_change_head(out, d, o->absolute);
	fputs("   BASE%    NEW%  FUNCTION\n", out);
	ret = print_dtree(out, d, o, d->stacks->tree, incl, NW_CCT_ROOT, false, &quiet);
	if (!ret)
		footer(out, d, o, quiet, "calling context");
	if (!ret)
		ret = finish(out);
	free(order);
	free(incl);
	return ret;
}

int nw_diff_contexts(const struct nw_diff *d, bool absolute, double min_share,
		     struct nw_diff_context **ret, uint32_t *ret_n)
{
	const struct nw_cct *tree = d->stacks->tree;
	struct nw_diff_context *v = malloc((size_t)tree->n * sizeof(*v));
	uint32_t *at = malloc((size_t)tree->n * sizeof(*at)), *order = NULL, n = 0;
	uint64_t *incl = NULL;
	int err = v && at ? inclusive(d, &incl, &order) : -ENOMEM;

	for (uint32_t k = 1; !err && k < tree->n; k++) {
		uint32_t i = order[k], p = tree->nodes[i].parent;
		const uint64_t *in = &incl[(size_t)i * d->nmetrics];

		at[i] = UINT32_MAX;
		/* Under a context left out, or too light in both runs. */
		if ((p != NW_CCT_ROOT && at[p] == UINT32_MAX) ||
		    fmax(pct(in[NW_DIFF_BASE], d->total[NW_DIFF_BASE]),
			 pct(in[NW_DIFF_NEW], d->total[NW_DIFF_NEW])) < min_share)
			continue;
		v[n].parent = p == NW_CCT_ROOT ? UINT32_MAX : at[p];
		v[n].name = d->stacks->frames.v[tree->nodes[i].ip].name;
		v[n].c = nw_diff_change(d, absolute, in);
		v[n].beyond = nw_change_significant(&v[n].c);
		at[i] = n++;
	}
	free(at);
	free(incl);
	free(order);
	if (err) {
		free(v);
		return err;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ---- callers ---- */

struct peek {
	uint32_t frame;
	double share;              /* the larger of its total shares */
	struct nw_cct *callers, *callees;
};

static void peek_fini(struct peek *p)
{
	nw_cct_free(p->callers);
	nw_cct_free(p->callees);
	p->callers = p->callees = NULL;
}

static int cmp_peek(const void *a, const void *b)
{
	const struct peek *x = a, *y = b;

	if (x->share != y->share)
		return x->share > y->share ? -1 : 1;
	return (x->frame > y->frame) - (x->frame < y->frame);
}

/* Function @p: its self and total, its callers' and its callees' trees. */
static int print_peek(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		      const struct peek *p, const uint64_t *self, uint32_t *quiet)
{
	const uint64_t *total = nw_cct_metrics(p->callers, 1);
	struct nw_change cs = nw_diff_change(d, o->absolute, self);
	struct nw_change ct = nw_diff_change(d, o->absolute, total);
	int ret;

	fprintf(out, "Function: %s\n", nw_func_name(&d->stacks->frames.v[p->frame], o->full_names));
	put_change_head(out, d, o->absolute);
	fputs("   BASE%    NEW%\n", out);
	put_change(out, d, o->absolute, &cs);
	fprintf(out, "  %5.1f%%  %5.1f%%  self\n", pct(self[NW_DIFF_BASE], d->total[NW_DIFF_BASE]),
		pct(self[NW_DIFF_NEW], d->total[NW_DIFF_NEW]));
	put_change(out, d, o->absolute, &ct);
	fprintf(out, "  %5.1f%%  %5.1f%%  total\n\nCallers:\n",
		pct(total[NW_DIFF_BASE], d->total[NW_DIFF_BASE]),
		pct(total[NW_DIFF_NEW], d->total[NW_DIFF_NEW]));
	ret = print_dtree(out, d, o, p->callers, p->callers->metrics, 1, true, quiet);
	if (!ret && p->callees->nodes[1].first_child != NW_CCT_NONE) {
		fputs("\nCallees:\n", out);
		ret = print_dtree(out, d, o, p->callees, p->callees->metrics, 1, true, quiet);
	}
	fputc('\n', out);
	return ret;
}

/* Whether anything about @p is beyond noise: its self, its total, a caller or a callee. */
static bool peek_changed(const struct nw_diff *d, const struct nw_diff_opts *o,
			 const struct peek *p, const uint64_t *self)
{
	const struct nw_cct *t[2] = { p->callers, p->callees };
	struct nw_change c = nw_diff_change(d, o->absolute, self);

	if (nw_change_significant(&c))
		return true;
	for (unsigned k = 0; k < 2; k++)
		for (uint32_t i = 1; i < t[k]->n; i++) {
			c = nw_diff_change(d, o->absolute, nw_cct_metrics(t[k], i));
			if (nw_change_significant(&c))
				return true;
		}
	return false;
}

int nw_diff_callers(FILE *out, const struct nw_diff *d, const regex_t *re,
		    const struct nw_diff_opts *o)
{
	const struct nw_frames *fr = &d->stacks->frames;
	const struct nw_cct *tree = d->stacks->tree;
	unsigned nm = d->nmetrics;
	uint64_t *incl = NULL, *self = calloc((size_t)(fr->n ? fr->n : 1) * nm, sizeof(*self));
	struct peek *v = calloc(fr->n ? fr->n : 1, sizeof(*v));
	uint32_t *order = NULL, n = 0, quiet = 0, quiet_fns = 0;
	int ret = v && self ? inclusive(d, &incl, &order) : -ENOMEM;

	for (uint32_t i = 1; !ret && i < tree->n; i++)
		for (unsigned m = 0; m < nm; m++)
			self[(size_t)tree->nodes[i].ip * nm + m] += nw_cct_metrics(tree, i)[m];
	/* The matching functions with weight, heaviest first (their trees made again to print). */
	for (uint32_t f = 0; !ret && f < fr->n; f++) {
		struct peek *p = &v[n];
		const uint64_t *total;

		if (fr->v[f].kind == NW_FRAME_THREAD || regexec(re, fr->v[f].name, 0, NULL, 0))
			continue;
		p->frame = f;
		ret = nw_callers_trees(d->stacks, order, incl, nm, f, &p->callers, &p->callees);
		if (ret)
			break;
		total = nw_cct_metrics(p->callers, 1);
		p->share = fmax(pct(total[NW_DIFF_BASE], d->total[NW_DIFF_BASE]),
				pct(total[NW_DIFF_NEW], d->total[NW_DIFF_NEW]));
		n += p->share > 0;
		peek_fini(p);
	}
	if (!ret && !n)
		ret = -ENOENT;
	if (!ret) {
		qsort(v, n, sizeof(*v), cmp_peek);
		header(out, d, o, "function's weight, and through each caller and callee");
	}
	for (uint32_t k = 0; !ret && k < n; k++) {
		const uint64_t *s = &self[(size_t)v[k].frame * nm];

		ret = nw_callers_trees(d->stacks, order, incl, nm, v[k].frame, &v[k].callers,
				       &v[k].callees);
		if (!ret && (o->all || peek_changed(d, o, &v[k], s)))
			ret = print_peek(out, d, o, &v[k], s, &quiet);
		else if (!ret)
			quiet_fns++;
		peek_fini(&v[k]);
	}
	if (!ret && !o->all)
		fprintf(out, "(%u function%s and %u caller%s or callee%s changed within %s noise; "
			"--all lists them)\n", quiet_fns, quiet_fns == 1 ? "" : "s", quiet,
			quiet == 1 ? "" : "s", quiet == 1 ? "" : "s", noise_of(d));
	if (!ret)
		ret = finish(out);
	free(v);
	free(self);
	free(incl);
	free(order);
	return ret;
}
