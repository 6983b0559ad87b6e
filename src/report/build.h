/* SPDX-License-Identifier: MIT */
/*
 * The builder of symbolic stacks (nw_stacks_build(), stacks.h), shared by
 * the files that do its jobs: chains.c finds each physical node's frame
 * chain before the merge, merge.c merges the trees top down (and expands
 * the parts left to workers), stacks.c puts them together and applies a
 * split.  Internal to src/report/.
 */
#ifndef NW_BUILD_H
#define NW_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/stacks.h"

/* Workers when nw_stacks_opts.workers leaves it to the machine, and the least work for them. */
#define MAX_WORKERS 8
#define PARALLEL_NODES 200000
/* Work is handed out in groups of a share of the whole to each worker: 1 / (n * PARTS). */
#define PARTS 16

/* A frame chain: the frames of a place, outermost first. */
struct chain {
	uint32_t first, n;        /* in pool */
};

/*
 * The build merges every selected tree at once, top down: the physical
 * nodes that land on one symbolic node are a group; their children (or
 * the next frame of their inline chain) are sorted by frame, and each run
 * of equal frames becomes one new symbolic child, created once, in
 * preorder.  No (parent, frame) lookups in the growing tree, which would
 * miss the caches once it is large.
 *
 * Each node's chain is found before the merge (each tree located on a
 * worker, the chains then taken tree by tree in node order), so the
 * frames are numbered by the trees alone.  On a machine of several
 * processors, a group of less than a share of the work (physical nodes
 * below it) is left as a part: after the top of the tree is merged,
 * workers expand the parts side by side into trees of their own, each
 * part whole by one of them, and the parts are grafted in their order.
 * Each symbolic node's children are in frame order either way: the tree
 * does not depend on the number of workers.
 */

/*
 * A physical node of tree @tree at position @pos of its frame chain, with
 * what the merge reads of the node (read once, where its sibling list is
 * walked, not again in the merge's order, which jumps between trees).
 */
struct cursor {
	uint32_t tree, node, chain, pos;
	uint32_t frame; /* the chain's frame at pos: sorted and compared without the pool */
	uint32_t first_child;
	uint64_t sp;
};

/* A symbolic node being expanded: its child cursors [begin, end), the next run. */
struct level {
	uint32_t sym;
	size_t begin, end, next;
};

/* A tree being merged. */
struct btree {
	const struct nw_tree *tr;
	uint32_t ti, t;
	uint32_t *chain;          /* each node's frame chain (the root's is not used) */
	uint32_t *size;           /* in parallel: each node's subtree's node count */
	uint32_t *to;             /* with a split: each node's symbolic node */
	uint32_t *part;           /* with both and workers: the part whose tree @to names */
	uint64_t *incl;           /* pruning: each node's inclusive weight */
};

/*
 * A group left to the workers: symbolic node @sym of the tree, to be
 * expanded from the cursors [first, first + n) of the deferred ones.  The
 * worker @worker builds it in a tree of its own, then it is grafted at
 * @sym.
 */
struct part {
	uint32_t sym;
	size_t first, n;
	uint64_t work;            /* physical nodes below */
	uint32_t worker;
	struct nw_cct *tree;      /* its root is @sym */
	uint32_t base;            /* grafted: its node j is the stacks' tree's base + j - 1 */
};

struct builder {
	struct nw_stacks *s;
	const struct nw_measurement *m;
	struct nw_cct *dst;       /* the stacks' tree, or a worker's */
	struct chain *chains;
	size_t nchains, cap_chains;
	uint32_t *place_chain;    /* per place of the model: its chain, UINT32_MAX: none yet */
	size_t nplace_chain, cap_place_chain;
	uint32_t unknown_chain;   /* every place without a module's, UINT32_MAX: none yet */
	uint32_t *pool;
	size_t npool, cap_pool;
	struct btree *trees;
	size_t ntrees, cap_trees;
	bool with_to;             /* each physical node's symbolic node kept */
	struct tree_keys *keys;   /* while resolving: per tree */
	int *keys_ret;
	struct cursor *cur;       /* a stack of the levels' child cursors */
	size_t ncur, cap_cur;
	struct level *levels;
	size_t nlevels, cap_levels;
	unsigned nm;              /* metrics copied */
	bool prune;               /* weigh each tree's nodes, prune at prune_below */
	unsigned prune_metric;
	uint64_t prune_below;     /* 0: no pruning */
	uint32_t *walk;           /* pruning: a stack of physical nodes */
	size_t cap_walk;
	uint64_t defer_below;     /* groups of less work go to the workers; 0: none */
	/* nw_stacks_opts.visit; with visit_names, frames sorted by the rank of their names */
	nw_visit_fn visit;
	void *visit_arg;
	struct nw_visit at;       /* the thread visited, and the depth of its frame */
	uint32_t *rank;           /* each frame's rank among the names */
	uint32_t *rep;            /* a frame of each rank */
	uint32_t in_part;         /* a worker: the part being expanded */
	struct cursor *dcur;      /* the deferred groups' cursors */
	size_t ndcur, cap_dcur;
	struct part *parts;
	size_t nparts, cap_parts;
};

/*
 * The trees of the threads @o selects in b->trees, each node's frame
 * chain and what the merge reads (chains.c), on @nworkers threads; the
 * frames of each thread's chains are numbered thread by thread, each
 * followed by the thread's own frame with per_thread (its number in
 * @thread_frame).  -ENOMEM.
 */
int nw_chains_resolve(struct builder *b, const struct nw_stacks_opts *o, uint32_t nworkers,
		      int64_t *thread_frame);
/* Frees the chains and what resolving kept. */
void nw_chains_fini(struct builder *b);

/* Appends the children of every physical node of tree @tree (merge.c).  -ENOMEM. */
int nw_merge_roots(struct builder *b, size_t tree);
/* Merges the cursors at [a, e) (children of the symbolic node @top) into the tree.  -ENOMEM. */
int nw_merge(struct builder *b, uint32_t top, size_t a, size_t e);
/* Expands the deferred parts on @nworkers threads (this one among them) and grafts them. */
int nw_merge_parts(struct builder *b, uint32_t nworkers);
/*
 * Ranks the frames by name, equal names one rank, for a visitor; the
 * cursors pushed so far are keyed by rank from now.  -ENOMEM.
 */
int nw_merge_rank_names(struct builder *b);
/* Frees what the merge kept (cursors, levels, parts, the trees' arrays). */
void nw_merge_fini(struct builder *b);

#endif
