/* SPDX-License-Identifier: MIT */
/*
 * Bench workload with a fixed amount of work, so that a profiler's cost
 * shows as more CPU and wall time of the program (the workloads that burn
 * a fixed CPU time hide it).
 *
 *   work THREADS UNITS [DEPTH]
 *
 * UNITS units of arithmetic (about a millisecond each), split evenly over
 * THREADS threads; each thread does its share DEPTH frames deep (default
 * 10; frames of 16 bytes with frame pointers, so 1000 frames fit a 64 KiB
 * stack copy), alternating between two leaf functions.  At the end prints
 * "rusage USER_S SYS_S WALL_S" on stdout: the program's own CPU (all its
 * threads) and wall time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile double sink;

struct job {
	long units;
	int depth;
};

__attribute__((noinline)) static double leaf_even(double x)
{
	for (int i = 0; i < 250000; i++)
		x = x * 0.999999 + 1.0;
	return x;
}

__attribute__((noinline)) static double leaf_odd(double x)
{
	for (int i = 0; i < 250000; i++)
		x = x * 0.999998 + 1.0;
	return x;
}

__attribute__((noinline)) static double descend(int depth, long units)
{
	double x = 0;

	if (depth > 1) {
		x = descend(depth - 1, units);
		sink = x; /* no tail call: every level keeps its frame */
		return x;
	}
	for (long u = 0; u < units; u++)
		x += (u & 1) ? leaf_odd(x) : leaf_even(x);
	return x;
}

static void *run(void *arg)
{
	const struct job *j = arg;

	sink = descend(j->depth, j->units);
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
	long units = argc > 2 ? atol(argv[2]) : 1000;
	int depth = argc > 3 ? atoi(argv[3]) : 10;
	double start = now();
	pthread_t *tids;
	struct job *jobs;
	struct rusage ru;

	if (threads < 1 || units < 0 || depth < 1) {
		fprintf(stderr, "usage: work THREADS UNITS [DEPTH]\n");
		return 2;
	}
	tids = calloc(threads, sizeof(*tids));
	jobs = calloc(threads, sizeof(*jobs));
	if (!tids || !jobs)
		return 1;
	for (int t = 0; t < threads; t++) {
		jobs[t].units = units / threads + (t < units % threads);
		jobs[t].depth = depth;
		/* Thread 0's share runs in the main thread. */
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
