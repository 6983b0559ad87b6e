/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report --locks (doc/LOCKS.md): the locks of a measurement
 * (model/locks.h) by total time waited, each with its name (or address
 * and the function that first locked it), contended acquisitions, total,
 * mean and longest wait and share of the run's thread time; under each,
 * the paths that waited for it and those that released it to a waiter,
 * heaviest first.
 */
#ifndef NW_REPORT_LOCKS_H
#define NW_REPORT_LOCKS_H

#include <stdbool.h>
#include <stdio.h>

#include "model/measurement.h"
#include "report/stacks.h"

/* Paths shown under each lock, of each kind. */
#define NW_LOCKS_VIEW_PATHS 4

/*
 * Writes the view of @m's locks for the threads @f selects (by pid) to
 * @out, functions by their readable names (report/names.h) unless
 * @full_names.  -ENOENT when @m recorded no locks, -ENOMEM, -EIO on a
 * write error.
 */
int nw_view_locks(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
		  bool full_names);

#endif
