/* SPDX-License-Identifier: MIT */
/*
 * Traces (model/trace.h, format/tracefile.h, record/tracer.h): the event
 * codec byte by byte and on a mixed sequence (two events, steady and
 * changing periods, epochs, off-CPU intervals, time going backwards, large
 * node deltas, times far apart, a coarse tick), its size per event on a
 * steady sample stream, the decoder on every prefix of a valid encoding and
 * on crafted bad bytes, nw_trace_remap(); the recorder's tracer fed through
 * its session hooks; trace files through the real writer and reader (node
 * ids remapped to the csprof preorder, named in manifest.json), each
 * reader check on corrupted bytes; and merge moving traces.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "format/reader.h"
#include "format/tracefile.h"
#include "format/writer.h"
#include "model/measurement.h"
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
	struct nw_thread early = { .seq = 2, .pid = 20, .tid = 20 };
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
	/* A thread whose only events are dropped has no trace. */
	assert_int_equal(h->sample(h->arg, &early, 0, 3, 0, T0 - 1000, 1000), 0);
	assert_int_equal(h->offcpu(h->arg, &early, 0, 3, 1, 1, 1000), 0);

	assert_trace_is(nw_tracer_thread(&tr, &a), want_a, 3);
	assert_trace_is(nw_tracer_thread(&tr, &b), want_b, 2);
	/* By seq, not by tid: another thread of the same seq reads the same trace. */
	assert_ptr_equal(nw_tracer_thread(&tr, &(struct nw_thread){ .seq = 3, .tid = 99 }),
			 nw_tracer_thread(&tr, &b));
	assert_null(nw_tracer_thread(&tr, &idle));
	assert_null(nw_tracer_thread(&tr, &early));
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

/* ---- 5. trace files through the writer and the reader ---- */

enum { APP, LIB };
enum { M_CPU_SAMPLES, M_CPU_PERIOD, M_OFF_SWITCHES, M_OFF_NS, NMETRICS };
enum { EV_CPU, EV_OFF, NEVENTS };

#define APP_AT 0x400000ull
#define LIB_AT 0x7f0000000000ull
#define IP_MAIN (APP_AT + 0x10)
#define IP_F (APP_AT + 0x100)
#define IP_G (APP_AT + 0x200)
#define IP_H (APP_AT + 0x300)
#define IP_A (LIB_AT + 0x10)
#define IP_B (LIB_AT + 0x20)

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

/*
 * Inserts the path @ips (root first) and counts a sample at its leaf:
 * the leaf's node id in memory.
 */
static uint32_t add_path(struct nw_cct *t, const uint64_t *ips, size_t n)
{
	struct nw_frame f[8];
	uint32_t leaf;

	for (size_t i = 0; i < n; i++)
		f[i] = (struct nw_frame){ ips[n - 1 - i], 0 };
	leaf = nw_cct_insert(t, f, n);
	assert_int_not_equal(leaf, NW_CCT_NONE);
	nw_cct_metrics(t, leaf)[M_CPU_SAMPLES] += 1;
	nw_cct_metrics(t, leaf)[M_CPU_PERIOD] += 1000000;
	return leaf;
}

static struct nw_mthread *add_thread(struct nw_measurement *m, uint32_t pid, uint32_t tid,
				     const char *comm, uint32_t first_epoch, uint32_t nepochs)
{
	char file[64];
	struct nw_mthread *th;

	nw_thread_file_name(file, sizeof(file), comm, pid, tid);
	th = nw_measurement_add_thread(m, pid, tid, comm, file);
	assert_non_null(th);
	th->first_epoch = first_epoch;
	th->nepochs = nepochs;
	return th;
}

static struct nw_cct *tree_for(struct nw_mthread *th, uint32_t epoch)
{
	struct nw_cct *t = nw_cct_new(NMETRICS);

	assert_non_null(t);
	assert_int_equal(nw_mthread_add_tree(th, epoch, t), 0);
	return t;
}

/* Gives @th the trace of @v, in file @name. */
static void give_trace(struct nw_mthread *th, const char *name, const struct nw_trace_event *v,
		       size_t n)
{
	th->trace = malloc(sizeof(*th->trace));
	assert_non_null(th->trace);
	nw_trace_init(th->trace, T0, 1);
	encode(th->trace, v, n);
	th->trace_file = xstrdup(name);
}

