/* SPDX-License-Identifier: MIT */
/*
 * The HTML report.  The profile is written as JSON into memory, gzipped
 * and base64-encoded between the two halves of the page (export/webpage.h):
 * base64 holds no '<', so nothing in the data can end the <script> element
 * that carries it, and gzip keeps the file near the size of the gzipped
 * pprof export of the same profile (the page's own code aside).
 *
 * Each thread's tree is written from the symbolic stacks (report/stacks.h,
 * per thread, with the map from physical to symbolic nodes), each
 * symbolic node split by the source line its frame was at: the page merges
 * them back by frame for every view but the source lines, and the same
 * node numbers name the samples of the thread's trace, so a time range
 * re-weighs every view.
 */
#include "export/html.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "export/export.h"
#include "export/htmlasm.h"
#include "export/htmldiff.h"
#include "export/webpage.h"
#include "model/places.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strbuf.h"

/* A node of a thread's tree as the page gets it: a symbolic node at one source line. */
struct lnode {
	uint32_t parent;           /* NW_CCT_NONE for the thread's root */
	uint32_t sym;              /* node of the symbolic tree */
	uint32_t line;             /* 0: unknown */
};

/* The strings of the page, each written once. */
struct strtab {
	const char **v;
	size_t n, cap;
	struct nw_index ix;
};

/*
 * The columns of a profile: the threads' arrays are written column by
 * column (every thread's parents, then every thread's frames...), so that
 * threads running the same code have their like arrays within gzip's
 * window of each other.
 */
enum { COL_THREAD, COL_PARENT, COL_FRAME, COL_LINE, COL_SELF, COL_TRACE, NCOLS };

static const char *const col_name[NCOLS] = { "threads", "parent", "frame", "line", "self",
					       "trace" };

struct ctx {
	const struct nw_measurement *m;
	const struct nw_stacks *s;
	FILE *out;
	FILE *col[NCOLS];          /* memory streams of the columns */
	char *colbuf[NCOLS];
	size_t collen[NCOLS];
	struct strtab *st;
	/* the current thread's nodes */
	struct lnode *ln;
	size_t nln, cap_ln;
	uint64_t *self;            /* nln * nmetrics */
	size_t cap_self;
	struct nw_index ix;
	uint32_t **node_of;        /* per tree of the thread: physical node -> its lnode */
	uint32_t *path;
	size_t cap_path;
	uint64_t *file_weight;     /* per string: the default metric's self weight in that file */
	size_t nfw, cap_fw;
	unsigned metric;
	struct nw_place_cache recent;  /* in front of the model's places */
	uint32_t *place_sym;       /* per place: its symbol entry, SYM_NONE, or SYM_UNKNOWN */
	size_t nplace_sym, cap_place_sym;
};

/* ctx.place_sym: no entry; not looked up yet. */
#define SYM_NONE (UINT32_MAX - 1)
#define SYM_UNKNOWN UINT32_MAX

/* ---- strings ---- */

static uint64_t str_hash(const void *ctx, uint32_t i)
{
	return nw_hash_str(NW_HASH_SEED, ((const struct strtab *)ctx)->v[i]);
}

static bool str_eq(const void *ctx, uint32_t i, const void *key)
{
	return !strcmp(((const struct strtab *)ctx)->v[i], key);
}

/* The number of string @s (borrowed: it must live until the table is written), or -ENOMEM. */
static int64_t str_of(struct strtab *st, const char *s)
{
	uint32_t *slot = nw_index_slot(&st->ix, nw_hash_str(NW_HASH_SEED, s), str_eq, str_hash, st,
				       s);

	if (!slot || nw_grow(&st->v, &st->cap, st->n + 1, sizeof(*st->v)))
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	st->v[st->n] = s;
	nw_index_fill(&st->ix, slot, (uint32_t)st->n);
	return (int64_t)st->n++;
}

/* str_of() for export/htmlasm.c. */
static int64_t str_cb(void *st, const char *s)
{
	return str_of(st, s);
}

/* ---- one thread's nodes ---- */

static uint64_t ln_key(uint32_t parent, uint32_t sym, uint32_t line)
{
	return nw_hash_add(nw_hash_add(nw_hash_u64(parent), sym), line);
}

static uint64_t ln_hash(const void *ctx, uint32_t i)
{
	const struct lnode *n = &((const struct ctx *)ctx)->ln[i];

	return ln_key(n->parent, n->sym, n->line);
}

