/* SPDX-License-Identifier: MIT */
/*
 * Symbolic stacks: the view every text view and export reads, derived from
 * the model (pprof's Profile after its filters; uftrace's rstack).  The
 * threads a filter selects are merged into one tree whose nodes are
 * symbolic frames (report/frames.h): each physical node is resolved once
 * through the model's resolver and expanded into its inline chain,
 * outermost nearest the root; the frames of one inline chain share the
 * physical frame's sp tag.  Optionally each thread sits below a frame of
 * its own, and parts of the samples below prefix frames (a split: the
 * instrumented sections the samples were taken in).
 */
#ifndef NW_STACKS_H
#define NW_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/measurement.h"
#include "report/frames.h"

/* Which threads a view covers: all of them when tid < 0, pid < 0 and comm is NULL. */
struct nw_filter {
	int64_t tid;
	int64_t pid;
	const char *comm;
	/*
	 * Only the model's threads from @first up to @end (one of the runs of
	 * a merged model: nw_measurement_run()); NULL: any.
	 */
	const struct nw_mthread *first, *end;
};

#define NW_FILTER_ALL ((struct nw_filter){ .tid = -1, .pid = -1 })

bool nw_filter_thread(const struct nw_filter *f, const struct nw_mthread *th);
/* Whether @f, when it asks for threads at all, selects one of @m's. */
bool nw_filter_matches(const struct nw_filter *f, const struct nw_measurement *m);

/*
 * Weight moved from a node to a place below prefix frames: thread @thread
 * (model index), tree @tree of it, node @node; @prefix names a frame path.
 */
struct nw_split_entry {
	uint32_t thread, tree, node;
	uint32_t prefix;           /* index into nw_split.prefixes */
};

struct nw_split_prefix {
	uint32_t n;
	uint32_t *frames;          /* frame indexes in the stacks' table, outermost first */
};

struct nw_split {
	struct nw_split_prefix *prefixes;
	uint32_t nprefixes;
	struct nw_split_entry *entries; /* sorted by (thread, tree, node) */
	size_t n;
	uint64_t *values;          /* n * nmetrics: what each entry moves */
};

/* Frees a split (sections/join.h makes them); NULL is a no-op. */
void nw_split_free(struct nw_split *sp);

struct nw_stacks {
	const struct nw_measurement *m; /* NULL for trees made by hand (tests, --diff) */
	struct nw_frames frames;
	struct nw_cct *tree;       /* ips are frame indexes; metrics as the model's */
	uint32_t nthreads;         /* threads the filter selected */
	/* per_thread: each model thread's frame node, NW_CCT_NONE when not there */
	uint32_t *thread_node;
	/* each metric's total before nw_stacks_filter() (report/transform.h); NULL: unfiltered */
	uint64_t *unfiltered;
	/*
	 * With nw_stacks_opts.node_map: node_map[ti][t][n] is the symbolic
	 * node of node n of tree t of model thread ti (NULL for threads not
	 * selected); valid until the tree is replaced.
	 */
	uint32_t ***node_map;
	/*
	 * nw_stacks_defer(): the tree is not built; the first
	 * nw_stacks_visit() merges the model's trees of the threads @filter
	 * selects as it visits them, and keeps no tree.
	 */
	struct {
		bool pending, spent;
		bool per_thread;
		const struct nw_filter *filter;
	} deferred;
};

/*
 * A node as a visitor sees it: the one protocol of the writers that read
 * every stack once, in order (folded stacks, the flat profile,
 * speedscope), whether the stacks are merged as they are visited
 * (nw_stacks_opts.visit) or walked in a tree made before
 * (nw_stacks_visit()).  Depth first, each node after its caller.
 */
struct nw_visit {
	uint32_t depth;            /* 1 below the root */
	uint32_t frame;            /* in s->frames (by names: one frame of the name) */
	uint32_t thread;           /* per thread: the model thread's index; else UINT32_MAX */
	const uint64_t *metrics;   /* the node's own (by names: the summed), valid for the call */
};

/* Called for each node visited; nonzero stops the visit with it. */
typedef int (*nw_visit_fn)(void *arg, const struct nw_visit *v);