/* Node ids in memory, set by file_model(). */
struct ids {
	uint32_t h0, g0, f0, main0; /* app, epoch 0 */
	uint32_t b1, f1, a1;	    /* app, epoch 1 */
	uint32_t x, y;		    /* child, its epoch 0 */
};

/*
 * Process 10 ("app") has epochs 0 and 1 (a library loaded); process 20
 * ("child") has one, epoch 0, third in the model.  Threads: app (10, 10)
 * with trees in both epochs and a trace, worker (10, 11) with a tree and no
 * trace, child (20, 22) with a trace.  Each tree is built in an order that
 * numbers its nodes otherwise than the preorder of its file (new children
 * go first among their siblings).
 */
static struct nw_measurement *file_model(struct ids *id)
{
	struct nw_measurement *m = nw_measurement_new();
	struct nw_run *r;
	struct nw_map maps[2];
	struct nw_mthread *th;
	struct nw_cct *t;
	char *const argv[] = { "./app" };

	assert_non_null(m);
	r = &m->run;
	r->narwhal_version = xstrdup("0.1.0");
	r->arch = xstrdup("x86_64");
	assert_int_equal(nw_run_set_argv(r, 1, argv), 0);
	r->call_graph = xstrdup("fp");
	r->max_stack = 127;
	r->nevents = NEVENTS;
	r->events = calloc(NEVENTS, sizeof(*r->events));
	assert_non_null(r->events);
	r->events[EV_CPU] = (struct nw_event_info){ xstrdup("cpu-clock"), 1, 0, true, 999 };
	r->events[EV_OFF] = (struct nw_event_info){ xstrdup("off-cpu"), 1, 3, false, 1 };
	r->start_ns = 1700000000000000000ULL;
	r->end_ns = 1700000001000000000ULL;
	r->clock_start_ns = T0;
	r->clock_end_ns = T0 + 1000000000ULL;
	r->traced = true;
	r->exit_status = 0;
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 1000000),
			 M_CPU_SAMPLES);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 1000000),
			 M_CPU_PERIOD);
	assert_int_equal(nw_measurement_add_metric(m, "off-cpu", NW_METRIC_SWITCHES, 1),
			 M_OFF_SWITCHES);
	assert_int_equal(nw_measurement_add_metric(m, "off-cpu", NW_METRIC_OFFCPU_TIME, 1),
			 M_OFF_NS);
	assert_int_equal(nw_module_intern(m->modules, "/bin/app", NULL, 0), APP);
	assert_int_equal(nw_module_intern(m->modules, "/lib/liba.so", NULL, 0), LIB);
	maps[0] = (struct nw_map){ APP_AT, APP_AT + 0x1000, 0, 0, APP };
	maps[1] = (struct nw_map){ LIB_AT, LIB_AT + 0x1000, 0, 0, LIB };
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 1, 0)), 0);
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 2, 1)), 1);
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 1, 0)), 2);
	assert_int_equal(nw_measurement_add_process(m, 10, 1, "app"), 0);
	assert_int_equal(nw_measurement_add_process(m, 20, 10, "child"), 1);

	/* app, epoch 0: main 1, f 2, g 3, h 4 in memory; main 1, g 2, f 3, h 4 in the file. */
	th = add_thread(m, 10, 10, "app", 0, 2);
	t = tree_for(th, 0);
	id->f0 = add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2);
	id->g0 = add_path(t, (uint64_t[]){ IP_MAIN, IP_G }, 2);
	id->h0 = add_path(t, (uint64_t[]){ IP_MAIN, IP_F, IP_H }, 3);
	id->main0 = add_path(t, (uint64_t[]){ IP_MAIN }, 1);
	/* app, epoch 1: main 1, a 2, f 3, b 4 in memory; main 1, f 2, a 3, b 4 in the file. */
	t = tree_for(th, 1);
	id->a1 = add_path(t, (uint64_t[]){ IP_MAIN, IP_A }, 2);
	id->f1 = add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2);
	id->b1 = add_path(t, (uint64_t[]){ IP_MAIN, IP_A, IP_B }, 3);
	th->samples = nw_mthread_total(th, M_CPU_SAMPLES);
	m->run.samples += th->samples;
	{
		const struct nw_trace_event v[] = {
			S(T0 + 1000, EV_CPU, 1000000, id->h0, 0),
			S(T0 + 1001000, EV_CPU, 1000000, id->g0, 0),
			S(T0 + 2001000, EV_CPU, 1000000, id->b1, 1),
			OFF(T0 + 2001500, EV_OFF, 7000000, id->f1, 1),
			S(T0 + 9002000, EV_CPU, 999000, id->a1, 1),
			S(T0 + 9002100, EV_CPU, 999000, id->f0, 0),
			S(T0 + 10002100, EV_CPU, 999000, id->main0, 0),
		};

		give_trace(th, "app-10-10.trace", v, sizeof(v) / sizeof(v[0]));
	}
	/* worker: a tree, no trace. */
	th = add_thread(m, 10, 11, "worker", 0, 2);
	t = tree_for(th, 1);
	add_path(t, (uint64_t[]){ IP_MAIN, IP_G }, 2);
	th->samples = nw_mthread_total(th, M_CPU_SAMPLES);
	m->run.samples += th->samples;
	/* child, its epoch 0 (the model's third): main 1, x 2, y 3; y 2, x 3 in the file. */
	th = add_thread(m, 20, 22, "child", 2, 1);
	t = tree_for(th, 2);
	id->x = add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2);
	id->y = add_path(t, (uint64_t[]){ IP_MAIN, IP_H }, 2);
	th->samples = nw_mthread_total(th, M_CPU_SAMPLES);
	m->run.samples += th->samples;
	{
		const struct nw_trace_event v[] = {
			S(T0 + 5000, EV_CPU, 1000000, id->x, 0),
			S(T0 + 6000, EV_CPU, 1000000, id->y, 0),
			OFF(T0 + 6001, EV_OFF, 1, id->y, 0),
		};

		give_trace(th, "child-20-22.trace", v, sizeof(v) / sizeof(v[0]));
	}
	return m;
}