static bool ln_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct lnode *a = &((const struct ctx *)ctx)->ln[i], *b = key;

	return a->parent == b->parent && a->sym == b->sym && a->line == b->line;
}

/* The node (@parent, @sym, @line) of the current thread, added when new; NW_CCT_NONE on ENOMEM. */
static uint32_t ln_of(struct ctx *c, uint32_t parent, uint32_t sym, uint32_t line)
{
	struct lnode key = { parent, sym, line };
	unsigned nm = c->m->nmetrics;
	uint32_t *slot = nw_index_slot(&c->ix, ln_key(parent, sym, line), ln_eq, ln_hash, c, &key);

	if (!slot || nw_grow(&c->ln, &c->cap_ln, c->nln + 1, sizeof(*c->ln)) ||
	    nw_grow(&c->self, &c->cap_self, (c->nln + 1) * nm, sizeof(*c->self)))
		return NW_CCT_NONE;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	c->ln[c->nln] = key;
	memset(c->self + c->nln * nm, 0, nm * sizeof(*c->self));
	nw_index_fill(&c->ix, slot, (uint32_t)c->nln);
	return (uint32_t)c->nln++;
}

static void add_self(struct ctx *c, uint32_t ln, const struct nw_cct *t, uint32_t node)
{
	unsigned nm = c->m->nmetrics < t->nmetrics ? c->m->nmetrics : t->nmetrics;

	for (unsigned k = 0; k < nm; k++)
		c->self[(size_t)ln * c->m->nmetrics + k] += nw_cct_metrics(t, node)[k];
}

/* The symbol entry of place @id in *@ret (NULL: none), looked up once.  -ENOMEM. */
static int place_sym(struct ctx *c, uint32_t id, const struct nw_symentry **ret)
{
	const struct nw_symtab *st = c->m->symtab;

	if (nw_grow_fill(&c->place_sym, &c->nplace_sym, &c->cap_place_sym, id,
			 sizeof(*c->place_sym), 0xff))
		return -ENOMEM;
	if (c->place_sym[id] == SYM_UNKNOWN) {
		const struct nw_symentry *e = nw_place_sym(c->m, &c->m->places->v[id]);

		c->place_sym[id] = e ? (uint32_t)(e - st->entries) : SYM_NONE;
	}
	*ret = c->place_sym[id] == SYM_NONE ? NULL : &st->entries[c->place_sym[id]];
	return 0;
}

/*
 * The nodes of tree @t of thread @ti, below the thread's root node @root:
 * each physical node becomes the symbolic nodes of its inline chain, each
 * at the line of its frame.  c->node_of[t] maps them.  -ENOMEM.
 */
static int add_tree(struct ctx *c, uint32_t ti, uint32_t t, uint32_t root, uint32_t stop)
{
	const struct nw_mthread *th = &c->m->threads[ti];
	const struct nw_tree *tr = &th->trees[t];
	const struct nw_cct *cct = tr->cct;
	const uint32_t *map = c->s->node_map[ti][t];
	const struct nw_cct *st = c->s->tree;
	uint32_t *order = malloc((size_t)cct->n * sizeof(*order));
	uint32_t *to = malloc((size_t)cct->n * sizeof(*to));
	uint32_t *place = malloc((size_t)cct->n * sizeof(*place));
	int ret = -ENOMEM;

	/* Caller frames are looked up inside their call, as the stacks were built. */
	if (!order || !to || !place || (!c->recent.slots && nw_place_cache_init(&c->recent, 0)) ||
	    nw_places_resolve_tree(c->m->places, &c->recent, c->m, tr, place, NULL))
		goto out;
	nw_cct_preorder(cct, order);
	to[NW_CCT_ROOT] = root;
	add_self(c, root, cct, NW_CCT_ROOT);
	for (uint32_t k = 1; k < cct->n; k++) {
		uint32_t p = order[k], q = cct->nodes[p].parent, end, at = to[q], npath = 0;
		const struct nw_symentry *e;

		/* The symbolic nodes between the parent's and this one: the inline chain. */
		end = q == NW_CCT_ROOT ? stop : map[q];
		for (uint32_t v = map[p]; v != end && v != NW_CCT_ROOT && v != NW_CCT_NONE;
		     v = st->nodes[v].parent) {
			if (nw_grow(&c->path, &c->cap_path, npath + 1, sizeof(*c->path)))
				goto out;
			c->path[npath++] = v;
		}
		if (place_sym(c, place[p], &e))
			goto out;
		e = e && e->nframes == npath ? e : NULL;
		for (uint32_t j = npath; j-- > 0;) {
			at = ln_of(c, at, c->path[j], e ? e->frames[j].line : 0);
			if (at == NW_CCT_NONE)
				goto out;
		}
		to[p] = at;
		add_self(c, at, cct, p);
	}
	c->node_of[t] = to;
	to = NULL;
	ret = 0;
out:
	free(order);
	free(to);
	free(place);
	return ret;
}

