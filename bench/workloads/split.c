/* SPDX-License-Identifier: MIT */
/*
 * Bench workload with a known CPU split: func_a 50 %, func_b 30 %, func_c
 * 15 %, func_d 5 % of about SECONDS of CPU (default 3), in rounds of about
 * 20 ms.  The rounds are fixed loop counts (calibrated at start-up), so no
 * clock is read inside the functions; each function measures its own time
 * with CLOCK_THREAD_CPUTIME_ID around its loop; at the end
 * the program prints, per function, its share of the process's whole CPU
 * time (RUSAGE_SELF, start-up and the loop around the functions included):
 *
 *   split func_a 49.93
 *   ...
 *
 * Those are the numbers a profiler's self share per function should match.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Arithmetic only, no calls: every sample of it lands in the function that expands it. */
#define BURN(iters)                                                             \
	do {                                                                    \
		volatile uint64_t x_ = 1;                                       \
		for (long i_ = 0; i_ < (iters); i_++)                           \
			x_ = x_ * 6364136223846793005ull + 1;                   \
	} while (0)

static double spent[4];

#define FUNC(name, k)                                                           \
	__attribute__((noinline)) static void name(long iters)                 \
	{                                                                       \
		double t0 = thread_cpu();                                       \
		BURN(iters);                                                    \
		spent[k] += thread_cpu() - t0;                                  \
	}
FUNC(func_a, 0)
FUNC(func_b, 1)
FUNC(func_c, 2)
FUNC(func_d, 3)

int main(int argc, char **argv)
{
	static const char *names[4] = { "func_a", "func_b", "func_c", "func_d" };
	double seconds = argc > 1 ? atof(argv[1]) : 3.0, t0, total;
	long per_s, round, calib = 2000000;
	struct rusage ru;

	/* Loop iterations per second, from a short run of func_d (counted in its share). */
	t0 = thread_cpu();
	func_d(calib);
	per_s = (long)(calib / (thread_cpu() - t0));
	round = per_s / 50;
	for (long r = 0; r < (long)(seconds * 50); r++) {
		func_a(round * 50 / 100);
		func_b(round * 30 / 100);
		func_c(round * 15 / 100);
		func_d(round * 5 / 100);
	}
	getrusage(RUSAGE_SELF, &ru);
	total = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		ru.ru_stime.tv_usec / 1e6;
	for (int k = 0; k < 4; k++)
		printf("split %s %.3f\n", names[k], 100.0 * spent[k] / total);
	return 0;
}
