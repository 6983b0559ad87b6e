/* SPDX-License-Identifier: MIT */
/*
 * Functions from stacks to stacks, with pprof's semantics (its -focus,
 * -ignore, -hide and -show_from), and the bottom-up inversion:
 *
 *  - focus: keep the samples whose stack has a frame that matches;
 *  - ignore: drop the samples whose stack has a frame that matches;
 *  - hide: remove the matching frames from every stack; stacks that
 *    become equal merge, and the samples of a stack left without frames
 *    are dropped;
 *  - root (show_from): cut each stack above its first matching frame
 *    from the root (that frame becomes a root); samples without one are
 *    dropped;
 *  - focus-module / ignore-module: focus and ignore by a frame's module.
 *
 * Regular expressions (POSIX extended) match anywhere in a function's
 * whole name, or in a module's path.  Thread frames (--per-thread) are
 * never hidden, focused or cut.  Each applies to every view and export.
 */
#ifndef NW_TRANSFORM_H
#define NW_TRANSFORM_H

#include <regex.h>
#include <stdbool.h>

#include "report/stacks.h"

struct nw_stack_filter {
	const regex_t *focus, *ignore, *hide, *root; /* function names; NULL: none */
	const regex_t *focus_module, *ignore_module; /* module paths; NULL: none */
};

/* Does @f ask for anything? */
bool nw_stack_filter_active(const struct nw_stack_filter *f);

/*
 * Replaces s->tree with the tree @f leaves (zero-weight branches pruned),
 * keeping the totals of the tree it first filtered in s->unfiltered (the
 * views say how much the filters kept).  0 or -ENOMEM (s->tree unchanged).
 */
int nw_stacks_filter(struct nw_stacks *s, const struct nw_stack_filter *f);

/*
 * Replaces s->tree with its bottom-up form: each stack reversed, the leaf
 * at the root and the outermost caller last, weights on the last frame
 * (so a root frame's inclusive weight is that function's self weight).
 * Thread frames stay at the root.  0 or -ENOMEM (s unchanged).
 */
int nw_stacks_invert(struct nw_stacks *s);

#endif