/* ---- writing ---- */


/* ",V" or, first, "V": a page's columns hold millions of numbers. */
static void put_num(FILE *out, bool sep, uint64_t v)
{
	char buf[24], *p = buf;

	if (sep)
		*p++ = ',';
	p = nw_put_u64(p, v);
	fwrite_unlocked(buf, 1, (size_t)(p - buf), out);
}

static void put_int(FILE *out, bool sep, int64_t v)
{
	if (v < 0) {
		if (sep)
			putc_unlocked(',', out);
		putc_unlocked('-', out);
		put_num(out, false, (uint64_t)0 - (uint64_t)v);
	} else {
		put_num(out, sep, (uint64_t)v);
	}
}

/*
 * The thread's samples and off-CPU intervals from its trace, in the
 * range the model keeps: time (microseconds after the run's start, as
 * the difference from the event before), node, the event's code (perf
 * event * 2 + kind) and its value, the last two left out when always the
 * same.
 */
static int write_trace(struct ctx *c, const struct nw_mthread *th)
{
	FILE *out = c->col[COL_TRACE];
	const struct nw_measurement *m = c->m;
	struct nw_trace_event *ev = NULL;
	uint64_t origin = m->run.clock_start_ns;
	size_t n = 0, bad;
	bool one_code = true, one_value = true;
	int64_t prev_t = 0;
	uint32_t *node = NULL;
	size_t kept = 0;
	int ret;

	ret = nw_trace_decode(th->trace, &ev, &bad);
	if (ret == -EBADMSG) {
		/* A trace that does not decode: no timeline for the thread. */
		fputs("null", out);
		return 0;
	}
	if (ret)
		return ret;
	n = th->trace->n;
	node = malloc((n ? n : 1) * sizeof(*node));
	if (!node) {
		free(ev);
		return -ENOMEM;
	}
	if (!origin && n)
		origin = ev[0].time;
	for (size_t i = 0; i < n; i++) {
		int t = nw_mthread_tree_of(m, th, ev[i].epoch);

		if (t < 0 || !c->node_of[t] || ev[i].node >= th->trees[t].cct->n ||
		    ev[i].time < origin ||
		    (m->time_hi && (ev[i].time < m->time_lo || ev[i].time >= m->time_hi)))
			continue;
		ev[kept] = ev[i];
		node[kept] = c->node_of[t][ev[i].node];
		if (ev[kept].event != ev[0].event || ev[kept].kind != ev[0].kind)
			one_code = false;
		if (ev[kept].value != ev[0].value)
			one_value = false;
		kept++;
	}
	fputs("{\"dt\":[", out);
	for (size_t i = 0; i < kept; i++) {
		int64_t us = (int64_t)((ev[i].time - origin) / 1000);

		put_int(out, i, us - prev_t);
		prev_t = us;
	}
	/* Nodes as they are: a loop's few nodes repeat, which gzip takes better than their steps. */
	fputs("],\"node\":[", out);
	for (size_t i = 0; i < kept; i++)
		put_num(out, i, node[i]);
	fputc(']', out);
	if (kept && one_code)
		fprintf(out, ",\"code1\":%u", ev[0].event * 2u + ev[0].kind);
	else {
		fputs(",\"code\":[", out);
		for (size_t i = 0; i < kept; i++)
			put_num(out, i, ev[i].event * 2u + ev[i].kind);
		fputc(']', out);
	}
	if (kept && one_value)
		fprintf(out, ",\"value1\":%llu", (unsigned long long)ev[0].value);
	else {
		fputs(",\"value\":[", out);
		for (size_t i = 0; i < kept; i++)
			put_num(out, i, ev[i].value);
		fputc(']', out);
	}
	fputc('}', out);
	free(ev);
	free(node);
	return 0;
}

