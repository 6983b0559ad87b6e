/* SPDX-License-Identifier: MIT */
/*
 * speedscope export: the speedscope file format (JSON, "sampled" profiles),
 * one profile per thread, frames shared between them (name, file, line).
 * Each sample is one calling context of a thread, root first, weighed by
 * one metric in the event's unit (nanoseconds for cpu-clock and task-clock
 * periods, "none" for counts).
 */
#ifndef NW_SPEEDSCOPE_H
#define NW_SPEEDSCOPE_H

#include <stdio.h>

#include "report/profile.h"

/*
 * Writes the threads of @p that @f selects (all when NULL) with samples
 * weighed by metric @metric.  0, -EINVAL for a metric the profile lacks,
 * -ENOMEM, or -EIO when writing failed.
 */
int nw_speedscope_write(FILE *out, const struct nw_profile *p, const struct nw_filter *f,
			unsigned metric);

/*
 * The metric a speedscope export weighs by when none is asked for: the
 * period of the first event (its time or count), else the samples.
 */
unsigned nw_speedscope_default_metric(const struct nw_profile *p);

#endif
