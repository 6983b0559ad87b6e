/* SPDX-License-Identifier: MIT */
/*
 * Traces (model/trace.h, record/tracer.h): the event codec byte by byte
 * and on a mixed sequence (two events, steady and changing periods,
 * epochs, off-CPU intervals, time going backwards, large node deltas,
 * times far apart, a coarse tick), its size per event on a steady sample
 * stream, the decoder on every prefix of a valid encoding and on crafted
 * bad bytes, nw_trace_remap(); and the recorder's tracer fed through its
 * session hooks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/trace.h"
#include "record/session.h"
#include "record/tasks.h"
#include "record/tracer.h"

#define T0 5000000000ull /* CLOCK_MONOTONIC ns: the start of a recording */

/* A sample, an off-CPU interval: struct nw_trace_event initializers. */
#define S(t, e, per, nd, ep)                                                                       \
	{ .time = (t), .value = (per), .node = (nd), .epoch = (ep), .event = (e),                  \
	  .kind = NW_TRACE_SAMPLE }
#define OFF(t, e, ns, nd, ep)                                                                      \
	{ .time = (t), .value = (ns), .node = (nd), .epoch = (ep), .event = (e),                   \
	  .kind = NW_TRACE_OFFCPU }

static void assert_same_event(const struct nw_trace_event *want, const struct nw_trace_event *got,
			      size_t k)
{
	if (want->time != got->time || want->value != got->value || want->node != got->node ||
	    want->epoch != got->epoch || want->event != got->event || want->kind != got->kind)
		fail_msg("event %zu: want time %llu value %llu node %u epoch %u event %u kind %u, "
			 "got time %llu value %llu node %u epoch %u event %u kind %u",
			 k, (unsigned long long)want->time, (unsigned long long)want->value,
			 want->node, want->epoch, want->event, want->kind,
			 (unsigned long long)got->time, (unsigned long long)got->value, got->node,
			 got->epoch, got->event, got->kind);
}

static void encode(struct nw_trace *t, const struct nw_trace_event *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		assert_int_equal(nw_trace_add(t, &v[k]), 0);
	assert_int_equal(t->n, n);
	assert_false(t->failed);
}

/* Decodes @t both ways (nw_trace_next, nw_trace_decode): exactly @want. */
static void assert_decodes_to(const struct nw_trace *t, const struct nw_trace_event *want, size_t n)
{
	struct nw_trace_reader r;
	struct nw_trace_event ev, *v = NULL;
	size_t bad = 12345;

	nw_trace_reader_init(&r, t);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(nw_trace_next(&r, &ev), 1);
		assert_same_event(&want[k], &ev, k);
	}
	assert_int_equal(nw_trace_next(&r, &ev), 0);
	assert_int_equal(r.index, n);
	assert_int_equal(r.off, t->size);

	assert_int_equal(nw_trace_decode(t, &v, &bad), 0);
	assert_non_null(v);
	assert_int_equal(bad, 12345); /* untouched */
	for (size_t k = 0; k < n; k++)
		assert_same_event(&want[k], &v[k], k);
	free(v);
}

/* ---- 1. the codec ---- */

/* The format itself, byte by byte (trace.h): what files written earlier hold. */
static void test_encoding_bytes(void **state)
{
	static const struct nw_trace_event v[] = {
		S(100 + 10, 0, 7, 3, 0),
		S(100 + 20, 0, 7, 2, 0),
		S(100 + 25, 1, 7, 2, 0),
		OFF(100 + 25, 1, 300, 2, 2),
		S(100 + 30, 1, 7, 2, 2),
	};
	static const uint8_t want[] = {
		/* node +3 with a new period: head 6 << 2 | 1, dt 10, period +7 */
		25, 20, 14,
		/* node -1, same period: head 1 << 2 | 0, dt - previous dt 0 */
		4, 0,
		/* control event 1; node +0, a new period (event 1's was 0), dt 5 - 10 */
		3, 1, 1, 9, 14,
		/* control off-CPU event 1, control epoch 2; off-CPU: head 2, dt 0 - 5, 300 ticks */
		11, 1, 7, 2, 2, 9, 0xac, 0x02,
		/* event 1's samples go on without a control: head 0, dt 5 - 0 */
		0, 10,
	};
	struct nw_trace t;

	nw_trace_init(&t, 100, 0);
	assert_int_equal(t.tick_ns, 1); /* 0 means 1 */
	encode(&t, v, 5);
	assert_int_equal(t.size, sizeof(want));
	assert_memory_equal(t.bytes, want, sizeof(want));
	assert_decodes_to(&t, v, 5);
	nw_trace_fini(&t);
}

