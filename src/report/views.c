/* SPDX-License-Identifier: MIT */
/*
 * Text views over symbolic stacks (node ips are indexes into the frame
 * table): the indented call tree, the flat self/cumulative table, the
 * per-thread summary and folded stacks.  Every order is total (ties broken
 * by name, then index), so the output is stable.
 */
#include "report/views.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* Per-node inclusive weights of one metric (self weights are the tree's own). */
struct weights {
	uint32_t n;
	unsigned metric;
	const struct nw_cct *t;
	uint64_t *incl;
	uint32_t *order; /* preorder */
};

static void weights_fini(struct weights *w)
{
	free(w->incl);
	free(w->order);
}

static uint64_t self_of(const struct weights *w, uint32_t node)
{
	return nw_cct_metrics(w->t, node)[w->metric];
}

/* Fills @w for metric @m; -EINVAL for a bad metric or func index, -ENOMEM. */
static int weights_init(struct weights *w, const struct nw_stacks *s, unsigned m)
{
	const struct nw_cct *t = s->tree;

	memset(w, 0, sizeof(*w));
	if (m >= t->nmetrics || t->n == 0)
		return -EINVAL;
	for (uint32_t i = 1; i < t->n; i++)
		if (t->nodes[i].ip >= s->frames.n)
			return -EINVAL;
	w->n = t->n;
	w->t = t;
	w->metric = m;
	w->incl = malloc((size_t)t->n * sizeof(*w->incl));
	w->order = malloc((size_t)t->n * sizeof(*w->order));
	if (!w->incl || !w->order) {
		weights_fini(w);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->n; i++)
		w->incl[i] = nw_cct_metrics(t, i)[m];
	nw_cct_preorder(t, w->order);
	/* Children come after their parent in preorder: sum bottom-up. */
	for (uint32_t k = t->n; k-- > 1;) {
		uint32_t i = w->order[k];

		w->incl[t->nodes[i].parent] += w->incl[i];
	}
	return 0;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* The name a view shows for @node: readable, or whole with @full. */
static const char *func_name(const struct nw_stacks *s, uint32_t node, bool full)
{
	return nw_func_name(&s->frames.v[s->tree->nodes[node].ip], full);
}

static int finish(FILE *out)
{
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return 0;
}

static uint64_t node_metric(const struct nw_cct *t, uint32_t node, unsigned m)
{
	return m < t->nmetrics ? nw_cct_metrics(t, node)[m] : 0;
}

/* The metric counting the samples of metric @m's event (@m itself without descriptors). */
static unsigned samples_metric(const struct nw_stacks *s, unsigned m)
{
	int sm = s->m ? nw_measurement_samples_metric(s->m, m) : -1;

	return sm >= 0 ? (unsigned)sm : m;
}

static const char *metric_name(const struct nw_stacks *s, unsigned m, char *buf, size_t len)
{
	if (s->m && m < s->m->nmetrics)
		return s->m->metrics[m].name;
	snprintf(buf, len, "metric%u", m);
	return buf;
}

/*
 * What part of the run the measurement holds, when not all of a finished
 * run: a checkpoint or snapshot of a recording that went on (its program's
 * exit status unknown), one interval of a rotation, a flight recorder's
 * window.
 */
static void print_run_state(FILE *out, const struct nw_run *r)
{
	double secs = r->clock_end_ns > r->clock_start_ns
			      ? (double)(r->clock_end_ns - r->clock_start_ns) / 1e9
			      : 0.0;

	if (r->written == NW_RUN_CHECKPOINT || r->written == NW_RUN_SNAPSHOT)
		fprintf(out, "Status: %s after %.3f s; the recording had not finished (exit status "
			     "unknown)\n", nw_run_written_name(r->written), secs);
	else if (r->written == NW_RUN_ROTATION)
		fprintf(out, "Status: one interval of a rotating recording, %.3f s\n", secs);
	if (r->window_ns)
		fprintf(out, "Window: the last %.3f s of the run (flight recorder)\n",
			(double)r->window_ns / 1e9);
}

/*
 * "Samples: N (L lost)", and the metric weighed by when it is not the
 * samples: @samples of them in all, @total of metric @m.
 */
static void print_totals(FILE *out, const struct nw_stacks *s, uint64_t samples, uint64_t total,
			 unsigned m)
{
	unsigned sm = samples_metric(s, m);
	char buf[32];

	if (s->m)
		print_run_state(out, &s->m->run);
	if (s->m && s->m->time_hi > s->m->time_lo) {
		const struct nw_run *r = &s->m->run;
		double base = (double)r->clock_start_ns;

		fprintf(out, "Time: %.3f s to %.3f s of %.3f s\n",
			((double)s->m->time_lo - base) / 1e9, ((double)s->m->time_hi - base) / 1e9,
			r->clock_end_ns > r->clock_start_ns
				? (double)(r->clock_end_ns - r->clock_start_ns) / 1e9
				: 0.0);
	}
	if (s->m && m < s->m->nmetrics && nw_metric_kind_is_weighed(s->m->metrics[m].kind)) {
		const struct nw_metric *d = &s->m->metrics[m];
		bool lock = nw_metric_kind_is_lock(d->kind);

		/* Allocations and locks: weighed estimates, not samples. */
		fprintf(out, "Metric: %s, total %llu %s (sampled every %llu %s on average)\n",
			metric_name(s, m, buf, sizeof(buf)), (unsigned long long)total,
			d->unit == NW_UNIT_BYTES	 ? "bytes"
			: d->unit == NW_UNIT_NANOSECONDS ? "ns"
			: lock				 ? "contentions"
							 : "objects",
			(unsigned long long)d->period, lock ? "ns of waiting" : "bytes");
		return;
	}
	if (s->unfiltered && sm < s->tree->nmetrics)
		fprintf(out, "Samples: %llu of %llu kept by the filters (%.1f%%), %llu lost\n",
			(unsigned long long)samples, (unsigned long long)s->unfiltered[sm],
			s->unfiltered[sm] ? 100.0 * (double)samples / (double)s->unfiltered[sm] : 0.0,
			(unsigned long long)(s->m ? s->m->run.lost : 0));
	else
		fprintf(out, "Samples: %llu (%llu lost)\n", (unsigned long long)samples,
			(unsigned long long)(s->m ? s->m->run.lost : 0));
	if (m != sm)
		fprintf(out, "Metric: %s, total %llu\n", metric_name(s, m, buf, sizeof(buf)),
			(unsigned long long)total);
}

/* print_totals() of the tree of @s, whose weights for metric @m are @w. */
static void print_tree_totals(FILE *out, const struct nw_stacks *s, const struct weights *w,
			      unsigned m)
{
	unsigned sm = samples_metric(s, m);
	uint64_t samples = 0;

	for (uint32_t i = 0; i < s->tree->n; i++)
		samples += node_metric(s->tree, i, sm);
	print_totals(out, s, samples, w->incl[NW_CCT_ROOT], m);
}

/* ---- tree ---- */

struct child_cmp_ctx {
	const struct nw_stacks *s;
	const uint64_t *incl;
	bool full;
};

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct child_cmp_ctx *c = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int r;

	if (c->incl[x] != c->incl[y])
		return c->incl[x] > c->incl[y] ? -1 : 1;
	r = strcmp(func_name(c->s, x, c->full), func_name(c->s, y, c->full));
	if (r)
		return r;
	x = (uint32_t)c->s->tree->nodes[x].ip;
	y = (uint32_t)c->s->tree->nodes[y].ip;
	return x < y ? -1 : x > y;
}

