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

#include "report/stacks.h"

/*
 * Writes the threads of @p (stacks built per thread from a model) with
 * samples weighed by metric @metric.  0, -EINVAL for a metric the profile
 * lacks or stacks not built per thread, -ENOMEM, or -EIO when writing
 * failed.
 */
int nw_speedscope_write(FILE *out, const struct nw_stacks *p, unsigned metric);

/*
 * The metric a speedscope export weighs by when none is asked for: the
 * period of the default event (its time or count), else its samples.
 */
unsigned nw_speedscope_default_metric(const struct nw_measurement *m);

#endif
