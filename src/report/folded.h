/* SPDX-License-Identifier: MIT */
/*
 * Folded stacks (flamegraph.pl's input): one line per distinct stack,
 * root first, whole function names joined by ';', a space, the weight.
 * The one place the text of a folded stack is made: --folded here, and
 * --diff's rows (report/diff.h) from the same visits.
 */
#ifndef NW_FOLDED_H
#define NW_FOLDED_H

#include <stdio.h>

#include "report/stacks.h"
#include "report/views.h"
#include "util/strbuf.h"

/* The text of the stack of the node visited last: "root;...;frame". */
struct nw_folded_line {
	struct nw_strbuf text;
	size_t *at;               /* where each depth's name ends in @text */
	size_t cap_at;
};

/*
 * Makes @l the stack of the node of visit @v of the stacks @s: the stack
 * of the visit before cut to @v's caller, and its name.  0 or -ENOMEM.
 */
int nw_folded_line_visit(struct nw_folded_line *l, const struct nw_stacks *s,
			 const struct nw_visit *v);
void nw_folded_line_fini(struct nw_folded_line *l);

/*
 * Folded stacks of @s by metric o->metric, from its visits
 * (nw_stacks_visit() by names: siblings of one name, the same function in
 * two modules, are one line); @s deferred (merged as it is visited, no
 * tree kept) or built.  0, -EINVAL (a metric the tree lacks), -ENOMEM,
 * -EIO when writing to @out failed.
 */
int nw_view_folded(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o);

#endif