int nw_view_tree(FILE *out, const struct nw_stacks *s, const struct nw_view_opts *o)
{
	const struct nw_cct *tree = s->tree;
	struct child_cmp_ctx ctx = { .s = s, .full = o->full_names };
	uint32_t *stack = NULL, *depth = NULL, sp = 0;
	uint64_t total;
	struct weights w;
	char buf[32];
	int ret;

	ret = weights_init(&w, s, o->metric);
	if (ret)
		return ret;
	ctx.incl = w.incl;
	total = w.incl[NW_CCT_ROOT];
	/* Each node is pushed once: room for all of them is enough. */
	stack = malloc((size_t)tree->n * sizeof(*stack));
	depth = malloc((size_t)tree->n * sizeof(*depth));
	if (!stack || !depth) {
		ret = -ENOMEM;
		goto out;
	}

	fputs("Command:", out);
	for (uint32_t i = 0; s->m && i < s->m->run.argc; i++)
		fprintf(out, " %s", s->m->run.argv[i] ? s->m->run.argv[i] : "");
	fprintf(out, "\nEvent: %s\n",
		s->m && o->metric < s->m->nmetrics ? s->m->metrics[o->metric].event
						   : metric_name(s, o->metric, buf, sizeof(buf)));
	print_tree_totals(out, s, &w, o->metric);
	fprintf(out, "Threads: %u\n\n", s->nthreads);
	fputs(" INCL%   SELF%  FUNCTION\n", out);

	/* Depth-first, children by inclusive weight: push them in reverse. */
	for (uint32_t c = tree->nodes[NW_CCT_ROOT].first_child; c != NW_CCT_NONE;
	     c = tree->nodes[c].next_sibling) {
		stack[sp] = c;
		depth[sp++] = 0;
	}
	qsort_r(stack, sp, sizeof(*stack), cmp_child, &ctx);
	for (uint32_t a = 0, b = sp; a + 1 < b; a++, b--) {
		uint32_t tmp = stack[a];

		stack[a] = stack[b - 1];
		stack[b - 1] = tmp;
	}
	while (sp > 0) {
		uint32_t node = stack[--sp], d = depth[sp], first = sp;

		if (pct(w.incl[node], total) < o->percent_limit)
			continue;
		fprintf(out, "%5.1f%%  %5.1f%%  %*s%s\n", pct(w.incl[node], total),
			pct(self_of(&w, node), total), (int)(2 * (d < 1000000 ? d : 1000000)), "",
			func_name(s, node, o->full_names));
		for (uint32_t c = tree->nodes[node].first_child; c != NW_CCT_NONE;
		     c = tree->nodes[c].next_sibling) {
			stack[sp] = c;
			depth[sp++] = d + 1;
		}
		qsort_r(stack + first, sp - first, sizeof(*stack), cmp_child, &ctx);
		for (uint32_t a = first, b = sp; a + 1 < b; a++, b--) {
			uint32_t tmp = stack[a];

			stack[a] = stack[b - 1];
			stack[b - 1] = tmp;
		}
	}
	ret = finish(out);
out:
	free(stack);
	free(depth);
	weights_fini(&w);
	return ret;
}

