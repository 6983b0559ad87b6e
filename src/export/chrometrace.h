/* SPDX-License-Identifier: MIT */
/*
 * The Trace Event export (the JSON format of chrome://tracing, which
 * Perfetto and speedscope import): one track per thread, named by
 * metadata events, and the thread's stacks over time as complete ("X")
 * events, one per frame for as long as consecutive samples keep it on
 * the stack, nested as their calls were; off-CPU intervals as events of
 * their own ("off-CPU", category "off-cpu", with the function the thread
 * blocked in).  Times in microseconds from the start of the recording.
 */
#ifndef NW_CHROMETRACE_H
#define NW_CHROMETRACE_H

#include <stdio.h>

#include "report/timeline.h"

/*
 * Writes the timeline @tl, on-CPU samples of the event of metric @metric
 * (nw_timeline_event()).  0, -ENOMEM, -EIO when writing failed.
 */
int nw_chrome_trace_write(FILE *out, const struct nw_timeline *tl, unsigned metric);

#endif
