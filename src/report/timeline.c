/* SPDX-License-Identifier: MIT */
/* The time dimension: threads' events with their stacks, and --timeline; see timeline.h. */
#include "report/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/parallel.h"
#include "util/strbuf.h"

void nw_timeline_free(struct nw_timeline *tl)
{
	if (!tl)
		return;
	for (uint32_t i = 0; i < tl->n; i++)
		free(tl->threads[i].v);
	free(tl->threads);
	free(tl);
}

/* The part of [start, start + ns) inside [lo, hi), as (start, ns); ns 0 when none. */
static void clip(uint64_t *start, uint64_t *ns, uint64_t lo, uint64_t hi)
{
	uint64_t end = *ns > UINT64_MAX - *start ? UINT64_MAX : *start + *ns;
	uint64_t a = *start > lo ? *start : lo, b = end < hi ? end : hi;

	*start = a;
	*ns = b > a ? b - a : 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct nw_tl_event *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * Sorts @n events by time.  Traces are in time order but for rare
 * reorderings across CPUs: a pass finds the few events out of place, and
 * an insertion sort moves them (O(n) for what traces hold); many of them,
 * a full sort.
 */
static void sort_events(struct nw_tl_event *v, size_t n)
{
	size_t descents = 0;

	for (size_t i = 1; i < n; i++)
		descents += v[i].time < v[i - 1].time;
	if (!descents)
		return;
	if (descents > n / 64 + 16) {
		qsort(v, n, sizeof(*v), cmp_event);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		struct nw_tl_event e = v[i];
		size_t k = i;

		for (; k > 0 && v[k - 1].time > e.time; k--)
			v[k] = v[k - 1];
		v[k] = e;
	}
}

/* Events decoded ahead of their symbolic nodes: the node map's entries fetched meanwhile. */
#define BATCH 32

/* Thread @ti's events in [tl->lo, tl->hi) into @t.  -EBADMSG, -ENOMEM. */
static int build_thread(const struct nw_timeline *tl, uint32_t ti, struct nw_tl_thread *t)
{
	const struct nw_measurement *m = tl->s->m;
	const struct nw_mthread *th = &m->threads[ti];
	uint32_t *const *map = tl->s->node_map[ti];
	struct nw_trace_reader r;
	struct nw_trace_event batch[BATCH];
	int tree_of[BATCH];
	uint32_t last_epoch = UINT32_MAX;
	int tree = -1, rc = 1;

	t->thread = ti;
	t->n = 0;
	t->first = UINT64_MAX;
	t->last = 0;
	/* The room of a thread read before is used again. */
	if (nw_grow(&t->v, &t->cap, th->trace->n ? th->trace->n : 1, sizeof(*t->v)))
		return -ENOMEM;
	nw_trace_reader_init(&r, th->trace);
	while (rc == 1) {
		size_t n = 0;

		/*
		 * A batch decoded and checked first: each event's node map
		 * entry is far from the last one's, and all of the batch's
		 * are on their way before the first is read.
		 */
		for (; n < BATCH && (rc = nw_trace_next(&r, &batch[n])) == 1; n++) {
			const struct nw_trace_event *ev = &batch[n];

			if (ev->epoch != last_epoch) {
				tree = nw_mthread_tree_of(m, th, ev->epoch);
				last_epoch = ev->epoch;
			}
			if (tree < 0 || !map[tree] || ev->node >= th->trees[tree].cct->n)
				return -EBADMSG;
			tree_of[n] = tree;
			__builtin_prefetch(&map[tree][ev->node]);
		}
		for (size_t k = 0; k < n; k++) {
			struct nw_trace_event *ev = &batch[k];
			struct nw_tl_event *e;
			uint64_t end;

			if (ev->kind == NW_TRACE_OFFCPU) {
				clip(&ev->time, &ev->value, tl->lo, tl->hi);
				if (!ev->value)
					continue;
			} else if (ev->time < tl->lo || ev->time >= tl->hi) {
				continue;
			}
			e = &t->v[t->n++];
			*e = (struct nw_tl_event){ .time = ev->time, .value = ev->value,
						   .sym = map[tree_of[k]][ev->node],
						   .event = ev->event, .kind = ev->kind };
			end = ev->kind == NW_TRACE_OFFCPU ? ev->time + ev->value : ev->time;
			if (ev->time < t->first)
				t->first = ev->time;
			if (end > t->last)
				t->last = end;
		}
	}
	if (rc < 0)
		return -EBADMSG;
	/* Alive from its creation to its exit where the recorder saw them, not only between events. */
	if (th->first_ns && th->last_ns >= th->first_ns && th->last_ns >= tl->lo &&
	    th->first_ns < tl->hi) {
		uint64_t a = th->first_ns > tl->lo ? th->first_ns : tl->lo;
		uint64_t b = th->last_ns < tl->hi ? th->last_ns : tl->hi - 1;

		if (a < t->first)
			t->first = a;
		if (b > t->last)
			t->last = b;
	}
	sort_events(t->v, t->n);
	return 0;
}

struct build_pool {
	struct nw_timeline *tl;
	int *rc;
};

static void build_job(void *arg, uint32_t i)
{
	struct build_pool *p = arg;

	p->rc[i] = build_thread(p->tl, p->tl->threads[i].thread, &p->tl->threads[i]);
}

int nw_timeline_open(const struct nw_stacks *s, const struct nw_filter *f,
		     struct nw_timeline **ret)
{
	const struct nw_measurement *m = s->m;
	struct nw_timeline *tl;

	if (!m || !s->node_map)
		return -EINVAL;
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return -ENOMEM;
	tl->s = s;
	tl->origin = m->run.clock_start_ns;
	if (m->time_hi > m->time_lo) {
		tl->lo = m->time_lo;
		tl->hi = m->time_hi;
	} else {
		tl->lo = m->run.clock_start_ns;
		/* The run's end included: its last event may be at its end. */
		tl->hi = m->run.clock_end_ns > tl->lo ? m->run.clock_end_ns + 1 : UINT64_MAX;
	}
	tl->threads = calloc(m->nthreads ? m->nthreads : 1, sizeof(*tl->threads));
	if (!tl->threads) {
		free(tl);
		return -ENOMEM;
	}
	for (uint32_t ti = 0; ti < m->nthreads; ti++) {
		if (!m->threads[ti].trace || !nw_filter_thread(f, &m->threads[ti]) ||
		    !s->node_map[ti])
			continue;
		tl->threads[tl->n++].thread = ti;
	}
	if (!tl->n) {
		nw_timeline_free(tl);
		return -ENODATA;
	}
	*ret = tl;
	return 0;
}

int nw_timeline_read_thread(const struct nw_timeline *tl, uint32_t i, struct nw_tl_thread *t)
{
	return build_thread(tl, tl->threads[i].thread, t);
}

int nw_timeline_build(const struct nw_stacks *s, const struct nw_filter *f,
		      struct nw_timeline **ret)
{
	struct build_pool pool;
	struct nw_timeline *tl;
	int rc = nw_timeline_open(s, f, &tl);

	if (rc)
		return rc;
	/* Each thread's events read and sorted on their own, side by side. */
	pool = (struct build_pool){ .tl = tl };
	pool.rc = calloc(tl->n, sizeof(*pool.rc));
	if (!pool.rc) {
		nw_timeline_free(tl);
		return -ENOMEM;
	}
	nw_parallel_for(tl->n, 0, build_job, &pool);
	for (uint32_t i = 0; i < tl->n && !rc; i++)
		rc = pool.rc[i];
	free(pool.rc);
	if (!rc && tl->hi == UINT64_MAX) {
		/* No end recorded: the last event's. */
		tl->hi = tl->lo + 1;
		for (uint32_t i = 0; i < tl->n; i++)
			if (tl->threads[i].last >= tl->hi)
				tl->hi = tl->threads[i].last + 1;
	}
	if (rc) {
		nw_timeline_free(tl);
		return rc;
	}
	*ret = tl;
	return 0;
}

int nw_timeline_stack(const struct nw_timeline *tl, uint32_t sym, uint32_t **path, size_t *cap)
{
	const struct nw_stacks *s = tl->s;
	const struct nw_cct *t = s->tree;
	size_t n = 0;

	for (uint32_t i = sym; i != NW_CCT_ROOT && i < t->n; i = t->nodes[i].parent) {
		uint32_t f = (uint32_t)t->nodes[i].ip;

		if (s->frames.v[f].kind == NW_FRAME_THREAD)
			continue;
		if (nw_grow(path, cap, n + 1, sizeof(**path)))
			return -ENOMEM;
		(*path)[n++] = f;
	}
	for (size_t a = 0, b = n; a + 1 < b; a++, b--) {
		uint32_t x = (*path)[a];

		(*path)[a] = (*path)[b - 1];
		(*path)[b - 1] = x;
	}
	return (int)n;
}

uint16_t nw_timeline_event(const struct nw_measurement *m, unsigned metric)
{
	uint16_t first = 0;
	bool have_first = false;

	for (uint32_t e = 0; e < m->run.nevents; e++) {
		int count, sum;
		bool offcpu;

		nw_measurement_event_metrics(m, e, &count, &sum);
		offcpu = (count >= 0 && m->metrics[count].kind == NW_METRIC_SWITCHES) ||
			 (sum >= 0 && m->metrics[sum].kind == NW_METRIC_OFFCPU_TIME);
		if (offcpu)
			continue;
		if (!have_first) {
			first = (uint16_t)e;
			have_first = true;
		}
		if (metric < m->nmetrics && !strcmp(m->metrics[metric].event, m->run.events[e].name))
			return (uint16_t)e;
	}
	return first;
}

/* ---- --timeline ---- */

#define LETTERS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#define NLETTERS 52

struct row {
	const struct nw_tl_thread *t;
	double *on, *off;      /* per column: ns (or samples) on the CPU, ns off it */
	uint32_t *hot;         /* per column: the hottest leaf frame, UINT32_MAX none */
	uint64_t samples;
};

struct fcount {
	uint32_t col, frame;
};

static int cmp_fcount(const void *a, const void *b)
{
	const struct fcount *x = a, *y = b;

	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

struct view {
	const struct nw_timeline *tl;
	const struct nw_timeline_opts *o;
	unsigned w;
	uint16_t event;
	bool time_unit;        /* the event's period is nanoseconds */
	double col_ns;
	uint64_t *frame_samples; /* per frame: leaf samples over every row */
	int32_t *letter;       /* per frame: its letter, -1 none */
};

static uint32_t col_of(const struct view *v, uint64_t t)
{
	double c = (double)(t - v->tl->lo) / v->col_ns;

	return c >= v->w ? v->w - 1 : (uint32_t)c;
}

/* The columns of one thread.  -ENOMEM. */
static int fill_row(struct view *v, struct row *r)
{
	const struct nw_cct *tree = v->tl->s->tree;
	struct fcount *fc = NULL;
	size_t nfc = 0;

	r->on = calloc(v->w, sizeof(*r->on));
	r->off = calloc(v->w, sizeof(*r->off));
	r->hot = malloc(v->w * sizeof(*r->hot));
	if (v->o->functions)
		fc = malloc((r->t->n ? r->t->n : 1) * sizeof(*fc));
	if (!r->on || !r->off || !r->hot || (v->o->functions && !fc)) {
		free(fc);
		return -ENOMEM;
	}
	for (uint32_t c = 0; c < v->w; c++)
		r->hot[c] = UINT32_MAX;
	for (size_t k = 0; k < r->t->n; k++) {
		const struct nw_tl_event *e = &r->t->v[k];

		if (e->kind == NW_TRACE_OFFCPU) {
			/* Spread over the columns it covers. */
			uint64_t t = e->time, end = e->time + e->value;
			uint32_t c = col_of(v, t);

			while (t < end) {
				uint64_t cend = c + 1 >= v->w
							? end
							: v->tl->lo + (uint64_t)((c + 1) * v->col_ns);

				if (cend > end)
					cend = end;
				if (cend > t) {
					r->off[c] += (double)(cend - t);
					t = cend;
				}
				if (c + 1 < v->w)
					c++;
			}
			continue;
		}
		if (e->event != v->event)
			continue;
		r->on[col_of(v, e->time)] += v->time_unit ? (double)e->value : 1.0;
		r->samples++;
		if (fc)
			fc[nfc++] = (struct fcount){ col_of(v, e->time),
						     (uint32_t)tree->nodes[e->sym].ip };
	}
	if (fc) {
		qsort(fc, nfc, sizeof(*fc), cmp_fcount);
		for (size_t i = 0; i < nfc;) {
			size_t j = i, best = 0;
			uint32_t col = fc[i].col;

			while (j < nfc && fc[j].col == col) {
				size_t e = j;

				while (e < nfc && fc[e].col == col && fc[e].frame == fc[j].frame)
					e++;
				v->frame_samples[fc[j].frame] += e - j;
				if (e - j > best) {
					best = e - j;
					r->hot[col] = fc[j].frame;
				}
				j = e;
			}
			i = j;
		}
	}
	free(fc);
	return 0;
}

/* Is column @c of @r's thread inside its lifetime? */
static bool alive(const struct view *v, const struct row *r, uint32_t c)
{
	uint64_t a = v->tl->lo + (uint64_t)(c * v->col_ns);
	uint64_t b = v->tl->lo + (uint64_t)((c + 1) * v->col_ns);

	return r->t->n && r->t->first < b && r->t->last >= a;
}

static char cell(const struct view *v, const struct row *r, uint32_t c, double max_on)
{
	double on, off = r->off[c] / v->col_ns;

	if (!alive(v, r, c))
		return ' ';
	on = v->time_unit ? r->on[c] / v->col_ns : (max_on > 0 ? r->on[c] / max_on : 0);
	if (v->o->functions && r->hot[c] != UINT32_MAX) {
		int32_t l = v->letter[r->hot[c]];

		return l >= 0 ? LETTERS[l] : '?';
	}
	if (off >= 0.5 && on < 0.1)
		return '_';
	if (on < 0.05)
		return '.';
	if (on >= 0.95)
		return '#';
	return (char)('0' + (on * 10 < 1 ? 1 : (int)(on * 10)));
}

static int cmp_frame_desc(const void *a, const void *b, void *arg)
{
	const uint64_t *n = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (n[x] != n[y])
		return n[x] > n[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_row_first(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->t->first != y->t->first)
		return x->t->first < y->t->first ? -1 : 1;
	return x->t->thread < y->t->thread ? -1 : x->t->thread > y->t->thread;
}

static double secs(const struct nw_timeline *tl, uint64_t t)
{
	return t >= tl->origin ? (double)(t - tl->origin) / 1e9 : 0.0;
}

/* The legend of --timeline=functions: each letter's function and share. */
static int print_letters(FILE *out, struct view *v, uint64_t total)
{
	const struct nw_frames *fr = &v->tl->s->frames;
	uint32_t *order = malloc((fr->n ? fr->n : 1) * sizeof(*order));
	uint32_t n = 0;

	if (!order)
		return -ENOMEM;
	for (uint32_t f = 0; f < fr->n; f++)
		if (v->frame_samples[f])
			order[n++] = f;
	qsort_r(order, n, sizeof(*order), cmp_frame_desc, v->frame_samples);
	fputs("\nFunctions (the hottest of each cell; ? another):\n", out);
	for (uint32_t k = 0; k < n && k < NLETTERS; k++) {
		const struct nw_func *fn = &fr->v[order[k]];

		fprintf(out, "  %c  %5.1f%%  %s\n", LETTERS[k],
			total ? 100.0 * (double)v->frame_samples[order[k]] / (double)total : 0.0,
			nw_func_name(fn, v->o->full_names));
	}
	free(order);
	return 0;
}

/* Assigns letters to the frames by their samples over all rows, hottest first. */
static int assign_letters(struct view *v)
{
	const struct nw_frames *fr = &v->tl->s->frames;
	uint32_t *order = malloc((fr->n ? fr->n : 1) * sizeof(*order));
	uint32_t n = 0;

	if (!order)
		return -ENOMEM;
	for (uint32_t f = 0; f < fr->n; f++) {
		v->letter[f] = -1;
		if (v->frame_samples[f])
			order[n++] = f;
	}
	qsort_r(order, n, sizeof(*order), cmp_frame_desc, v->frame_samples);
	for (uint32_t k = 0; k < n && k < NLETTERS; k++)
		v->letter[order[k]] = (int32_t)k;
	free(order);
	return 0;
}

int nw_view_timeline(FILE *out, const struct nw_timeline *tl, const struct nw_timeline_opts *o)
{
	const struct nw_measurement *m = tl->s->m;
	struct view v = { .tl = tl, .o = o, .w = o->width ? o->width : 64 };
	struct row *rows = calloc(tl->n ? tl->n : 1, sizeof(*rows));
	uint32_t nframes = tl->s->frames.n ? tl->s->frames.n : 1;
	double max_on = 0;
	uint64_t total = 0;
	int count, sum, rc = 0;
	char *line = malloc(v.w + 1);
	bool offcpu = false;

	v.frame_samples = calloc(nframes, sizeof(*v.frame_samples));
	v.letter = malloc(nframes * sizeof(*v.letter));
	if (!rows || !line || !v.frame_samples || !v.letter) {
		rc = -ENOMEM;
		goto out;
	}
	v.event = nw_timeline_event(m, o->metric);
	nw_measurement_event_metrics(m, v.event, &count, &sum);
	v.time_unit = sum >= 0 && m->metrics[sum].unit == NW_UNIT_NANOSECONDS;
	v.col_ns = (double)(tl->hi - tl->lo) / v.w;
	for (uint32_t i = 0; i < tl->n && !rc; i++) {
		rows[i].t = &tl->threads[i];
		rc = fill_row(&v, &rows[i]);
		total += rows[i].samples;
		for (uint32_t c = 0; c < v.w && !rc; c++) {
			if (rows[i].on[c] > max_on)
				max_on = rows[i].on[c];
			offcpu |= rows[i].off[c] > 0;
		}
	}
	if (!rc && o->functions)
		rc = assign_letters(&v);
	if (rc)
		goto out;
	qsort(rows, tl->n, sizeof(*rows), cmp_row_first);

	fprintf(out, "Timeline: %.3f s to %.3f s in %u columns of %.1f ms (%s samples)\n",
		secs(tl, tl->lo), secs(tl, tl->hi), v.w, v.col_ns / 1e6,
		v.event < m->run.nevents ? m->run.events[v.event].name : "?");
	if (o->functions)
		fputs("Each cell: the thread's hottest function (letters below); . no samples, "
		      "blank: not alive\n\n", out);
	else
		fprintf(out, "Each cell: how busy the thread was: 1-9 tenths of the time on the "
			     "CPU, # all of it, . idle%s, blank: not alive\n\n",
			offcpu ? ", _ off the CPU (blocked, or waiting for a CPU)" : "");
	/* The time axis: the start, the middle and the end of the range. */
	{
		char ruler[64];
		int pad = 40;

		memset(line, ' ', v.w);
		line[v.w] = 0;
		snprintf(ruler, sizeof(ruler), "%.3fs", secs(tl, tl->lo));
		memcpy(line, ruler, strlen(ruler) < v.w ? strlen(ruler) : v.w);
		snprintf(ruler, sizeof(ruler), "%.3fs", secs(tl, tl->lo + (tl->hi - tl->lo) / 2));
		if (strlen(ruler) + v.w / 2 < v.w && v.w >= 32)
			memcpy(line + v.w / 2, ruler, strlen(ruler));
		snprintf(ruler, sizeof(ruler), "%.3fs", secs(tl, tl->hi));
		if (strlen(ruler) < v.w / 3)
			memcpy(line + v.w - strlen(ruler), ruler, strlen(ruler));
		fprintf(out, "%*s %s\n", pad, "", line);
		fprintf(out, "%-16s %7s  %-13s |", "PROCESS", "TID", "THREAD");
		for (uint32_t c = 0; c < v.w; c++)
			fputc(c % 10 ? '-' : '+', out);
		fputs("| BUSY%\n", out);
	}
	for (uint32_t i = 0; i < tl->n; i++) {
		const struct nw_mthread *th = &m->threads[rows[i].t->thread];
		const struct nw_mprocess *p = nw_measurement_process(m, th->pid);
		uint64_t life = rows[i].t->last > rows[i].t->first
					? rows[i].t->last - rows[i].t->first
					: 1;
		double busy = 0;

		for (uint32_t c = 0; c < v.w; c++) {
			line[c] = cell(&v, &rows[i], c, max_on);
			busy += rows[i].on[c];
		}
		line[v.w] = 0;
		fprintf(out, "%-16.16s %7u  %-13.13s |%s|", p && p->comm ? p->comm : "?", th->tid,
			th->comm ? th->comm : "?", line);
		if (v.time_unit)
			fprintf(out, " %5.1f", 100.0 * busy / (double)life > 100.0
						       ? 100.0
						       : 100.0 * busy / (double)life);
		fputc('\n', out);
	}
	if (o->functions)
		rc = print_letters(out, &v, total);
out:
	for (uint32_t i = 0; rows && i < tl->n; i++) {
		free(rows[i].on);
		free(rows[i].off);
		free(rows[i].hot);
	}
	free(rows);
	free(line);
	free(v.frame_samples);
	free(v.letter);
	if (!rc && (fflush(out) != 0 || ferror(out)))
		rc = -EIO;
	return rc;
}
