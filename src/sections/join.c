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

#include "format/csprof.h"
#include "format/manifest.h"
#include "model/symtab.h"
#include "util/log.h"

#define NONE UINT32_MAX

/* ---- loading ---- */

void nw_sections_free(struct nw_sections *s)
{
	if (!s)
		return;
	nw_seclog_free(s->log);
	nw_stimes_free(s->times);
	free(s);
}

int nw_sections_load(const char *dir, struct nw_sections **ret, char *err, size_t errlen)
{
	char path[PATH_MAX], file[PATH_MAX + 16];
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
	snprintf(file, sizeof(file), "%s/%s", path, NW_STIMES_FILE);
	rc = nw_stimes_read(file, &s->times, err, errlen);
	if (rc == -ENOENT) {
		s->times = NULL;
		rc = 0;
	}
out:
	if (rc) {
		nw_sections_free(s);
		return rc;
	}
	*ret = s;
	return 0;
}

/* ---- the tree ---- */

static uint32_t hash2(uint32_t a, uint32_t b)
{
	uint64_t v = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(v >> 32);
}

static struct nw_sectree *tree_new(void)
{
	struct nw_sectree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = 64;
	t->nodes = calloc(t->cap, sizeof(*t->nodes));
	t->nslots = 128;
	t->slots = malloc(t->nslots * sizeof(*t->slots));
	if (!t->nodes || !t->slots) {
		nw_sectree_free(t);
		return NULL;
	}
	memset(t->slots, 0xff, t->nslots * sizeof(*t->slots));
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
	free(t->slots);
	free(t);
}

