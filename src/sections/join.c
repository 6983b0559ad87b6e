/* SPDX-License-Identifier: MIT */
/*
 * Sections joined with samples (report/sections.h, doc/SECTIONS.md).
 *
 * The join: a thread's intervals, sorted by (start, depth), nest; one sweep
 * over them with a stack of the intervals still open gives each interval
 * its section path (a node of the tree, keyed by (parent, name)) and each
 * sample of the thread, in time order, the path of the innermost interval
 * open at its time (start <= t < end), or the root when none is.
 */
#include "sections/join.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

#define NONE UINT32_MAX

/* ---- loading ---- */

static void stimes_free(struct nw_stimes *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nthreads; i++)
		free(s->threads[i].v);
	free(s->threads);
	free(s);
}

void nw_sections_free(struct nw_sections *s)
{
	if (!s)
		return;
	nw_seclog_free(s->log);
	stimes_free(s->times);
	free(s);
}

static int cmp_stime(const void *a, const void *b)
{
	const struct nw_stime *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/* The sample times of the threads of @m with a trace; *ret NULL when none has one. */
static int stimes_of(const struct nw_measurement *m, struct nw_stimes **ret)
{
	struct nw_stimes *s;
	int rc = 0;

	*ret = NULL;
	for (uint32_t i = 0; m && i < m->nthreads && !rc; i++)
		rc = m->threads[i].trace != NULL;
	/* Recorded with traces, and no sample: joined, with nothing to join. */
	if (!rc && !(m && m->run.traced))
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->threads = calloc(m->nthreads, sizeof(*s->threads)))) {
		free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *th = &m->threads[i];
		struct nw_stimes_thread *st;
		struct nw_trace_event *ev;
		size_t bad;

		if (!th->trace)
			continue;
		rc = nw_trace_decode(th->trace, &ev, &bad);
		if (rc) {
			stimes_free(s);
			return rc == -EBADMSG ? -EINVAL : rc;
		}
		st = &s->threads[s->nthreads++];
		*st = (struct nw_stimes_thread){ .pid = th->pid, .tid = th->tid, .thread = i };
		st->v = malloc((th->trace->n ? th->trace->n : 1) * sizeof(*st->v));
		if (!st->v) {
			free(ev);
			stimes_free(s);
			return -ENOMEM;
		}
		for (uint64_t k = 0; k < th->trace->n; k++)
			st->v[k] = (struct nw_stime){ .time = ev[k].time, .period = ev[k].value,
						      .node = ev[k].node, .epoch = ev[k].epoch,
						      .event = ev[k].event };
		st->n = th->trace->n;
		free(ev);
		qsort(st->v, st->n, sizeof(*st->v), cmp_stime);
	}
	*ret = s;
	return 0;
}

int nw_sections_load(const char *dir, const struct nw_measurement *m, struct nw_sections **ret,
		     char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct nw_sections *s;
	struct stat st;
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s", dir, NW_SECLOG_SUBDIR) >= (int)sizeof(path)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (stat(dir, &st) < 0) {
		rc = -errno;
		nw_set_err(err, errlen, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rc = stat(path, &st) < 0 ? -ENOENT : nw_seclog_read_dir(path, &s->log, err, errlen);
	if (rc == -ENOENT) {
		nw_set_err(err, errlen,
			"%s has no instrumented sections: record a program that uses narwhal.h "
			"(linked with libnarwhal; see doc/SECTIONS.md)",
			dir);
		goto out;
	}
	if (rc)
		goto out;
	rc = stimes_of(m, &s->times);
	if (rc == -EINVAL)
		nw_set_err(err, errlen, "%s: a trace does not decode", dir);
out:
	if (rc) {
		nw_sections_free(s);
		return rc;
	}
	*ret = s;
	return 0;
}

/* ---- the tree ---- */

static uint64_t key_hash(uint32_t parent, uint32_t name)
{
	return nw_hash_u64((uint64_t)parent << 32 | name);
}

static uint64_t node_hash(const void *ctx, uint32_t i)
{
	const struct nw_secnode *nd = &((const struct nw_sectree *)ctx)->nodes[i];

	return key_hash(nd->parent, nd->name);
}

static bool node_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_secnode *nd = &((const struct nw_sectree *)ctx)->nodes[i];
	const uint32_t *k = key;

	return nd->parent == k[0] && nd->name == k[1];
}

static struct nw_sectree *tree_new(void)
{
	struct nw_sectree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = 64;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	if (!t->nodes) {
		nw_sectree_free(t);
		return NULL;
	}
	t->nodes[0] = (struct nw_secnode){ .name = NONE, .parent = NONE, .first_child = NONE,
					   .next_sibling = NONE, .min_ns = UINT64_MAX };
	t->n = 1;
	return t;
}

