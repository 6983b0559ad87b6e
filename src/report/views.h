/* SPDX-License-Identifier: MIT */
/* The text views of narwhal-report: tree, flat, threads, modules, leaks (folded: folded.h). */
#ifndef NW_VIEWS_H
#define NW_VIEWS_H

#include <stdbool.h>
#include <stdio.h>

#include "report/stacks.h"

struct nw_view_opts {
	double percent_limit; /* --tree: hide nodes below this inclusive share (percent) */
	unsigned metric;      /* which metric of the tree to weigh by */
	bool full_names;      /* whole function signatures, not report/names.h's readable form */
};

/*
 * Each view returns 0, -EINVAL when o->metric is not a metric of the tree
 * (or a node's frame is not in the table), -ENOMEM, or -EIO when writing
 * to @out failed.
 */

/* Indented call tree, root first, inclusive and self percentages. */
int nw_view_tree(FILE *out, const struct nw_stacks *s, const struct nw_view_opts *o);
/*
 * SELF% CUMUL% FUNCTION (file:line), sorted by self, from the visits of
 * @s (nw_stacks_visit()): @s deferred (merged as it is visited, no tree
 * kept: a large measurement's flat profile costs its memory once, not
 * twice) or built.
 */
int nw_view_flat(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o);

/*
 * Each frame's self and cumulative weight in @nm metrics of @s (their
 * indexes at @metrics), from its visits: cumulative counts a frame once
 * per path, whatever the recursion.  @f->self and @f->cumul hold
 * @f->nframes * @nm, frame-major; @f->total the whole of each metric, the
 * root's own included.  -EINVAL for a metric the tree lacks, -ENOMEM.
 */
struct nw_flat_sums {
	uint32_t nframes;
	unsigned nm;
	uint64_t *self, *cumul, *total;
};

int nw_flat_sums(struct nw_stacks *s, const unsigned *metrics, unsigned nm, struct nw_flat_sums *f);
void nw_flat_sums_fini(struct nw_flat_sums *f);
/* One line per thread of @m that @f selects: pid, tid, name, samples, share. */
int nw_view_threads(FILE *out, const struct nw_measurement *m, const struct nw_filter *f);
/*
 * Whether nw_view_threads() of @m (its manifest) needs the threads' trees:
 * for columns beyond the samples (off-CPU time, allocations, other
 * events), summed from the trees.  Without them the manifest is enough.
 */
bool nw_view_threads_needs_trees(const struct nw_measurement *m);
/*
 * Shares per module (--by module): SELF% CUMUL% SAMPLES MODULE, a module
 * counted once per stack in its cumulative share.
 */
int nw_view_modules(FILE *out, const struct nw_stacks *s, const struct nw_view_opts *o);

/*
 * --leaks: the calling contexts of allocations still live at the end of
 * the run (metrics inuse-bytes and inuse-objects of narwhal-record
 * --alloc), largest first, each with its call path leaf first.  -ENOENT
 * when the measurement has no allocation metrics, -ENOMEM, -EIO.
 */
int nw_view_leaks(FILE *out, const struct nw_stacks *s, const struct nw_view_opts *o);

#endif