/* Everything the encoding distinguishes, in one sequence. */
static const struct nw_trace_event mixed[] = {
	/* event 0 at a steady period and rate */
	S(T0 + 1001001, 0, 1001001, 5, 0),
	S(T0 + 2002002, 0, 1001001, 6, 0),
	S(T0 + 3003003, 0, 1001001, 6, 0),
	/* event 1, with its own period */
	S(T0 + 3003500, 1, 100000, 7, 0),
	S(T0 + 3003999, 1, 100000, 7, 0),
	/* event 0 again: its period was kept */
	S(T0 + 4004004, 0, 1001001, 5, 0),
	/* a changing period (-F) */
	S(T0 + 5005005, 0, 999, 5, 0),
	S(T0 + 6006006, 0, 2000000, 4, 0),
	/* another epoch; off-CPU intervals with their lengths */
	S(T0 + 7000000, 0, 2000000, 3, 1),
	OFF(T0 + 7000001, 2, 5000000, 3, 1),
	OFF(T0 + 12000001, 2, 0, 9, 1),
	/* back to epoch 0 */
	S(T0 + 12500000, 0, 2000000, 2, 0),
	/* time going backwards, then to t0 + 1 */
	S(T0 + 12000000, 0, 2000000, 2, 0),
	S(T0 + 1, 1, 100000, 2, 0),
	/* large node deltas both ways */
	S(T0 + 13000000, 0, 2000000, UINT32_MAX - 1, 0),
	S(T0 + 13000001, 0, 2000000, 1, 0),
	S(T0 + 13000002, 0, 2000000, UINT32_MAX, 0),
	S(T0 + 13000003, 0, 2000000, 0, 0),
	/* times far apart: the last nanosecond there is, t0 itself, and back */
	S(UINT64_MAX, 0, 2000000, 8, 0),
	S(T0, 0, 2000000, 8, 0),
	S(UINT64_MAX - 12345, 15, UINT64_MAX, 8, UINT32_MAX),
	OFF(UINT64_MAX, 15, UINT64_MAX - T0, 1, UINT32_MAX),
	/* a period back to 0 */
	S(T0 + 14000000, 15, 0, 1, 0),
};
#define NMIXED (sizeof(mixed) / sizeof(mixed[0]))

static void test_round_trip(void **state)
{
	struct nw_trace_event cut[NMIXED];
	struct nw_trace t;

	nw_trace_init(&t, T0, 1);
	encode(&t, mixed, NMIXED);
	assert_decodes_to(&t, mixed, NMIXED);
	nw_trace_fini(&t);

	/* In ticks of 1000 ns: times (after t0) and off-CPU lengths cut to the tick. */
	for (size_t k = 0; k < NMIXED; k++) {
		cut[k] = mixed[k];
		cut[k].time = T0 + (mixed[k].time - T0) / 1000 * 1000;
		if (mixed[k].kind == NW_TRACE_OFFCPU)
			cut[k].value = mixed[k].value / 1000 * 1000;
	}
	assert_int_equal(cut[0].time, T0 + 1001000);
	assert_int_equal(cut[9].value, 5000000);
	nw_trace_init(&t, T0, 1000);
	encode(&t, mixed, NMIXED);
	assert_decodes_to(&t, cut, NMIXED);
	nw_trace_fini(&t);
}

