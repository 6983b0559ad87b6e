/* SPDX-License-Identifier: MIT */
/*
 * Is a change between measurements beyond noise?  Two estimates:
 *
 * - One run on each side: sampling noise.  A function's share of a run's
 *   samples is a binomial proportion; the change of two independent
 *   proportions has the standard error sqrt(p1 (1 - p1) / n1 + p2 (1 - p2)
 *   / n2), and its z-score is the change over that.  Absolute counts
 *   (runs of different length, --diff-absolute) are Poisson: the change
 *   of two counts has the standard error sqrt(c1 + c2).
 * - Several runs on each side: the spread between runs (Welch's t-test on
 *   the per-run shares), so that run-to-run variation counts, not only
 *   sampling.  Its t is given as the z-score of the same two-sided tail
 *   probability, so that one threshold (|z| >= 3) reads both.
 */
#ifndef NW_DIFFSTAT_H
#define NW_DIFFSTAT_H

#include <stdbool.h>
#include <stdint.h>

/* The threshold beyond which a change is reported as more than noise. */
#define NW_DIFF_Z 3.0

struct nw_change {
	double delta;  /* new - base: share points (0..100) or counts */
	double se;     /* its standard error, same unit; 0 when both sides are exact */
	double z;      /* delta / se, signed; +-INFINITY when se is 0 and delta is not */
};

/*
 * The change of a share from @b of @btotal samples to @n of @ntotal
 * (binomial), in points.  A side with no samples at all counts as a share
 * of 0 with no spread.
 */
struct nw_change nw_change_share(uint64_t b, uint64_t btotal, uint64_t n, uint64_t ntotal);

/*
 * The change of a count from @b to @n (Poisson), in units of @unit per
 * sample (1 for samples, the period in nanoseconds for a clock).
 */
struct nw_change nw_change_count(uint64_t b, uint64_t n, double unit);

/*
 * Welch's test of the @nb values @bv against the @nn values @nv (each at
 * least 2): delta of the means, its standard error, and z as above.  With
 * fewer than two values on a side, se and z are 0 (no estimate).
 */
struct nw_change nw_change_welch(const double *bv, unsigned nb, const double *nv, unsigned nn);

/* Whether @c is beyond noise: |z| >= NW_DIFF_Z. */
bool nw_change_significant(const struct nw_change *c);

/* The two-sided tail probability of Student's t with @df degrees of freedom at |@t|. */
double nw_t_tail(double t, double df);

#endif
