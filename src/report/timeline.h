/* SPDX-License-Identifier: MIT */
/*
 * The time dimension of a measurement: each selected thread's samples and
 * off-CPU intervals in time order, from its trace (model/trace.h), each
 * with the symbolic node of its stack (report/stacks.h), within the
 * model's time range (nw_measurement_restrict_time()) or the whole run.
 * What --timeline, the speedscope export in time order and the Trace
 * Event export read.
 *
 *  - nw_view_timeline(): narwhal-report --timeline, one row per thread,
 *    the run cut into columns of equal time, each cell how busy the
 *    thread was (or, with functions, its hottest function).
 */
#ifndef NW_TIMELINE_H
#define NW_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "report/stacks.h"

struct nw_tl_event {
	uint64_t time;         /* CLOCK_MONOTONIC ns */
	uint64_t value;        /* a sample's period; an off-CPU interval's ns */
	uint32_t sym;          /* the stack: a node of the stacks' tree */
	uint16_t event;        /* run.events index */
	uint8_t kind;          /* enum nw_trace_kind */
};

struct nw_tl_thread {
	uint32_t thread;       /* model index */
	struct nw_tl_event *v; /* in time order */
	size_t n, cap;
	uint64_t first, last;  /* its lifetime as the trace shows it (an interval's end included) */
};

struct nw_timeline {
	const struct nw_stacks *s;
	struct nw_tl_thread *threads; /* the selected threads with a trace, in model order */
	uint32_t n;
	uint64_t lo, hi;       /* the range shown (CLOCK_MONOTONIC ns) */
	uint64_t origin;       /* time 0 of the run: run.clock_start_ns */
};

/*
 * The timeline of the threads of @s (built with node_map, no split) that
 * @f selects.  -ENODATA when no selected thread has a trace, -EBADMSG for
 * a trace that does not decode, -ENOMEM.  *ret is the caller's.
 */
int nw_timeline_build(const struct nw_stacks *s, const struct nw_filter *f,
		      struct nw_timeline **ret);
/*
 * The same timeline with no thread's events read yet (their v NULL), for
 * a reader that takes one thread at a time: its range is the model's or
 * the run's (with no end recorded, UINT64_MAX).  -ENODATA, -ENOMEM.
 */
int nw_timeline_open(const struct nw_stacks *s, const struct nw_filter *f,
		     struct nw_timeline **ret);
/*
 * Reads the events of @tl's thread @i into @t (tl->threads[i] or the
 * caller's, whose room is used again when big enough).  0, -EBADMSG,
 * -ENOMEM.
 */
int nw_timeline_read_thread(const struct nw_timeline *tl, uint32_t i, struct nw_tl_thread *t);
void nw_timeline_free(struct nw_timeline *tl);

/*
 * The frames of symbolic node @sym, root first, into *@path (grown as
 * needed; *@cap its room), thread frames left out.  Returns the count, or
 * -ENOMEM.
 */
int nw_timeline_stack(const struct nw_timeline *tl, uint32_t sym, uint32_t **path, size_t *cap);

/* The event whose samples a timeline shows for metric @metric: its event, unless off-CPU. */
uint16_t nw_timeline_event(const struct nw_measurement *m, unsigned metric);

struct nw_timeline_opts {
	unsigned width;        /* columns (0: 64) */
	bool functions;        /* each cell its hottest function, not how busy */
	bool full_names;
	unsigned metric;       /* which event's samples */
};

/* narwhal-report --timeline.  0, -EIO. */
int nw_view_timeline(FILE *out, const struct nw_timeline *tl, const struct nw_timeline_opts *o);

#endif