/* ---- flat ---- */

struct flat_row {
	uint32_t func;
	uint64_t self, cumul;
};

struct row_ctx {
	const struct nw_frames *p;
	bool full;
};

static int cmp_row(const void *a, const void *b, void *arg)
{
	const struct row_ctx *c = arg;
	const struct nw_frames *p = c->p;
	const struct flat_row *x = a, *y = b;
	int r;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->cumul != y->cumul)
		return x->cumul > y->cumul ? -1 : 1;
	r = strcmp(nw_func_name(&p->v[x->func], c->full), nw_func_name(&p->v[y->func], c->full));
	if (r)
		return r;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* The rows by weight, then the lines of those with any; @total the metric's. */
static int print_flat(FILE *out, const struct nw_stacks *s, struct flat_row *rows,
		      uint32_t nfuncs, uint64_t total, const struct nw_view_opts *o)
{
	struct row_ctx rc = { &s->frames, o->full_names };

	qsort_r(rows, nfuncs, sizeof(*rows), cmp_row, &rc);
	fputs("\n SELF%  CUMUL%  FUNCTION\n", out);
	for (uint32_t i = 0; i < nfuncs; i++) {
		const struct nw_func *f = &s->frames.v[rows[i].func];

		if (!rows[i].cumul)
			continue;
		fprintf(out, "%5.1f%%  %5.1f%%  %s", pct(rows[i].self, total),
			pct(rows[i].cumul, total), nw_func_name(f, o->full_names));
		if (f->file && f->line)
			fprintf(out, " (%s:%u)", nw_basename(f->file), f->line);
		else if (f->file)
			fprintf(out, " (%s)", nw_basename(f->file));
		fputc('\n', out);
	}
	return finish(out);
}

