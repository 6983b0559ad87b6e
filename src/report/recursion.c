/* SPDX-License-Identifier: MIT */
/*
 * Recursion folding.  The source tree is walked in preorder, so a node's
 * parent is placed before it; each node goes either to the node of its
 * function already on the destination path above its parent's place (the
 * shallower occurrence: a fold) or to a child of that place.  Since no
 * foldable function ever repeats on a destination path, the search up the
 * path finds at most one node, and the folded tree is never deeper than
 * the number of distinct functions on a path.
 */
#include "report/recursion.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Is frame @f a function that folding may merge? */
static bool foldable(const struct nw_frames *p, uint64_t f)
{
	return f < p->n && p->v[f].module;
}

/* The node of @f on the path from the root to @node (inclusive), or NW_CCT_NONE. */
static uint32_t find_on_path(const struct nw_cct *t, uint32_t node, uint64_t f)
{
	for (; node != NW_CCT_ROOT; node = t->nodes[node].parent)
		if (t->nodes[node].ip == f)
			return node;
	return NW_CCT_NONE;
}

static void count_fold(struct nw_fold_stats *st, uint64_t deeper_sp, uint64_t shallower_sp)
{
	st->folded++;
	if (!deeper_sp || !shallower_sp)
		st->no_sp++;
	else if (deeper_sp < shallower_sp)
		st->confirmed++;
	else if (deeper_sp == shallower_sp)
		st->same_frame++;
	else
		st->unordered++;
}

struct nw_cct *nw_recursion_fold(const struct nw_frames *p, const struct nw_cct *tree,
				 struct nw_fold_stats *stats)
{
	struct nw_fold_stats st = {0};
	struct nw_cct *dst = nw_cct_new(tree->nmetrics);
	uint32_t *order = malloc((size_t)tree->n * sizeof(*order));
	uint32_t *to = malloc((size_t)tree->n * sizeof(*to));
	uint32_t n;

	if (!dst || !order || !to)
		goto out_fail;
	n = nw_cct_preorder(tree, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = order[k], d = NW_CCT_NONE;
		const struct nw_cct_node *sn = &tree->nodes[s];
		const uint64_t *sm = nw_cct_metrics(tree, s);
		uint64_t *dm;

		if (s == NW_CCT_ROOT) {
			d = NW_CCT_ROOT;
		} else {
			uint32_t dp = to[sn->parent];

			if (foldable(p, sn->ip)) {
				d = find_on_path(dst, dp, sn->ip);
				/*
				 * A child of the place already there came from a
				 * fold higher up (source siblings have distinct
				 * ips): it is a shallower occurrence too.
				 */
				if (d == NW_CCT_NONE)
					d = nw_cct_find(dst, dp, sn->ip);
			}
			if (d != NW_CCT_NONE) {
				count_fold(&st, sn->sp, dst->nodes[d].sp);
			} else {
				d = nw_cct_child(dst, dp, sn->ip, sn->sp);
				if (d == NW_CCT_NONE)
					goto out_fail;
			}
		}
		to[s] = d;
		dm = nw_cct_metrics(dst, d);
		for (unsigned m = 0; m < tree->nmetrics; m++)
			dm[m] += sm[m];
	}
	free(order);
	free(to);
	if (stats)
		*stats = st;
	return dst;

out_fail:
	free(order);
	free(to);
	nw_cct_free(dst);
	return NULL;
}

struct nw_cct *nw_frames_fold_recursion(const struct nw_frames *p, const struct nw_cct *tree)
{
	return nw_recursion_fold(p, tree, NULL);
}