/* Adds the self weight of the thread's nodes to the weight of their frames' files. */
static int weigh_files(struct ctx *c)
{
	for (size_t i = 0; i < c->nln; i++) {
		const struct nw_func *fn;
		uint64_t w = c->self[i * c->m->nmetrics + c->metric];
		int64_t f;

		if (!w || !c->ln[i].line || c->ln[i].sym >= c->s->tree->n)
			continue;
		fn = &c->s->frames.v[c->s->tree->nodes[c->ln[i].sym].ip];
		if (!fn->file)
			continue;
		f = str_of(c->st, fn->file);
		if (f < 0 || nw_grow(&c->file_weight, &c->cap_fw, (size_t)f + 1, sizeof(uint64_t)))
			return -ENOMEM;
		for (; c->nfw <= (size_t)f; c->nfw++)
			c->file_weight[c->nfw] = 0;
		c->file_weight[f] += w;
	}
	return 0;
}

static int write_thread(struct ctx *c, uint32_t ti, bool first, bool traces)
{
	const struct nw_mthread *th = &c->m->threads[ti];
	const struct nw_cct *st = c->s->tree;
	uint32_t top = c->s->thread_node ? c->s->thread_node[ti] : NW_CCT_ROOT, root;
	unsigned nm = c->m->nmetrics;
	uint64_t origin = c->m->run.clock_start_ns;
	int ret = -ENOMEM;
	int64_t comm;

	c->nln = 0;
	nw_index_clear(&c->ix);
	c->node_of = calloc(th->ntrees ? th->ntrees : 1, sizeof(*c->node_of));
	if (!c->node_of)
		return -ENOMEM;
	root = ln_of(c, NW_CCT_NONE, top, 0);
	if (root == NW_CCT_NONE)
		goto out;
	for (uint32_t t = 0; t < th->ntrees; t++) {
		ret = add_tree(c, ti, t, root, top);
		if (ret)
			goto out;
	}
	ret = weigh_files(c);
	comm = str_of(c->st, th->comm ? th->comm : "");
	if (ret || comm < 0)
		goto out;
	for (int k = 0; k < NCOLS; k++)
		if (!first)
			fputc(',', c->col[k]);
	fprintf(c->col[COL_THREAD], "{\"tid\":%u,\"pid\":%u,\"comm\":%lld,\"samples\":%llu",
		th->tid, th->pid, (long long)comm, (unsigned long long)th->samples);
	if (origin && th->first_ns >= origin && th->last_ns >= th->first_ns)
		fprintf(c->col[COL_THREAD], ",\"first\":%llu,\"last\":%llu",
			(unsigned long long)((th->first_ns - origin) / 1000),
			(unsigned long long)((th->last_ns - origin) / 1000));
	fputc('}', c->col[COL_THREAD]);
	/* How far back the parent is: a chain of calls is a run of 1s. */
	fputc('[', c->col[COL_PARENT]);
	for (size_t i = 0; i < c->nln; i++)
		put_int(c->col[COL_PARENT], i,
			c->ln[i].parent == NW_CCT_NONE ? 0 : (int64_t)(i - c->ln[i].parent));
	fputs("]", c->col[COL_PARENT]);
	fputc('[', c->col[COL_FRAME]);
	for (size_t i = 0; i < c->nln; i++)
		put_int(c->col[COL_FRAME], i,
			c->ln[i].sym == top ? -1 : (int64_t)st->nodes[c->ln[i].sym].ip);
	fputs("]", c->col[COL_FRAME]);
	fputc('[', c->col[COL_LINE]);
	for (size_t i = 0; i < c->nln; i++)
		put_num(c->col[COL_LINE], i, c->ln[i].line);
	fputs("]", c->col[COL_LINE]);
	fputc('[', c->col[COL_SELF]);
	for (unsigned k = 0; k < nm; k++) {
		fputs(k ? ",[" : "[", c->col[COL_SELF]);
		for (size_t i = 0; i < c->nln; i++)
			put_num(c->col[COL_SELF], i, c->self[i * nm + k]);
		fputc(']', c->col[COL_SELF]);
	}
	fputc(']', c->col[COL_SELF]);
	if (traces && th->trace)
		ret = write_trace(c, th);
	else
		fputs("null", c->col[COL_TRACE]);
out:
	for (uint32_t t = 0; t < th->ntrees; t++)
		free(c->node_of[t]);
	free(c->node_of);
	c->node_of = NULL;
	return ret;
}