/*
 * The flat sums from the visits of the stacks (merged as they are
 * visited, or walked in a tree): each node's self weight on its frame as
 * it comes; its inclusive weight, known once the walk leaves it (a node
 * at its depth or above comes, or the end), on its frame when no node
 * above it on the path has that frame (recursion does not count twice),
 * and on its parent's.  In each of the metrics asked for.
 */
struct flat_stream {
	const struct nw_stacks *s;
	const unsigned *metrics;
	unsigned nm;
	struct nw_flat_sums *f;
	size_t nframes, cap_self, cap_cumul, cap_onpath;  /* frames with sums; capacities */
	uint32_t *onpath;         /* per frame: nodes of it on the path */
	uint32_t *path;           /* the frames of the path, root's child first */
	size_t npath, cap_path;
	uint64_t *incl_pool;      /* their inclusive weights so far, @nm each */
	size_t cap_pool;
};

/* Leaves the path's nodes at depth @depth and below. */
static void flat_leave(struct flat_stream *st, uint32_t depth)
{
	unsigned nm = st->nm;

	while (st->npath >= depth && st->npath) {
		uint32_t frame = st->path[--st->npath];
		uint64_t *incl = st->incl_pool + st->npath * nm;

		if (--st->onpath[frame] == 0)
			for (unsigned k = 0; k < nm; k++)
				st->f->cumul[(size_t)frame * nm + k] += incl[k];
		if (st->npath)
			for (unsigned k = 0; k < nm; k++)
				(incl - nm)[k] += incl[k];
	}
}

/* Frames are found as the trees are read: sums for the new ones.  -ENOMEM. */
static int flat_rows_fit(struct flat_stream *st)
{
	size_t had = st->nframes, n = st->s->frames.n, nm = st->nm;

	if (n <= had)
		return 0;
	if (nw_grow(&st->f->self, &st->cap_self, n * nm, sizeof(uint64_t)) ||
	    nw_grow(&st->f->cumul, &st->cap_cumul, n * nm, sizeof(uint64_t)) ||
	    nw_grow(&st->onpath, &st->cap_onpath, n, sizeof(*st->onpath)))
		return -ENOMEM;
	memset(st->f->self + had * nm, 0, (n - had) * nm * sizeof(uint64_t));
	memset(st->f->cumul + had * nm, 0, (n - had) * nm * sizeof(uint64_t));
	memset(st->onpath + had, 0, (n - had) * sizeof(*st->onpath));
	st->nframes = n;
	return 0;
}

static int flat_visit(void *arg, const struct nw_visit *v)
{
	struct flat_stream *st = arg;
	unsigned nm = st->nm;
	uint64_t *incl;

	if (flat_rows_fit(st))
		return -ENOMEM;
	flat_leave(st, v->depth);
	if (nw_grow(&st->path, &st->cap_path, st->npath + 1, sizeof(*st->path)) ||
	    nw_grow(&st->incl_pool, &st->cap_pool, (st->npath + 1) * nm, sizeof(uint64_t)))
		return -ENOMEM;
	incl = st->incl_pool + st->npath * nm;
	st->path[st->npath++] = v->frame;
	st->onpath[v->frame]++;
	for (unsigned k = 0; k < nm; k++) {
		uint64_t self = v->metrics[st->metrics[k]];

		incl[k] = self;
		st->f->self[(size_t)v->frame * nm + k] += self;
		st->f->total[k] += self;
	}
	return 0;
}

