/* SPDX-License-Identifier: MIT */
/*
 * Visiting symbolic stacks (stacks.h, struct nw_visit): the merge of a
 * deferred view visits its nodes as it makes them; a tree made before is
 * walked so that it gives the same visits.  The writers that read every
 * stack once in order (folded stacks, the flat profile, speedscope) are
 * then written once, for either.
 */
#include "report/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

void nw_stacks_defer(struct nw_stacks *s, const struct nw_filter *f, bool per_thread)
{
	s->deferred.pending = true;
	s->deferred.spent = false;
	s->deferred.per_thread = per_thread;
	s->deferred.filter = f;
}

/* The nodes below @top, preorder in child-list order, the first at @depth. */
static int walk_below(const struct nw_stacks *s, uint32_t top, uint32_t depth, uint32_t thread,
		      nw_visit_fn visit, void *arg)
{
	const struct nw_cct *t = s->tree;
	uint32_t node = t->nodes[top].first_child;
	int ret;

	while (node != NW_CCT_NONE) {
		struct nw_visit v = { depth, (uint32_t)t->nodes[node].ip, thread,
				      nw_cct_metrics(t, node) };

		ret = visit(arg, &v);
		if (ret)
			return ret;
		if (t->nodes[node].first_child != NW_CCT_NONE) {
			node = t->nodes[node].first_child;
			depth++;
			continue;
		}
		/* Leave this node, and each ancestor whose children are done. */
		while (t->nodes[node].next_sibling == NW_CCT_NONE) {
			node = t->nodes[node].parent;
			depth--;
			if (node == top)
				return 0;
		}
		node = t->nodes[node].next_sibling;
	}
	return 0;
}

/*
 * Per thread: each thread's frame node (once, at the first thread that has
 * it), then the stacks below it, the threads in model order (the merge's).
 */
static int walk_threads(const struct nw_stacks *s, nw_visit_fn visit, void *arg)
{
	const struct nw_cct *t = s->tree;
	uint8_t *seen = calloc(t->n, 1);
	int ret = seen ? 0 : -ENOMEM;

	for (uint32_t ti = 0; !ret && s->m && ti < s->m->nthreads; ti++) {
		uint32_t top = s->thread_node[ti];
		struct nw_visit v;

		if (top == NW_CCT_NONE || top >= t->n || seen[top])
			continue;
		seen[top] = 1;
		v = (struct nw_visit){ 1, (uint32_t)t->nodes[top].ip, ti, nw_cct_metrics(t, top) };
		ret = visit(arg, &v);
		if (!ret)
			ret = walk_below(s, top, 2, ti, visit, arg);
	}
	free(seen);
	return ret;
}

/*
 * By names: the children of a level's groups, sorted by name, on a stack;
 * each run of one name is a node, its metrics summed (what the merge's
 * visitor by names sees).
 */
struct by_names {
	const struct nw_stacks *s;
	uint32_t *nodes;
	size_t n, cap;
	struct names_level {
		size_t begin, end, next;
	} *levels;
	size_t nlevels, cap_levels;
	uint64_t *sum;
	size_t cap_sum;
};

static const char *name_of(const struct nw_stacks *s, uint32_t node)
{
	return nw_func_name(&s->frames.v[s->tree->nodes[node].ip], true);
}

static int cmp_names(const void *a, const void *b, void *arg)
{
	const struct nw_stacks *s = arg;

	return strcmp(name_of(s, *(const uint32_t *)a), name_of(s, *(const uint32_t *)b));
}

/* Pushes a level of the children of the nodes [a, e) of the stack, sorted by name. */
static int push_names(struct by_names *w, size_t a, size_t e)
{
	const struct nw_cct *t = w->s->tree;
	size_t begin = w->n;

	for (size_t i = a; i < e; i++) {
		for (uint32_t c = t->nodes[w->nodes[i]].first_child; c != NW_CCT_NONE;
		     c = t->nodes[c].next_sibling) {
			if (nw_grow(&w->nodes, &w->cap, w->n + 1, sizeof(*w->nodes)))
				return -ENOMEM;
			w->nodes[w->n++] = c;
		}
	}
	if (w->n - begin > 1)
		qsort_r(w->nodes + begin, w->n - begin, sizeof(*w->nodes), cmp_names, (void *)w->s);
	if (nw_grow(&w->levels, &w->cap_levels, w->nlevels + 1, sizeof(*w->levels)))
		return -ENOMEM;
	w->levels[w->nlevels++] = (struct names_level){ begin, w->n, begin };
	return 0;
}

static int walk_names(const struct nw_stacks *s, nw_visit_fn visit, void *arg)
{
	const struct nw_cct *t = s->tree;
	struct by_names w = { .s = s };
	int ret = -ENOMEM;

	if (nw_grow(&w.nodes, &w.cap, 1, sizeof(*w.nodes)) ||
	    nw_grow(&w.sum, &w.cap_sum, t->nmetrics ? t->nmetrics : 1, sizeof(*w.sum)))
		goto out;
	w.nodes[w.n++] = NW_CCT_ROOT;
	ret = push_names(&w, 0, 1);
	while (!ret && w.nlevels) {
		struct names_level *l = &w.levels[w.nlevels - 1];
		size_t g = l->next, e;
		const char *name;
		struct nw_visit v;

		if (g == l->end) {
			w.n = l->begin;
			w.nlevels--;
			continue;
		}
		name = name_of(s, w.nodes[g]);
		memset(w.sum, 0, t->nmetrics * sizeof(*w.sum));
		for (e = g; e < l->end && !strcmp(name_of(s, w.nodes[e]), name); e++)
			for (unsigned k = 0; k < t->nmetrics; k++)
				w.sum[k] += nw_cct_metrics(t, w.nodes[e])[k];
		l->next = e;
		v = (struct nw_visit){ (uint32_t)w.nlevels, (uint32_t)t->nodes[w.nodes[g]].ip,
				       UINT32_MAX, w.sum };
		ret = visit(arg, &v);
		if (!ret)
			ret = push_names(&w, g, e);
	}
out:
	free(w.nodes);
	free(w.levels);
	free(w.sum);
	return ret;
}

int nw_stacks_visit(struct nw_stacks *s, bool names, nw_visit_fn visit, void *arg)
{
	const struct nw_cct *t = s->tree;

	if (s->deferred.pending) {
		struct nw_stacks_opts so = { .filter = s->deferred.filter,
					     .per_thread = s->deferred.per_thread, .visit = visit,
					     .visit_arg = arg, .visit_names = names };

		s->deferred.pending = false;
		s->deferred.spent = true;
		return nw_stacks_build(s, &so);
	}
	if (s->deferred.spent)
		return -EINVAL;
	for (uint32_t i = 1; i < t->n; i++)
		if (t->nodes[i].ip >= s->frames.n)
			return -EINVAL;
	if (names)
		return walk_names(s, visit, arg);
	if (s->thread_node)
		return walk_threads(s, visit, arg);
	return walk_below(s, NW_CCT_ROOT, 1, UINT32_MAX, visit, arg);
}
