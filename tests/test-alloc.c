/* SPDX-License-Identifier: MIT */
/*
 * Allocation profiling's pure parts: the byte sampler and its weights
 * (alloc/sampler.h: rate 1 samples everything at weight 1; the weighed
 * sums of a fixed-seed run estimate the true counts and bytes), the
 * interposer's lock-free pointer set (alloc/ptrtable.h: removed slots,
 * a full table, threads racing), the recorder's table of live sampled
 * allocations and of frees read before their allocation (record/alloc.h),
 * and finding the markers in the built
 * libnarwhal-alloc.so.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc/abi.h"
#include "alloc/ptrtable.h"
#include "alloc/sampler.h"
#include "elf/facts.h"
#include "record/alloc.h"

#define LIBRARY NW_TEST_BUILD "/../src/alloc/" NW_ALLOC_LIBRARY

/* ---- sampler ---- */

static void test_weight(void **state)
{
	double o, b;

	(void)state;
	nw_alloc_weight(100, 1, &o, &b);
	assert_true(o == 1.0 && b == 100.0);
	nw_alloc_weight(0, 1, &o, &b);
	assert_true(o == 1.0 && b == 0.0);
	/* size == rate: sampled with probability 1 - 1/e. */
	nw_alloc_weight(4096, 4096, &o, &b);
	assert_true(fabs(o - 1.0 / (1.0 - exp(-1.0))) < 1e-12);
	assert_true(fabs(b - 4096.0 * o) < 1e-9);
	/* Much smaller than the rate: about rate/size objects, rate + size/2 bytes. */
	nw_alloc_weight(16, 524288, &o, &b);
	assert_true(fabs(o - 32768.5) < 0.01);
	assert_true(fabs(b - (524288.0 + 8.0)) < 0.1);
	/* Much larger: always sampled, weight 1. */
	nw_alloc_weight(1u << 30, 524288, &o, &b);
	assert_true(o == 1.0 && b == (double)(1u << 30));
}

static void test_rate_one(void **state)
{
	struct nw_alloc_sampler s;

	(void)state;
	nw_alloc_sampler_seed(&s, 7, 1);
	for (size_t i = 0; i < 1000; i++)
		assert_true(nw_alloc_sample(&s, i % 3, 1));
}

/* Intervals: exponential with mean rate. */
static void test_intervals(void **state)
{
	struct nw_alloc_sampler s;
	double sum = 0, sq = 0;
	const int n = 200000;

	(void)state;
	nw_alloc_sampler_seed(&s, 12345, 1);
	for (int i = 0; i < n; i++) {
		double v = (double)nw_alloc_next_interval(&s, 65536);

		assert_true(v >= 1);
		sum += v;
		sq += v * v;
	}
	/* mean 65536 (within 1 %); an exponential's standard deviation is its mean. */
	assert_true(fabs(sum / n / 65536.0 - 1.0) < 0.01);
	assert_true(fabs(sqrt(sq / n - (sum / n) * (sum / n)) / 65536.0 - 1.0) < 0.02);
}

/*
 * Sampled and weighed, sizes from 8 bytes to 16 times the rate, mixed,
 * sum to the true counts and bytes per size (a fixed seed: the same run
 * every time; the bounds hold for any seed with overwhelming probability).
 */
static void test_unbiased(void **state)
{
	static const size_t sizes[] = {8, 100, 1000, 4096, 65536};
	const uint64_t rate = 4096, each = 64ull << 20;
	struct nw_alloc_sampler s;

	(void)state;
	nw_alloc_sampler_seed(&s, 99, rate);
	/* 64 MiB of each size, in turns, so that the countdown runs across sizes. */
	for (int k = 0; k < 5; k++) {
		uint64_t true_o = 0, true_b = 0;
		double est_o = 0, est_b = 0, eo, eb;

		for (uint64_t i = 0; true_b < each; i++) {
			size_t size = sizes[(k + (i % 3 == 2)) % 5]; /* a third of another size */
			double o, b;
			bool hit = nw_alloc_sample(&s, size, rate);

			if (size != sizes[k])
				continue;
			true_o++;
			true_b += size;
			if (!hit)
				continue;
			nw_alloc_weight(size, rate, &o, &b);
			est_o += o;
			est_b += b;
		}
		eb = est_b / (double)true_b - 1.0;
		eo = est_o / (double)true_o - 1.0;
		print_message("size %zu: %llu bytes, estimated %+.2f%%; objects %+.2f%%\n",
			      sizes[k], (unsigned long long)true_b, 100 * eb, 100 * eo);
		/* sigma about sqrt(rate / bytes) = 0.8 %: 5 % is six of them. */
		assert_true(fabs(eb) < 0.05);
		assert_true(fabs(eo) < 0.05);
	}
}

