/* SPDX-License-Identifier: MIT */
/*
 * The speedscope export, written as it is walked: one sampled profile per
 * thread (its stacks, then their weights), then the frames the stacks
 * used.  JSON allows the keys in any order, so the frame table can follow
 * the profiles that fill it; nothing is held but the frame numbers.  Two
 * walks: the visits of each thread's stacks (the calling contexts once,
 * the same whether the stacks are merged as they are visited or a tree),
 * and the traces in time order.  Both write a stack as the one before it
 * cut and extended (append_stack(), path_push()).
 */
#include "export/speedscope.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "report/timeline.h"
#include "util/parallel.h"
#include "util/strbuf.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

struct ctx {
	const struct nw_stacks *p;
	FILE *out;
	unsigned metric;
	int64_t *frame_of;   /* per frame: index in shared.frames, or -1 */
	uint32_t *used;      /* frames in the order of their index */
	uint32_t nused;
	uint32_t *path;      /* the frames of the node being written, root first */
	size_t cap_path;
	char *line;          /* one sample's text */
	size_t cap_line;
	size_t *line_at;     /* in preorder: where each depth's frame ends in @line */
	size_t cap_line_at;
	/*
	 * In time order a stack comes back again and again: its text, made
	 * once (make_texts()), "[f,...,f" without its closing bracket.  Per
	 * node of the tree, where its text starts in @memo_text (+ 1; 0 when
	 * not made) and how long it is: one entry, one cache miss, for
	 * samples of stacks far apart.
	 */
	struct memo {
		uint32_t at, len;
	} *memo;
	char *memo_text;
	size_t memo_size, cap_memo;
	struct nw_strbuf out_buf; /* samples gathered before they go to @out */
	struct nw_strbuf weights; /* a profile's weights, written after its samples */
};

/* Samples ahead whose memo entries are fetched early. */
#define PREFETCH 8
/* Bytes of output gathered before they go to the stream. */
#define OUT_CHUNK ((size_t)64 << 10)
/* Threads read ahead of the one written, at most: their events are held meanwhile. */
#define MAX_TIMED 2
/* Bytes of stack text kept for reuse; beyond them, stacks are made each time. */
#define MEMO_MAX ((size_t)64 << 20)

/*
 * Room for @n bytes at the end of c->out_buf, which goes to the stream
 * by OUT_CHUNK: a stdio call per sample is a lock and a copy each.  NULL
 * on ENOMEM; nw_sb_end() ends what was written.
 */
static char *out_room(struct ctx *c, size_t n)
{
	if (c->out_buf.len && c->out_buf.len + n > OUT_CHUNK) {
		fwrite(c->out_buf.s, 1, c->out_buf.len, c->out);
		nw_sb_reset(&c->out_buf);
	}
	return nw_sb_room(&c->out_buf, n);
}

static void out_flush(struct ctx *c)
{
	if (c->out_buf.len)
		fwrite(c->out_buf.s, 1, c->out_buf.len, c->out);
	nw_sb_reset(&c->out_buf);
}

/* The shared frame of func @fi, numbered on first use. */
static int64_t frame_of(struct ctx *c, uint32_t fi)
{
	if (c->frame_of[fi] < 0) {
		c->used[c->nused] = fi;
		c->frame_of[fi] = c->nused++;
	}
	return c->frame_of[fi];
}

/*
 * Makes the text of the stack of the @d funcs in c->path (root first), a
 * JSON array of shared frame indexes, in c->line.  Its length; 0 on ENOMEM.
 */
static size_t format_stack(struct ctx *c, uint32_t d)
{
	char *q;

	/* 21 bytes per frame at most, and the brackets. */
	if (nw_grow(&c->line, &c->cap_line, 21 * (size_t)d + 3, 1))
		return 0;
	q = c->line;
	*q++ = '[';
	for (uint32_t j = 0; j < d; j++) {
		if (j)
			*q++ = ',';
		q = nw_put_u64(q, (uint64_t)frame_of(c, c->path[j]));
	}
	*q++ = ']';
	return (size_t)(q - c->line);
}

/*
 * Ends c->line with the stack of the @d funcs in c->path ('[' ... ']',
 * through c->line_at[d]), given that it holds them down to depth *@valid:
 * in preorder a stack is the one before, cut and extended, and only the
 * frames below what still holds are written (and numbered, in the order a
 * whole stack would number them).  -ENOMEM.
 */
