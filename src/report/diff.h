/* SPDX-License-Identifier: MIT */
/*
 * Comparing two measurements by calling context.  Both trees are joined
 * into one whose frames are matched by name, as folded stacks match them,
 * with two metrics: the weight in the base measurement and in the new one.
 * Shares are of each measurement's own total, so runs of different length
 * compare.
 */
#ifndef NW_DIFF_H
#define NW_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/stacks.h"

/* The metrics of the joined tree. */
#define NW_DIFF_BASE 0u   /* the weight in the base measurement */
#define NW_DIFF_NEW 1u    /* the weight in the new measurement */
#define NW_DIFF_BASE_N 2u /* the samples behind it in the base (what the noise is of) */
#define NW_DIFF_NEW_N 3u  /* ... in the new */
#define NW_DIFF_METRICS 4u

struct nw_diff {
	/* The joined tree: frames by name (no module), metrics NW_DIFF_*. */
	struct nw_stacks *stacks;
	uint64_t total[NW_DIFF_METRICS]; /* each metric's total */
	bool time;                 /* the weights are nanoseconds (a clock's period) */
};

/*
 * Joins the stacks @base (weighed by metric @bm, its samples counted by
 * metric @bsm) and @new (@nm, @nsm).  0, -EINVAL for a metric a tree
 * lacks, -ENOMEM.  *ret is the caller's.
 */
int nw_diff_new(const struct nw_stacks *base, unsigned bm, unsigned bsm,
		const struct nw_stacks *new, unsigned nm, unsigned nsm, struct nw_diff **ret);
void nw_diff_free(struct nw_diff *d);

/* How the differences are shown. */
struct nw_diff_opts {
	const char *base_label, *new_label; /* the measurements, in the header */
	double percent_limit;      /* --tree: nodes under this share in both are left out */
	bool all;                  /* every change, not only those beyond noise */
	bool absolute;             /* samples or time, not shares (runs of different length) */
	bool full_names;
};

/*
 * The flat diff (--diff, --diff --flat): per function, the change of its
 * self share in points (or, @absolute, of its samples or time) with its
 * z-score from the sample counts (report/diffstat.h), base and new self
 * and cumulative shares; changes beyond noise (|z| >= 3) first, largest
 * first, the others counted (listed with @all).  Functions in one run
 * only are marked new or gone.  0, -ENOMEM, -EIO.
 */
int nw_diff_flat(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o);

/*
 * The tree diff (--diff --tree): the joined tree, each node with its
 * inclusive share in both runs, the change and its z-score.
 */
int nw_diff_tree(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o);

/* "frame;...;frame BASE NEW" per calling context (flamegraph's difffolded). */
int nw_diff_folded(FILE *out, const struct nw_diff *d);

#endif