/* ---- the pointer set ---- */

struct table {
	struct nw_ptrtable t;
	uintptr_t *slots;
	uint32_t *filter;
};

static void table_init(struct table *tb, unsigned sbits, unsigned fbits)
{
	tb->slots = calloc((size_t)1 << sbits, sizeof(*tb->slots));
	tb->filter = calloc((size_t)1 << fbits, sizeof(*tb->filter));
	assert_non_null(tb->slots);
	assert_non_null(tb->filter);
	tb->t = (struct nw_ptrtable){tb->slots, tb->filter, sbits, fbits};
}

static void table_fini(struct table *tb)
{
	free(tb->slots);
	free(tb->filter);
}

static uint64_t filter_sum(const struct table *tb)
{
	uint64_t n = 0;

	for (size_t i = 0; i < ((size_t)1 << tb->t.fbits); i++)
		n += tb->filter[i];
	return n;
}

static void test_ptrtable(void **state)
{
	struct table tb;

	(void)state;
	table_init(&tb, 12, 6);
	for (uintptr_t p = 0x1000; p < 0x1000 + 16 * 1000; p += 16)
		assert_true(nw_ptrtable_insert(&tb.t, p));
	assert_int_equal(filter_sum(&tb), 1000);
	/* Absent pointers, then every other one removed once. */
	assert_false(nw_ptrtable_remove(&tb.t, 0x10));
	assert_false(nw_ptrtable_remove(&tb.t, 0x1008));
	for (uintptr_t p = 0x1000; p < 0x1000 + 16 * 1000; p += 32) {
		assert_true(nw_ptrtable_remove(&tb.t, p));
		assert_false(nw_ptrtable_remove(&tb.t, p));
	}
	assert_int_equal(filter_sum(&tb), 500);
	/* The rest are still found past the removed slots; removed slots are reused. */
	for (uintptr_t p = 0x1010; p < 0x1000 + 16 * 1000; p += 32)
		assert_true(nw_ptrtable_remove(&tb.t, p));
	for (uintptr_t p = 0x100000; p < 0x100000 + 16 * 3000; p += 16)
		assert_true(nw_ptrtable_insert(&tb.t, p));
	for (uintptr_t p = 0x100000; p < 0x100000 + 16 * 3000; p += 16)
		assert_true(nw_ptrtable_remove(&tb.t, p));
	assert_int_equal(filter_sum(&tb), 0);
	table_fini(&tb);
}

/* A full table refuses, and still answers for what it holds. */
static void test_ptrtable_full(void **state)
{
	struct table tb;
	int refused = 0;

	(void)state;
	table_init(&tb, 4, 2);
	for (uintptr_t p = 16; p <= 16 * 20; p += 16)
		refused += !nw_ptrtable_insert(&tb.t, p);
	assert_int_equal(refused, 4);
	assert_int_equal(filter_sum(&tb), 16);
	assert_false(nw_ptrtable_remove(&tb.t, 16 * 21));
	for (uintptr_t p = 16; p <= 16 * 16; p += 16)
		assert_true(nw_ptrtable_remove(&tb.t, p));
	table_fini(&tb);
}

struct racer {
	struct nw_ptrtable *t;
	uintptr_t base;
	int ok;
};

static void *race(void *arg)
{
	struct racer *r = arg;

	r->ok = 1;
	for (int round = 0; round < 50; round++) {
		for (uintptr_t i = 0; i < 2000; i++)
			r->ok &= nw_ptrtable_insert(r->t, r->base + 16 * i);
		for (uintptr_t i = 0; i < 2000; i++)
			r->ok &= nw_ptrtable_remove(r->t, r->base + 16 * i);
	}
	return NULL;
}

static void test_ptrtable_threads(void **state)
{
	struct racer r[4];
	pthread_t th[4];
	struct table tb;

	(void)state;
	table_init(&tb, 16, 8);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){&tb.t, 0x10000000u * (uintptr_t)(i + 1), 0};
		assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(r[i].ok);
	}
	assert_int_equal(filter_sum(&tb), 0);
	table_fini(&tb);
}

/* ---- the recorder's live table ---- */

static void count_dropped(void *arg, const struct nw_alloc_entry *e)
{
	*(uint64_t *)arg += e->bytes;
}

