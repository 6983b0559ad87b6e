/* SPDX-License-Identifier: MIT */
/*
 * A callback called from libc, which Debian builds without frame pointers:
 * main -> sort_loop -> qsort (libc) -> ... -> compare_slow, for 0.4 s of
 * CPU.  Only CFI unwinding (--call-graph dwarf) finds sort_loop and main
 * above the libc frames.
 */
#include <stdint.h>
#include <stdlib.h>

#include "spin.h"

__attribute__((noinline)) static int compare_slow(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	volatile uint64_t burn = x;

	for (int i = 0; i < 200; i++)
		burn = burn * 6364136223846793005ull + y;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static unsigned sort_loop(double seconds)
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
		qsort(v, N, sizeof(v[0]), compare_slow);
		rounds++;
	}
	return rounds;
}

int main(void)
{
	return sort_loop(0.4) > 0 ? 0 : 1;
}
