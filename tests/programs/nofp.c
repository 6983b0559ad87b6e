/* SPDX-License-Identifier: MIT */
/*
 * Built with -O2 -fomit-frame-pointer: no frame pointers anywhere, so fp
 * call chains break.  main -> level1 -> level2 -> level3 -> qsort (libc)
 * -> ... -> compare_burn, which burns CPU, for 0.4 s of CPU time.  Only CFI
 * unwinding (--call-graph dwarf) finds the whole chain.
 */
#include <stdint.h>
#include <stdlib.h>

#include "spin.h"

static volatile uint32_t sink;

__attribute__((noinline)) static int compare_burn(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	volatile uint64_t burn = x;

	for (int i = 0; i < 300; i++)
		burn = burn * 6364136223846793005ull + y;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static unsigned level3(double seconds)
{
	enum { N = 4096 };
	static uint32_t v[N];
	double end = nw_thread_cpu_seconds() + seconds;
	uint32_t seed = 1;
	unsigned rounds = 0;

	while (nw_thread_cpu_seconds() < end) {
		for (int i = 0; i < N; i++) {
			seed = seed * 1103515245u + 12345u;
			v[i] = seed >> 8;
		}
		qsort(v, N, sizeof(v[0]), compare_burn);
		sink = v[N / 2];
		rounds++;
	}
	return rounds;
}

__attribute__((noinline)) static unsigned level2(double seconds)
{
	unsigned r = level3(seconds);

	sink = r;
	return r + 2;
}

__attribute__((noinline)) static unsigned level1(double seconds)
{
	unsigned r = level2(seconds);

	sink = r;
	return r + 1;
}

int main(void)
{
	return level1(0.4) > 3 ? 0 : 1;
}
