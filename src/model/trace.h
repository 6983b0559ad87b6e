/* SPDX-License-Identifier: MIT */
/*
 * A thread's trace: the time and calling context of each of its samples,
 * and each interval it spent off the CPU, in time order.  Kept encoded, in
 * memory and on disk alike (doc/ARCHITECTURE.md, "Trace file format"), at a few bytes per
 * event: every number is a LEB128 varint, signed ones zigzag-encoded, and
 * each event is stored as its difference from the one before.
 *
 * An event refers to a node of the thread's tree for one epoch of its
 * process (nw_epoch.index).  Each event starts with a head varint,
 * (zigzag(node - previous node) << 2) | tag:
 *
 *   tag 0  sample of the current event with its last period:
 *            zigzag(dt - previous dt)
 *   tag 1  sample with a new period:
 *            zigzag(dt - previous dt), zigzag(period - its last period)
 *   tag 2  off-CPU interval of the current off-CPU event, starting at its
 *          time: zigzag(dt - previous dt), duration in ticks
 *   tag 3  control; the head's upper bits name it (the node is unchanged):
 *            0 event EVENT (current event of samples), 1 epoch EPOCH
 *            (current epoch), 2 off-CPU event EVENT (of intervals)
 *
 * where dt is the time since the previous event in ticks (the trace's
 * tick_ns nanoseconds; the first event's time is relative to t0): samples
 * at a steady rate cost one byte of time.  The current events and epoch
 * start at 0, every period at 0, the previous node at 0.  With the
 * recorder's tick of 1 us a sample takes 2 to 3 bytes, an off-CPU interval
 * 4 or 5.
 */
#ifndef NW_TRACE_H
#define NW_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum nw_trace_kind {
	NW_TRACE_SAMPLE,
	NW_TRACE_OFFCPU,
};

/* Events of up to this many perf events are encoded (periods kept per event). */
#define NW_TRACE_MAX_EVENTS 16

struct nw_trace_event {
	uint64_t time;     /* CLOCK_MONOTONIC ns (a multiple of the tick after t0) */
	uint64_t value;    /* a sample's period; an off-CPU interval's length, ns */
	uint32_t node;     /* in the thread's tree of @epoch */
	uint32_t epoch;    /* nw_epoch.index in the thread's process */
	uint16_t event;    /* the perf event (run.events index) */
	uint8_t kind;      /* enum nw_trace_kind */
};

/* Where an encoder or a decoder stands: what the next event is relative to. */
struct nw_trace_state {
	uint64_t time, dt;           /* the previous event's time (ticks after t0) and step */
	uint32_t node, event, epoch, offcpu_event;
	uint64_t period[NW_TRACE_MAX_EVENTS];
};

/* A trace: its encoded events and what they are relative to. */
struct nw_trace {
	uint64_t t0;       /* CLOCK_MONOTONIC ns */
	uint32_t tick_ns;  /* >= 1 */
	uint64_t n;        /* events */
	uint8_t *bytes;
	size_t size, cap;
	bool failed;       /* an append ran out of memory: events after n are lost */
	struct nw_trace_state enc;
};

/* An empty trace whose times count from @t0 in ticks of @tick_ns (0: 1). */
void nw_trace_init(struct nw_trace *t, uint64_t t0, uint32_t tick_ns);
void nw_trace_fini(struct nw_trace *t);

/*
 * Appends @ev (times should not go backwards; they may, at a cost in
 * bytes).  Times are cut to the tick.  -EINVAL for an event beyond
 * NW_TRACE_MAX_EVENTS or a time before t0, -ENOMEM (t->failed is set;
 * the events before stay valid).
 */
int nw_trace_add(struct nw_trace *t, const struct nw_trace_event *ev);

/* Reading events back, from the first. */
struct nw_trace_reader {
	const struct nw_trace *t;
	size_t off;        /* of the next event */
	uint64_t index;    /* events read */
	struct nw_trace_state st;
};

void nw_trace_reader_init(struct nw_trace_reader *r, const struct nw_trace *t);
/*
 * The next event into @ev: 1, 0 at the end, -EBADMSG when the bytes are
 * cut or malformed (r->off is where).  Bounds-checked: any bytes can be
 * read.
 */
int nw_trace_next(struct nw_trace_reader *r, struct nw_trace_event *ev);

/*
 * Decodes every event of @t into *@ret (malloc'd, the caller's; n events).
 * 0, -EBADMSG with the offset in *@bad_off, -ENOMEM.
 */
int nw_trace_decode(const struct nw_trace *t, struct nw_trace_event **ret, size_t *bad_off);

/*
 * Re-encodes @src into the empty @dst (same t0 and tick) with each node
 * id replaced by map(@arg, epoch, node).  0, -EBADMSG (@src malformed, or
 * map() returned UINT32_MAX), -ENOMEM.
 */
int nw_trace_remap(const struct nw_trace *src, struct nw_trace *dst,
		   uint32_t (*map)(void *arg, uint32_t epoch, uint32_t node), void *arg);

#endif