void nw_sectree_free(struct nw_sectree *t)
{
	if (!t)
		return;
	free(t->nodes);
	nw_index_fini(&t->index);
	free(t);
}

/* The child of @parent for section @name, made when missing; NONE on ENOMEM. */
static uint32_t tree_child(struct nw_sectree *t, uint32_t parent, uint32_t name)
{
	uint32_t key[2] = { parent, name }, id, *slot;
	struct nw_secnode *nd;

	slot = nw_index_slot(&t->index, key_hash(parent, name), node_eq, node_hash, t, key);
	if (!slot)
		return NONE;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct nw_secnode *v = realloc(t->nodes, cap * sizeof(*v));

		if (!v)
			return NONE;
		t->nodes = v;
		t->cap = cap;
	}
	id = t->n++;
	nd = &t->nodes[id];
	*nd = (struct nw_secnode){ .name = name, .parent = parent, .first_child = NONE,
				   .next_sibling = t->nodes[parent].first_child,
				   .depth = t->nodes[parent].depth + 1, .min_ns = UINT64_MAX };
	t->nodes[parent].first_child = id;
	nw_index_fill(&t->index, slot, id);
	return id;
}

struct open_iv {
	uint64_t end;
	uint32_t node;
};

/*
 * One sweep over the intervals of @th (sorted).  With @t, adds them to the
 * tree and stores each interval's node in @node_of; without, reads
 * @node_of.  With @times (sorted), stores in @out the node of each sample.
 * -ENOMEM.
 */
static int sweep(struct nw_sectree *t, const struct nw_secthread *th, uint32_t *node_of,
		 const struct nw_stime *times, size_t ntimes, uint32_t *out)
{
	struct open_iv *stack = NULL;
	size_t sp = 0, cap = 0, j = 0;

	for (size_t k = 0; k <= th->n; k++) {
		const struct nw_secinterval *iv = k < th->n ? &th->v[k] : NULL;
		uint32_t parent, node;

		/* The samples before this interval starts (all of them after the last). */
		for (; j < ntimes && (!iv || times[j].time < iv->start); j++) {
			while (sp && stack[sp - 1].end <= times[j].time)
				sp--;
			out[j] = sp ? stack[sp - 1].node : NW_SECNODE_ROOT;
		}
		if (!iv)
			break;
		/* Close what cannot hold it (ended before, or ends inside it). */
		while (sp && (stack[sp - 1].end <= iv->start || stack[sp - 1].end < iv->end))
			sp--;
		parent = sp ? stack[sp - 1].node : NW_SECNODE_ROOT;
		if (t) {
			struct nw_secnode *nd;
			uint64_t dur = iv->end - iv->start;

			node = tree_child(t, parent, iv->name);
			if (node == NONE) {
				free(stack);
				return -ENOMEM;
			}
			nd = &t->nodes[node];
			nd->count++;
			nd->open += (iv->flags & NW_SECLOG_OPEN) != 0;
			nd->total_ns += dur;
			if (dur < nd->min_ns)
				nd->min_ns = dur;
			if (dur > nd->max_ns)
				nd->max_ns = dur;
			node_of[k] = node;
			t->nintervals++;
		} else {
			node = node_of[k];
		}
		if (sp == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct open_iv *v = realloc(stack, c * sizeof(*v));

			if (!v) {
				free(stack);
				return -ENOMEM;
			}
			stack = v;
			cap = c;
		}
		stack[sp++] = (struct open_iv){ iv->end, node };
	}
	free(stack);
	return 0;
}

/* The tree of every interval log thread @want selects, with each interval's node. */
struct join {
	struct nw_sectree *t;
	uint32_t **node_of;      /* per log thread, NULL when not selected */
};

static void join_fini(struct join *j, const struct nw_seclog *log)
{
	for (uint32_t i = 0; j->node_of && i < log->nthreads; i++)
		free(j->node_of[i]);
	free(j->node_of);
	nw_sectree_free(j->t);
}

/* The name of thread (pid, tid) in @m, or NULL. */
static const char *thread_comm(const struct nw_measurement *m, uint32_t pid, uint32_t tid)
{
	for (uint32_t i = 0; m && i < m->nthreads; i++)
		if (m->threads[i].pid == pid && m->threads[i].tid == tid)
			return m->threads[i].comm;
	return NULL;
}

