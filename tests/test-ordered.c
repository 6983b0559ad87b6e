/* SPDX-License-Identifier: MIT */
/*
 * Rings read in time order (record/ordered.h) on fake rings in memory:
 * records of two rings interleaved by their times, equal times in ring
 * order, a record that wraps its ring's end, one ring alone, a ring not
 * mapped, and the rings given back once the round is over.  Samples carry
 * only their time and a tag; SWITCH records their time in the trailer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "record/ordered.h"

#define DATA_SIZE 256

struct fake {
	union {
		struct perf_event_mmap_page meta;
		unsigned char page[4096];
	};
	unsigned char data[DATA_SIZE];
};

static const struct nw_sample_format fmt = {
	.sample_type = PERF_SAMPLE_TIME,
	.sample_id_all = true,
};

/* Writes @n bytes at the ring's head, wrapping at its end, as the kernel does. */
static void put(struct fake *f, const void *rec, size_t n)
{
	uint64_t head = f->meta.data_head;

	for (size_t i = 0; i < n; i++)
		f->data[(head + i) % DATA_SIZE] = ((const unsigned char *)rec)[i];
	f->meta.data_head = head + n;
}

/* A sample at @time, tagged @tag. */
static void sample(struct fake *f, uint64_t time, uint64_t tag)
{
	struct {
		struct perf_event_header h;
		uint64_t time, tag;
	} r = { { .type = PERF_RECORD_SAMPLE, .size = sizeof(r) }, time, tag };

	put(f, &r, sizeof(r));
}

/* A switch record whose trailer says @time; its tag is its time. */
static void switch_rec(struct fake *f, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint64_t time;
	} r = { { .type = PERF_RECORD_SWITCH, .size = sizeof(r) }, time };

	put(f, &r, sizeof(r));
}

struct seen {
	size_t n;
	uint64_t tags[32];
};

static void collect(void *arg, const void *rec, size_t size)
{
	struct seen *s = arg;
	struct perf_event_header h;
	uint64_t tag;

	memcpy(&h, rec, sizeof(h));
	assert_int_equal(h.size, size);
	memcpy(&tag, (const unsigned char *)rec + size - 8, 8);
	assert_true(s->n < 32);
	s->tags[s->n++] = tag;
}

/* @n fake rings mapped, in @rings. */
static struct fake *fakes_new(struct nw_ring *rings, size_t n)
{
	/* aligned_alloc() wants a size that is a multiple of the alignment. */
	struct fake *f = aligned_alloc(4096, (n * sizeof(*f) + 4095) & ~(size_t)4095);

	assert_non_null(f);
	memset(f, 0, n * sizeof(*f));
	memset(rings, 0, n * sizeof(*rings));
	for (size_t i = 0; i < n; i++) {
		f[i].meta.data_offset = offsetof(struct fake, data);
		f[i].meta.data_size = DATA_SIZE;
		assert_int_equal(nw_ring_init(&rings[i], &f[i], sizeof(f[i])), 0);
	}
	return f;
}

static void fakes_free(struct fake *f, struct nw_ring *rings, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rings[i].meta)
			nw_ring_fini(&rings[i]);
	free(f);
}

