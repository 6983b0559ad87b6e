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

#include <stdint.h>
#include <stdio.h>

#include "report/stacks.h"

#define NW_DIFF_BASE 0u /* metric of the joined tree: weight in the base measurement */
#define NW_DIFF_NEW 1u  /* metric of the joined tree: weight in the new measurement */

struct nw_diff {
	/* The joined tree: frames by name (no module), metrics NW_DIFF_BASE, NW_DIFF_NEW. */
	struct nw_stacks *stacks;
	uint64_t total[2];         /* each measurement's total weight */
};

/*
 * Joins the stacks @base (weighed by metric @bm) and @new (by metric
 * @nm).  0, -EINVAL for a metric a tree lacks, -ENOMEM.  *ret is the
 * caller's.
 */
int nw_diff_new(const struct nw_stacks *base, unsigned bm, const struct nw_stacks *new,
		unsigned nm, struct nw_diff **ret);
void nw_diff_free(struct nw_diff *d);

/*
 * The change in share of each calling context (its self weight), largest
 * change first, hiding changes smaller than @percent_limit points.  The
 * labels name the two measurements in the header.  0, -ENOMEM, -EIO.
 */
int nw_diff_view(FILE *out, const struct nw_diff *d, double percent_limit,
		 const char *base_label, const char *new_label);

/* "frame;...;frame BASE NEW" per calling context (flamegraph's difffolded). */
int nw_diff_folded(FILE *out, const struct nw_diff *d);

#endif
