/* SPDX-License-Identifier: MIT */
/* narwhal-report --callers RE (--peek): who calls a function, and through which paths. */
#ifndef NW_CALLERS_H
#define NW_CALLERS_H

#include <regex.h>
#include <stdio.h>

#include "report/views.h"

/*
 * For each function of @s whose whole name matches @re (heaviest total
 * first): its self and total share, the tree of its callers up to the
 * roots (each with its share of everything and of the function), heaviest
 * first, down to o->percent_limit, and its direct callees.  A recursive
 * function counts once per path.  0, -ENOENT when no function with
 * weight in the tree's metric matches (nothing written), -EINVAL for a
 * metric the tree lacks, -ENOMEM, -EIO.
 */
int nw_view_callers(FILE *out, const struct nw_stacks *s, const regex_t *re,
		    const struct nw_view_opts *o);

/*
 * The trees of function @frame of @s's tree: its callers (the function
 * below the root, each caller below what it called, up to the roots) and
 * its callees (the function below the root, its direct callees below
 * it).  Each node sums the @nm metrics of @incl (the inclusive weights of
 * s->tree's nodes, @nm per node) of the paths through it; only the
 * outermost occurrences of a recursive function count, so the function's
 * node holds its total.  @order is s->tree's preorder.  0 or -ENOMEM;
 * the trees are the caller's.
 */
int nw_callers_trees(const struct nw_stacks *s, const uint32_t *order, const uint64_t *incl,
		     unsigned nm, uint32_t frame, struct nw_cct **ret_callers,
		     struct nw_cct **ret_callees);

/*
 * Walks tree @t depth first from @top (at depth 0): @visit(@arg, node,
 * depth) for each node reached; when it returns 1, that node's children
 * next, in the order of @cmp (qsort_r's, over node indexes, with @arg);
 * 0 skips them; -errno stops the walk and is returned.  0, -ENOMEM.
 */
int nw_callers_walk(const struct nw_cct *t, uint32_t top,
		    int (*cmp)(const void *, const void *, void *),
		    int (*visit)(void *arg, uint32_t node, uint32_t depth), void *arg);

#endif