static int append_stack(struct ctx *c, uint32_t *valid, uint32_t d)
{
	char *q;

	if (nw_grow(&c->line_at, &c->cap_line_at, (size_t)d + 1, sizeof(*c->line_at)) ||
	    nw_grow(&c->line, &c->cap_line, 1, 1))
		return -ENOMEM;
	c->line[0] = '[';
	c->line_at[0] = 1;
	if (*valid > d)
		*valid = d;
	if (nw_grow(&c->line, &c->cap_line, c->line_at[*valid] + 21 * (size_t)(d - *valid) + 2, 1))
		return -ENOMEM;
	for (q = c->line + c->line_at[*valid]; *valid < d; (*valid)++) {
		if (*valid)
			*q++ = ',';
		q = nw_put_u64(q, (uint64_t)frame_of(c, c->path[*valid]));
		c->line_at[*valid + 1] = (size_t)(q - c->line);
	}
	c->line[c->line_at[d]] = ']';
	return 0;
}

/*
 * A node met in preorder at depth @d (1 below the thread's frame), frame
 * @frame, its own weight @w: a sample of its whole stack when it has
 * weight, after a comma unless *@first.  1 when written, 0 when not, -ENOMEM.
 */
static int put_node(struct ctx *c, uint32_t *valid, bool *first, uint32_t d, uint32_t frame,
		    uint64_t w)
{
	if (nw_grow(&c->path, &c->cap_path, d, sizeof(*c->path)))
		return -ENOMEM;
	c->path[d - 1] = frame;
	if (*valid >= d)
		*valid = d - 1;
	if (!w)
		return 0;
	if (append_stack(c, valid, d))
		return -ENOMEM;
	if (!*first)
		fputc(',', c->out);
	fwrite(c->line, 1, c->line_at[d] + 1, c->out);
	*first = false;
	return 1;
}

/*
 * A thread's profile up to its samples, @w its weight, in nanoseconds
 * with @ns (else in no unit).  -ENOMEM.
 */
static int write_profile_head(struct ctx *c, const struct nw_mthread *th, bool ns, uint64_t w)
{
	char *name = nw_strdup_printf("%s (pid %u, tid %u)", th->comm ? th->comm : "", th->pid,
				      th->tid);
	int ret;

	if (!name)
		return -ENOMEM;
	fputs("{\"type\":\"sampled\",\"name\":", c->out);
	ret = nw_export_json_str(c->out, name);
	free(name);
	if (ret)
		return ret;
	fprintf(c->out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		ns ? "nanoseconds" : "none", (unsigned long long)w);
	return 0;
}

static int write_frames(struct ctx *c)
{
	fputs("\"shared\":{\"frames\":[", c->out);
	for (uint32_t k = 0; k < c->nused; k++) {
		const struct nw_func *f = &c->p->frames.v[c->used[k]];

		fputs(k ? ",{\"name\":" : "{\"name\":", c->out);
		if (nw_export_json_str(c->out, f->name))
			return -ENOMEM;
		if (f->file) {
			fputs(",\"file\":", c->out);
			if (nw_export_json_str(c->out, f->file))
				return -ENOMEM;
		}
		if (f->line)
			fprintf(c->out, ",\"line\":%u", f->line);
		fputc('}', c->out);
	}
	fputs("]}", c->out);
	return 0;
}

unsigned nw_speedscope_default_metric(const struct nw_measurement *m)
{
	int s = nw_measurement_find_metric(m, NULL);

	/* The period of the default samples' event: its time or its count. */
	for (uint32_t i = 0; s >= 0 && i < m->nmetrics; i++)
		if (m->metrics[i].kind == NW_METRIC_PERIOD &&
		    !strcmp(m->metrics[i].event, m->metrics[s].event))
			return i;
	return s > 0 ? (unsigned)s : 0;
}