/* ---- files and directories ---- */

static uint8_t *load(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	buf = malloc((size_t)len + 64); /* room to append to it */
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*size = (size_t)len;
	return buf;
}

static void store(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static uint32_t get_u32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(const uint8_t *b)
{
	return get_u32(b) | (uint64_t)get_u32(b + 4) << 32;
}

static void put_u32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

static void remove_tree(const char *path)
{
	assert_int_equal(nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* A temporary directory @base (PATH_MAX) and the measurement's place in it, @dir. */
static void tmp_dirs(char *base, char *dir)
{
	strcpy(base, "/tmp/narwhal-test-trace.XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(dir, PATH_MAX, "%s/m", base);
}

static void write_dir(const struct nw_measurement *m, const char *dir)
{
	char err[512] = "";

	if (nw_measurement_write(m, NULL, 0, dir, NW_WRITE_NEW, err, sizeof(err)))
		fail_msg("nw_measurement_write(%s): %s", dir, err);
}

static struct nw_measurement *read_dir(const char *dir, bool traces)
{
	struct nw_measurement *r = NULL;
	char err[512] = "";

	if (nw_measurement_read(dir, &r, err, sizeof(err)))
		fail_msg("nw_measurement_read(%s): %s", dir, err);
	if (traces) {
		int n = nw_measurement_read_traces(r, dir, err, sizeof(err));

		if (n < 0)
			fail_msg("nw_measurement_read_traces(%s): %s", dir, err);
		assert_int_equal(n, 2);
	}
	return r;
}

/* The ips from @node up to the root, leaf first, in @ips (64); their count. */
static size_t chain(const struct nw_cct *c, uint32_t node, uint64_t *ips)
{
	size_t n = 0;

	assert_true(node < c->n);
	for (; node != NW_CCT_ROOT; node = c->nodes[node].parent) {
		assert_true(n < 64);
		ips[n++] = c->nodes[node].ip;
	}
	return n;
}

/*
 * The trace of @b (read back) is @a's: the same events, each node naming
 * in @b's tree of its epoch the calling context it named in @a's.  The
 * events whose node id changed in the file.
 */
static unsigned assert_same_trace(const struct nw_measurement *m, const struct nw_mthread *a,
				  const struct nw_measurement *r, const struct nw_mthread *b)
{
	struct nw_trace_event *x = NULL, *y = NULL;
	size_t bad = 0;
	unsigned moved = 0;

	assert_non_null(a->trace);
	assert_non_null(b->trace);
	assert_int_equal(a->trace->t0, b->trace->t0);
	assert_int_equal(a->trace->tick_ns, b->trace->tick_ns);
	assert_int_equal(a->trace->n, b->trace->n);
	assert_int_equal(nw_trace_decode(a->trace, &x, &bad), 0);
	assert_int_equal(nw_trace_decode(b->trace, &y, &bad), 0);
	for (uint64_t k = 0; k < a->trace->n; k++) {
		int ta = nw_mthread_tree_of(m, a, x[k].epoch);
		int tb = nw_mthread_tree_of(r, b, y[k].epoch);
		uint64_t ca[64], cb[64];
		size_t na, nb;

		assert_int_equal(x[k].time, y[k].time);
		assert_int_equal(x[k].value, y[k].value);
		assert_int_equal(x[k].epoch, y[k].epoch);
		assert_int_equal(x[k].event, y[k].event);
		assert_int_equal(x[k].kind, y[k].kind);
		assert_true(ta >= 0);
		assert_true(tb >= 0);
		na = chain(a->trees[ta].cct, x[k].node, ca);
		nb = chain(b->trees[tb].cct, y[k].node, cb);
		assert_true(na > 0);
		assert_int_equal(na, nb);
		assert_memory_equal(ca, cb, na * sizeof(*ca));
		moved += x[k].node != y[k].node;
	}
	free(x);
	free(y);
	return moved;
}

static void test_files(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64];
	struct ids id;
	struct nw_measurement *m = file_model(&id), *r;
	struct json_object *root, *o, *threads;
	uint8_t *b;
	size_t size;

	/* The trees do number their nodes otherwise than their files. */
	assert_int_equal(id.f0, 2);
	assert_int_equal(id.g0, 3);
	assert_int_equal(id.a1, 2);
	assert_int_equal(id.f1, 3);
	assert_int_equal(id.x, 2);

	tmp_dirs(base, dir);
	write_dir(m, dir);

	/* The files, named in the manifest; none for the thread without a trace. */
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	root = json_object_from_file(path);
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "traced", &o));
	assert_true(json_object_is_type(o, json_type_boolean));
	assert_true(json_object_get_boolean(o));
	assert_true(json_object_object_get_ex(root, "clock_start_ns", &o));
	assert_int_equal(json_object_get_uint64(o), T0);
	assert_true(json_object_object_get_ex(root, "threads", &threads));
	assert_int_equal(json_object_array_length(threads), 3);
	assert_true(json_object_object_get_ex(json_object_array_get_idx(threads, 0), "trace", &o));
	assert_string_equal(json_object_get_string(o), "app-10-10.trace");
	assert_false(json_object_object_get_ex(json_object_array_get_idx(threads, 1), "trace", &o));
	assert_true(json_object_object_get_ex(json_object_array_get_idx(threads, 2), "trace", &o));
	assert_string_equal(json_object_get_string(o), "child-20-22.trace");
	json_object_put(root);
	snprintf(path, sizeof(path), "%s/worker-10-11.trace", dir);
	assert_int_equal(access(path, F_OK), -1);

	/* app-10-10.trace's header. */
	snprintf(path, sizeof(path), "%s/app-10-10.trace", dir);
	b = load(path, &size);
	assert_true(size > NW_TRACE_HEADER);
	assert_memory_equal(b, "NWTRACE1", 8);
	assert_int_equal(get_u32(b + 8), 1);
	assert_int_equal(get_u32(b + 12), 1);
	assert_int_equal(get_u32(b + 16), 10);
	assert_int_equal(get_u32(b + 20), 10);
	assert_int_equal(get_u64(b + 24), T0);
	assert_int_equal(get_u64(b + 32), 7);
	assert_int_equal(get_u64(b + 40), size - NW_TRACE_HEADER);
	free(b);
	/* child-20-22.trace's: its own thread. */
	snprintf(path, sizeof(path), "%s/child-20-22.trace", dir);
	b = load(path, &size);
	assert_int_equal(get_u32(b + 16), 20);
	assert_int_equal(get_u32(b + 20), 22);
	assert_int_equal(get_u64(b + 32), 3);
	assert_int_equal(get_u64(b + 40), size - NW_TRACE_HEADER);
	free(b);

	/* Read back: the manifest names the files, the traces come when asked for. */
	r = read_dir(dir, false);
	assert_true(r->run.traced);
	assert_int_equal(r->run.clock_start_ns, T0);
	assert_int_equal(r->run.clock_end_ns, T0 + 1000000000ULL);
	assert_int_equal(r->nthreads, 3);
	assert_string_equal(r->threads[0].trace_file, "app-10-10.trace");
	assert_null(r->threads[1].trace_file);
	assert_string_equal(r->threads[2].trace_file, "child-20-22.trace");
	for (uint32_t i = 0; i < 3; i++)
		assert_null(r->threads[i].trace);
	{
		char err[512] = "";

		assert_int_equal(nw_measurement_read_traces(r, dir, err, sizeof(err)), 2);
		assert_null(r->threads[1].trace);
		/* Once read, not again. */
		assert_int_equal(nw_measurement_read_traces(r, dir, err, sizeof(err)), 0);
	}
	/* Each event names the same calling context; ids did change. */
	assert_int_equal(assert_same_trace(m, &m->threads[0], r, &r->threads[0]), 4);
	assert_int_equal(assert_same_trace(m, &m->threads[2], r, &r->threads[2]), 3);
	{
		/* Exactly: h0 stays 4, g0 3 -> 2, b1 stays 4, f1 3 -> 2, a1 2 -> 3, f0 2 -> 3. */
		static const uint32_t file_ids[] = { 4, 2, 4, 2, 3, 3, 1 };
		struct nw_trace_event *y = NULL;
		size_t bad;

		assert_int_equal(nw_trace_decode(r->threads[0].trace, &y, &bad), 0);
		for (size_t k = 0; k < 7; k++)
			assert_int_equal(y[k].node, file_ids[k]);
		free(y);
	}
	/* Not the same epoch slots in the two models, yet the same epochs of the process. */
	assert_int_not_equal(r->threads[2].trees[0].epoch, m->threads[2].trees[0].epoch);
	nw_measurement_free(r);
	nw_measurement_free(m);
	remove_tree(base);
}

/* The writer refuses a trace that names what the thread's trees lack. */
static void test_write_refuses(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX];
	static const struct nw_trace_event no_epoch[] = { S(T0 + 1, 0, 1, 1, 5) };
	const struct nw_trace_event *cases[2];
	struct ids id;

	for (int c = 0; c < 2; c++) {
		struct nw_measurement *m = file_model(&id);
		struct nw_trace_event no_node = S(T0 + 1, 0, 1, 0, 0);
		char err[512] = "";

		no_node.node = m->threads[0].trees[0].cct->n;
		cases[0] = no_epoch;
		cases[1] = &no_node;
		nw_trace_fini(m->threads[0].trace);
		nw_trace_init(m->threads[0].trace, T0, 1);
		encode(m->threads[0].trace, cases[c], 1);
		tmp_dirs(base, dir);
		assert_int_equal(
		    nw_measurement_write(m, NULL, 0, dir, NW_WRITE_NEW, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "app-10-10.trace"));
		assert_non_null(strstr(err, "outside the thread's trees"));
		assert_int_equal(access(dir, F_OK), -1);
		nw_measurement_free(m);
		remove_tree(base);
	}
}

