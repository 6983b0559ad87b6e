/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report's views as outputs of a plan (report/plan.h): one table,
 * each view with what it reads and how it is written (pprof's
 * report.Generate() switch).  The exports' table is export/outputs.h,
 * --sections is sections/join.h's.
 */
#ifndef NW_OUTPUTS_H
#define NW_OUTPUTS_H

#include "report/plan.h"

enum nw_view {
	NW_VIEW_TREE,
	NW_VIEW_FLAT,
	NW_VIEW_THREADS,
	NW_VIEW_FOLDED,
	NW_VIEW_CALLERS,
	NW_VIEW_MODULES,
	NW_VIEW_LEAKS,
	NW_VIEW_LINES,
	NW_VIEW_ADDRESSES,
	NW_VIEW_TIMELINE,
	NW_VIEW_HEALTH,
	NW_VIEW_DISASM,            /* --disasm: the stored code of the functions, annotated */
	NW_VIEW_DIFF,              /* --diff (--flat): the change per function */
	NW_VIEW_DIFF_TREE,         /* --diff --tree: the change per calling context, as a tree */
	NW_VIEW_DIFF_FOLDED,       /* --diff --folded: "stack BASE NEW" lines */
	NW_VIEW_DIFF_MODULES,      /* --diff --by module: the change per module */
	NW_VIEW_DIFF_CALLERS,      /* --diff --callers RE: the change through each caller */
	NW_VIEW_DIFF_LINES,        /* --diff --lines RE: the change per source line */
	NW_VIEW_LOCKS,             /* --locks: locks by time waited (report/locks.h) */
	NW_VIEWS,
};

extern const struct nw_output_kind nw_views[NW_VIEWS];

/* What view @view (enum nw_view) shows with --diff: one of NW_VIEW_DIFF*, -1 for none. */
int nw_view_diff(int view);

#endif
