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

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/diffstat.h"
#include "report/stacks.h"

/* The metrics of the joined tree. */
#define NW_DIFF_BASE 0u   /* the weight in the base measurement */
#define NW_DIFF_NEW 1u    /* the weight in the new measurement */
#define NW_DIFF_BASE_N 2u /* the samples behind it in the base (what the noise is of) */
#define NW_DIFF_NEW_N 3u  /* ... in the new */
#define NW_DIFF_METRICS 4u
/* With runs (struct nw_diff.runs): metric NW_DIFF_RUN + r, the weight in run r (base first). */
#define NW_DIFF_RUN NW_DIFF_METRICS
#define NW_DIFF_MAX_RUNS 64u       /* runs on a side at most */

struct nw_diff {
	/*
	 * The joined tree: frames by name (no module), or with
	 * NW_DIFF_BY_MODULE each frame its module's file name; metrics
	 * NW_DIFF_*, then one per run when runs is set.
	 */
	struct nw_stacks *stacks;
	unsigned nmetrics;         /* NW_DIFF_METRICS, + nbase + nnew with runs */
	uint64_t *total;           /* each metric's total */
	unsigned nbase, nnew;      /* the runs on each side (merged or apart) */
	/*
	 * Each run is kept apart (at least two on each side): the noise of a
	 * change is the spread of its share between runs (Welch's test).
	 */
	bool runs;
	bool modules;              /* NW_DIFF_BY_MODULE */
	bool time;                 /* the weights are nanoseconds (a clock's period) */
};

/* One run's stacks: weighed by @metric, its samples counted by @samples. */
struct nw_diff_run {
	const struct nw_stacks *s;
	unsigned metric, samples;
};

#define NW_DIFF_BY_MODULE 1u       /* frames joined by their module's file name */

/*
 * Joins the @nbase runs @base and the @nnew runs @new (at least one each):
 * each side's runs summed; each run kept apart too when both sides have
 * two or more.  @flags NW_DIFF_*.  0, -EINVAL for a metric a tree lacks
 * or more than NW_DIFF_MAX_RUNS on a side, -ENOMEM.  *ret is the caller's.
 */
int nw_diff_join(const struct nw_diff_run *base, unsigned nbase, const struct nw_diff_run *new,
		 unsigned nnew, unsigned flags, struct nw_diff **ret);
/* nw_diff_join() of one run each: @base by metric @bm, samples @bsm; @new by @nm, @nsm. */
int nw_diff_new(const struct nw_stacks *base, unsigned bm, unsigned bsm,
		const struct nw_stacks *new, unsigned nm, unsigned nsm, struct nw_diff **ret);
void nw_diff_free(struct nw_diff *d);
/* Notes that the sides, each joined merged, were merged from @nbase and @nnew runs. */
void nw_diff_count_runs(struct nw_diff *d, unsigned nbase, unsigned nnew);

/*
 * The change of a row of the joined tree whose metrics are @v (d->nmetrics
 * of them: a node's, a function's self or cumulative sums): in share
 * points (or, @absolute, in the weights' unit) of the merged runs, its
 * standard error and z from the samples (binomial, Poisson), or with runs
 * from the spread of the runs' values (Welch).
 */
struct nw_change nw_diff_change(const struct nw_diff *d, bool absolute, const uint64_t *v);

/* How the differences are shown. */
struct nw_diff_opts {
	const char *base_label, *new_label; /* the measurements, in the header */
	double percent_limit;      /* --tree: nodes under this share in both are left out */
	bool all;                  /* every change, not only those beyond noise */
	bool absolute;             /* samples or time, not shares (runs of different length) */
	bool full_names;
};

/*
 * Every view of a diff starts with a header that names both sides (their
 * runs) and how noise is told: sampling (binomial, or Poisson with
 * @absolute) or, with runs, the spread between runs (Welch).  Each change
 * is shown with its standard error and z-score (report/diffstat.h); only
 * changes beyond noise (|z| >= 3) are listed, the others counted in a
 * last line ("N functions changed within sampling noise"), unless @all.
 * Each returns 0, -ENOMEM, -EIO.
 */

