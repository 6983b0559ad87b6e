/* SPDX-License-Identifier: MIT */
/*
 * Cost of one section enter+exit pair of libnarwhal (doc/SECTIONS.md).
 *
 *   build/bench/bench-sections [PAIRS]
 *
 * Times PAIRS (default 2 million) pairs of each kind in a loop, minus the
 * same loop without the section, best of 21 runs (the best run is the one
 * least disturbed by other work on the machine), and prints nanoseconds
 * per pair.  Also prints the cost of the timer reads a pair needs, the floor
 * for any implementation.  Run with NARWHAL_SECTIONS_DIR=/some/empty/dir to
 * include the interval log that narwhal-record turns on (the log then
 * holds every interval: about 5 bytes each).  NARWHAL_TIMER=clock uses
 * clock_gettime instead of the cycle counter.  NARWHAL_REPORT=off keeps the
 * report at exit quiet.
 */
#include <narwhal.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work(uint64_t i)
{
	sink += i;
}

__attribute__((noinline)) static void loop_bare(long n)
{
	for (long i = 0; i < n; i++)
		work((uint64_t)i);
}

__attribute__((noinline)) static void loop_section(long n)
{
	for (long i = 0; i < n; i++) {
		NARWHAL_SECTION("bench_section") {
			work((uint64_t)i);
		}
	}
}

__attribute__((noinline)) static void func_body(uint64_t i)
{
	NARWHAL_FUNC();
	sink += i;
}

__attribute__((noinline)) static void loop_func(long n)
{
	for (long i = 0; i < n; i++)
		func_body((uint64_t)i);
}

__attribute__((noinline)) static void loop_begin_end(long n)
{
	for (long i = 0; i < n; i++) {
		narwhal_begin("bench_begin");
		work((uint64_t)i);
		narwhal_end();
	}
}

__attribute__((noinline)) static void loop_dynamic(long n)
{
	static const char name[] = "bench_dynamic";

	for (long i = 0; i < n; i++) {
		(narwhal_begin)(name);
		work((uint64_t)i);
		narwhal_end();
	}
}

__attribute__((noinline)) static void loop_nested(long n)
{
	NARWHAL_SECTION("bench_outer") {
		for (long i = 0; i < n; i++) {
			NARWHAL_SECTION("bench_inner") {
				work((uint64_t)i);
			}
		}
	}
}

__attribute__((noinline)) static void loop_clock(long n)
{
	struct timespec ts;

	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		work((uint64_t)ts.tv_nsec);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
}

#if defined(__x86_64__)
__attribute__((noinline)) static void loop_rdtsc(long n)
{
	for (long i = 0; i < n; i++) {
		work(__rdtsc());
		sink += __rdtsc();
	}
}
#endif

static double best_of(void (*fn)(long), long n)
{
	double best = 1e30;

	for (int r = 0; r < 21; r++) {
		double t0 = now_s(), t;

		fn(n);
		t = now_s() - t0;
		if (t < best)
			best = t;
	}
	return best;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	double bare, t;
	const struct {
		const char *what;
		void (*fn)(long);
	} kinds[] = {
		{ "NARWHAL_SECTION block", loop_section },
		{ "NARWHAL_FUNC function", loop_func },
		{ "narwhal_begin/narwhal_end (macro)", loop_begin_end },
		{ "(narwhal_begin)(name)/narwhal_end (by name)", loop_dynamic },
		{ "nested NARWHAL_SECTION (inner)", loop_nested },
		{ "two clock_gettime(CLOCK_MONOTONIC) reads", loop_clock },
#if defined(__x86_64__)
		{ "two rdtsc reads", loop_rdtsc },
#endif
	};

	if (n < 1000)
		n = 1000;
	loop_section(n / 100); /* warm up: registration, page faults */
	bare = best_of(loop_bare, n);
	printf("pairs per run: %ld, best of 21; baseline loop %.2f ns per iteration\n", n,
	       bare * 1e9 / (double)n);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		t = best_of(kinds[k].fn, n);
		printf("%-48s %6.2f ns per pair\n", kinds[k].what, (t - bare) * 1e9 / (double)n);
	}
	return 0;
}
