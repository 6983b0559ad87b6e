/* SPDX-License-Identifier: MIT */
/*
 * Recursion folding (narwhal-report --fold-recursion): one node per function
 * along every path.  Walking a symbolic tree from the root, a frame whose
 * function already appears higher on the same path is merged into that
 * shallower node, and its subtree is re-parented there:
 * main;fib;fib;fib;leaf becomes main;fib;leaf, and mutual recursion
 * a;b;a;b;x becomes a;b;x.  Self metrics move with their node to a node of
 * the same function, so the total and every function's self stay exact.
 *
 * Function identity is the frame (index into the frame table); frames without a
 * module ("[unknown]") are not functions and are never folded.
 *
 * The sp tags (stack pointer of each frame's physical frame, 0 where
 * unknown: fp mode callers) say what kind of repetition each fold is.  The
 * stack grows down on x86-64 and aarch64, so a deeper invocation of the
 * same function has a smaller sp: that confirms a new invocation.  An equal
 * sp is the same physical frame: the function inlined into itself, or a
 * frame the unwinder repeated; folding is right for both.  Where a tag is
 * 0 the fold goes by function identity alone.  A larger sp cannot order the
 * two frames: tags of a tree merged from several threads come from
 * different stacks, and a frame that allocates a varying amount (alloca,
 * VLAs) moves its callees; such a repetition is folded by identity too, so
 * the result never depends on which thread or sample set a tag.
 */
#ifndef NW_RECURSION_H
#define NW_RECURSION_H

#include <stdint.h>

#include "model/cct.h"
#include "report/frames.h"

/* What a fold did: repeated frames (tree nodes) merged, by what the sp tags said. */
struct nw_fold_stats {
	uint64_t folded;     /* nodes merged into a shallower node of their function */
	uint64_t confirmed;  /* ... whose sp is below the shallower one's: a new invocation */
	uint64_t same_frame; /* ... whose sp equals it: one physical frame (inlined self-call) */
	uint64_t unordered;  /* ... whose sp is above it: different stacks, folded by identity */
	uint64_t no_sp;	     /* ... where either tag is 0: folded by identity alone */
};

/*
 * A new tree: @tree (a symbolic tree over frames @p: a thread's, a merged one) with
 * recursion folded; the caller frees it with nw_cct_free().  Fills @stats
 * when not NULL.  NULL on ENOMEM.  Nodes whose ip is not a frame of @p are
 * copied as they are (the views reject them).
 */
struct nw_cct *nw_recursion_fold(const struct nw_frames *p, const struct nw_cct *tree,
				 struct nw_fold_stats *stats);

/* nw_recursion_fold() without the statistics. */
struct nw_cct *nw_frames_fold_recursion(const struct nw_frames *p, const struct nw_cct *tree);

#endif
