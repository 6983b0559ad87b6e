/* SPDX-License-Identifier: MIT */
/* The ring reader on a fake ring in memory: order, wrap-around, a record split at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "perf/ring.h"

#define DATA_SIZE 256

struct fake {
	union {
		struct perf_event_mmap_page meta;
		unsigned char page[4096];
	};
	unsigned char data[DATA_SIZE];
};

/* Writes a record of @size bytes whose payload bytes are all @fill, as the kernel would. */
static void put(struct fake *f, uint16_t type, uint16_t size, unsigned char fill)
{
	unsigned char rec[512];
	struct perf_event_header h = { .type = type, .misc = 0, .size = size };
	uint64_t head = f->meta.data_head;

	memcpy(rec, &h, sizeof(h));
	memset(rec + sizeof(h), fill, size - sizeof(h));
	for (uint16_t i = 0; i < size; i++)
		f->data[(head + i) % DATA_SIZE] = rec[i];
	f->meta.data_head = head + size;
}

struct seen {
	int n;
	uint32_t types[16];
	size_t sizes[16];
	int intact[16];
	int stop_at;
};

static int collect(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	struct seen *s = arg;
	const unsigned char *p = rec;
	int ok = 1;

	if (s->stop_at && s->n == s->stop_at)
		return -42;
	for (size_t i = sizeof(*hdr); i < size; i++)
		ok &= p[i] == (unsigned char)hdr->type;
	s->types[s->n] = hdr->type;
	s->sizes[s->n] = size;
	s->intact[s->n] = ok;
	s->n++;
	return 0;
}

/* Page-aligned; aligned_alloc() wants a size that is a multiple of the alignment. */
static struct fake *alloc_fake(void)
{
	struct fake *f = aligned_alloc(4096, (sizeof(struct fake) + 4095) & ~(size_t)4095);

	assert_non_null(f);
	return f;
}

static struct fake *new_fake(struct nw_ring *r)
{
	struct fake *f = alloc_fake();

	memset(f, 0, sizeof(*f));
	f->meta.data_offset = offsetof(struct fake, data);
	f->meta.data_size = DATA_SIZE;
	assert_int_equal(nw_ring_init(r, f, sizeof(*f)), 0);
	return f;
}

static void test_in_order(void **state)
{
	struct nw_ring r;
	struct fake *f = new_fake(&r);
	struct seen s = { 0 };

	put(f, 1, 24, 1);
	put(f, 2, 40, 2);
	put(f, 3, 16, 3);
	assert_int_equal(nw_ring_pending(&r), 80);
	assert_int_equal(nw_ring_read(&r, collect, &s), 3);
	assert_int_equal(s.types[0], 1);
	assert_int_equal(s.types[1], 2);
	assert_int_equal(s.types[2], 3);
	assert_int_equal(s.sizes[1], 40);
	assert_true(s.intact[0] && s.intact[1] && s.intact[2]);
	/* Consumed: tail released to the kernel. */
	assert_int_equal(f->meta.data_tail, 80);
	assert_int_equal(nw_ring_pending(&r), 0);
	assert_int_equal(nw_ring_read(&r, collect, &s), 0);
	nw_ring_fini(&r);
	free(f);
}

static void test_wrap_and_split(void **state)
{
	struct nw_ring r;
	struct fake *f = new_fake(&r);
	struct seen s = { 0 };

	/* Fill to 232 bytes, consume, then write a 48-byte record that
	 * straddles the end (232..280) and one with its header split. */
	put(f, 1, 232, 1);
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	put(f, 7, 48, 7);
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	assert_int_equal(s.sizes[1], 48);
	assert_true(s.intact[1]);
	/* head = 280 -> pos 24; make the next header straddle: advance to pos 252 */
	put(f, 2, 228, 2);
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	put(f, 9, 64, 9);  /* header bytes 252..255 and 0..3 split */
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	assert_int_equal(s.types[3], 9);
	assert_int_equal(s.sizes[3], 64);
	assert_true(s.intact[2] && s.intact[3]);
	assert_int_equal(f->meta.data_tail, 232 + 48 + 228 + 64);
	nw_ring_fini(&r);
	free(f);
}

