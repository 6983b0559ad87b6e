/* SPDX-License-Identifier: MIT */
/*
 * The recorder's traces (model/trace.h): a session listener that keeps,
 * per thread, the time and calling context of each sample and each
 * off-CPU interval, encoded as it goes (a few bytes per event).  Node ids
 * are the session's own (in-memory) ones; the measurement writer maps
 * them to the file's.
 */
#ifndef NW_TRACER_H
#define NW_TRACER_H

#include <stdbool.h>
#include <stdint.h>

#include "model/trace.h"
#include "record/session.h"

/*
 * Times are kept in ticks of this many nanoseconds: a microsecond, finer
 * than any sampling period and than a Trace Event file's unit, and a byte
 * less per sample than nanoseconds.
 */
#define NW_TRACER_TICK_NS 1000

struct nw_tracer {
	struct nw_session_hooks hooks;
	struct nw_session *s;
	uint64_t t0;             /* CLOCK_MONOTONIC ns, the start of the recording */
	struct nw_trace **v;     /* by nw_thread.seq; NULL: no event yet */
	struct nw_thread **threads; /* by seq: the thread of each trace */
	uint64_t *first;         /* by seq: the time of the trace's first event */
	size_t n, cap, cap_threads, cap_first;
	uint64_t failures;       /* events lost to ENOMEM */
	uint64_t window_ns;      /* flight recorder: keep this much; 0: everything */
};

/* An empty tracer whose traces count time from @t0, listening to @s.  -ENOSPC, -ENOMEM. */
int nw_tracer_init(struct nw_tracer *t, struct nw_session *s, uint64_t t0);
void nw_tracer_fini(struct nw_tracer *t);

/*
 * The flight recorder (--flight-recorder): keep only the events of the
 * last @window_ns, and the trees only what those events added.
 */
void nw_tracer_set_window(struct nw_tracer *t, uint64_t window_ns);
/*
 * Forgets what is older than @now minus the window: each such event is
 * taken out of its thread's tree (nw_session_forget()) and out of the
 * trace, which is encoded again from its first event kept.  A trace is
 * cut once a quarter of a window has passed its window (@exact: at once,
 * before a write), so the memory stays within 1.25 windows of events and
 * each event is encoded again about four times.  -ENOMEM (the traces as
 * they were).
 */
int nw_tracer_expire(struct nw_tracer *t, uint64_t now, bool exact);
/* Empties every trace, which now counts from @t0 (a rotation's new interval). */
void nw_tracer_restart(struct nw_tracer *t, uint64_t t0);

/* The trace of @th, NULL when it has no event. */
const struct nw_trace *nw_tracer_thread(const struct nw_tracer *t, const struct nw_thread *th);

/* Bytes and events over every trace (the summary, bench/). */
void nw_tracer_size(const struct nw_tracer *t, uint64_t *bytes, uint64_t *events);

#endif