struct nw_stacks_opts {
	const struct nw_filter *filter; /* NULL: every thread */
	bool per_thread;           /* each thread below its frame "comm-tid" */
	const struct nw_split *split; /* NULL: none */
	bool node_map;             /* keep s->node_map (not with a split) */
	/*
	 * > 0: a symbolic node whose weight in metric @prune_metric
	 * (inclusive) is under this share of the total is not expanded: it
	 * takes its subtree's metrics as its own.  What a flame graph cannot
	 * draw anyway (frames under a tenth of a pixel), not built.  Not with
	 * per_thread, a split or node_map; the tree is then only fit to be
	 * drawn by that metric as it is (not inverted, filtered or folded).
	 */
	double prune_share;
	unsigned prune_metric;
	/*
	 * Threads that expand the tree: 0 leaves it to the machine (one per
	 * processor, for trees of many nodes), 1 builds here alone.  The tree
	 * is the same whatever the count.
	 */
	unsigned workers;
	/*
	 * Set: no tree is kept.  Each merged node goes to @visit as it is
	 * made (struct nw_visit), depth first, siblings in frame order (with
	 * @visit_names, in name order and siblings of one name, the same
	 * function in two modules, merged: what folded stacks print); nonzero
	 * stops the build with it.  Per thread, each thread's frame is visited
	 * before its stacks.  Not with a split, node_map or pruning, nor
	 * visit_names with per_thread.
	 */
	nw_visit_fn visit;
	void *visit_arg;
	bool visit_names;
};

/*
 * The symbolic stacks of @m as @o asks.  @s comes from nw_stacks_new(m,
 * ...) (a split interns its prefix frames into s->frames first).  0 or
 * -ENOMEM.
 */
int nw_stacks_build(struct nw_stacks *s, const struct nw_stacks_opts *o);
/* An empty view of @m (NULL: none) with an empty tree of @nmetrics metrics; NULL on ENOMEM. */
struct nw_stacks *nw_stacks_new(const struct nw_measurement *m, unsigned nmetrics);
void nw_stacks_free(struct nw_stacks *s);
/*
 * Replaces s->tree with @tree (which @s now owns): the threads' frame
 * nodes are those of @tree's root keyed by the same frames, NW_CCT_NONE
 * where a thread has none left.
 */
void nw_stacks_set_tree(struct nw_stacks *s, struct nw_cct *tree);

/*
 * Sets @s (from nw_stacks_new(), not built) to be merged as it is
 * visited: the threads @f selects (NULL: all; it must outlive @s), each
 * below its frame with @per_thread.  Visited once, then @s is its root
 * alone (with the selected trees' roots' metrics when not per thread).
 */
void nw_stacks_defer(struct nw_stacks *s, const struct nw_filter *f, bool per_thread);

/*
 * Visits the stacks of @s, depth first, each node after its caller and
 * siblings in the order of the tree: @s deferred (nw_stacks_defer()),
 * as the merge makes them, siblings in frame order; built, its tree's
 * nodes in the order of their child lists (a tree the build made: frame
 * order, so the same stacks give the same visits either way); per
 * thread, each thread's frame node first, then its stacks, the threads
 * in model order.  With @names, siblings of one name (the same function
 * in two modules) are one node in name order, their metrics summed, and
 * thread frames are frames like others (not with a deferred per-thread
 * @s).  0, what @visit returned, -EINVAL (a frame not in the table, @s
 * deferred and visited already, @names with a deferred per-thread @s),
 * -ENOMEM.
 */
int nw_stacks_visit(struct nw_stacks *s, bool names, nw_visit_fn visit, void *arg);

/*
 * The frames of one resolved address (a place, nw_place_resolved()),
 * outermost first, into @out (room for @max): the inline chain of its
 * symbol entry, else "module+0xADDR", else "[unknown]" (no module).  The
 * one place frames are named; pprof names its locations with it too.
 * Returns the count, or -ENOMEM.
 */
int nw_stacks_frames_of(struct nw_frames *f, const struct nw_resolved *r, uint32_t *out,
			uint32_t max);

/* The thread frame of @th ("comm-tid", spaces and ';' made '_'): its index or -ENOMEM. */
int64_t nw_stacks_thread_frame(struct nw_frames *f, const struct nw_mthread *th);

#endif