/* The file up to its name: the command recorded.  -ENOMEM. */
static int write_start(struct ctx *c)
{
	const struct nw_measurement *m = c->p->m;
	struct nw_strbuf cmd = { 0 };
	int ret;

	for (uint32_t i = 0; i < m->run.argc; i++)
		nw_sb_printf(&cmd, "%s%s", i ? " " : "", m->run.argv[i] ? m->run.argv[i] : "");
	fputs("{\"$schema\":\"" SCHEMA_URL "\",\"exporter\":\"narwhal " NW_VERSION "\",\"name\":",
	      c->out);
	ret = cmd.failed ? -ENOMEM
			 : nw_export_json_str(c->out, cmd.len ? nw_sb_str(&cmd)
							      : "narwhal measurement");
	nw_sb_fini(&cmd);
	return ret;
}

/*
 * The file up to its profiles: the busiest of the threads of weights
 * @weight (per model thread, 0 for none) opens first.  -ENOMEM.
 */
static int write_head(struct ctx *c, const uint64_t *weight)
{
	const struct nw_measurement *m = c->p->m;
	uint64_t best = 0;
	int64_t active = 0, nprof = 0;

	for (uint32_t i = 0; i < m->nthreads; i++) {
		if (weight[i] > best) {
			best = weight[i];
			active = nprof;
		}
		nprof += weight[i] != 0;
	}
	if (write_start(c))
		return -ENOMEM;
	fprintf(c->out, ",\"activeProfileIndex\":%lld,\"profiles\":[", (long long)active);
	return 0;
}

/* ---- each thread's stacks once, from their visits ---- */

struct stream {
	struct ctx c;
	uint64_t *weight;         /* each model thread's, of the metric */
	uint32_t cap_frames;      /* room in c.frame_of and c.used */
	bool open, first;         /* a profile is being written; no sample in it yet */
	uint32_t valid;           /* c.line holds the stack down to this depth */
	uint64_t *weights;        /* the open profile's, written after its samples */
	size_t nweights, cap_weights;
	int64_t nprof;
};

/* Room in the frame numbering for every frame interned so far.  -ENOMEM. */
static int stream_frames(struct stream *st)
{
	uint32_t n = st->c.p->frames.n, had = st->cap_frames;
	size_t cap = had;

	if (n <= had)
		return 0;
	if (nw_grow(&st->c.frame_of, &cap, n, sizeof(*st->c.frame_of)))
		return -ENOMEM;
	cap = had;
	if (nw_grow(&st->c.used, &cap, n, sizeof(*st->c.used)))
		return -ENOMEM;
	memset(st->c.frame_of + had, 0xff, (cap - had) * sizeof(*st->c.frame_of));
	st->cap_frames = (uint32_t)cap;
	return 0;
}

/* Ends the open profile: its samples, then their weights. */
static void stream_close(struct stream *st)
{
	FILE *out = st->c.out;

	if (!st->open)
		return;
	fputs("],\"weights\":[", out);
	for (size_t k = 0; k < st->nweights; k++) {
		char buf[24], *q = buf;

		if (k)
			*q++ = ',';
		q = nw_put_u64(q, st->weights[k]);
		fwrite(buf, 1, (size_t)(q - buf), out);
	}
	fputs("]}", out);
	st->open = false;
	st->nweights = 0;
}

static int stream_visit(void *arg, const struct nw_visit *v)
{
	struct stream *st = arg;
	struct ctx *c = &st->c;
	uint64_t w = v->metrics[c->metric];
	int put;

	if (v->depth == 1) {
		const struct nw_mthread *th = &c->p->m->threads[v->thread];

		stream_close(st);
		/* A thread without weight would be an empty, useless tab. */
		if (!st->weight[v->thread])
			return 0;
		if (st->nprof++)
			fputc(',', c->out);
		st->open = st->first = true;
		st->valid = 0;
		return write_profile_head(c, th,
					  c->p->m->metrics[c->metric].unit == NW_UNIT_NANOSECONDS,
					  st->weight[v->thread]);
	}
	if (!st->open)
		return 0;
	/* Frames are interned as each thread's trees are read: numbers for the new ones. */
	if (stream_frames(st) ||
	    nw_grow(&st->weights, &st->cap_weights, st->nweights + 1, sizeof(*st->weights)))
		return -ENOMEM;
	put = put_node(c, &st->valid, &st->first, v->depth - 1, v->frame, w);
	if (put < 0)
		return put;
	if (put)
		st->weights[st->nweights++] = w;
	return 0;
}