static void test_live(void **state)
{
	struct nw_alloc_live l;
	struct nw_alloc_entry e = {.pid = 1, .ptr = 0x1000, .node = 3, .objects = 2, .bytes = 64},
			      got;
	struct nw_cct *cct = (struct nw_cct *)&e; /* only compared */
	uint64_t dropped = 0;

	(void)state;
	nw_alloc_live_init(&l);
	e.cct = cct;
	assert_int_equal(nw_alloc_live_add(&l, &e, &got), 0);
	e.pid = 2; /* the same address in another process */
	assert_int_equal(nw_alloc_live_add(&l, &e, &got), 0);
	assert_int_equal(nw_alloc_live_count(&l), 2);
	/* Again in process 2 without a free in between: replaced, the old one handed back. */
	e.bytes = 128;
	assert_int_equal(nw_alloc_live_add(&l, &e, &got), 1);
	assert_int_equal(got.bytes, 64);
	assert_true(nw_alloc_live_remove(&l, 2, 0x1000, &got));
	assert_int_equal(got.bytes, 128);
	assert_false(nw_alloc_live_remove(&l, 2, 0x1000, &got));
	assert_false(nw_alloc_live_remove(&l, 3, 0x1000, &got));
	/* Many, then process 1's dropped at once (exec). */
	for (uint64_t i = 0; i < 10000; i++) {
		struct nw_alloc_entry x = {
		    .pid = 1 + (uint32_t)(i % 2), .ptr = 0x100000 + 16 * i, .cct = cct, .bytes = 1};

		assert_int_equal(nw_alloc_live_add(&l, &x, &got), 0);
	}
	assert_int_equal(nw_alloc_live_count(&l), 10001);
	nw_alloc_live_drop_pid(&l, 1, count_dropped, &dropped);
	assert_int_equal(dropped, 64 + 5000);
	assert_int_equal(nw_alloc_live_count(&l), 5000);
	assert_true(nw_alloc_live_remove(&l, 2, 0x100000 + 16, &got));
	assert_false(nw_alloc_live_remove(&l, 1, 0x100000, &got));
	/* A free read before its allocation: used up once, by an allocation before it. */
	nw_alloc_live_orphan(&l, 7, 0xabc0, 1000);
	assert_false(nw_alloc_live_freed(&l, 7, 0xabc0, 1001)); /* allocated after that free */
	assert_false(nw_alloc_live_freed(&l, 8, 0xabc0, 999));  /* another process */
	assert_true(nw_alloc_live_freed(&l, 7, 0xabc0, 999));
	assert_false(nw_alloc_live_freed(&l, 7, 0xabc0, 999));
	for (uint64_t i = 0; i < 2 * NW_ALLOC_ORPHANS; i++)
		nw_alloc_live_orphan(&l, 7, 0x10 * (i + 1), 5000);
	assert_false(nw_alloc_live_freed(&l, 7, 0x10, 10)); /* pushed out */
	assert_true(nw_alloc_live_freed(&l, 7, 0x10 * 2 * NW_ALLOC_ORPHANS, 10));
	nw_alloc_live_fini(&l);
}

/* ---- the library and its markers ---- */

static void test_markers(void **state)
{
	struct nw_alloc_opts o;
	uint64_t a = 0, f = 0;
	char *pre;

	(void)state;
	assert_int_equal(nw_elf_symbol_offset(LIBRARY, NW_ALLOC_SAMPLE_FN, &a), 0);
	assert_int_equal(nw_elf_symbol_offset(LIBRARY, NW_ALLOC_FREE_FN, &f), 0);
	assert_true(a && f && a != f);
	assert_int_equal(nw_elf_symbol_offset(LIBRARY, "no_such_function", &a), -ENOENT);
	assert_int_equal(nw_elf_symbol_offset("/nonexistent", "malloc", &a), -ENOENT);
	/* What the recorder puts uprobes on (where the kernel has a uprobe PMU). */
	if (nw_alloc_opts_init(&o, LIBRARY, NULL, NULL, 0) == -ENODEV)
		return;
	assert_int_equal(o.rate, NW_ALLOC_DEFAULT_RATE);
	assert_int_equal(o.free_off, f);
	assert_true(o.library[0] == '/');
	pre = nw_alloc_preload(&o, "libfoo.so");
	assert_non_null(pre);
	assert_true(strstr(pre, NW_ALLOC_LIBRARY ":libfoo.so") != NULL);
	free(pre);
	nw_alloc_opts_fini(&o);
	assert_int_equal(nw_alloc_opts_init(&o, "/nonexistent.so", NULL, NULL, 1), -ENOENT);
	nw_alloc_opts_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_weight),	     cmocka_unit_test(test_rate_one),
	    cmocka_unit_test(test_intervals),	     cmocka_unit_test(test_unbiased),
	    cmocka_unit_test(test_ptrtable),	     cmocka_unit_test(test_ptrtable_full),
	    cmocka_unit_test(test_ptrtable_threads), cmocka_unit_test(test_live),
	    cmocka_unit_test(test_markers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