static int write_frames(struct ctx *c)
{
	const struct nw_frames *f = &c->s->frames;
	int64_t *idx = malloc((f->n ? f->n : 1) * 3 * sizeof(*idx));

	if (!idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->n; i++) {
		const struct nw_func *fn = &f->v[i];

		idx[3 * i] = str_of(c->st, fn->name);
		idx[3 * i + 1] = fn->module ? str_of(c->st, fn->module) : -1;
		idx[3 * i + 2] = fn->file ? str_of(c->st, fn->file) : -1;
		if (idx[3 * i] < -1 || idx[3 * i + 1] < -1 || idx[3 * i + 2] < -1) {
			free(idx);
			return -ENOMEM;
		}
	}
	for (int k = 0; k < 3; k++) {
		static const char *const key[] = { "name", "module", "file" };

		fprintf(c->out, "%s\"%s\":[", k ? "," : "", key[k]);
		for (uint32_t i = 0; i < f->n; i++)
			put_int(c->out, i, idx[3 * i + k]);
		fputc(']', c->out);
	}
	fputs(",\"line\":[", c->out);
	for (uint32_t i = 0; i < f->n; i++)
		put_num(c->out, i, f->v[i].line);
	fputs("],\"kind\":[", c->out);
	for (uint32_t i = 0; i < f->n; i++)
		put_int(c->out, i, f->v[i].kind);
	fputc(']', c->out);
	free(idx);
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The processes of the @n threads written (their indexes in @written):
 * pid, parent pid and name, once per pid, so that the page can group the
 * threads under their process by its name (a process's threads may all
 * be named otherwise, and its main thread may have no samples).
 */
static int write_processes(struct ctx *c, const uint32_t *written, size_t n)
{
	uint32_t *pids = malloc((n ? n : 1) * sizeof(*pids));
	size_t np = 0;
	int ret = 0;

	if (!pids)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		pids[i] = c->m->threads[written[i]].pid;
	qsort(pids, n, sizeof(*pids), cmp_u32);
	fputs(",\"processes\":[", c->out);
	for (size_t i = 0; i < n && !ret; i++) {
		const struct nw_mprocess *pr;
		int64_t comm;

		if (i && pids[i] == pids[i - 1])
			continue;
		pr = nw_measurement_process(c->m, pids[i]);
		if (!pr || !pr->comm)
			continue;
		comm = str_of(c->st, pr->comm);
		if (comm < 0)
			ret = -ENOMEM;
		else
			fprintf(c->out, "%s{\"pid\":%u,\"ppid\":%u,\"comm\":%lld}", np++ ? "," : "",
				pr->pid, pr->ppid, (long long)comm);
	}
	fputc(']', c->out);
	free(pids);
	return ret;
}

/*
 * One measurement: its metrics, frames, threads (those @filter selects
 * that have trees) and their processes.  The stacks @s stay alive until
 * the string table is written: it borrows their names.
 */
static int write_profile(struct ctx *c, const struct nw_filter *filter, bool traces)
{
	const struct nw_measurement *m = c->m;
	uint32_t *written = malloc((m->nthreads ? m->nthreads : 1) * sizeof(*written));
	size_t nwritten = 0;
	int ret;

	if (!written)
		return -ENOMEM;
	fputs("{\"metrics\":[", c->out);
	for (unsigned k = 0; k < m->nmetrics; k++) {
		fputs(k ? "," : "", c->out);
		if (nw_export_json_str(c->out, m->metrics[k].name)) {
			free(written);
			return -ENOMEM;
		}
	}
	fputs("],\"frames\":{", c->out);
	ret = write_frames(c);
	if (ret) {
		free(written);
		return ret;
	}
	fputc('}', c->out);
	for (int k = 0; k < NCOLS; k++) {
		c->col[k] = open_memstream(&c->colbuf[k], &c->collen[k]);
		if (!c->col[k])
			ret = -ENOMEM;
	}
	for (uint32_t ti = 0; ti < m->nthreads && !ret; ti++) {
		if (!nw_filter_thread(filter, &m->threads[ti]) || !c->s->node_map[ti])
			continue;
		ret = write_thread(c, ti, nwritten == 0, traces);
		written[nwritten++] = ti;
	}
	for (int k = 0; k < NCOLS; k++) {
		if (c->col[k] && fclose(c->col[k]) != 0)
			ret = ret ? ret : -ENOMEM;
		c->col[k] = NULL;
		if (!ret)
			fprintf(c->out, ",\"%s\":[", col_name[k]);
		if (!ret && c->collen[k])
			fwrite(c->colbuf[k], 1, c->collen[k], c->out);
		if (!ret)
			fputc(']', c->out);
		free(c->colbuf[k]);
		c->colbuf[k] = NULL;
	}
	if (!ret)
		ret = write_processes(c, written, nwritten);
	fputc('}', c->out);
	free(written);
	return ret;
}

/* A line of source text for JSON: tabs expanded to 8 columns, then made valid UTF-8. */
static int put_source_line(FILE *out, const char *s, size_t len)
{
	struct nw_strbuf b = { 0 };
	size_t col = 0;
	char *clean;
	int failed = 0;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\t') {
			do
				nw_sb_putc(&b, ' ');
			while (++col % 8);
		} else if (s[i] != '\r') {
			nw_sb_putc(&b, s[i]);
			col++;
		}
	}
	if (b.failed) {
		nw_sb_fini(&b);
		return -ENOMEM;
	}
	clean = nw_export_clean(nw_sb_str(&b), &failed);
	nw_sb_fini(&b);
	if (!clean)
		return -ENOMEM;
	fputc('"', out);
	for (const char *p = clean; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', out);
		fputc(*p, out);
	}
	fputc('"', out);
	free(clean);
	return 0;
}