/* ---- 6. the reader's checks ---- */

struct fixture {
	char base[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64];
	struct nw_measurement *r;    /* read back, traces not read */
	const struct nw_mthread *th; /* app (10, 10) */
	uint8_t *good;
	size_t size;
};

static void fixture_open(struct fixture *f)
{
	struct ids id;
	struct nw_measurement *m = file_model(&id);

	tmp_dirs(f->base, f->dir);
	write_dir(m, f->dir);
	nw_measurement_free(m);
	f->r = read_dir(f->dir, false);
	f->th = &f->r->threads[0];
	snprintf(f->path, sizeof(f->path), "%s/app-10-10.trace", f->dir);
	f->good = load(f->path, &f->size);
}

static void fixture_close(struct fixture *f)
{
	free(f->good);
	nw_measurement_free(f->r);
	remove_tree(f->base);
}

/*
 * Parsing @b (@n bytes) fails with -EBADMSG: a message with the path,
 * "byte @off" and @what.
 */
static void assert_parse_fails(const struct fixture *f, const uint8_t *b, size_t n, size_t off,
			       const char *what)
{
	struct nw_trace *t = (struct nw_trace *)f, *none = t;
	char err[512] = "", at[48];

	assert_int_equal(nw_tracefile_parse(b, n, f->path, f->r, f->th, &t, err, sizeof(err)),
			 -EBADMSG);
	assert_ptr_equal(t, none);
	snprintf(at, sizeof(at), "byte %zu:", off);
	if (!strstr(err, f->path) || !strstr(err, at) || !strstr(err, what))
		fail_msg("want the path, \"%s\" and \"%s\" in: %s", at, what, err);
}