int nw_flat_sums(struct nw_stacks *s, const unsigned *metrics, unsigned nm, struct nw_flat_sums *f)
{
	struct flat_stream st = { .s = s, .metrics = metrics, .nm = nm, .f = f };
	int ret;

	memset(f, 0, sizeof(*f));
	for (unsigned k = 0; k < nm; k++)
		if (metrics[k] >= s->tree->nmetrics)
			return -EINVAL;
	f->nm = nm;
	f->total = calloc(nm ? nm : 1, sizeof(*f->total));
	ret = f->total ? nw_stacks_visit(s, false, flat_visit, &st) : -ENOMEM;
	if (!ret)
		ret = flat_rows_fit(&st);
	if (!ret) {
		flat_leave(&st, 1);
		/* The root's own weight: samples without a stack. */
		for (unsigned k = 0; k < nm; k++)
			f->total[k] += nw_cct_metrics(s->tree, NW_CCT_ROOT)[metrics[k]];
		f->nframes = s->frames.n;
	}
	free(st.onpath);
	free(st.path);
	free(st.incl_pool);
	if (ret)
		nw_flat_sums_fini(f);
	return ret;
}

void nw_flat_sums_fini(struct nw_flat_sums *f)
{
	free(f->self);
	free(f->cumul);
	free(f->total);
	memset(f, 0, sizeof(*f));
}

int nw_view_flat(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o)
{
	const unsigned metrics[2] = { o->metric, samples_metric(s, o->metric) };
	struct nw_flat_sums f;
	struct flat_row *rows;
	int ret;

	if (o->metric >= s->tree->nmetrics)
		return -EINVAL;
	ret = nw_flat_sums(s, metrics, 2, &f);
	if (ret)
		return ret;
	rows = malloc((f.nframes ? f.nframes : 1) * sizeof(*rows));
	if (!rows) {
		nw_flat_sums_fini(&f);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < f.nframes; i++)
		rows[i] = (struct flat_row){ i, f.self[2 * i], f.cumul[2 * i] };
	print_totals(out, s, f.total[1], f.total[0], o->metric);
	ret = print_flat(out, s, rows, f.nframes, f.total[0], o);
	free(rows);
	nw_flat_sums_fini(&f);
	return ret;
}

/* ---- threads ---- */

struct thread_row {
	const struct nw_mthread *th;
	uint64_t samples;
};

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->th->pid != y->th->pid)
		return x->th->pid < y->th->pid ? -1 : 1;
	return x->th->tid < y->th->tid ? -1 : x->th->tid > y->th->tid;
}

/*
 * With more than one event, the threads view adds a column per metric
 * that tells something the samples do not: times in seconds (a clock's
 * period, off-CPU time), the other events' sample counts, and the bytes
 * allocated and still live (--alloc).
 */
static bool extra_column(const struct nw_measurement *m, unsigned i)
{
	const struct nw_metric *d = &m->metrics[i];
	int first = nw_measurement_find_metric(m, NULL);

	if (m->nmetrics <= 2)
		return false;
	return d->unit == NW_UNIT_NANOSECONDS || (d->kind == NW_METRIC_SAMPLES && (int)i != first) ||
	       d->kind == NW_METRIC_ALLOC_BYTES || d->kind == NW_METRIC_INUSE_BYTES;
}

bool nw_view_threads_needs_trees(const struct nw_measurement *m)
{
	for (unsigned i = 0; i < m->nmetrics; i++)
		if (extra_column(m, i))
			return true;
	return false;
}