static void test_bad_size_resyncs(void **state)
{
	struct nw_ring r;
	struct fake *f = new_fake(&r);
	struct seen s = { 0 };
	struct perf_event_header h = { .type = 5, .size = 4 };

	put(f, 1, 16, 1);
	/* A header claiming 4 bytes: impossible, the reader must skip ahead. */
	memcpy(&f->data[16], &h, sizeof(h));
	f->meta.data_head += 16;
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	assert_int_equal(r.bad_records, 1);
	assert_int_equal(f->meta.data_tail, f->meta.data_head);
	/* A record claiming more than was written is also refused. */
	h.size = 200;
	memcpy(&f->data[32], &h, sizeof(h));
	f->meta.data_head += 16;
	assert_int_equal(nw_ring_read(&r, collect, &s), 0);
	assert_int_equal(r.bad_records, 2);
	nw_ring_fini(&r);
	free(f);
}

static void test_callback_stop_keeps_record(void **state)
{
	struct nw_ring r;
	struct fake *f = new_fake(&r);
	struct seen s = { .stop_at = 1 };

	put(f, 1, 16, 1);
	put(f, 2, 16, 2);
	assert_int_equal(nw_ring_read(&r, collect, &s), -42);
	/* The first was consumed, the second stays for the next read. */
	assert_int_equal(f->meta.data_tail, 16);
	s.stop_at = 0;
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	assert_int_equal(s.types[1], 2);
	nw_ring_fini(&r);
	free(f);
}

/* Records the pointer each record was handed out at. */
static int note_ptr(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	const void **ptrs = arg;

	(void)size;
	ptrs[hdr->type] = rec;
	return 0;
}

static void test_peek_holds_until_release(void **state)
{
	struct nw_ring r;
	struct fake *f = new_fake(&r);
	const void *ptrs[16] = { 0 };
	struct seen s = { 0 };
	uint64_t tail = 0;

	put(f, 1, 200, 1);
	assert_int_equal(nw_ring_read(&r, collect, &s), 1);
	put(f, 2, 24, 2);  /* 200..224: in place */
	put(f, 3, 48, 3);  /* 224..272: wraps, handed out in the bounce buffer */
	assert_int_equal(nw_ring_peek(&r, note_ptr, ptrs, &tail), 2);
	assert_ptr_equal(ptrs[2], f->data + 200);
	assert_ptr_equal(ptrs[3], r.bounce);
	assert_int_equal(tail, 272);
	/* Nothing given back yet: the kernel may not write over them. */
	assert_int_equal(f->meta.data_tail, 200);
	assert_int_equal(nw_ring_pending(&r), 72);
	nw_ring_release(&r, tail);
	assert_int_equal(f->meta.data_tail, 272);
	assert_int_equal(nw_ring_pending(&r), 0);
	/* A failing callback: the walk stops before the record it refused. */
	s = (struct seen){ .stop_at = 1 };
	put(f, 4, 16, 4);
	put(f, 5, 16, 5);
	assert_int_equal(nw_ring_peek(&r, collect, &s, &tail), -42);
	assert_int_equal(tail, 288);
	assert_int_equal(f->meta.data_tail, 272);
	nw_ring_fini(&r);
	free(f);
}

static void test_init_rejects_bad_size(void **state)
{
	struct nw_ring r;
	struct fake *f = alloc_fake();

	memset(f, 0, sizeof(*f));
	f->meta.data_offset = offsetof(struct fake, data);
	f->meta.data_size = 200; /* not a power of two */
	assert_int_equal(nw_ring_init(&r, f, sizeof(*f)), -EINVAL);
	f->meta.data_size = 512; /* beyond the mapping */
	assert_int_equal(nw_ring_init(&r, f, sizeof(*f)), -EINVAL);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_wrap_and_split),
		cmocka_unit_test(test_bad_size_resyncs),
		cmocka_unit_test(test_callback_stop_keeps_record),
		cmocka_unit_test(test_peek_holds_until_release),
		cmocka_unit_test(test_init_rejects_bad_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