/* A row of a flat diff: its name, its self and cumulative metrics (d->nmetrics each). */
struct nw_diff_row {
	const char *name;
	const uint64_t *self, *cumul;
};

/*
 * The rows @rows of @what ("function", "module", "line"): per row the
 * change of its self share in points (or, @absolute, of its samples or
 * time), base and new self and cumulative shares and the cumulative
 * change; beyond noise first, largest first.  Rows in one run only are
 * marked new or gone; rows in neither are left out.
 */
int nw_diff_rows(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		 const char *what, const struct nw_diff_row *rows, uint32_t nrows);

/*
 * The flat diff (--diff, --diff --flat, --diff --by module): nw_diff_rows()
 * of the joined tree's frames: functions, or modules (NW_DIFF_BY_MODULE).
 */
int nw_diff_flat(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o);

/* A row as nw_diff_rows() shows it. */
struct nw_diff_entry {
	const char *name;
	struct nw_change c;        /* of the self share (points), or weight with absolute */
	bool beyond;               /* nw_change_significant() */
	double bself, nself, bcum, ncum;  /* shares, percent */
};

/*
 * The rows @rows as nw_diff_rows() shows them (every one, in its order),
 * into *@ret (@ret_n of them, the caller's to free; names are the rows').
 * -ENOMEM.
 */
int nw_diff_entries(const struct nw_diff *d, bool absolute, const struct nw_diff_row *rows,
		    uint32_t nrows, struct nw_diff_entry **ret, uint32_t *ret_n);
/* The flat diff's rows so (nw_diff_flat(), whole names: they point into @d). */
int nw_diff_flat_entries(const struct nw_diff *d, bool absolute, struct nw_diff_entry **ret,
			 uint32_t *ret_n);
/* How @d's noise is told, as the headers say it ("sampling (binomial, ...)"), into @buf. */
void nw_diff_noise(const struct nw_diff *d, bool absolute, char *buf, size_t len);

/*
 * The tree diff (--diff --tree): the joined tree, each node with its
 * inclusive share in both runs and the change; a node within noise only
 * above one beyond it.
 */
int nw_diff_tree(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o);

/* A calling context of the joined tree, as nw_diff_tree() shows it. */
struct nw_diff_context {
	uint32_t parent;           /* its caller's index among the contexts; UINT32_MAX: none */
	const char *name;          /* its function (the whole name, @d's) */
	struct nw_change c;        /* of its inclusive share (points), or weight with absolute */
	bool beyond;               /* nw_change_significant() */
};

/*
 * The contexts of the joined tree in preorder (callers before callees),
 * without those under @min_share percent in both runs, nor anything below
 * them, into *@ret (@ret_n of them, the caller's to free).  -ENOMEM.
 */
int nw_diff_contexts(const struct nw_diff *d, bool absolute, double min_share,
		     struct nw_diff_context **ret, uint32_t *ret_n);

/*
 * --diff --callers RE: each function matching @re (heaviest first), the
 * change of its self and total weight, and the trees of its callers and
 * callees (report/callers.h) with the change of each path.  -ENOENT when
 * no function with weight matches (nothing written).
 */
int nw_diff_callers(FILE *out, const struct nw_diff *d, const regex_t *re,
		    const struct nw_diff_opts *o);

/*
 * --diff --lines RE: the rows of --lines (report/lines.h) of the functions
 * matching @re, in @base by metric @bm and in @new by @nm (their runs
 * apart when both were merged from several), as nw_diff_rows() of lines.
 * -ENOENT when no sampled function matches, -EINVAL for a metric a model
 * lacks.
 */
int nw_diff_lines(FILE *out, const struct nw_measurement *base, unsigned bm,
		  const struct nw_measurement *new, unsigned nm, const struct nw_filter *f,
		  const regex_t *re, const struct nw_diff_opts *o);

/* "frame;...;frame BASE NEW" per calling context (flamegraph's difffolded). */
int nw_diff_folded(FILE *out, const struct nw_diff *d);

#endif