static bool selected(const struct nw_measurement *m, const struct nw_filter *f, uint32_t pid,
		     uint32_t tid)
{
	struct nw_mthread th = { .pid = pid, .tid = tid };

	if (!f)
		return true;
	th.comm = (char *)thread_comm(m, pid, tid);
	if (f->comm && !th.comm)
		return false;
	return nw_filter_thread(f, &th);
}

static int join_init(struct join *j, const struct nw_sections *s, const struct nw_measurement *p,
		     const struct nw_filter *f)
{
	const struct nw_seclog *log = s->log;

	j->t = tree_new();
	j->node_of = calloc(log->nthreads ? log->nthreads : 1, sizeof(*j->node_of));
	if (!j->t || !j->node_of)
		return -ENOMEM;
	for (uint32_t i = 0; i < log->nthreads; i++) {
		const struct nw_secthread *th = &log->threads[i];

		if (!selected(p, f, th->pid, th->tid))
			continue;
		j->node_of[i] = malloc((th->n ? th->n : 1) * sizeof(uint32_t));
		if (!j->node_of[i] || sweep(j->t, th, j->node_of[i], NULL, 0, NULL))
			return -ENOMEM;
		j->t->nthreads++;
	}
	/* Self time: the total less the children's totals. */
	for (uint32_t i = 1; i < j->t->n; i++)
		j->t->nodes[i].self_ns = j->t->nodes[i].total_ns;
	for (uint32_t i = 1; i < j->t->n; i++) {
		struct nw_secnode *parent = &j->t->nodes[j->t->nodes[i].parent];
		uint64_t tot = j->t->nodes[i].total_ns;

		if (j->t->nodes[i].parent != NW_SECNODE_ROOT)
			parent->self_ns -= parent->self_ns > tot ? tot : parent->self_ns;
	}
	return 0;
}

/* The log thread of (pid, tid), or NONE. */
static uint32_t log_thread_index(const struct nw_seclog *log, uint32_t pid, uint32_t tid)
{
	for (uint32_t i = 0; i < log->nthreads; i++)
		if (log->threads[i].pid == pid && log->threads[i].tid == tid)
			return i;
	return NONE;
}

/*
 * The node of each sample of @st (in @out, which has room for st->n), or
 * all NW_SECNODE_ROOT when the thread has no intervals.  -ENOMEM.
 */
static int join_samples(const struct join *j, const struct nw_seclog *log,
			const struct nw_stimes_thread *st, uint32_t *out, bool *matched)
{
	uint32_t li = log_thread_index(log, st->pid, st->tid);

	*matched = li != NONE && j->node_of[li];
	if (!*matched) {
		for (uint64_t k = 0; k < st->n; k++)
			out[k] = NW_SECNODE_ROOT;
		return 0;
	}
	return sweep(NULL, &log->threads[li], j->node_of[li], st->v, st->n, out);
}

/* The index in run.events of the event of metric @metric, or -1. */
static int event_of_metric(const struct nw_measurement *m, unsigned metric)
{
	for (uint32_t e = 0; metric < m->nmetrics && e < m->run.nevents; e++)
		if (!strcmp(m->run.events[e].name, m->metrics[metric].event))
			return (int)e;
	return -1;
}

/* What sample @r adds to metric @metric: 1 to its event's count, its period to the sum. */
static uint64_t sample_weight(const struct nw_measurement *m, const struct nw_stime *r,
			      unsigned metric)
{
	if (event_of_metric(m, metric) != (int)r->event)
		return 0;
	return nw_metric_counts_samples(&m->metrics[metric]) ? 1 : r->period;
}

int nw_sectree_build(const struct nw_sections *s, const struct nw_measurement *p,
		     const struct nw_filter *f, unsigned metric, struct nw_sectree **ret)
{
	struct join j = { 0 };
	struct nw_sectree *t;
	int rc = join_init(&j, s, p, f);

	if (rc)
		goto out;
	t = j.t;
	for (uint32_t i = 0; s->times && i < s->times->nthreads; i++) {
		const struct nw_stimes_thread *st = &s->times->threads[i];
		uint32_t *out;
		bool matched;

		if (!selected(p, f, st->pid, st->tid))
			continue;
		out = malloc((st->n ? st->n : 1) * sizeof(*out));
		if (!out || join_samples(&j, s->log, st, out, &matched)) {
			free(out);
			rc = -ENOMEM;
			goto out;
		}
		for (uint64_t k = 0; k < st->n; k++) {
			uint64_t w = sample_weight(p, &st->v[k], metric);

			t->nodes[out[k]].self_weight += w;
			t->total_weight += w;
			if (!matched)
				t->unmatched += w;
		}
		free(out);
	}
	t->joined = s->times != NULL;
	/* Inclusive weights: children come after their parents. */
	for (uint32_t i = 0; i < t->n; i++)
		t->nodes[i].weight = t->nodes[i].self_weight;
	for (uint32_t i = t->n; i-- > 1;)
		t->nodes[t->nodes[i].parent].weight += t->nodes[i].weight;
	*ret = t;
	j.t = NULL;
out:
	join_fini(&j, s->log);
	return rc;
}