/*
 * Each selected thread's weight, before its stacks (the busiest opens
 * first): what its samples add up to in the tree, or deferred, in the
 * model's trees.  -ENOMEM.
 */
static int thread_weights(const struct nw_stacks *s, unsigned metric, uint64_t *weight)
{
	const struct nw_measurement *m = s->m;
	const struct nw_cct *t = s->tree;
	uint64_t *sums = NULL;
	uint32_t *order = NULL;
	uint8_t *seen = NULL;

	if (s->deferred.pending) {
		sums = calloc(m->nmetrics ? m->nmetrics : 1, sizeof(*sums));
		for (uint32_t i = 0; sums && i < m->nthreads; i++) {
			if (!nw_filter_thread(s->deferred.filter, &m->threads[i]) ||
			    !m->threads[i].ntrees)
				continue;
			nw_mthread_totals(&m->threads[i], m->nmetrics, sums);
			weight[i] = sums[metric];
		}
		free(sums);
		return sums ? 0 : -ENOMEM;
	}
	order = malloc((size_t)t->n * sizeof(*order));
	seen = calloc(t->n, 1);
	/* A thread's frame node shared with a thread before it is visited with that one. */
	for (uint32_t i = 0; order && seen && i < m->nthreads; i++) {
		uint32_t top = s->thread_node[i], n;

		if (top == NW_CCT_NONE || top >= t->n || seen[top])
			continue;
		seen[top] = 1;
		n = nw_cct_subtree_preorder(t, top, order);
		for (uint32_t k = 1; k < n; k++)
			weight[i] += nw_cct_metrics(t, order[k])[metric];
	}
	free(seen);
	free(order);
	return order && seen ? 0 : -ENOMEM;
}

int nw_speedscope_write(FILE *out, struct nw_stacks *s, unsigned metric)
{
	const struct nw_measurement *m = s->m;
	struct stream st = { .c = { .p = s, .out = out, .metric = metric } };
	int ret;

	if (!m || metric >= m->nmetrics || metric >= s->tree->nmetrics ||
	    !(s->deferred.pending ? s->deferred.per_thread : s->thread_node != NULL))
		return -EINVAL;
	st.weight = calloc(m->nthreads ? m->nthreads : 1, sizeof(*st.weight));
	ret = st.weight ? thread_weights(s, metric, st.weight) : -ENOMEM;
	if (!ret)
		ret = write_head(&st.c, st.weight);
	if (!ret) {
		ret = nw_stacks_visit(s, false, stream_visit, &st);
		stream_close(&st);
	}
	if (!ret) {
		fputs("],", out);
		ret = write_frames(&st.c);
		fputs("}\n", out);
	}
	if (!ret && (fflush(out) != 0 || ferror(out)))
		ret = -EIO;
	free(st.weight);
	free(st.weights);
	free(st.c.frame_of);
	free(st.c.used);
	free(st.c.path);
	free(st.c.line);
	free(st.c.line_at);
	return ret;
}

/* ---- in time order, from the traces ---- */

/* Node @node's frame at depth @d + 1 of the path in c->path and c->line (see make_texts()).  -ENOMEM. */
static int path_push(struct ctx *c, uint32_t d, uint32_t node)
{
	uint32_t f = (uint32_t)c->p->tree->nodes[node].ip;
	char *q;

	if (nw_grow(&c->path, &c->cap_path, (size_t)d + 2, sizeof(*c->path)) ||
	    nw_grow(&c->line_at, &c->cap_line_at, (size_t)d + 2, sizeof(*c->line_at)) ||
	    nw_grow(&c->line, &c->cap_line, c->line_at[d] + 22, 1))
		return -ENOMEM;
	c->path[d + 1] = node;
	q = c->line + c->line_at[d];
	/* A thread's frame is no frame of the stack. */
	if (c->p->frames.v[f].kind != NW_FRAME_THREAD) {
		if (c->line_at[d] > 1)
			*q++ = ',';
		q = nw_put_u64(q, (uint64_t)frame_of(c, f));
	}
	c->line_at[d + 1] = (size_t)(q - c->line);
	return 0;
}

/*
 * The path from the root to node @node in c->path, its text in c->line:
 * for a node whose caller is not on the path walked.  Its depth, or -ENOMEM.
 */
