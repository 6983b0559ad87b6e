/* SPDX-License-Identifier: MIT */
/*
 * One function reached from two callers with a known split, and with a
 * known hot line: main calls caller_a and caller_b in turns; caller_a asks
 * hot() for 3 units of work, caller_b for 7, so hot() runs 30% of the time
 * under caller_a and 70% under caller_b.  Inside hot() the loop on the line
 * marked HOT_LINE does three times the iterations of the one marked
 * COLD_LINE (75% and 25% of hot's samples).  Nearly every sample lands in
 * hot().  Runs for about the CPU seconds given (default 1).
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void hot(long units)
{
	uint64_t x = sink;

	for (long i = 0; i < 3000 * units; i++) x = x * 6364136223846793005ull + 1; /* HOT_LINE */
	for (long i = 0; i < 1000 * units; i++) x = x * 2862933555777941757ull + 3; /* COLD_LINE */
	sink = x;
}

__attribute__((noinline)) static void caller_a(void)
{
	hot(3);
	sink++;
}

__attribute__((noinline)) static void caller_b(void)
{
	hot(7);
	sink++;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = cpu_seconds() + (argc > 1 ? atof(argv[1]) : 1.0);

	while (cpu_seconds() < end) {
		caller_a();
		caller_b();
	}
	return 0;
}