int nw_view_threads(FILE *out, const struct nw_measurement *m, const struct nw_filter *f)
{
	struct thread_row *v;
	uint32_t n = 0;
	uint64_t total = 0, *sums;

	v = malloc((m->nthreads ? m->nthreads : 1) * sizeof(*v));
	sums = malloc((m->nmetrics ? m->nmetrics : 1) * sizeof(*sums));
	if (!v || !sums) {
		free(v);
		free(sums);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->nthreads; i++) {
		if (!nw_filter_thread(f, &m->threads[i]))
			continue;
		v[n].th = &m->threads[i];
		v[n].samples = m->threads[i].samples;
		total += v[n++].samples;
	}
	qsort(v, n, sizeof(*v), cmp_thread);
	fprintf(out, "%8s %8s  %-16s %10s  %6s", "PID", "TID", "NAME", "SAMPLES", "SHARE%");
	for (unsigned i = 0; i < m->nmetrics; i++) {
		const struct nw_metric *d = &m->metrics[i];
		char head[80];

		if (!extra_column(m, i))
			continue;
		snprintf(head, sizeof(head), "%s%s",
			 nw_metric_kind_is_weighed(d->kind) ? d->name : d->event,
			 d->unit == NW_UNIT_NANOSECONDS ? " s" : "");
		fprintf(out, "  %14s", head);
	}
	fputs("  PROCESS\n", out);
	for (uint32_t k = 0; k < n; k++) {
		const struct nw_mthread *th = v[k].th;
		const struct nw_mprocess *proc;

		fprintf(out, "%8u %8u  %-16s %10llu  %5.1f%%", th->pid, th->tid,
			th->comm ? th->comm : "", (unsigned long long)v[k].samples,
			pct(v[k].samples, total));
		if (nw_view_threads_needs_trees(m))
			nw_mthread_totals(th, m->nmetrics, sums);
		for (unsigned i = 0; i < m->nmetrics; i++) {
			uint64_t sum = sums[i];

			if (!extra_column(m, i))
				continue;
			if (m->metrics[i].unit == NW_UNIT_NANOSECONDS)
				fprintf(out, "  %14.3f", (double)sum / 1e9);
			else
				fprintf(out, "  %14llu", (unsigned long long)sum);
		}
		/* One word, last: spaces of the name become '_' (as in thread frames). */
		proc = nw_measurement_process(m, th->pid);
		fputs("  ", out);
		for (const char *c = proc && proc->comm && proc->comm[0] ? proc->comm : "?"; *c; c++)
			fputc(*c == ' ' ? '_' : *c, out);
		fputc('\n', out);
	}
	free(v);
	free(sums);
	return finish(out);
}

/* ---- modules ---- */

struct module_row {
	const char *name;
	uint64_t self, cumul;
};

static int cmp_module(const void *a, const void *b)
{
	const struct module_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->cumul != y->cumul)
		return x->cumul > y->cumul ? -1 : 1;
	return strcmp(x->name, y->name);
}

int nw_view_modules(FILE *out, const struct nw_stacks *s, const struct nw_view_opts *o)
{
	const struct nw_cct *t = s->tree;
	struct module_row *rows = calloc(s->frames.n + 1, sizeof(*rows));
	uint32_t *mod_of = malloc((s->frames.n + 1) * sizeof(*mod_of));
	uint32_t *onpath = NULL, nrows = 0, node;
	struct weights w;
	uint64_t total;
	int ret;

	ret = weights_init(&w, s, o->metric);
	if (ret) {
		free(rows);
		free(mod_of);
		return ret;
	}
	ret = -ENOMEM;
	onpath = calloc(s->frames.n + 1, sizeof(*onpath));
	if (!rows || !mod_of || !onpath)
		goto out;
	/* One row per module path; frames without one are "[unknown]". */
	for (uint32_t f = 0; f < s->frames.n; f++) {
		const struct nw_func *fn = &s->frames.v[f];
		const char *name = fn->module ? fn->module : "[unknown]";
		uint32_t r;

		mod_of[f] = UINT32_MAX;
		if (fn->kind == NW_FRAME_THREAD)
			continue;
		for (r = 0; r < nrows && strcmp(rows[r].name, name); r++)
			;
		if (r == nrows)
			rows[nrows++].name = name;
		mod_of[f] = r;
	}
	/* Cumulative: a module once per stack, as flat counts a function. */
	node = t->nodes[NW_CCT_ROOT].first_child;
	while (node != NW_CCT_NONE) {
		uint32_t r = mod_of[t->nodes[node].ip];

		if (r != UINT32_MAX) {
			if (onpath[r]++ == 0)
				rows[r].cumul += w.incl[node];
			rows[r].self += self_of(&w, node);
		}
		if (t->nodes[node].first_child != NW_CCT_NONE) {
			node = t->nodes[node].first_child;
			continue;
		}
		for (;;) {
			r = mod_of[t->nodes[node].ip];
			if (r != UINT32_MAX)
				onpath[r]--;
			if (t->nodes[node].next_sibling != NW_CCT_NONE) {
				node = t->nodes[node].next_sibling;
				break;
			}
			node = t->nodes[node].parent;
			if (node == NW_CCT_ROOT) {
				node = NW_CCT_NONE;
				break;
			}
		}
	}
	qsort(rows, nrows, sizeof(*rows), cmp_module);
	total = w.incl[NW_CCT_ROOT];
	print_tree_totals(out, s, &w, o->metric);
	fputs("\n SELF%  CUMUL%     SAMPLES  MODULE\n", out);
	for (uint32_t r = 0; r < nrows; r++) {
		if (!rows[r].cumul)
			continue;
		fprintf(out, "%5.1f%%  %5.1f%%  %10llu  %s\n", pct(rows[r].self, total),
			pct(rows[r].cumul, total), (unsigned long long)rows[r].self,
			o->full_names ? rows[r].name : nw_basename(rows[r].name));
	}
	ret = finish(out);
out:
	free(rows);
	free(mod_of);
	free(onpath);
	weights_fini(&w);
	return ret;
}

