/* SPDX-License-Identifier: MIT */
/*
 * Bench workload: main -> level1 -> level2 -> level3 -> qsort (libc) with a
 * comparator that burns CPU, for SECONDS of CPU.  Built twice by the bench:
 * with and without frame pointers.
 */
#include <stdlib.h>
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static int cmp(const void *a, const void *b)
{
	double x = 0;

	for (int i = 0; i < 200; i++)
		x += i * 0.5;
	sink = x;
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void level3(int *v, int n, double end)
{
	while (cpu_now() < end) {
		for (int i = 0; i < n; i++)
			v[i] = rand();
		qsort(v, n, sizeof(*v), cmp);
	}
}

__attribute__((noinline)) static void level2(int *v, int n, double end)
{
	level3(v, n, end);
	sink += 1;
}

__attribute__((noinline)) static void level1(int *v, int n, double end)
{
	level2(v, n, end);
	sink += 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int n = 4000, *v = malloc(n * sizeof(*v));

	level1(v, n, cpu_now() + seconds);
	free(v);
	return 0;
}