static int tree_grow_slots(struct nw_sectree *t)
{
	uint32_t n = t->nslots * 2;
	uint32_t *s = malloc(n * sizeof(*s));

	if (!s)
		return -ENOMEM;
	memset(s, 0xff, n * sizeof(*s));
	for (uint32_t i = 1; i < t->n; i++) {
		uint32_t h = hash2(t->nodes[i].parent, t->nodes[i].name) & (n - 1);

		while (s[h] != NONE)
			h = (h + 1) & (n - 1);
		s[h] = i;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

/* The child of @parent for section @name, made when missing; NONE on ENOMEM. */
static uint32_t tree_child(struct nw_sectree *t, uint32_t parent, uint32_t name)
{
	uint32_t h, id;
	struct nw_secnode *nd;

	if ((t->n + 1) * 2 > t->nslots && tree_grow_slots(t))
		return NONE;
	h = hash2(parent, name) & (t->nslots - 1);
	while (t->slots[h] != NONE) {
		nd = &t->nodes[t->slots[h]];
		if (nd->parent == parent && nd->name == name)
			return t->slots[h];
		h = (h + 1) & (t->nslots - 1);
	}
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
	t->slots[h] = id;
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

/* The name of thread (pid, tid) in @p, or NULL. */
static const char *thread_comm(const struct nw_profile *p, uint32_t pid, uint32_t tid)
{
	for (uint32_t i = 0; p && i < p->nthreads; i++)
		if (p->threads[i].pid == pid && p->threads[i].tid == tid)
			return p->threads[i].comm;
	return NULL;
}

static bool selected(const struct nw_profile *p, const struct nw_filter *f, uint32_t pid,
		     uint32_t tid)
{
	struct nw_prof_thread th = { .pid = pid, .tid = tid };

	if (!f)
		return true;
	th.comm = (char *)thread_comm(p, pid, tid);
	if (f->comm && !th.comm)
		return false;
	return nw_filter_match(f, &th);
}

static int join_init(struct join *j, const struct nw_sections *s, const struct nw_profile *p,
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

static uint64_t sample_weight(const struct nw_stime *r, unsigned metric)
{
	if (r->event != metric / 2)
		return 0;
	return metric % 2 ? r->period : 1;
}

int nw_sectree_build(const struct nw_sections *s, const struct nw_profile *p,
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
			uint64_t w = sample_weight(&st->v[k], metric);

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

/* ---- the --sections view ---- */

static const char *fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.3f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

struct view_ctx {
	FILE *out;
	const struct nw_sectree *t;
	const struct nw_seclog *log;
};

static int cmp_total_desc(const void *a, const void *b, void *arg)
{
	const struct nw_sectree *t = arg;
	const struct nw_secnode *x = &t->nodes[*(const uint32_t *)a];
	const struct nw_secnode *y = &t->nodes[*(const uint32_t *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Node indexes in depth-first order, children by total time, largest first. */
static uint32_t *view_order(const struct nw_sectree *t, uint32_t *ret_n)
{
	uint32_t *order = malloc(t->n * sizeof(*order)), *stack = malloc(t->n * sizeof(*stack));
	uint32_t *kids = malloc(t->n * sizeof(*kids));
	uint32_t n = 0, sp = 0;

	if (!order || !stack || !kids) {
		free(order);
		free(stack);
		free(kids);
		return NULL;
	}
	stack[sp++] = NW_SECNODE_ROOT;
	while (sp) {
		uint32_t node = stack[--sp], nk = 0;

		if (node != NW_SECNODE_ROOT)
			order[n++] = node;
		for (uint32_t c = t->nodes[node].first_child; c != NONE; c = t->nodes[c].next_sibling)
			kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), cmp_total_desc, (void *)t);
		while (nk)
			stack[sp++] = kids[--nk];
	}
	free(stack);
	free(kids);
	*ret_n = n;
	return order;
}

int nw_sections_view(FILE *out, const struct nw_sections *s, const struct nw_profile *p,
		     const struct nw_filter *f, unsigned metric)
{
	const struct nw_seclog *log = s->log;
	struct nw_sectree *t = NULL;
	char a[32], b[32], c[32], d[32], w[32];
	uint32_t *order = NULL, n = 0;
	const char *mname = p && metric < p->nmetrics ? p->metric_names[metric] : "samples";
	int rc;

	rc = nw_sectree_build(s, p, f, metric, &t);
	if (rc)
		return rc;
	order = view_order(t, &n);
	if (!order) {
		nw_sectree_free(t);
		return -ENOMEM;
	}
	fprintf(out, "Sections: %u section%s, %llu interval%s in %u thread%s of %u process "
		     "image%s\n",
		n, n == 1 ? "" : "s", (unsigned long long)t->nintervals,
		t->nintervals == 1 ? "" : "s", t->nthreads, t->nthreads == 1 ? "" : "s",
		log->nimages, log->nimages == 1 ? "" : "s");
	if (t->joined)
		fprintf(out, "Joined with %s: %llu in all, %.1f%% inside sections\n", mname,
			(unsigned long long)t->total_weight,
			pct(t->total_weight - t->nodes[0].self_weight, t->total_weight));
	else
		fprintf(out, "No sample times in this measurement: times only\n");
	if (log->dropped || log->overflow || log->unbalanced || log->unregistered ||
	    log->truncated || log->unended)
		fprintf(out, "Notes: %llu intervals dropped (log size limit), %llu opened too "
			     "deep, %llu unbalanced, %llu past the name/path limits; %u log%s cut "
			     "short, %u image%s without an end\n",
			(unsigned long long)log->dropped, (unsigned long long)log->overflow,
			(unsigned long long)log->unbalanced, (unsigned long long)log->unregistered,
			log->truncated, log->truncated == 1 ? "" : "s", log->unended,
			log->unended == 1 ? "" : "s");
	fprintf(out, "\n%10s %12s %12s %12s %12s %10s %6s %6s  %s\n", "CALLS", "TOTAL", "SELF",
		"MIN", "MAX", "SAMPLES", "INCL%", "SELF%", "SECTION");
	for (uint32_t k = 0; k < n; k++) {
		const struct nw_secnode *nd = &t->nodes[order[k]];

		if (t->joined)
			snprintf(w, sizeof(w), "%llu", (unsigned long long)nd->weight);
		else
			snprintf(w, sizeof(w), "-");
		fprintf(out, "%10llu %12s %12s %12s %12s %10s %5.1f%% %5.1f%%  %*s%s",
			(unsigned long long)nd->count, fmt_time(a, sizeof(a), nd->total_ns),
			fmt_time(b, sizeof(b), nd->self_ns), fmt_time(c, sizeof(c), nd->min_ns),
			fmt_time(d, sizeof(d), nd->max_ns), w, pct(nd->weight, t->total_weight),
			pct(nd->self_weight, t->total_weight), (int)(2 * (nd->depth - 1)), "",
			log->names[nd->name].name);
		if (nd->open)
			fprintf(out, "  (%llu open at the end)", (unsigned long long)nd->open);
		fputc('\n', out);
	}
	if (t->joined)
		fprintf(out, "%10s %12s %12s %12s %12s %10llu %5.1f%% %5.1f%%  %s\n", "", "", "", "",
			"", (unsigned long long)t->nodes[0].self_weight,
			pct(t->nodes[0].self_weight, t->total_weight),
			pct(t->nodes[0].self_weight, t->total_weight), "(outside any section)");
	free(order);
	nw_sectree_free(t);
	return ferror(out) ? -EIO : 0;
}

/* ---- --by-section: the split measurement ---- */

/* One (raw node, section path) pair of a tree and what its samples add up to. */
struct split_pair {
	uint32_t raw, sec;
	uint64_t k;            /* index of the sample, to sort stably */
};

struct split_entry {
	uint32_t raw, sec;
	uint64_t *m;           /* nmetrics values */
};

static int cmp_pair(const void *a, const void *b)
{
	const struct split_pair *x = a, *y = b;

	if (x->raw != y->raw)
		return x->raw < y->raw ? -1 : 1;
	if (x->sec != y->sec)
		return x->sec < y->sec ? -1 : 1;
	return (x->k > y->k) - (x->k < y->k);
}

/* Frames buffer: the raw path of a node (leaf first) and the pseudo-frames. */
struct frames {
	struct nw_frame *v;
	size_t n, cap;
};

static int frames_push(struct frames *fr, uint64_t ip, uint64_t sp)
{
	if (fr->n == fr->cap) {
		size_t cap = fr->cap ? 2 * fr->cap : 256;
		struct nw_frame *v = realloc(fr->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fr->v = v;
		fr->cap = cap;
	}
	fr->v[fr->n++] = (struct nw_frame){ ip, sp };
	return 0;
}

/* The path of @raw (leaf first), then the pseudo-frames of section path @sec. */
static int build_frames(struct frames *fr, const struct nw_cct *raw, uint32_t node,
			const struct nw_sectree *t, uint32_t sec)
{
	fr->n = 0;
	for (uint32_t r = node; r != NW_CCT_ROOT && r != NW_CCT_NONE; r = raw->nodes[r].parent)
		if (frames_push(fr, raw->nodes[r].ip, raw->nodes[r].sp))
			return -ENOMEM;
	for (uint32_t s = sec; s != NW_SECNODE_ROOT && s != NONE; s = t->nodes[s].parent)
		if (frames_push(fr, NW_SECTIONS_BASE + 16 * (uint64_t)t->nodes[s].name + 1, 0))
			return -ENOMEM;
	return 0;
}

/* Adds @m (nm values) to the node @frames lead to in @dst.  -ENOMEM. */
static int add_at(struct nw_cct *dst, const struct frames *fr, const uint64_t *m, unsigned nm)
{
	uint32_t node;
	uint64_t *dm;
	bool any = false;

	for (unsigned i = 0; i < nm; i++)
		any |= m[i] != 0;
	if (!any || !fr->n)
		return 0;
	node = nw_cct_insert(dst, fr->v, fr->n);
	if (node == NW_CCT_NONE)
		return -ENOMEM;
	dm = nw_cct_metrics(dst, node);
	for (unsigned i = 0; i < nm; i++)
		dm[i] += m[i];
	return 0;
}

static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
	return c ? (uint64_t)((unsigned __int128)a * b / c) : 0;
}

/*
 * Splits the metrics of one raw node among its entries [e, e + ne) (counts
 * set per event); what is not placed stays in @rest.
 */
static void split_node(const uint64_t *raw_m, unsigned nm, struct split_entry *e, size_t ne,
		       const uint64_t *periods, uint64_t *rest)
{
	memcpy(rest, raw_m, nm * sizeof(*rest));
	for (unsigned ev = 0; 2 * ev < nm; ev++) {
		uint64_t count = 0, per = 0, R = raw_m[2 * ev];
		uint64_t P = 2 * ev + 1 < nm ? raw_m[2 * ev + 1] : 0;
		bool exact;

		for (size_t i = 0; i < ne; i++) {
			count += e[i].m[2 * ev];
			per += periods[i * (nm / 2 + 1) + ev];
		}
		if (!count)
			continue;
		if (count > R) {
			/* More samples than the node holds: the file and the times disagree. */
			for (size_t i = 0; i < ne; i++)
				e[i].m[2 * ev] = 0;
			continue;
		}
		/* Periods as recorded where they add up; else shared by sample counts
		 * (off-CPU time is only known after the sample). */
		exact = per <= P && !(per == 0 && P > 0);
		for (size_t i = 0; i < ne; i++) {
			rest[2 * ev] -= e[i].m[2 * ev];
			if (2 * ev + 1 >= nm)
				continue;
			e[i].m[2 * ev + 1] = exact ? periods[i * (nm / 2 + 1) + ev]
						   : mul_div(P, e[i].m[2 * ev], R);
			rest[2 * ev + 1] -= e[i].m[2 * ev + 1];
		}
	}
}

/*
 * The split tree of one raw tree: its samples (@pairs, sorted, with the
 * periods of each sample in @sample_period) below their sections.
 */
static int split_tree(const struct nw_cct *raw, const struct nw_sectree *t,
		      const struct split_pair *pairs, size_t np, const struct nw_stime *samples,
		      struct nw_cct **ret)
{
	unsigned nm = raw->nmetrics, stride = nm / 2 + 1;
	struct nw_cct *dst = nw_cct_new(nm);
	struct split_entry *ents = NULL;
	uint64_t *vals = NULL, *periods = NULL, *rest = NULL;
	struct frames fr = { 0 };
	size_t ne = 0;
	int rc = -ENOMEM;

	if (!dst)
		return -ENOMEM;
	ents = calloc(np ? np : 1, sizeof(*ents));
	vals = calloc((np ? np : 1) * (nm ? nm : 1), sizeof(*vals));
	periods = calloc((np ? np : 1) * stride, sizeof(*periods));
	rest = calloc(nm ? nm : 1, sizeof(*rest));
	if (!ents || !vals || !periods || !rest)
		goto out;
	/* Entries: one per distinct (raw, sec). */
	for (size_t i = 0; i < np; i++) {
		const struct nw_stime *smp = &samples[pairs[i].k];

		if (!ne || ents[ne - 1].raw != pairs[i].raw || ents[ne - 1].sec != pairs[i].sec) {
			ents[ne].raw = pairs[i].raw;
			ents[ne].sec = pairs[i].sec;
			ents[ne].m = vals + ne * nm;
			ne++;
		}
		if (2 * (unsigned)smp->event < nm) {
			ents[ne - 1].m[2 * smp->event]++;
			periods[(ne - 1) * stride + smp->event] += smp->period;
		}
	}
	/* Every raw node: its entries below their sections, the rest in place. */
	for (uint32_t r = 1, e = 0; r < raw->n; r++) {
		size_t first = e;

		while (e < ne && ents[e].raw == r)
			e++;
		split_node(nw_cct_metrics(raw, r), nm, ents + first, e - first,
			   periods + first * stride, rest);
		for (size_t i = first; i < e; i++) {
			if (build_frames(&fr, raw, r, t, ents[i].sec) ||
			    add_at(dst, &fr, ents[i].m, nm))
				goto out;
		}
		if (build_frames(&fr, raw, r, t, NW_SECNODE_ROOT) || add_at(dst, &fr, rest, nm))
			goto out;
	}
	/* What the root itself holds (samples without a frame) stays there. */
	for (unsigned i = 0; i < nm; i++)
		nw_cct_metrics(dst, NW_CCT_ROOT)[i] += nw_cct_metrics(raw, NW_CCT_ROOT)[i];
	*ret = dst;
	dst = NULL;
	rc = 0;
out:
	nw_cct_free(dst);
	free(ents);
	free(vals);
	free(periods);
	free(rest);
	free(fr.v);
	return rc;
}

static int add_sections_module(struct nw_csprof *cp)
{
	for (uint32_t e = 0; e < cp->nepochs; e++) {
		struct nw_csprof_epoch *ep = &cp->epochs[e];
		struct nw_csprof_module *v = realloc(ep->modules, (ep->nmodules + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ep->modules = v;
		v[ep->nmodules].name = strdup(NW_SECTIONS_MODULE);
		v[ep->nmodules].vaddr = 0;
		v[ep->nmodules].mapped = NW_SECTIONS_BASE;
		if (!v[ep->nmodules].name)
			return -ENOMEM;
		ep->nmodules++;
	}
	return 0;
}

/* Symbols to add to the table once every lookup is done (adding unsorts it). */
struct pending_syms {
	struct { uint32_t module; uint64_t addr; struct nw_symframe *frames; uint32_t n; } *v;
	size_t n, cap;
};

static void pending_free(struct pending_syms *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		for (uint32_t k = 0; k < ps->v[i].n; k++) {
			free(ps->v[i].frames[k].function);
			free(ps->v[i].frames[k].file);
			free(ps->v[i].frames[k].decl_file);
		}
		free(ps->v[i].frames);
	}
	free(ps->v);
	ps->v = NULL;
	ps->n = ps->cap = 0;
}

static int pending_add(struct pending_syms *ps, uint32_t module, uint64_t addr,
		       const struct nw_symentry *se)
{
	struct nw_symframe *frames = calloc(se->nframes, sizeof(*frames));
	bool failed = !frames;

	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 64;
		void *v = realloc(ps->v, cap * sizeof(*ps->v));

		if (!v) {
			free(frames);
			return -ENOMEM;
		}
		ps->v = v;
		ps->cap = cap;
	}
	for (uint32_t i = 0; frames && i < se->nframes; i++) {
		const struct nw_symframe *s = &se->frames[i];

		frames[i].function = strdup(s->function);
		frames[i].file = s->file ? strdup(s->file) : NULL;
		frames[i].decl_file = s->decl_file ? strdup(s->decl_file) : NULL;
		frames[i].line = s->line;
		frames[i].decl_line = s->decl_line;
		failed |= !frames[i].function || (s->file && !frames[i].file) ||
			  (s->decl_file && !frames[i].decl_file);
	}
	ps->v[ps->n].module = module;
	ps->v[ps->n].addr = addr;
	ps->v[ps->n].frames = frames;
	ps->v[ps->n].n = frames ? se->nframes : 0;
	ps->n++;
	return failed ? -ENOMEM : 0;
}

/* Hands the pending symbols to the table (which then owns their frames). */
static int pending_commit(struct pending_syms *ps, struct nw_symtab *st)
{
	int rc = 0;

	for (size_t i = 0; i < ps->n && !rc; i++) {
		rc = nw_symtab_add(st, ps->v[i].module, ps->v[i].addr, ps->v[i].frames,
				   ps->v[i].n);
		ps->v[i].frames = NULL;
		ps->v[i].n = 0;
	}
	pending_free(ps);
	return rc;
}

/*
 * A raw node that calls (symbolized at ip - 1) may become a leaf below a
 * section, where readers look it up at ip: that address gets the caller
 * address's symbols.
 */
static int add_leaf_symbols(struct pending_syms *ps, const struct nw_symtab *st,
			    const struct nw_csprof_epoch *ep, const struct nw_cct *raw)
{
	for (uint32_t r = 1; r < raw->n; r++) {
		const struct nw_cct_node *nd = &raw->nodes[r];
		const struct nw_csprof_module *best = NULL;
		const struct nw_symentry *se;
		uint64_t addr;
		int mi;
		bool any = false;

		for (unsigned m = 0; m < raw->nmetrics; m++)
			any |= nw_cct_metrics(raw, r)[m] != 0;
		if (nd->first_child == NW_CCT_NONE || !any)
			continue;
		for (uint32_t k = 0; k < ep->nmodules; k++)
			if (ep->modules[k].mapped <= nd->ip &&
			    (!best || ep->modules[k].mapped > best->mapped))
				best = &ep->modules[k];
		if (!best || !best->name)
			continue;
		mi = nw_symtab_find_module(st, best->name);
		addr = nd->ip - best->mapped + best->vaddr;
		if (mi < 0 || nw_symtab_lookup(st, (uint32_t)mi, addr) ||
		    !(se = nw_symtab_lookup(st, (uint32_t)mi, addr - 1)) || !se->nframes)
			continue;
		if (pending_add(ps, (uint32_t)mi, addr, se))
			return -ENOMEM;
	}
	return 0;
}

/* The pseudo-frames' symbols: "[section NAME]" at 16 * name (and + 1). */
static int add_section_symbols(struct nw_symtab *st, const struct nw_seclog *log)
{
	int mi = nw_symtab_module(st, NW_SECTIONS_MODULE, "");

	if (mi < 0)
		return mi;
	for (uint32_t k = 0; k < log->nnames; k++) {
		for (uint64_t off = 0; off < 2; off++) {
			struct nw_symframe *fr = calloc(1, sizeof(*fr));

			if (!fr)
				return -ENOMEM;
			if (asprintf(&fr->function, NW_SECTIONS_FRAME_PREFIX "%s]",
				     log->names[k].name) < 0) {
				fr->function = NULL;
				free(fr);
				return -ENOMEM;
			}
			if (log->names[k].file[0]) {
				fr->decl_file = strdup(log->names[k].file);
				fr->file = strdup(log->names[k].file);
			}
			fr->decl_line = fr->line = log->names[k].line;
			if (nw_symtab_add(st, (uint32_t)mi, 16 * (uint64_t)k + off, fr, 1))
				return -ENOMEM;
		}
	}
	return 0;
}

/* The sample times of the @occurrence-th thread (pid, tid), or NULL. */
static const struct nw_stimes_thread *times_of(const struct nw_stimes *times, uint32_t pid,
					       uint32_t tid, uint32_t occurrence)
{
	for (uint32_t i = 0; times && i < times->nthreads; i++)
		if (times->threads[i].pid == pid && times->threads[i].tid == tid &&
		    times->threads[i].occurrence == occurrence)
			return &times->threads[i];
	return NULL;
}

/* Splits every tree of thread file @cp with the samples @st. */
static int split_thread(struct nw_csprof *cp, const struct join *j, const struct nw_seclog *log,
			const struct nw_stimes_thread *st, const struct nw_symtab *symtab,
			struct pending_syms *ps)
{
	struct split_pair *pairs = NULL;
	uint32_t *out = NULL;
	bool matched;
	int rc = -ENOMEM;

	out = malloc((st->n ? st->n : 1) * sizeof(*out));
	pairs = malloc((st->n ? st->n : 1) * sizeof(*pairs));
	if (!out || !pairs || join_samples(j, log, st, out, &matched))
		goto out;
	for (uint32_t t = 0; t < cp->ntrees; t++) {
		struct nw_csprof_tree *tr = &cp->trees[t];
		struct nw_cct *split;
		size_t np = 0;

		for (uint64_t k = 0; k < st->n; k++)
			if (st->v[k].epoch == tr->epoch && st->v[k].node < tr->cct->n &&
			    st->v[k].node != NW_CCT_ROOT && out[k] != NW_SECNODE_ROOT)
				pairs[np++] = (struct split_pair){ st->v[k].node, out[k], k };
		if (!np)
			continue;
		qsort(pairs, np, sizeof(*pairs), cmp_pair);
		if (tr->epoch < cp->nepochs &&
		    add_leaf_symbols(ps, symtab, &cp->epochs[tr->epoch], tr->cct))
			goto out;
		if (split_tree(tr->cct, j->t, pairs, np, st->v, &split))
			goto out;
		nw_cct_free(tr->cct);
		tr->cct = split;
	}
	rc = 0;
out:
	free(out);
	free(pairs);
	return rc;
}

int nw_sections_split(const char *dir, const struct nw_sections *s, const char *outdir,
		      char *err, size_t errlen)
{
	struct nw_manifest *mf = NULL;
	struct nw_symtab *st = NULL;
	struct pending_syms ps = { 0 };
	struct join j = { 0 };
	char path[PATH_MAX], msg[512] = "";
	int rc;

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	rc = nw_manifest_read(path, &mf, msg, sizeof(msg));
	if (rc) {
		nw_set_err(err, errlen, "%s", msg[0] ? msg : strerror(-rc));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/symbols.json", dir);
	rc = nw_symtab_read(path, &st, msg, sizeof(msg));
	if (rc == -ENOENT) {
		st = nw_symtab_new();
		rc = st ? 0 : -ENOMEM;
	} else if (rc) {
		nw_set_err(err, errlen, "%s", msg[0] ? msg : strerror(-rc));
		goto out;
	}
	if (rc || (rc = join_init(&j, s, NULL, NULL)))
		goto out;
	for (uint32_t i = 0; i < mf->nthreads; i++) {
		const struct nw_manifest_thread *mt = &mf->threads[i];
		struct nw_csprof_error cerr = { 0 };
		struct nw_csprof *cp = NULL;
		const struct nw_stimes_thread *times;
		uint32_t occurrence = 0;

		if (!mt->file || !mt->file[0] || strchr(mt->file, '/'))
			continue;
		for (uint32_t k = 0; k < i; k++)
			occurrence += mf->threads[k].pid == mt->pid && mf->threads[k].tid == mt->tid;
		snprintf(path, sizeof(path), "%s/%s", dir, mt->file);
		rc = nw_csprof_read_file(path, &cp, &cerr);
		if (rc == -EBADMSG) {
			nw_set_err(err, errlen, "%s: %s at offset %llu", path, cerr.msg,
				(unsigned long long)cerr.offset);
			goto out;
		} else if (rc) {
			nw_set_err(err, errlen, "%s: %s", path, cerr.msg[0] ? cerr.msg : strerror(-rc));
			goto out;
		}
		times = times_of(s->times, mt->pid, mt->tid, occurrence);
		rc = add_sections_module(cp);
		if (!rc && times)
			rc = split_thread(cp, &j, s->log, times, st, &ps);
		if (!rc) {
			snprintf(path, sizeof(path), "%s/%s", outdir, mt->file);
			rc = nw_csprof_write_file(path, cp);
			if (rc)
				nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
		}
		nw_csprof_free(cp);
		if (rc)
			goto out;
	}
	rc = pending_commit(&ps, st);
	if (!rc)
		rc = add_section_symbols(st, s->log);
	if (rc)
		goto out;
	nw_symtab_sort(st);
	snprintf(path, sizeof(path), "%s/symbols.json", outdir);
	rc = nw_symtab_write(path, st);
	if (rc) {
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/manifest.json", outdir);
	rc = nw_manifest_write(path, mf);
	if (rc)
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
out:
	if (rc == -ENOMEM)
		nw_set_err(err, errlen, "%s: out of memory splitting by section", dir);
	pending_free(&ps);
	join_fini(&j, s->log);
	nw_symtab_free(st);
	nw_manifest_free(mf);
	return rc;
}

int nw_sections_split_tmp(const char *dir, char *tmp, size_t len, char *err, size_t errlen)
{
	const char *base = getenv("TMPDIR");
	struct nw_sections *s = NULL;
	int rc;

	tmp[0] = 0;
	rc = nw_sections_load(dir, &s, err, errlen);
	if (rc)
		return rc;
	if (snprintf(tmp, len, "%s/narwhal-by-section.XXXXXX", base && base[0] ? base : "/tmp") >=
		    (int)len ||
	    !mkdtemp(tmp)) {
		rc = errno ? -errno : -ENAMETOOLONG;
		nw_set_err(err, errlen, "cannot make a directory for --by-section in %s: %s",
			base && base[0] ? base : "/tmp", strerror(-rc));
		tmp[0] = 0;
		nw_sections_free(s);
		return rc;
	}
	rc = nw_sections_split(dir, s, tmp, err, errlen);
	nw_sections_free(s);
	if (rc) {
		nw_sections_remove_tmp(tmp);
		tmp[0] = 0;
	}
	return rc;
}

void nw_sections_remove_tmp(const char *tmp)
{
	nw_seclog_stage_remove(tmp);
}