struct file_rank {
	uint32_t str;
	uint64_t w;
};

static int cmp_rank(const void *a, const void *b)
{
	const struct file_rank *x = a, *y = b;

	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	return x->str < y->str ? -1 : x->str > y->str;
}

/*
 * The text of the hottest source files this machine can read, heaviest
 * first, while they fit in @cap bytes together: "sources" is a list of
 * {file, lines}; "sourcesLeft" counts the files with weight left out.
 */
static int write_sources(struct ctx *c, size_t cap)
{
	struct file_rank *rank = NULL;
	size_t nrank = 0, used = 0, left = 0;
	bool first = true;
	int ret = 0;

	rank = malloc((c->st->n ? c->st->n : 1) * sizeof(*rank));
	if (!rank)
		return -ENOMEM;
	for (size_t i = 0; i < c->nfw; i++)
		if (c->file_weight[i])
			rank[nrank++] = (struct file_rank){ (uint32_t)i, c->file_weight[i] };
	qsort(rank, nrank, sizeof(*rank), cmp_rank);
	fputs(",\"sources\":[", c->out);
	for (size_t i = 0; i < nrank && !ret; i++) {
		char *text = NULL;
		size_t len = 0;

		if (nw_read_file(c->st->v[rank[i].str], &text, &len) || used + len > cap ||
		    memchr(text, 0, len)) {
			free(text);
			left++;
			continue;
		}
		used += len;
		fprintf(c->out, "%s{\"file\":%u,\"lines\":[", first ? "" : ",", rank[i].str);
		first = false;
		for (size_t at = 0, k = 0; at < len && !ret; k++) {
			const char *nl = memchr(text + at, '\n', len - at);
			size_t n = nl ? (size_t)(nl - text) - at : len - at;

			if (k)
				fputc(',', c->out);
			ret = put_source_line(c->out, text + at, n);
			at += n + 1;
		}
		fputs("]}", c->out);
		free(text);
	}
	fprintf(c->out, "],\"sourcesLeft\":%zu", left);
	free(rank);
	return ret;
}

static int write_strings(struct ctx *c)
{
	fputs(",\"strings\":[", c->out);
	for (size_t i = 0; i < c->st->n; i++) {
		if (i)
			fputc(',', c->out);
		if (nw_export_json_str(c->out, c->st->v[i]))
			return -ENOMEM;
	}
	fputc(']', c->out);
	return 0;
}