/* @n samples 1001001 ns apart with a period of 1001001, the leaf moving by a few nodes. */
static size_t steady_bytes(uint32_t tick_ns, size_t n)
{
	struct nw_trace t;
	size_t size;

	nw_trace_init(&t, T0, tick_ns);
	for (size_t i = 0; i < n; i++) {
		struct nw_trace_event ev =
		    S(T0 + 1001001 * (i + 1), 0, 1001001, (uint32_t)(100 + i % 7), 0);

		assert_int_equal(nw_trace_add(&t, &ev), 0);
	}
	assert_int_equal(t.n, n);
	size = t.size;
	printf("trace: %zu steady samples, tick %u ns: %zu bytes, %.3f bytes each\n", n,
	       tick_ns, size, (double)size / (double)n);
	nw_trace_fini(&t);
	return size;
}

/*
 * A steady stream takes 3 bytes an event at most.  In ns ticks: the first
 * costs 8 bytes (node +100, dt and period of 3 bytes each), every other
 * one 2, a head byte and a time byte of 0.  In the recorder's ticks the
 * step is not a whole number of them: the time byte is 0 or +-1.
 */
static void test_bytes_per_event(void **state)
{
	const size_t n = 1000;
	size_t ns = steady_bytes(1, n), rec = steady_bytes(NW_TRACER_TICK_NS, n);

	assert_true(ns <= 3 * n);
	assert_int_equal(ns, 8 + (n - 1) * 2);
	assert_true(rec <= 3 * n);
}

static void test_add_rejects(void **state)
{
	struct nw_trace t, before;
	struct nw_trace_event ev = S(T0 + 10, 1, 1000, 4, 1);

	nw_trace_init(&t, T0, 1);
	encode(&t, mixed, 3);
	memcpy(&before, &t, sizeof(t));

	ev.event = NW_TRACE_MAX_EVENTS;
	assert_int_equal(nw_trace_add(&t, &ev), -EINVAL);
	ev.event = UINT16_MAX;
	assert_int_equal(nw_trace_add(&t, &ev), -EINVAL);
	ev.event = 1;
	ev.time = T0 - 1;
	assert_int_equal(nw_trace_add(&t, &ev), -EINVAL);
	ev.time = 0;
	assert_int_equal(nw_trace_add(&t, &ev), -EINVAL);
	/* Nothing written, no state changed (the pending event and epoch neither). */
	assert_memory_equal(&t, &before, sizeof(t));
	assert_decodes_to(&t, mixed, 3);

	/* The limits themselves are accepted. */
	ev.time = T0;
	ev.event = NW_TRACE_MAX_EVENTS - 1;
	assert_int_equal(nw_trace_add(&t, &ev), 0);
	assert_int_equal(t.n, 4);
	nw_trace_fini(&t);
}

/* ---- 2. the decoder on bad bytes ---- */

/* A trace over a heap copy of exactly @n bytes of @b (ASan sees any read past them). */
static void view(struct nw_trace *t, const uint8_t *b, size_t n, uint64_t events, uint32_t tick_ns)
{
	nw_trace_init(t, T0, tick_ns);
	t->bytes = malloc(n ? n : 1);
	assert_non_null(t->bytes);
	memcpy(t->bytes, b, n);
	t->size = t->cap = n;
	t->n = events;
}