static void assert_parses(const struct fixture *f, const uint8_t *b, size_t n, uint64_t events)
{
	struct nw_trace *t = NULL;
	char err[512] = "";

	if (nw_tracefile_parse(b, n, f->path, f->r, f->th, &t, err, sizeof(err)))
		fail_msg("nw_tracefile_parse: %s", err);
	assert_non_null(t);
	assert_int_equal(t->n, events);
	assert_int_equal(t->t0, T0);
	nw_trace_fini(t);
	free(t);
}

/* A file of @f's header with the events of @v (file ids), counted @n in the header. */
static uint8_t *craft(const struct fixture *f, const struct nw_trace_event *v, size_t nv,
		      uint64_t n, size_t *size)
{
	struct nw_trace t;
	uint8_t *b;

	nw_trace_init(&t, T0, 1);
	encode(&t, v, nv);
	b = malloc(NW_TRACE_HEADER + t.size);
	assert_non_null(b);
	memcpy(b, f->good, NW_TRACE_HEADER);
	put_u64(b + 32, n);
	put_u64(b + 40, t.size);
	memcpy(b + NW_TRACE_HEADER, t.bytes, t.size);
	*size = NW_TRACE_HEADER + t.size;
	nw_trace_fini(&t);
	return b;
}

/* The file offset where the first @k events of @v end, crafted as a body. */
static size_t end_of(const struct nw_trace_event *v, size_t k)
{
	struct nw_trace t;
	size_t off;

	nw_trace_init(&t, T0, 1);
	encode(&t, v, k);
	off = NW_TRACE_HEADER + t.size;
	nw_trace_fini(&t);
	return off;
}

