/* SPDX-License-Identifier: MIT */
/* The record decoder on crafted bytes, including bad sizes; record times for ordering. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "perf/record.h"

struct buf {
	unsigned char b[1024];
	size_t n;
};

static void u64(struct buf *b, uint64_t v)
{
	memcpy(b->b + b->n, &v, 8);
	b->n += 8;
}

static void u32(struct buf *b, uint32_t v)
{
	memcpy(b->b + b->n, &v, 4);
	b->n += 4;
}

static void bytes(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void header(struct buf *b, uint32_t type, uint16_t misc)
{
	b->n = 0;
	u32(b, type);
	bytes(b, &misc, 2);
	b->n += 2; /* size, patched by finish() */
}

static void finish(struct buf *b)
{
	uint16_t size = (uint16_t)b->n;

	memcpy(b->b + 6, &size, 2);
}

static const struct nw_sample_format fmt = {
	.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		       PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
		       PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
	.regs_mask = 0x1c0, /* 3 registers */
	.sample_id_all = true,
};

/* The trailer for fmt: TID, TIME, IDENTIFIER. */
static void trailer(struct buf *b, uint32_t pid, uint32_t tid, uint64_t time, uint64_t id)
{
	u32(b, pid);
	u32(b, tid);
	u64(b, time);
	u64(b, id);
}

static void make_sample(struct buf *b)
{
	header(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	u64(b, 77);            /* identifier */
	u64(b, 0x401000);      /* ip */
	u32(b, 10);            /* pid */
	u32(b, 11);            /* tid */
	u64(b, 123456);        /* time */
	u64(b, 1001);          /* period */
	u64(b, 3);             /* nr */
	u64(b, (uint64_t)PERF_CONTEXT_USER);
	u64(b, 0x401000);
	u64(b, 0x402000);
	u64(b, PERF_SAMPLE_REGS_ABI_64);
	u64(b, 1);
	u64(b, 0x7ff0);
	u64(b, 0x401000);
	u64(b, 16);            /* stack size */
	u64(b, 0xaaaa);
	u64(b, 0xbbbb);
	u64(b, 8);             /* dyn_size */
	finish(b);
}

static void test_sample(void **state)
{
	struct buf b;
	struct nw_record r;

	make_sample(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(r.type, PERF_RECORD_SAMPLE);
	assert_int_equal(r.sample.sid.id, 77);
	assert_int_equal(r.sample.ip, 0x401000);
	assert_int_equal(r.sample.sid.pid, 10);
	assert_int_equal(r.sample.sid.tid, 11);
	assert_int_equal(r.sample.sid.time, 123456);
	assert_int_equal(r.sid.time, 123456);
	assert_int_equal(r.sample.period, 1001);
	assert_int_equal(r.sample.nr, 3);
	assert_int_equal(nw_rd64(r.sample.ips, 2), 0x402000);
	assert_int_equal(r.sample.nregs, 3);
	assert_int_equal(nw_rd64(r.sample.regs, 1), 0x7ff0);
	assert_int_equal(r.sample.stack_size, 16);
	assert_int_equal(nw_rd64(r.sample.stack, 1), 0xbbbb);
	assert_int_equal(r.sample.dyn_size, 8);
}

static void test_sample_every_truncation_fails(void **state)
{
	struct buf b;
	struct nw_record r;

	make_sample(&b);
	for (size_t n = 0; n < b.n; n++) {
		uint16_t size = (uint16_t)n;

		if (n >= 8)
			memcpy(b.b + 6, &size, 2);
		assert_int_equal(nw_record_decode(&fmt, b.b, n, &r), -EBADMSG);
	}
}

static void test_sample_bad_counts(void **state)
{
	struct buf b;
	struct nw_record r;
	uint64_t huge = 1ULL << 60, big = 4096;

	make_sample(&b);
	/* callchain nr far beyond the record */
	memcpy(b.b + 8 + 8 * 5, &huge, 8);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), -EBADMSG);
	/* stack size beyond the record */
	make_sample(&b);
	memcpy(b.b + b.n - 8 * 4, &big, 8);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), -EBADMSG);
	/* dyn_size larger than the copy */
	make_sample(&b);
	memcpy(b.b + b.n - 8, &big, 8);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), -EBADMSG);
	/* header size disagrees with the buffer */
	make_sample(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n - 8, &r), -EBADMSG);
}