/* ---- --by-section: the samples below their sections ---- */

/* One sample of a tree, the node it was folded into and the section path it is in. */
struct split_pair {
	uint32_t node, sec;
	uint64_t k;            /* index of the sample, to sort stably */
};

static int cmp_pair(const void *a, const void *b)
{
	const struct split_pair *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	return (x->k > y->k) - (x->k < y->k);
}

static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
	return c ? (uint64_t)((unsigned __int128)a * b / c) : 0;
}

struct split_build {
	const struct nw_measurement *m;
	struct nw_split *split;
	size_t cap;
	int (*metrics)[2];     /* per event: count and sum metric */
	uint64_t *count, *per; /* per event, for the node being split */
};

/* Appends an entry; its values (zeroed) in *ret.  -ENOMEM. */
static int split_add(struct split_build *b, uint32_t thread, uint32_t tree, uint32_t node,
		     uint32_t sec, uint64_t **ret)
{
	struct nw_split *sp = b->split;
	size_t cap = b->cap;
	unsigned nm = b->m->nmetrics;
	uint64_t *v;

	if (nw_grow(&sp->entries, &cap, sp->n + 1, sizeof(*sp->entries)))
		return -ENOMEM;
	v = realloc(sp->values, (sp->n + 1) * (nm ? nm : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	sp->values = v;
	b->cap = cap;
	sp->entries[sp->n] = (struct nw_split_entry){ thread, tree, node, sec };
	*ret = v + sp->n * nm;
	memset(*ret, 0, nm * sizeof(**ret));
	sp->n++;
	return 0;
}

/*
 * The entries of one node of tree @tree: @pairs[0, np) are its samples
 * inside sections, grouped by section path.  Each event's samples move as
 * they are counted; its sum moves as the samples' periods where they add
 * up to the node's, else shared by counts (off-CPU time is only known
 * after the sample).  When the samples outnumber the node's count (the
 * file and the times disagree), that event stays in place.
 */
static int split_node(struct split_build *b, uint32_t ti, uint32_t tree, const struct nw_cct *t,
		      const struct split_pair *pairs, size_t np, const struct nw_stime *samples)
{
	uint32_t nev = b->m->run.nevents, node = pairs[0].node;
	const uint64_t *raw = nw_cct_metrics(t, node);

	memset(b->count, 0, nev * sizeof(*b->count));
	memset(b->per, 0, nev * sizeof(*b->per));
	for (size_t i = 0; i < np; i++) {
		const struct nw_stime *smp = &samples[pairs[i].k];

		if (smp->event < nev) {
			b->count[smp->event]++;
			b->per[smp->event] += smp->period;
		}
	}
	for (size_t i = 0; i < np;) {
		uint32_t sec = pairs[i].sec;
		size_t j = i;
		uint64_t *v;
		int ret = split_add(b, ti, tree, node, sec, &v);

		if (ret)
			return ret;
		for (; j < np && pairs[j].sec == sec; j++) {
			const struct nw_stime *smp = &samples[pairs[j].k];
			int c, s;

			if (smp->event >= nev)
				continue;
			c = b->metrics[smp->event][0];
			s = b->metrics[smp->event][1];
			if (c < 0 || b->count[smp->event] > raw[c])
				continue;
			v[c]++;
			if (s >= 0 && b->per[smp->event] <= raw[s] &&
			    !(b->per[smp->event] == 0 && raw[s] > 0))
				v[s] += smp->period;
		}
		/* Sums whose periods do not add up: shared by the counts. */
		for (uint32_t e = 0; e < nev; e++) {
			int c = b->metrics[e][0], s = b->metrics[e][1];

			if (c < 0 || s < 0 || !b->count[e] || b->count[e] > raw[c] ||
			    (b->per[e] <= raw[s] && !(b->per[e] == 0 && raw[s] > 0)))
				continue;
			v[s] = mul_div(raw[s], v[c], raw[c]);
		}
		i = j;
	}
	return 0;
}

/* The model thread and tree of sample times @st, split by section. */
static int split_thread(struct split_build *b, const struct join *j, const struct nw_seclog *log,
			uint32_t ti, const struct nw_stimes_thread *st)
{
	const struct nw_mthread *th = &b->m->threads[ti];
	struct split_pair *pairs = NULL;
	uint32_t *out = NULL;
	bool matched;
	int rc = -ENOMEM;

	out = malloc((st->n ? st->n : 1) * sizeof(*out));
	pairs = malloc((st->n ? st->n : 1) * sizeof(*pairs));
	if (!out || !pairs || join_samples(j, log, st, out, &matched))
		goto out;
	for (uint32_t t = 0; t < th->ntrees; t++) {
		const struct nw_cct *cct = th->trees[t].cct;
		uint32_t epoch = b->m->epochs[th->trees[t].epoch]->index;
		size_t np = 0;

		for (uint64_t k = 0; k < st->n; k++)
			if (st->v[k].epoch == epoch && st->v[k].node < cct->n &&
			    st->v[k].node != NW_CCT_ROOT && out[k] != NW_SECNODE_ROOT)
				pairs[np++] = (struct split_pair){ st->v[k].node, out[k], k };
		qsort(pairs, np, sizeof(*pairs), cmp_pair);
		for (size_t i = 0; i < np;) {
			size_t e = i;

			while (e < np && pairs[e].node == pairs[i].node)
				e++;
			if (split_node(b, ti, t, cct, pairs + i, e - i, st->v))
				goto out;
			i = e;
		}
	}
	rc = 0;
out:
	free(out);
	free(pairs);
	return rc;
}

/* Each section path as a prefix of "[section NAME]" frames, outermost first. */
static int split_prefixes(struct nw_split *sp, const struct nw_sectree *t,
			  const struct nw_seclog *log, struct nw_frames *frames)
{
	int64_t *frame_of = malloc((log->nnames ? log->nnames : 1) * sizeof(*frame_of));
	int rc = -ENOMEM;

	sp->prefixes = calloc(t->n, sizeof(*sp->prefixes));
	if (!frame_of || !sp->prefixes)
		goto out;
	sp->nprefixes = t->n;
	for (uint32_t k = 0; k < log->nnames; k++) {
		char *name = nw_strdup_printf(NW_FRAMES_SECTION_PREFIX "%s]", log->names[k].name);

		frame_of[k] = name ? nw_frames_intern(frames, NW_FRAME_SECTION, name,
						      log->names[k].file[0] ? log->names[k].file
									    : NULL,
						      log->names[k].line, NW_FRAMES_SECTION_MODULE)
				   : -ENOMEM;
		free(name);
		if (frame_of[k] < 0)
			goto out;
	}
	for (uint32_t i = 1; i < t->n; i++) {
		struct nw_split_prefix *p = &sp->prefixes[i];
		uint32_t d = t->nodes[i].depth;

		p->frames = malloc(d * sizeof(*p->frames));
		if (!p->frames)
			goto out;
		p->n = d;
		for (uint32_t s = i; s != NW_SECNODE_ROOT; s = t->nodes[s].parent)
			p->frames[--d] = (uint32_t)frame_of[t->nodes[s].name];
	}
	rc = 0;
out:
	free(frame_of);
	return rc;
}

int nw_sections_split(const struct nw_sections *s, const struct nw_measurement *m,
		      struct nw_frames *frames, struct nw_split **ret)
{
	struct split_build b = { .m = m };
	struct join j = { 0 };
	int rc = -ENOMEM;

	b.split = calloc(1, sizeof(*b.split));
	b.metrics = calloc(m->run.nevents ? m->run.nevents : 1, sizeof(*b.metrics));
	b.count = calloc(m->run.nevents ? m->run.nevents : 1, sizeof(*b.count));
	b.per = calloc(m->run.nevents ? m->run.nevents : 1, sizeof(*b.per));
	if (!b.split || !b.metrics || !b.count || !b.per)
		goto out;
	for (uint32_t e = 0; e < m->run.nevents; e++)
		nw_measurement_event_metrics(m, e, &b.metrics[e][0], &b.metrics[e][1]);
	rc = join_init(&j, s, NULL, NULL);
	if (!rc)
		rc = split_prefixes(b.split, j.t, s->log, frames);
	for (uint32_t i = 0; !rc && s->times && i < s->times->nthreads; i++)
		if (s->times->threads[i].thread < m->nthreads)
			rc = split_thread(&b, &j, s->log, s->times->threads[i].thread,
					  &s->times->threads[i]);
out:
	join_fini(&j, s->log);
	free(b.metrics);
	free(b.count);
	free(b.per);
	if (rc) {
		nw_split_free(b.split);
		return rc;
	}
	*ret = b.split;
	return 0;
}