static void assert_crafted_fails(const struct fixture *f, const struct nw_trace_event *v, size_t nv,
				 uint64_t n, size_t off, const char *what)
{
	size_t size;
	uint8_t *b = craft(f, v, nv, n, &size);

	assert_parse_fails(f, b, size, off, what);
	free(b);
}

static void test_reader_header(void **state)
{
	struct fixture f;
	uint8_t *b;

	fixture_open(&f);
	b = malloc(f.size + 1);
	assert_non_null(b);
	assert_parses(&f, f.good, f.size, 7);

	/* Every cut of the header. */
	for (size_t n = 0; n < NW_TRACE_HEADER; n++) {
		memcpy(b, f.good, n);
		assert_parse_fails(&f, b, n, n, "truncated in its header");
	}
	memcpy(b, f.good, f.size);
	b[7] = '2';
	assert_parse_fails(&f, b, f.size, 0, "magic");
	memcpy(b, f.good, f.size);
	put_u32(b + 8, 2);
	assert_parse_fails(&f, b, f.size, 8, "version 2");
	memcpy(b, f.good, f.size);
	put_u32(b + 12, 0);
	assert_parse_fails(&f, b, f.size, 12, "tick of 0");
	/* Any other tick is the file's. */
	put_u32(b + 12, 1000);
	assert_parses(&f, b, f.size, 7);
	memcpy(b, f.good, f.size);
	put_u32(b + 16, 11);
	assert_parse_fails(&f, b, f.size, 16, "thread 11/10");
	memcpy(b, f.good, f.size);
	put_u32(b + 20, 11);
	assert_parse_fails(&f, b, f.size, 16, "thread 10/11");
	/* Body sizes: a truncated file, trailing bytes. */
	for (size_t n = NW_TRACE_HEADER; n < f.size; n++)
		assert_parse_fails(&f, f.good, n, n, "truncated");
	memcpy(b, f.good, f.size);
	b[f.size] = 0;
	assert_parse_fails(&f, b, f.size + 1, f.size + 1, "trailing bytes");
	/* A header saying the body is shorter than the file, or longer. */
	put_u64(b + 40, f.size - NW_TRACE_HEADER - 1);
	assert_parse_fails(&f, b, f.size, f.size, "trailing bytes");
	put_u64(b + 40, UINT64_MAX);
	assert_parse_fails(&f, b, f.size, f.size, "truncated");
	free(b);
	fixture_close(&f);
}