static int64_t path_to(struct ctx *c, uint32_t node, uint32_t **up, size_t *cap)
{
	size_t n = 0;
	uint32_t d = 0;

	for (uint32_t i = node; i != NW_CCT_ROOT; i = c->p->tree->nodes[i].parent) {
		if (nw_grow(up, cap, n + 1, sizeof(**up)))
			return -ENOMEM;
		(*up)[n++] = i;
	}
	while (n--)
		if (path_push(c, d++, (*up)[n]))
			return -ENOMEM;
	return d;
}

/*
 * The text of the stack of every node with samples of @event, made
 * before any is written: the nodes on the way to them marked, then met in
 * node order, the order the merge made them in (a node after its caller,
 * a subtree in one piece but for the parts grafted at the end), with the
 * path to the node in c->path and its text in c->line: a node's text is
 * its caller's and one number more.  Frames are numbered as this walk
 * meets them.  Past MEMO_MAX bytes of text, the stacks of the nodes left
 * are made when written.  -ENOMEM.
 */
static int make_texts(struct ctx *c, uint16_t event)
{
	const struct nw_cct *t = c->p->tree;
	uint8_t *mark = calloc(t->n ? t->n : 1, 1); /* 1: on the way to a sample; 2: sampled */
	uint32_t *up = NULL, d = 0;
	size_t cap_up = 0;
	int count, sum, ret = -ENOMEM;

	c->memo = calloc(t->n ? t->n : 1, sizeof(*c->memo));
	if (!mark || !c->memo || nw_grow(&c->path, &c->cap_path, 1, sizeof(*c->path)) ||
	    nw_grow(&c->line_at, &c->cap_line_at, 1, sizeof(*c->line_at)) ||
	    nw_grow(&c->line, &c->cap_line, 1, 1))
		goto out;
	/*
	 * The nodes with samples of the event are those the tree gives its
	 * samples (or their weight) to: the traces are read later, a thread
	 * at a time.  A stack of a trace not made here is made when written.
	 */
	nw_measurement_event_metrics(c->p->m, event, &count, &sum);
	if (count >= (int)t->nmetrics)
		count = -1;
	if (sum >= (int)t->nmetrics)
		sum = -1;
	for (uint32_t i = 1; i < t->n; i++)
		if ((count >= 0 && nw_cct_metrics(t, i)[count]) ||
		    (sum >= 0 && nw_cct_metrics(t, i)[sum]))
			mark[i] = 2;
	/* Children come after their parents: one pass up marks the way. */
	for (uint32_t i = t->n; i-- > 1;)
		if (mark[i] && t->nodes[i].parent < i)
			mark[t->nodes[i].parent] |= 1;
	c->path[0] = NW_CCT_ROOT;
	c->line[0] = '[';
	c->line_at[0] = 1;
	for (uint32_t i = 1; i < t->n; i++) {
		uint32_t parent = t->nodes[i].parent;
		size_t len;

		if (!mark[i])
			continue;
		while (d > 0 && c->path[d] != parent)
			d--;
		if (c->path[d] != parent) {
			int64_t pd = path_to(c, parent, &up, &cap_up);

			if (pd < 0)
				goto out;
			d = (uint32_t)pd;
		}
		if (path_push(c, d++, i))
			goto out;
		len = c->line_at[d];
		if (!(mark[i] & 2) || c->memo_size + len > MEMO_MAX)
			continue;
		if (nw_grow(&c->memo_text, &c->cap_memo, c->memo_size + len, 1))
			goto out;
		memcpy(c->memo_text + c->memo_size, c->line, len);
		c->memo[i] = (struct memo){ (uint32_t)c->memo_size + 1, (uint32_t)len };
		c->memo_size += len;
	}
	ret = 0;
out:
	free(mark);
	free(up);
	return ret;
}

