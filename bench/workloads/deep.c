/* SPDX-License-Identifier: MIT */
/* Bench workload: recursion DEPTH frames deep (frame pointers kept), burning CPU at the bottom. */
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void bottom(double end)
{
	while (cpu_now() < end)
		for (int i = 0; i < 100000; i++)
			sink += i * 0.5;
}

__attribute__((noinline)) static void rec(int depth, double end)
{
	volatile char pad[32];

	pad[0] = (char)depth;
	if (depth > 0)
		rec(depth - 1, end);
	else
		bottom(end);
	sink += pad[0];
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	int depth = argc > 2 ? atoi(argv[2]) : 100;

	rec(depth, cpu_now() + seconds);
	return 0;
}