static void test_reader_events(void **state)
{
	struct fixture f;
	uint32_t n0, n1;
	uint8_t *b;
	size_t size, last;
	char why[64];

	fixture_open(&f);
	n0 = f.th->trees[nw_mthread_tree_of(f.r, f.th, 0)].cct->n;
	n1 = f.th->trees[nw_mthread_tree_of(f.r, f.th, 1)].cct->n;
	assert_int_equal(n0, 5);
	assert_int_equal(n1, 5);
	{
		/* The control: a crafted file that is right parses. */
		const struct nw_trace_event v[] = {
			S(T0 + 1, EV_CPU, 5, n0 - 1, 0),
			OFF(T0 + 2, EV_OFF, 5, 1, 1),
		};

		b = craft(&f, v, 2, 2, &size);
		assert_parses(&f, b, size, 2);
		free(b);
	}
	{
		/* A node beyond its tree, in each epoch. */
		const struct nw_trace_event v0[] = { S(T0 + 1, EV_CPU, 5, 1, 0),
						     S(T0 + 2, EV_CPU, 5, n0, 0) };
		const struct nw_trace_event v1[] = { S(T0 + 1, EV_CPU, 5, UINT32_MAX, 1) };

		snprintf(why, sizeof(why), "event 1 names node %u of a %u-node tree", n0, n0);
		assert_crafted_fails(&f, v0, 2, 2, end_of(v0, 2), why);
		assert_crafted_fails(&f, v1, 1, 1, end_of(v1, 1), "node 4294967295");
	}
	{
		/* The root. */
		const struct nw_trace_event v[] = { S(T0 + 1, EV_CPU, 5, NW_CCT_ROOT, 0) };

		assert_crafted_fails(&f, v, 1, 1, end_of(v, 1), "event 0 names node 0");
	}
	{
		/* An epoch the thread has no tree for (process 10 had two). */
		const struct nw_trace_event v[] = { S(T0 + 1, EV_CPU, 5, 1, 2) };

		assert_crafted_fails(&f, v, 1, 1, end_of(v, 1), "epoch 2, which has no tree");
	}
	{
		/* A perf event the run did not record. */
		const struct nw_trace_event v[] = { S(T0 + 1, EV_CPU, 5, 1, 0),
						    OFF(T0 + 2, NEVENTS, 5, 1, 0) };

		assert_crafted_fails(&f, v, 2, 2, end_of(v, 2), "event 1 is of perf event 2 of 2");
	}
	{
		/*
		 * Event counts: one more than the body holds (found at its end),
		 * more than its bytes could hold (2 an event at least: found in
		 * the header), fewer (found after the event too many).
		 */
		const struct nw_trace_event v[] = { S(T0 + 1, EV_CPU, 1000000, 1, 0),
						    S(T0 + 2, EV_CPU, 1000000, 2, 0),
						    S(T0 + 3, EV_CPU, 1000000, 3, 0) };

		size_t body = end_of(v, 3) - NW_TRACE_HEADER;

		assert_int_equal(body, 9);
		assert_crafted_fails(&f, v, 3, 4, end_of(v, 3), "3 events, the header says 4");
		assert_crafted_fails(&f, v, 3, body / 2 + 1, 32, "more events than bytes");
		assert_crafted_fails(&f, v, 3, UINT64_MAX, 32, "more events than bytes");
		assert_crafted_fails(&f, v, 3, 2, end_of(v, 3), "3 events, the header says 2");
		assert_crafted_fails(&f, v, 3, 0, end_of(v, 1), "1 events, the header says 0");
	}
	/*
	 * A malformed body: the good file with its last byte a varint that
	 * goes on, found where its last event starts.
	 */
	{
		struct nw_trace t;
		struct nw_trace_reader rd;
		struct nw_trace_event ev;

		view(&t, f.good + NW_TRACE_HEADER, f.size - NW_TRACE_HEADER, 7, 1);
		nw_trace_reader_init(&rd, &t);
		for (int k = 0; k < 6; k++)
			assert_int_equal(nw_trace_next(&rd, &ev), 1);
		last = NW_TRACE_HEADER + rd.off;
		nw_trace_fini(&t);
	}
	b = malloc(f.size);
	assert_non_null(b);
	memcpy(b, f.good, f.size);
	b[f.size - 1] |= 0x80;
	assert_parse_fails(&f, b, f.size, last, "malformed event");
	free(b);
	fixture_close(&f);
}