static void test_every_prefix(void **state)
{
	struct nw_trace full, t;
	size_t cut_clean = 0, cut_bad = 0;

	nw_trace_init(&full, T0, 1);
	encode(&full, mixed, NMIXED);
	for (size_t len = 0; len < full.size; len++) {
		struct nw_trace_reader r;
		struct nw_trace_event ev, *v = NULL;
		size_t k = 0, bad = SIZE_MAX;
		int rc;

		view(&t, full.bytes, len, NMIXED, 1);
		nw_trace_reader_init(&r, &t);
		while ((rc = nw_trace_next(&r, &ev)) == 1) {
			assert_true(k < NMIXED);
			assert_same_event(&mixed[k], &ev, k);
			k++;
		}
		assert_true(r.off <= len);
		if (rc == 0) {
			/* Cut between two events: fewer of them. */
			assert_true(k < NMIXED);
			cut_clean++;
		} else {
			assert_int_equal(rc, -EBADMSG);
			cut_bad++;
		}
		/* Counted as the whole: never decodes. */
		assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
		assert_null(v);
		assert_true(bad <= len);
		/* Counted as what it holds: decodes exactly when cut between events. */
		t.n = k;
		v = NULL;
		if (rc == 0) {
			assert_int_equal(nw_trace_decode(&t, &v, &bad), 0);
			for (size_t i = 0; i < k; i++)
				assert_same_event(&mixed[i], &v[i], i);
			free(v);
		} else {
			assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
			assert_null(v);
		}
		nw_trace_fini(&t);
	}
	assert_int_equal(cut_clean + cut_bad, full.size);
	assert_true(cut_clean >= NMIXED); /* each event boundary, and after the controls */
	assert_true(cut_bad > 0);
	nw_trace_fini(&full);
}

/* @b, @n decodes @good events, then fails at byte @off. */
static void assert_bad_bytes(const uint8_t *b, size_t n, uint32_t tick_ns, size_t good, size_t off)
{
	struct nw_trace t;
	struct nw_trace_reader r;
	struct nw_trace_event ev, *v = NULL;
	size_t bad = SIZE_MAX;

	view(&t, b, n, good + 1, tick_ns);
	nw_trace_reader_init(&r, &t);
	for (size_t k = 0; k < good; k++)
		assert_int_equal(nw_trace_next(&r, &ev), 1);
	assert_int_equal(nw_trace_next(&r, &ev), -EBADMSG);
	assert_int_equal(r.off, off);
	assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
	assert_null(v);
	assert_int_equal(bad, off);
	nw_trace_fini(&t);
}

/* @b, @n decodes to exactly @want (the control cases of assert_bad_bytes). */
static void assert_good_bytes(const uint8_t *b, size_t n, uint32_t tick_ns,
			      const struct nw_trace_event *want, size_t nwant)
{
	struct nw_trace t;

	view(&t, b, n, nwant, tick_ns);
	assert_decodes_to(&t, want, nwant);
	nw_trace_fini(&t);
}

