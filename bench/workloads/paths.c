/* SPDX-License-Identifier: MIT */
/*
 * Bench workload with many distinct call paths, for the cost of reports.
 *
 *   paths THREADS UNITS [PATTERNS]
 *
 * 32 functions f00..f31 call each other through a table.  Each unit of
 * work picks one of PATTERNS (default 10000) call patterns at random; a
 * pattern is a path 5 to 44 frames deep through the 32 functions, fixed by
 * the pattern's number, with about 50 µs of arithmetic at its end.  UNITS
 * are split evenly over THREADS threads (all threads share the patterns).
 * So a profile holds up to PATTERNS distinct stacks of 25 frames on average,
 * with little sharing below the first two levels.  Prints "rusage USER_S
 * SYS_S WALL_S" at the end like work.c.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile double sink;

typedef double (*fn_t)(int depth, uint32_t path);
static const fn_t table[32];

static inline uint32_t step(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352d;
	h ^= h >> 15;
	return h;
}

static double burn(uint32_t path)
{
	double x = path & 0xff;

	for (int i = 0; i < 30000; i++)
		x = x * 0.999999 + 1.0;
	return x;
}

#define F(name)                                                                 \
	__attribute__((noinline)) static double name(int depth, uint32_t path) \
	{                                                                       \
		double x;                                                       \
		if (!depth)                                                     \
			return burn(path);                                      \
		x = table[path & 31](depth - 1, step(path));                    \
		sink = x; /* no tail call */                                    \
		return x;                                                       \
	}
F(f00) F(f01) F(f02) F(f03) F(f04) F(f05) F(f06) F(f07)
F(f08) F(f09) F(f10) F(f11) F(f12) F(f13) F(f14) F(f15)
F(f16) F(f17) F(f18) F(f19) F(f20) F(f21) F(f22) F(f23)
F(f24) F(f25) F(f26) F(f27) F(f28) F(f29) F(f30) F(f31)

static const fn_t table[32] = {
	f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11, f12, f13, f14, f15,
	f16, f17, f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31,
};

struct job {
	long units;
	uint32_t patterns, seed;
};

static void *run(void *arg)
{
	struct job *j = arg;
	uint32_t r = j->seed;

	for (long u = 0; u < j->units; u++) {
		uint32_t pattern;

		r = r * 1664525u + 1013904223u;
		pattern = (r >> 8) % j->patterns;
		sink = f00(5 + (int)(pattern % 40), step(pattern + 1));
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	long units = argc > 2 ? atol(argv[2]) : 20000;
	long patterns = argc > 3 ? atol(argv[3]) : 10000;
	double start = now();
	pthread_t *tids;
	struct job *jobs;
	struct rusage ru;

	if (threads < 1 || units < 0 || patterns < 1 || patterns > (1l << 30)) {
		fprintf(stderr, "usage: paths THREADS UNITS [PATTERNS]\n");
		return 2;
	}
	tids = calloc(threads, sizeof(*tids));
	jobs = calloc(threads, sizeof(*jobs));
	if (!tids || !jobs)
		return 1;
	for (int t = 0; t < threads; t++) {
		jobs[t] = (struct job){ .units = units / threads + (t < units % threads),
					.patterns = (uint32_t)patterns, .seed = 12345u + t };
		if (t && pthread_create(&tids[t], NULL, run, &jobs[t])) {
			perror("pthread_create");
			return 1;
		}
	}
	run(&jobs[0]);
	for (int t = 1; t < threads; t++)
		pthread_join(tids[t], NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %.6f %.6f %.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, now() - start);
	free(tids);
	free(jobs);
	return 0;
}