/* ---- leaks ---- */

struct leak_row {
	uint32_t node;
	uint64_t bytes, objects;
};

static int cmp_leak(const void *a, const void *b)
{
	const struct leak_row *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

int nw_view_leaks(FILE *out, const struct nw_stacks *s, const struct nw_view_opts *o)
{
	int mb = s->m ? nw_measurement_find_metric(s->m, "inuse-bytes") : -ENOENT;
	int mo = s->m ? nw_measurement_find_metric(s->m, "inuse-objects") : -ENOENT;
	const struct nw_cct *t = s->tree;
	struct leak_row *rows;
	uint64_t bytes = 0, objects = 0;
	size_t n = 0;

	if (mb < 0 || mo < 0 || (unsigned)mb >= t->nmetrics || (unsigned)mo >= t->nmetrics)
		return -ENOENT;
	rows = calloc(t->n ? t->n : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	/* Each calling context with live bytes of its own is one path. */
	for (uint32_t i = 1; i < t->n; i++) {
		const uint64_t *m = nw_cct_metrics(t, i);

		if (!m[mb] && !m[mo])
			continue;
		rows[n++] = (struct leak_row){ i, m[mb], m[mo] };
		bytes += m[mb];
		objects += m[mo];
	}
	qsort(rows, n, sizeof(*rows), cmp_leak);
	if (s->m)
		print_run_state(out, &s->m->run);
	fprintf(out, "Leaks: %llu bytes in %llu objects still live at exit, from %zu call path%s\n",
		(unsigned long long)bytes, (unsigned long long)objects, n, n == 1 ? "" : "s");
	for (size_t r = 0; r < n; r++) {
		fprintf(out, "\n%llu bytes in %llu objects (%.1f%%) allocated from:\n",
			(unsigned long long)rows[r].bytes, (unsigned long long)rows[r].objects,
			pct(rows[r].bytes, bytes));
		/* Leaf first, as a stack trace reads. */
		for (uint32_t k = rows[r].node; k != NW_CCT_ROOT && k < t->n; k = t->nodes[k].parent) {
			const struct nw_func *f = &s->frames.v[t->nodes[k].ip];

			fprintf(out, "    %s", nw_func_name(f, o->full_names));
			if (f->file && f->line)
				fprintf(out, " (%s:%u)", nw_basename(f->file), f->line);
			else if (f->file)
				fprintf(out, " (%s)", nw_basename(f->file));
			fputc('\n', out);
		}
	}
	free(rows);
	return finish(out);
}