static void test_bad_bytes(void **state)
{
	/* Varints: 10 bytes at most, the 10th holding bit 63 alone. */
	static const uint8_t long11[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x00, 0 };
	/* A time whose 10th byte carries bits beyond 64 (read without them: dt 0). */
	static const uint8_t over64[] = { 0,	0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x02 };
	/* A 10-byte varint is fine: dt = zigzag^-1(2^64 - 2) = 2^63 - 1 ticks. */
	static const uint8_t max10[] = { 0,    0xfe, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const struct nw_trace_event max10_ev[] = { S(T0 + INT64_MAX, 0, 0, 0, 0) };
	/*
	 * Controls: code 3 is unknown; event 16 is beyond NW_TRACE_MAX_EVENTS,
	 * for samples (code 0) and for off-CPU intervals (code 2).
	 */
	static const uint8_t ctl3[] = { 4 << 2 | 1, 2, 2, (3 << 2) | 3, 0, 0, 0 };
	static const uint8_t ev16[] = { 3, 16, 0, 0 };
	static const uint8_t ev15[] = { 3, 15, 0, 0 };
	static const struct nw_trace_event ev15_ev[] = { S(T0, 15, 0, 0, 0) };
	static const uint8_t off16[] = { (2 << 2) | 3, 16, 2, 0, 0 };
	/* The off-CPU event is the intervals' alone: the sample after is of event 0. */
	static const uint8_t off15[] = { (2 << 2) | 3, 15, 2, 0, 0, 0, 0 };
	static const struct nw_trace_event off15_ev[] = { OFF(T0, 15, 0, 0, 0),
							  S(T0, 0, 0, 0, 0) };
	/* An epoch beyond u32 (2^32). */
	static const uint8_t epoch33[] = { 7, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 0 };
	/* Node ids out of u32: 0 - 1, and 0 + 2^32 (zigzag 2^33, << 2). */
	static const uint8_t node_neg[] = { 1 << 2, 0 };
	static const uint8_t node_big[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0 };
	/* Off-CPU length beyond u64 in ns at a tick of 1000: 2^63 ticks. */
	static const uint8_t off_big[] = { 2,	 0,    0x80, 0x80, 0x80, 0x80,
					   0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	/* A time beyond u64 in ns: t0 + (2^63 - 1) twice. */
	static const uint8_t time_big[] = { 0,	  0xfe, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0x01, 0,	  0 };
	/* A cut head varint, a head without its time, a sample without its period. */
	static const uint8_t cut_head[] = { 0x80 };
	static const uint8_t cut_time[] = { 4 << 2 };
	static const uint8_t cut_period[] = { 1, 0 };

	assert_bad_bytes(long11, sizeof(long11), 1, 0, 0);
	assert_bad_bytes(over64, sizeof(over64), 1, 0, 0);
	assert_good_bytes(max10, sizeof(max10), 1, max10_ev, 1);
	/* One good event at node 2, then the control at byte 3. */
	assert_bad_bytes(ctl3, sizeof(ctl3), 1, 1, 3);
	assert_bad_bytes(ev16, sizeof(ev16), 1, 0, 0);
	assert_good_bytes(ev15, sizeof(ev15), 1, ev15_ev, 1);
	assert_bad_bytes(off16, sizeof(off16), 1, 0, 0);
	assert_good_bytes(off15, sizeof(off15), 1, off15_ev, 2);
	assert_bad_bytes(epoch33, sizeof(epoch33), 1, 0, 0);
	assert_bad_bytes(node_neg, sizeof(node_neg), 1, 0, 0);
	assert_bad_bytes(node_big, sizeof(node_big), 1, 0, 0);
	assert_bad_bytes(off_big, sizeof(off_big), 1000, 0, 0);
	{
		/* The same length at a tick of 1 ns fits. */
		const struct nw_trace_event off_ev[] = { OFF(T0, 0, 1ull << 63, 0, 0) };

		assert_good_bytes(off_big, sizeof(off_big), 1, off_ev, 1);
	}
	/* The second event's time: t0 + 2 * (2^63 - 1). */
	assert_bad_bytes(time_big, sizeof(time_big), 1, 1, 11);
	assert_bad_bytes(cut_head, sizeof(cut_head), 1, 0, 0);
	assert_bad_bytes(cut_time, sizeof(cut_time), 1, 0, 0);
	assert_bad_bytes(cut_period, sizeof(cut_period), 1, 0, 0);
}

/* nw_trace_decode() with an event count that is not what the bytes hold. */
static void test_decode_count(void **state)
{
	struct nw_trace t;
	struct nw_trace_event *v = NULL, *none = (struct nw_trace_event *)&v;
	size_t bad = SIZE_MAX;

	nw_trace_init(&t, T0, 1);
	encode(&t, mixed, NMIXED);
	assert_true(NMIXED + 1 <= t.size / 2);

	/* One more than there are: the end of the bytes is where it fails. */
	t.n = NMIXED + 1;
	v = none;
	assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
	assert_ptr_equal(v, none);
	assert_int_equal(bad, t.size);
	/* More than the bytes could hold (2 bytes an event at least): refused up front. */
	t.n = t.size / 2 + 1;
	bad = SIZE_MAX;
	assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
	assert_ptr_equal(v, none);
	assert_int_equal(bad, 0);
	t.n = UINT64_MAX;
	assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
	assert_ptr_equal(v, none);
	/* One fewer: an event is left over, and the decoder says where. */
	t.n = NMIXED - 1;
	bad = SIZE_MAX;
	assert_int_equal(nw_trace_decode(&t, &v, &bad), -EBADMSG);
	assert_ptr_equal(v, none);
	assert_true(bad > 0 && bad <= t.size);
	/* And the right count decodes. */
	t.n = NMIXED;
	assert_decodes_to(&t, mixed, NMIXED);
	nw_trace_fini(&t);
}

/* ---- 3. remapping node ids ---- */

struct map_arg {
	uint32_t fail_node; /* mapped to UINT32_MAX */
	unsigned calls;
};

static uint32_t map_fn(void *arg, uint32_t epoch, uint32_t node)
{
	struct map_arg *a = arg;

	a->calls++;
	if (node == a->fail_node)
		return UINT32_MAX;
	return node * 3 + (epoch & 0xff) + 1;
}

static void test_remap(void **state)
{
	static const struct nw_trace_event v[] = {
		S(T0 + 1000, 0, 1001001, 5, 0), S(T0 + 2000, 1, 7, 6, 0),
		OFF(T0 + 2500, 2, 9000, 7, 1),	S(T0 + 2400, 0, 1001001, 100000, 2),
		S(T0 + 3000, 0, 5, 1, 2),
	};
	struct nw_trace_event want[5];
	struct nw_trace src, dst;
	struct map_arg a = { .fail_node = UINT32_MAX };

	nw_trace_init(&src, T0, 1);
	encode(&src, v, 5);
	for (size_t k = 0; k < 5; k++) {
		want[k] = v[k];
		want[k].node = v[k].node * 3 + v[k].epoch + 1;
	}
	nw_trace_init(&dst, T0, 1);
	assert_int_equal(nw_trace_remap(&src, &dst, map_fn, &a), 0);
	assert_int_equal(a.calls, 5);
	assert_int_equal(dst.t0, T0);
	assert_int_equal(dst.tick_ns, 1);
	assert_decodes_to(&dst, want, 5);
	nw_trace_fini(&dst);

	/* A node the map does not know. */
	a = (struct map_arg){ .fail_node = 6 };
	nw_trace_init(&dst, T0, 1);
	assert_int_equal(nw_trace_remap(&src, &dst, map_fn, &a), -EBADMSG);
	assert_int_equal(a.calls, 2);
	nw_trace_fini(&dst);

	/* A malformed source. */
	src.size--;
	a = (struct map_arg){ .fail_node = UINT32_MAX };
	nw_trace_init(&dst, T0, 1);
	assert_int_equal(nw_trace_remap(&src, &dst, map_fn, &a), -EBADMSG);
	assert_int_equal(a.calls, 4);
	nw_trace_fini(&dst);
	nw_trace_fini(&src);
}

/* ---- 4. the recorder's tracer ---- */

#define TK NW_TRACER_TICK_NS

static void assert_trace_is(const struct nw_trace *t, const struct nw_trace_event *want, size_t n)
{
	assert_non_null(t);
	assert_int_equal(t->t0, T0);
	assert_int_equal(t->tick_ns, NW_TRACER_TICK_NS);
	assert_int_equal(t->n, n);
	assert_decodes_to(t, want, n);
}

static void test_tracer(void **state)
{
	struct nw_session *s = calloc(1, sizeof(*s));
	struct nw_tracer tr;
	const struct nw_session_hooks *h = &tr.hooks;
	struct nw_thread a = { .seq = 0, .pid = 10, .tid = 10 };
	struct nw_thread b = { .seq = 3, .pid = 10, .tid = 11 };
	struct nw_thread idle = { .seq = 1, .pid = 10, .tid = 12 };
	struct nw_thread later = { .seq = 9, .pid = 20, .tid = 21 };
	/* Times and lengths in the tracer's ticks; the last sample of a is cut to its tick. */
	const struct nw_trace_event want_a[] = {
		S(T0 + 100 * TK, 0, 1000, 5, 0),
		OFF(T0 + 150 * TK, 1, 4000 * TK, 6, 0),
		S(T0 + 4200 * TK, 0, 1000, 5, 1),
	};
	const struct nw_trace_event want_b[] = {
		S(T0, 0, 2000, 9, 0),
		S(T0 + 300 * TK, 0, 1000, 9, 0),
	};
	uint64_t bytes = 0, events = 0;

	assert_non_null(s);
	assert_int_equal(nw_tracer_init(&tr, s, T0), 0);
	assert_int_equal(s->nhooks, 1);
	assert_ptr_equal(s->hooks[0], h);
	assert_ptr_equal(h->arg, &tr);
	assert_int_equal(tr.t0, T0);
	assert_null(nw_tracer_thread(&tr, &a));

	/* Interleaved threads: each event in its own thread's trace. */
	assert_int_equal(h->sample(h->arg, &a, 0, 5, 0, T0 + 100 * TK, 1000), 0);
	assert_int_equal(h->sample(h->arg, &b, 0, 9, 0, T0, 2000), 0);
	assert_int_equal(h->offcpu(h->arg, &a, 0, 6, 1, T0 + 150 * TK, 4000 * TK), 0);
	/* Before t0, and an event the trace cannot hold: dropped, without an error. */
	assert_int_equal(h->sample(h->arg, &b, 0, 9, 0, T0 - 1, 1000), 0);
	assert_int_equal(h->offcpu(h->arg, &b, 0, 9, 1, 0, 1000), 0);
	assert_int_equal(h->sample(h->arg, &a, 0, 5, NW_TRACE_MAX_EVENTS, T0 + 200 * TK, 1000), 0);
	assert_int_equal(h->sample(h->arg, &b, 0, 9, 0, T0 + 300 * TK, 1000), 0);
	assert_int_equal(h->sample(h->arg, &a, 1, 5, 0, T0 + 4200 * TK + TK - 1, 1000), 0);

	assert_trace_is(nw_tracer_thread(&tr, &a), want_a, 3);
	assert_trace_is(nw_tracer_thread(&tr, &b), want_b, 2);
	/* By seq, not by tid: another thread of the same seq reads the same trace. */
	assert_ptr_equal(nw_tracer_thread(&tr, &(struct nw_thread){ .seq = 3, .tid = 99 }),
			 nw_tracer_thread(&tr, &b));
	assert_null(nw_tracer_thread(&tr, &idle));
	assert_null(nw_tracer_thread(&tr, &later));
	assert_int_equal(tr.failures, 0);

	nw_tracer_size(&tr, &bytes, &events);
	assert_int_equal(events, 5);
	assert_int_equal(bytes, nw_tracer_thread(&tr, &a)->size + nw_tracer_thread(&tr, &b)->size);
	assert_true(bytes >= 2 * events);

	nw_tracer_fini(&tr);
	assert_null(tr.v);
	assert_int_equal(tr.n, 0);
	free(s);

	/* A session with no room for another listener. */
	s = calloc(1, sizeof(*s));
	assert_non_null(s);
	for (unsigned i = 0; i < NW_SESSION_MAX_HOOKS; i++)
		assert_int_equal(nw_session_listen(s, h), 0);
	assert_int_equal(nw_tracer_init(&tr, s, T0), -ENOSPC);
	nw_tracer_fini(&tr);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encoding_bytes),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bytes_per_event),
		cmocka_unit_test(test_add_rejects),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_bad_bytes),
		cmocka_unit_test(test_decode_count),
		cmocka_unit_test(test_remap),
		cmocka_unit_test(test_tracer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