/* What the run was: command, times, events (which metric counts each), metrics. */
static int write_run(struct ctx *c, const struct nw_html_opts *o)
{
	const struct nw_measurement *m = c->m;
	const struct nw_run *r = &m->run;
	struct nw_strbuf cmd = { 0 };
	int ret;

	for (uint32_t i = 0; i < r->argc; i++)
		nw_sb_printf(&cmd, "%s%s", i ? " " : "", r->argv[i] ? r->argv[i] : "");
	fputs("{\"format\":\"narwhal-html\",\"version\":1,\"narwhal\":\"" NW_VERSION "\",\"title\":",
	      c->out);
	ret = cmd.failed ? -ENOMEM : nw_export_json_str(c->out, cmd.len ? nw_sb_str(&cmd)
								      : "narwhal measurement");
	nw_sb_fini(&cmd);
	if (ret)
		return ret;
	fputs(",\"label\":", c->out);
	if (nw_export_json_str(c->out, o->label ? o->label : ""))
		return -ENOMEM;
	fprintf(c->out, ",\"start\":%llu", (unsigned long long)(r->start_ns / 1000000));
	if (r->clock_start_ns && r->clock_end_ns > r->clock_start_ns)
		fprintf(c->out, ",\"duration\":%llu",
			(unsigned long long)((r->clock_end_ns - r->clock_start_ns) / 1000));
	if (m->time_hi && r->clock_start_ns && m->time_lo >= r->clock_start_ns)
		fprintf(c->out, ",\"range\":[%llu,%llu]",
			(unsigned long long)((m->time_lo - r->clock_start_ns) / 1000),
			(unsigned long long)((m->time_hi - r->clock_start_ns) / 1000));
	fputs(",\"events\":[", c->out);
	for (uint32_t e = 0; e < r->nevents; e++) {
		int count, sum;

		nw_measurement_event_metrics(m, e, &count, &sum);
		fputs(e ? ",{\"name\":" : "{\"name\":", c->out);
		if (nw_export_json_str(c->out, r->events[e].name ? r->events[e].name : ""))
			return -ENOMEM;
		fprintf(c->out, ",\"count\":%d,\"sum\":%d}", count, sum);
	}
	fputs("],\"metrics\":[", c->out);
	for (unsigned k = 0; k < m->nmetrics; k++) {
		const struct nw_metric *d = &m->metrics[k];

		fputs(k ? ",{\"name\":" : "{\"name\":", c->out);
		if (nw_export_json_str(c->out, d->name))
			return -ENOMEM;
		fputs(",\"event\":", c->out);
		if (nw_export_json_str(c->out, d->event ? d->event : ""))
			return -ENOMEM;
		fprintf(c->out, ",\"kind\":\"%s\",\"unit\":\"%s\",\"short\":\"%s\",\"period\":%llu}",
			nw_metric_kind_name(d->kind), nw_metric_unit_name(d->unit),
			nw_export_unit(d), (unsigned long long)d->period);
	}
	fprintf(c->out, "],\"metric\":%u", o->metric);
	return 0;
}

/* Builds the per-thread stacks of @m with the map from physical nodes; NULL on ENOMEM. */
static struct nw_stacks *stacks_of(const struct nw_measurement *m, const struct nw_filter *f,
				   int *ret)
{
	struct nw_stacks_opts so = { .filter = f, .per_thread = true, .node_map = true };
	struct nw_stacks *s = nw_stacks_new(m, m->nmetrics);

	*ret = s ? nw_stacks_build(s, &so) : -ENOMEM;
	if (*ret) {
		nw_stacks_free(s);
		return NULL;
	}
	return s;
}

static void ctx_reset(struct ctx *c)
{
	free(c->ln);
	free(c->self);
	free(c->path);
	nw_index_fini(&c->ix);
	nw_place_cache_fini(&c->recent);
	free(c->place_sym);
	c->place_sym = NULL;
	c->nplace_sym = c->cap_place_sym = 0;
	c->ln = NULL;
	c->self = NULL;
	c->path = NULL;
	c->nln = c->cap_ln = c->cap_self = c->cap_path = 0;
}

/* The JSON of the report into @out (memory). */
static int write_json(FILE *out, const struct nw_measurement *m, const struct nw_html_opts *o,
		      struct strtab *st, struct nw_stacks **ss, struct nw_stacks **bs)
{
	struct ctx c = { .m = m, .out = out, .st = st, .metric = o->metric };
	int ret;

	*ss = stacks_of(m, o->filter, &ret);
	if (!*ss)
		return ret;
	c.s = *ss;
	ret = write_run(&c, o);
	if (!ret) {
		fputs(",\"profile\":", out);
		ret = write_profile(&c, o->filter, true);
	}
	if (!ret && o->base) {
		struct ctx b = { .m = o->base, .out = out, .st = st };
		int bm = nw_measurement_find_metric(o->base, m->metrics[o->metric].name);

		b.metric = bm < 0 ? 0 : (unsigned)bm;
		*bs = stacks_of(o->base, NULL, &ret);
		if (*bs) {
			b.s = *bs;
			fputs(",\"baseLabel\":", out);
			ret = nw_export_json_str(out, o->base_label ? o->base_label : "base");
			if (!ret) {
				fputs(",\"base\":", out);
				ret = write_profile(&b, NULL, false);
			}
		}
		ctx_reset(&b);
		free(b.file_weight);
	}
	if (!ret && o->diff)
		ret = nw_html_write_diff(out, o->diff);
	if (!ret)
		ret = write_sources(&c, o->source_cap ? o->source_cap : NW_HTML_SOURCE_CAP);
	/* The Disassembly panel's code (export/htmlasm.h), where the model holds code. */
	if (!ret)
		ret = nw_html_write_disasm(out, m, o->filter, o->metric, 0, str_cb, st);
	if (!ret)
		ret = write_strings(&c);
	fputs("}", out);
	ctx_reset(&c);
	free(c.file_weight);
	return ret;
}

