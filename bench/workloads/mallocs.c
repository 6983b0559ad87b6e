/* SPDX-License-Identifier: MIT */
/*
 * Bench workload for allocation profilers (bench/alloc.py): malloc-heavy,
 * several threads.
 *
 *   mallocs THREADS MILLIONS [WAIT]
 *
 * MILLIONS million allocations in all, split over THREADS threads; each
 * thread keeps the last 1024 blocks live (a ring: each new block frees the
 * one it replaces), sizes 16 to 512 bytes from a cheap generator, from two
 * call paths, with a few bytes written into each.  At the end prints
 * "wall_s W allocs N" on stdout: the program's own wall time and the
 * allocations it made.  WAIT: seconds to sleep first, for a profiler to
 * attach (narwhal-record -p); the wall time starts after it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIVE 1024

struct job {
	long n;
	unsigned seed;
};

__attribute__((noinline)) static void *make_small(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 1, 8);
	return p;
}

__attribute__((noinline)) static void *make_record(size_t n)
{
	char *p = calloc(1, n);

	if (p)
		p[0] = 2;
	return p;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	void **ring = calloc(LIVE, sizeof(*ring));
	uint32_t x = j->seed | 1;

	for (long i = 0; i < j->n; i++) {
		size_t size;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size = 16 + (x % 497);
		free(ring[i % LIVE]);
		ring[i % LIVE] = (x & 0x100) ? make_record(size) : make_small(size);
	}
	for (int i = 0; i < LIVE; i++)
		free(ring[i]);
	free(ring);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	double millions = argc > 2 ? atof(argv[2]) : 10;
	long total = (long)(millions * 1e6);
	pthread_t th[64];
	struct job jobs[64];
	struct timespec a, b;

	if (threads < 1 || threads > 64)
		return 2;
	if (argc > 3) {
		double wait = atof(argv[3]);
		struct timespec nap = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };

		nanosleep(&nap, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < threads; i++) {
		jobs[i] = (struct job){total / threads, 0x9E3779B9u * (unsigned)(i + 1)};
		pthread_create(&th[i], NULL, worker, &jobs[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("wall_s %.6f allocs %ld\n",
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       total / threads * threads);
	return 0;
}
