/* SPDX-License-Identifier: MIT */
/*
 * speedscope export: the speedscope file format (JSON, "sampled" profiles),
 * one profile per thread, frames shared between them (name, file, line).
 * Each sample is one calling context of a thread, root first, weighed by
 * one metric in the event's unit (nanoseconds for cpu-clock and task-clock
 * periods, "none" for counts): from the traces, every sample in time
 * order; without traces, each calling context once with its total.
 */
#ifndef NW_SPEEDSCOPE_H
#define NW_SPEEDSCOPE_H

#include <stdio.h>

#include "report/stacks.h"
#include "report/timeline.h"

/*
 * Writes the threads of @s (stacks per thread: built, or deferred and
 * merged as they are visited, no tree kept) with samples weighed by
 * metric @metric: each thread's calling contexts once, from the visits
 * of its stacks (nw_stacks_visit()).  0, -EINVAL for a metric the
 * stacks lack or stacks not per thread, -ENOMEM, or -EIO when writing
 * failed.
 */
int nw_speedscope_write(FILE *out, struct nw_stacks *s, unsigned metric);
/*
 * Writes the threads of the timeline @tl in time order: each thread's
 * samples of the event of metric @metric (nw_timeline_event()) as they
 * came, each weighing its period in nanoseconds (clock events: the time it
 * stands for; 1 for events that count no time), so that speedscope's Time
 * Order view shows the run.  @tl from nw_timeline_open(): its threads'
 * events are read here, the next thread's on a worker while one is
 * written (a timeline built whole is read again).  0, -ENOMEM, -EBADMSG
 * (a trace), -EIO.
 */
int nw_speedscope_write_timeline(FILE *out, const struct nw_timeline *tl, unsigned metric);

/*
 * The metric a speedscope export weighs by when none is asked for: the
 * period of the default event (its time or count), else its samples.
 */
unsigned nw_speedscope_default_metric(const struct nw_measurement *m);

#endif
