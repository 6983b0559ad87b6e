/* SPDX-License-Identifier: MIT */
/*
 * The timeline (report/timeline.h) of models built by hand whose thread
 * traces hold events out of time order, as the recorder's rings of two
 * CPUs can hand them: a few late events (moved into place) and many
 * (sorted whole).  Every event comes out once, in time order, on the
 * stack its node maps to.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/timeline.h"

#define T0 1000000000ull
#define N 400

/*
 * Thread 1 "app" with stacks main;a and main;b and a trace of samples at
 * @times (us after T0): an even time on main;a, an odd one on main;b.
 */
static struct fx *model(const uint64_t *times, size_t n)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th = fx_thread(fx, 1, 1, "app");
	uint32_t a = fx_add(fx, th, "main;a", 1, 1), b = fx_add(fx, th, "main;b", 1, 1);

	th->trace = calloc(1, sizeof(*th->trace));
	assert_non_null(th->trace);
	nw_trace_init(th->trace, T0, 1000);
	for (size_t i = 0; i < n; i++) {
		struct nw_trace_event ev = { .time = T0 + 1000 * times[i], .value = 1000,
					     .node = times[i] % 2 ? b : a,
					     .kind = NW_TRACE_SAMPLE };

		assert_int_equal(nw_trace_add(th->trace, &ev), 0);
	}
	fx->m->run.clock_start_ns = T0;
	fx->m->run.clock_end_ns = T0 + 1000 * 1000000ull;
	return fx;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The timeline of the model of @times: every event, in time order, on its stack. */
static void check(uint64_t *times, size_t n)
{
	struct fx *fx = model(times, n);
	struct nw_stacks_opts so = { .node_map = true };
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);
	struct nw_timeline *tl = NULL;
	const struct nw_tl_thread *t;

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &so), 0);
	assert_int_equal(nw_timeline_build(s, NULL, &tl), 0);
	assert_int_equal(tl->n, 1);
	t = &tl->threads[0];
	assert_int_equal(t->n, n);
	qsort(times, n, sizeof(*times), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		const char *name = s->frames.v[s->tree->nodes[t->v[i].sym].ip].name;

		assert_int_equal(t->v[i].time, T0 + 1000 * times[i]);
		assert_string_equal(name, times[i] % 2 ? "b" : "a");
	}
	nw_timeline_free(tl);
	nw_stacks_free(s);
	fx_free(fx);
}

/* A few events late by a place or three: moved into place. */
static void test_few_late(void **state)
{
	uint64_t times[N];

	for (size_t i = 0; i < N; i++)
		times[i] = 10 + 2 * i + (i % 3 == 0);
	times[50] = 200, times[51] = 110;          /* two neighbours swapped */
	times[200] = 420, times[203] = 411;        /* one three places early */
	times[N - 1] = 5;                          /* the last event first of all */
	check(times, N);
}

/* Events in no order (more than a trace ever holds): sorted whole. */
static void test_shuffled(void **state)
{
	uint64_t times[N], x = 88172645463325252ull;

	for (size_t i = 0; i < N; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		times[i] = 10 + x % 100000;
	}
	check(times, N);
}

/* In order already: unchanged. */
static void test_in_order(void **state)
{
	uint64_t times[N];

	for (size_t i = 0; i < N; i++)
		times[i] = 10 + 3 * i;
	check(times, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_few_late),
		cmocka_unit_test(test_shuffled),
		cmocka_unit_test(test_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