static void expect(const struct seen *s, const uint64_t *tags, size_t n)
{
	assert_int_equal(s->n, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(s->tags[i], tags[i]);
}

/* Two rings' records interleaved by time; on equal times the first ring's first. */
static void test_interleave(void **state)
{
	static const uint64_t want[] = { 1, 2, 3, 4, 45, 5, 6, 7 };
	struct nw_ring rings[2];
	struct fake *f = fakes_new(rings, 2);
	struct nw_ordered o;
	struct seen s = { 0 };

	nw_ordered_init(&o);
	sample(&f[0], 10, 1);
	sample(&f[0], 30, 3);
	sample(&f[0], 50, 5);
	sample(&f[0], 60, 6);
	sample(&f[1], 20, 2);
	sample(&f[1], 40, 4);
	switch_rec(&f[1], 45);
	sample(&f[1], 60, 7);
	assert_int_equal(nw_ordered_read(&o, rings, 2, &fmt, NULL, collect, &s), 8);
	expect(&s, want, 8);
	/* Both rings given back: the next round has nothing. */
	for (int i = 0; i < 2; i++)
		assert_int_equal(f[i].meta.data_tail, f[i].meta.data_head);
	assert_int_equal(nw_ordered_read(&o, rings, 2, &fmt, NULL, collect, &s), 0);
	nw_ordered_fini(&o);
	fakes_free(f, rings, 2);
}

/* A record that wraps its ring's end is copied whole and still comes in its place. */
static void test_wrap(void **state)
{
	static const uint64_t want[] = { 100, 101, 102, 103 };
	struct nw_ring rings[2];
	struct fake *f = fakes_new(rings, 2);
	struct nw_ordered o;
	struct seen s = { 0 };

	nw_ordered_init(&o);
	/* Ring 0 was read up to 240 bytes: its next sample spans the end. */
	f[0].meta.data_head = f[0].meta.data_tail = DATA_SIZE - 16;
	sample(&f[0], 1000, 101);
	sample(&f[0], 3000, 103);
	sample(&f[1], 500, 100);
	sample(&f[1], 2000, 102);
	assert_int_equal(nw_ordered_read(&o, rings, 2, &fmt, NULL, collect, &s), 4);
	expect(&s, want, 4);
	assert_int_equal(o.len, 24); /* the one copy */
	assert_int_equal(f[0].meta.data_tail, f[0].meta.data_head);
	nw_ordered_fini(&o);
	fakes_free(f, rings, 2);
}

/* One ring alone holds records: handed out where they lie; a ring not mapped is skipped. */
static void test_one_ring(void **state)
{
	static const uint64_t want[] = { 9, 8 };
	struct nw_ring rings[3];
	struct fake *f = fakes_new(rings, 3);
	struct nw_ordered o;
	struct seen s = { 0 };

	nw_ordered_init(&o);
	nw_ring_fini(&rings[0]);
	memset(&rings[0], 0, sizeof(rings[0])); /* CPU 0 offline */
	/* Out of time order within the ring: a ring is read in its own order. */
	sample(&f[2], 90, 9);
	sample(&f[2], 80, 8);
	assert_int_equal(nw_ordered_read(&o, rings, 3, &fmt, NULL, collect, &s), 2);
	expect(&s, want, 2);
	assert_int_equal(o.nrefs, 0);
	assert_int_equal(f[2].meta.data_tail, f[2].meta.data_head);
	nw_ordered_fini(&o);
	fakes_free(f, rings, 3);
}

/* The records an extra source holds: the in-kernel unwinder's ring buffer, as session.c reads it. */
struct extra_records {
	uint64_t times[4], tags[4];
	unsigned n;
};

static int collect_extra(void *arg, struct nw_ordered *o)
{
	struct extra_records *x = arg;

	for (unsigned i = 0; i < x->n; i++) {
		struct {
			struct perf_event_header h;
			uint64_t time, tag;
		} r = { { .type = PERF_RECORD_SAMPLE, .size = sizeof(r) }, x->times[i], x->tags[i] };

		if (nw_ordered_copy(o, &fmt, &r, sizeof(r)))
			return -1;
	}
	x->n = 0; /* consumed, as a ring buffer's are */
	return 0;
}

/*
 * Records from beside the rings (-g bpf's samples) come in their place by
 * time among the rings' records, also when one ring alone holds records
 * (no shortcut then), and alone when no ring holds any.
 */
static void test_extra(void **state)
{
	static const uint64_t want[] = { 1, 2, 3, 4, 5 }, alone[] = { 7, 8 };
	struct extra_records x = { { 15, 45 }, { 2, 4 }, 2 };
	struct nw_ordered_extra extra = { collect_extra, &x };
	struct nw_ring rings[2];
	struct fake *f = fakes_new(rings, 2);
	struct nw_ordered o;
	struct seen s = { 0 };

	nw_ordered_init(&o);
	sample(&f[1], 10, 1);
	sample(&f[1], 30, 3);
	sample(&f[1], 50, 5);
	assert_int_equal(nw_ordered_read(&o, rings, 2, &fmt, &extra, collect, &s), 5);
	expect(&s, want, 5);
	assert_int_equal(f[1].meta.data_tail, f[1].meta.data_head);
	s = (struct seen){ 0 };
	x = (struct extra_records){ { 70, 80 }, { 7, 8 }, 2 };
	assert_int_equal(nw_ordered_read(&o, rings, 2, &fmt, &extra, collect, &s), 2);
	expect(&s, alone, 2);
	s = (struct seen){ 0 };
	assert_int_equal(nw_ordered_read(&o, rings, 2, &fmt, &extra, collect, &s), 0);
	nw_ordered_fini(&o);
	fakes_free(f, rings, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interleave),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_one_ring),
		cmocka_unit_test(test_extra),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