/* Writes the stack of node @sym, after a comma unless @first.  -ENOMEM. */
static int write_timed_stack(struct ctx *c, const struct nw_timeline *tl, uint32_t sym,
			     bool first)
{
	const char *text;
	size_t len;
	char *q;

	if (sym < tl->s->tree->n && c->memo[sym].at) {
		text = c->memo_text + c->memo[sym].at - 1;
		len = c->memo[sym].len;
	} else {
		/* Not made before: the memo was full. */
		int n = nw_timeline_stack(tl, sym, &c->path, &c->cap_path);

		len = n < 0 ? 0 : format_stack(c, (uint32_t)n);
		if (!len)
			return -ENOMEM;
		/* Without its bracket, as the memo's. */
		text = c->line;
		len--;
	}
	q = out_room(c, len + 2);
	if (!q)
		return -ENOMEM;
	if (!first)
		*q++ = ',';
	memcpy(q, text, len);
	q += len;
	*q++ = ']';
	nw_sb_end(&c->out_buf, q);
	return 0;
}

/*
 * One thread's samples of @event in time order, each weighing its period
 * (@by_period) or 1, @total in all; their weights gathered beside them in
 * c->weights, written after.
 */
static int write_timed_profile(struct ctx *c, const struct nw_timeline *tl,
			       const struct nw_tl_thread *t, uint16_t event, bool by_period,
			       uint64_t total)
{
	bool first = true;
	int ret = write_profile_head(c, &c->p->m->threads[t->thread],
				     by_period &&
					     c->p->m->metrics[c->metric].unit == NW_UNIT_NANOSECONDS,
				     total);

	if (ret)
		return ret;
	nw_sb_reset(&c->weights);
	/* Consecutive samples of one stack are one sample of their summed weight. */
	for (size_t k = 0; k < t->n;) {
		uint64_t w = 0;
		size_t e;
		char *q;

		if (t->v[k].kind != NW_TRACE_SAMPLE || t->v[k].event != event) {
			k++;
			continue;
		}
		/*
		 * The stacks of samples in time order are far apart in the
		 * memo: ask for a later sample's entry now, and for the text
		 * of a nearer one (its entry asked for before), not when
		 * they are due.
		 */
		if (k + 2 * PREFETCH < t->n && t->v[k + 2 * PREFETCH].sym < tl->s->tree->n)
			__builtin_prefetch(&c->memo[t->v[k + 2 * PREFETCH].sym]);
		if (k + PREFETCH < t->n && t->v[k + PREFETCH].sym < tl->s->tree->n) {
			struct memo soon = c->memo[t->v[k + PREFETCH].sym];

			if (soon.at) {
				__builtin_prefetch(c->memo_text + soon.at - 1);
				__builtin_prefetch(c->memo_text + soon.at - 1 + 64);
			}
		}
		if (write_timed_stack(c, tl, t->v[k].sym, first))
			return -ENOMEM;
		for (e = k; e < t->n && (t->v[e].kind != NW_TRACE_SAMPLE || t->v[e].event != event ||
					  t->v[e].sym == t->v[k].sym);
		     e++)
			if (t->v[e].kind == NW_TRACE_SAMPLE && t->v[e].event == event)
				w += by_period ? t->v[e].value : 1;
		q = nw_sb_room(&c->weights, 22);
		if (!q)
			return -ENOMEM;
		if (!first)
			*q++ = ',';
		nw_sb_end(&c->weights, nw_put_u64(q, w));
		first = false;
		k = e;
	}
	out_flush(c);
	fputs("],\"weights\":[", c->out);
	fwrite(nw_sb_str(&c->weights), 1, c->weights.len, c->out);
	fputs("]}", c->out);
	return 0;
}

/*
 * The threads in time order, read from their traces a thread at a time on
 * workers while the one before is written (nw_parallel_ordered()); the
 * events of a thread written go back to be filled again (no new pages).
 */
struct timed {
	struct ctx *c;
	const struct nw_timeline *tl;
	uint16_t event;
	bool by_period;
	struct nw_tl_thread *read; /* per timeline thread: its events, while it is written */
	int *ret;
	uint64_t *samples, *total;
	uint64_t best;
	int64_t active, nprof;
	pthread_mutex_t lock;
	struct nw_tl_thread spare[2 * MAX_TIMED + 2];
	uint32_t nspare;
};