/*
 * The page's payload as it is written: JSON gzipped (windowBits 15 + 16, a
 * gzip stream, which DecompressionStream("gzip") reads) by util's stream
 * written behind, on its thread, and base64-encoded there in lines of 76
 * as the gzip comes.  Neither the JSON nor its gzip is held whole (a
 * 1,000-thread build's 4.6 MB of JSON took 13 MB of buffers that way).
 */
struct gz64 {
	FILE *out;
	unsigned char pend[3];  /* gzip bytes not encoded yet */
	size_t npend;
	char line[80];
	size_t at;
};

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Encodes the group of @n (1 to 3) bytes at @p, padded; a full line goes out. */
static void b64_group(struct gz64 *g, const unsigned char *p, size_t n)
{
	uint32_t v = (uint32_t)p[0] << 16 | (n > 1 ? (uint32_t)p[1] << 8 : 0) | (n > 2 ? p[2] : 0);

	g->line[g->at++] = b64[v >> 18 & 63];
	g->line[g->at++] = b64[v >> 12 & 63];
	g->line[g->at++] = n > 1 ? b64[v >> 6 & 63] : '=';
	g->line[g->at++] = n > 2 ? b64[v & 63] : '=';
	if (g->at == 76) {
		g->line[g->at++] = '\n';
		fwrite(g->line, 1, g->at, g->out);
		g->at = 0;
	}
}

/* The stream's sink: gzip bytes, encoded (errors show in ferror(out)). */
static int b64_feed(void *arg, const void *buf, size_t n)
{
	struct gz64 *g = arg;
	const unsigned char *p = buf;

	while (n && g->npend) {
		g->pend[g->npend++] = *p++;
		n--;
		if (g->npend == 3) {
			b64_group(g, g->pend, 3);
			g->npend = 0;
		}
	}
	for (; n >= 3; p += 3, n -= 3)
		b64_group(g, p, 3);
	memcpy(g->pend, p, n);
	g->npend += n;
	return 0;
}

/* Ends the base64 text once the gzip stream is closed: its last group padded, a last newline. */
static void b64_end(struct gz64 *g)
{
	if (g->npend)
		b64_group(g, g->pend, g->npend);
	if (g->at) {
		g->line[g->at++] = '\n';
		fwrite(g->line, 1, g->at, g->out);
	}
}

/*
 * A stream whose bytes go to g->out gzipped and base64-encoded, b64_end()
 * once it is closed; NULL on ENOMEM.
 */
static FILE *gz64_open(struct gz64 *g)
{
	/*
	 * Level 4: on a build's 4.6 MB of JSON, 8 % larger than 6 and a
	 * quarter of the export's time less.
	 */
	struct nw_behind_opts o = { .fd = -1, .gzip = 4, .sink = b64_feed, .sink_arg = g };

	return nw_open_behind(&o);
}

int nw_html_write(FILE *out, const struct nw_measurement *m, const struct nw_html_opts *o)
{
	struct strtab st = { 0 };
	struct nw_stacks *ss = NULL, *bs = NULL;
	struct gz64 g = { .out = out };
	FILE *gz;
	int ret;

	if (!m || o->metric >= m->nmetrics || m->trees_dropped ||
	    (o->base && o->base->trees_dropped))
		return -EINVAL;
	fputs(nw_webpage_before, out);
	gz = gz64_open(&g);
	if (!gz)
		return -ENOMEM;
	ret = write_json(gz, m, o, &st, &ss, &bs);
	if (fclose(gz) != 0 && !ret)
		ret = -EIO;
	b64_end(&g);
	fputs(nw_webpage_after, out);
	free(st.v);
	nw_index_fini(&st.ix);
	nw_stacks_free(ss);
	nw_stacks_free(bs);
	if (!ret && (fflush(out) != 0 || ferror(out)))
		ret = -EIO;
	return ret;
}

int nw_html_export(const char *path, const struct nw_measurement *m,
		   const struct nw_html_opts *o)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = nw_html_write(f, m, o);
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
	return ret;
}