/* nw_measurement_read_traces() on a corrupt file and on a missing one. */
static void test_read_traces_errors(void **state)
{
	struct fixture f;
	char err[512] = "";

	fixture_open(&f);
	store(f.path, f.good, f.size - 1);
	assert_int_equal(nw_measurement_read_traces(f.r, f.dir, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, f.path));
	assert_non_null(strstr(err, "byte"));
	assert_null(f.r->threads[0].trace);
	assert_int_equal(unlink(f.path), 0);
	assert_int_equal(nw_measurement_read_traces(f.r, f.dir, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, f.path));
	assert_null(f.r->threads[0].trace);
	fixture_close(&f);
}

/* ---- 7. merge ---- */

static void test_merge(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], err[512] = "";
	struct ids id;
	struct nw_measurement *m = file_model(&id), *dst, *src, *orig;
	const struct nw_trace *moved[3];

	tmp_dirs(base, dir);
	write_dir(m, dir);
	nw_measurement_free(m);
	dst = read_dir(dir, true);
	src = read_dir(dir, true);
	orig = read_dir(dir, true);
	src->run.traced = false;
	for (uint32_t i = 0; i < 3; i++)
		moved[i] = src->threads[i].trace;
	assert_non_null(moved[0]);
	assert_null(moved[1]);
	assert_non_null(moved[2]);

	assert_int_equal(nw_measurement_merge(dst, src, err, sizeof(err)), 0);
	assert_int_equal(dst->nthreads, 6);
	for (uint32_t i = 0; i < 3; i++) {
		const struct nw_mthread *d = &dst->threads[3 + i];

		assert_ptr_equal(d->trace, moved[i]);
		assert_null(src->threads[i].trace);
		if (moved[i]) {
			assert_string_equal(d->trace_file, src->threads[i].trace_file);
			/* Its epochs still find their trees, now at other places in dst. */
			assert_int_equal(assert_same_trace(orig, &orig->threads[i], dst, d), 0);
		} else {
			assert_null(d->trace_file);
		}
	}
	/* dst's own threads keep theirs. */
	assert_int_equal(assert_same_trace(orig, &orig->threads[0], dst, &dst->threads[0]), 0);
	/* Traced only when both were. */
	assert_false(dst->run.traced);
	/* Each trace freed once (ASan). */
	nw_measurement_free(src);
	nw_measurement_free(dst);
	nw_measurement_free(orig);
	remove_tree(base);
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
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_write_refuses),
		cmocka_unit_test(test_reader_header),
		cmocka_unit_test(test_reader_events),
		cmocka_unit_test(test_read_traces_errors),
		cmocka_unit_test(test_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