static void test_mmap2_build_id(void **state)
{
	struct buf b;
	struct nw_record r;
	unsigned char u[24] = { 20, 0, 0, 0 };
	const char name[] = "/usr/lib/libfoo.so\0\0\0\0\0\0";

	for (int i = 0; i < 20; i++)
		u[4 + i] = (unsigned char)(0xa0 + i);
	header(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID);
	u32(&b, 10);
	u32(&b, 10);
	u64(&b, 0x7f0000001000);
	u64(&b, 0x2000);
	u64(&b, 0x1000);
	bytes(&b, u, sizeof(u));
	u32(&b, PROT_READ | PROT_EXEC);
	u32(&b, MAP_PRIVATE);
	bytes(&b, name, 24);
	trailer(&b, 10, 10, 999, 77);
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(r.mmap2.addr, 0x7f0000001000);
	assert_int_equal(r.mmap2.len, 0x2000);
	assert_int_equal(r.mmap2.pgoff, 0x1000);
	assert_int_equal(r.mmap2.build_id_size, 20);
	assert_int_equal(r.mmap2.build_id[19], 0xa0 + 19);
	assert_true(r.mmap2.prot & PROT_EXEC);
	assert_string_equal(r.mmap2.filename, "/usr/lib/libfoo.so");
	assert_int_equal(r.sid.time, 999);
	assert_int_equal(r.sid.tid, 10);

	/* An unterminated file name is refused. */
	memset(b.b + b.n - 24 - 24, 'x', 24);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), -EBADMSG);
}

static void test_comm_fork_lost(void **state)
{
	struct buf b;
	struct nw_record r;
	const char comm[16] = "worker-a";

	header(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	u32(&b, 5);
	u32(&b, 6);
	bytes(&b, comm, 16);
	trailer(&b, 5, 6, 1, 2);
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_string_equal(r.comm.comm, "worker-a");
	assert_true(r.comm.exec);
	assert_int_equal(r.comm.tid, 6);

	header(&b, PERF_RECORD_FORK, 0);
	u32(&b, 20);
	u32(&b, 10);
	u32(&b, 21);
	u32(&b, 10);
	u64(&b, 5000);
	trailer(&b, 20, 21, 5000, 2);
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(r.task.pid, 20);
	assert_int_equal(r.task.ppid, 10);
	assert_int_equal(r.task.tid, 21);
	assert_int_equal(r.task.time, 5000);

	header(&b, PERF_RECORD_LOST, 0);
	u64(&b, 77);
	u64(&b, 12);
	trailer(&b, 0, 0, 0, 0);
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(r.lost.lost, 12);
	/* A LOST record too short for its trailer fails. */
	b.n -= 8;
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), -EBADMSG);
}

/* A record's time read without decoding it: the decoder's, for every type that has one. */
static void test_time(void **state)
{
	static const struct nw_sample_format no_id_all = { .sample_type = PERF_SAMPLE_TID |
								       PERF_SAMPLE_TIME };
	struct buf b;
	struct nw_record r;
	const char comm[16] = "worker-a";

	make_sample(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(nw_record_time(&fmt, b.b, b.n), r.sid.time);
	assert_int_equal(nw_record_time(&fmt, b.b, b.n), 123456);
	/* Too short for its time: 0, caught when it is decoded. */
	assert_int_equal(nw_record_time(&fmt, b.b, 24), 0);

	header(&b, PERF_RECORD_COMM, 0);
	u32(&b, 5);
	u32(&b, 6);
	bytes(&b, comm, 16);
	trailer(&b, 5, 6, 987654, 2);
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(nw_record_time(&fmt, b.b, b.n), 987654);
	assert_int_equal(r.sid.time, 987654);
	/* Without sample_id_all a non-sample record has no trailer, so no time. */
	assert_int_equal(nw_record_time(&no_id_all, b.b, b.n), 0);

	header(&b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
	trailer(&b, 5, 6, 42, 2);
	finish(&b);
	assert_int_equal(nw_record_decode(&fmt, b.b, b.n, &r), 0);
	assert_int_equal(nw_record_time(&fmt, b.b, b.n), r.sid.time);
	assert_int_equal(r.sid.time, 42);

	/* A type the decoder does not know has no time. */
	header(&b, PERF_RECORD_AUX, 0);
	u64(&b, 1);
	trailer(&b, 5, 6, 42, 2);
	finish(&b);
	assert_int_equal(nw_record_time(&fmt, b.b, b.n), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_sample_every_truncation_fails),
		cmocka_unit_test(test_sample_bad_counts),
		cmocka_unit_test(test_mmap2_build_id),
		cmocka_unit_test(test_comm_fork_lost),
		cmocka_unit_test(test_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