/* Reads thread @i's events and counts its samples: a job of nw_parallel_ordered(). */
static void read_timed_thread(void *arg, uint32_t i)
{
	struct timed *t = arg;
	const struct nw_tl_thread *th = &t->read[i];

	pthread_mutex_lock(&t->lock);
	if (t->nspare)
		t->read[i] = t->spare[--t->nspare];
	pthread_mutex_unlock(&t->lock);
	t->ret[i] = nw_timeline_read_thread(t->tl, i, &t->read[i]);
	if (t->ret[i])
		return;
	for (size_t k = 0; k < th->n; k++)
		if (th->v[k].kind == NW_TRACE_SAMPLE && th->v[k].event == t->event) {
			t->samples[i]++;
			t->total[i] += t->by_period ? th->v[k].value : 1;
		}
}

/* Writes thread @i's profile, in order: nw_parallel_ordered()'s done. */
static int write_timed_thread(void *arg, uint32_t i)
{
	struct timed *t = arg;
	int ret = t->ret[i];

	/* A thread without samples would be an empty, useless tab. */
	if (!ret && t->samples[i]) {
		/* The busiest thread opens first. */
		if (t->samples[i] > t->best) {
			t->best = t->samples[i];
			t->active = t->nprof;
		}
		if (t->nprof++)
			fputc(',', t->c->out);
		ret = write_timed_profile(t->c, t->tl, &t->read[i], t->event, t->by_period,
					  t->total[i]);
	}
	pthread_mutex_lock(&t->lock);
	if (t->nspare < sizeof(t->spare) / sizeof(t->spare[0])) {
		t->spare[t->nspare++] = t->read[i];
		memset(&t->read[i], 0, sizeof(t->read[i]));
	}
	pthread_mutex_unlock(&t->lock);
	free(t->read[i].v);
	memset(&t->read[i], 0, sizeof(t->read[i]));
	return ret;
}

int nw_speedscope_write_timeline(FILE *out, const struct nw_timeline *tl, unsigned metric)
{
	const struct nw_measurement *m = tl->s->m;
	struct ctx c = { .p = tl->s, .out = out, .metric = metric };
	struct timed t = { .c = &c, .tl = tl, .event = nw_timeline_event(m, metric) };
	uint32_t nfuncs = tl->s->frames.n, n = tl->n ? tl->n : 1;
	int ret = 0;

	/* The metric's weight: its period (a time, or a count of events), or 1 per sample. */
	t.by_period = metric < m->nmetrics && !nw_metric_counts_samples(&m->metrics[metric]);
	pthread_mutex_init(&t.lock, NULL);
	c.frame_of = malloc((nfuncs ? nfuncs : 1) * sizeof(*c.frame_of));
	c.used = malloc((nfuncs ? nfuncs : 1) * sizeof(*c.used));
	t.samples = calloc(n, sizeof(*t.samples));
	t.total = calloc(n, sizeof(*t.total));
	t.ret = calloc(n, sizeof(*t.ret));
	t.read = calloc(n, sizeof(*t.read));
	if (!c.frame_of || !c.used || !t.samples || !t.total || !t.ret || !t.read) {
		ret = -ENOMEM;
		goto out;
	}
	memset(c.frame_of, 0xff, (nfuncs ? nfuncs : 1) * sizeof(*c.frame_of));
	ret = make_texts(&c, t.event);
	if (ret)
		goto out;
	ret = write_start(&c);
	fputs(",\"profiles\":[", out);
	if (!ret)
		ret = nw_parallel_ordered(tl->n, MAX_TIMED, read_timed_thread, write_timed_thread,
					  &t);
	fputs("],", out);
	if (!ret)
		ret = write_frames(&c);
	/* Known once every thread is read: JSON's keys come in any order. */
	fprintf(out, ",\"activeProfileIndex\":%lld}\n", (long long)t.active);
	if (!ret && (fflush(out) != 0 || ferror(out)))
		ret = -EIO;
out:
	for (uint32_t i = 0; t.read && i < tl->n; i++)
		free(t.read[i].v);
	for (uint32_t i = 0; i < t.nspare; i++)
		free(t.spare[i].v);
	pthread_mutex_destroy(&t.lock);
	free(t.read);
	free(t.ret);
	free(t.samples);
	free(t.total);
	free(c.frame_of);
	free(c.used);
	free(c.path);
	free(c.memo);
	free(c.memo_text);
	nw_sb_fini(&c.out_buf);
	nw_sb_fini(&c.weights);
	free(c.line);
	free(c.line_at);
	return ret;
}
