/* SPDX-License-Identifier: MIT */
/*
 * Allocations of known sizes from known call paths, for narwhal-record
 * --alloc (tests/integration/alloc.sh):
 *
 *   alloc paths N   each path_* function allocates a known number of
 *                   bytes (N times a fixed size; the realloc chains N/16
 *                   times), through every allocator entry point: malloc,
 *                   calloc freed by another thread, realloc growth,
 *                   posix_memalign/aligned_alloc/memalign, a malloc-like
 *                   wrapper, a forked child, and a signal handler.
 *                   Everything is freed.  Prints "expect FUNCTION BYTES
 *                   OBJECTS" per path.
 *   alloc leaks N   leak_one, leak_two and leak_three leak N blocks each
 *                   (60000, 40000 and 30000 bytes, the last grown by
 *                   realloc); everything else is freed.  No stdio and
 *                   no threads (glibc keeps a thread's TLS vector for
 *                   the next), so that the C library leaks nothing of
 *                   its own.
 *   alloc serve S   for S seconds, rounds of: 3 path_malloc blocks, 2
 *                   path_calloc blocks freed by a new thread, 1 xmalloc
 *                   block (from path_wrapper), 1 leak_two block leaked;
 *                   then prints "rounds N" (for narwhal-record -p).
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SZ_MALLOC 40000
#define SZ_CALLOC 32768
#define SZ_ALIGNED 24576
#define SZ_WRAPPER 50000
#define SZ_CHILD 30000
#define SZ_SIGNAL 20000
#define CHAIN 16 /* reallocs per chain: 4096, 8192, ... 65536 */
#define BATCH 256

static void *volatile sink; /* keeps the compiler from dropping allocations */

static void fail(const char *what)
{
	write(2, what, strlen(what));
	_exit(99);
}

__attribute__((noinline)) static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		fail("xmalloc\n");
	return p;
}

__attribute__((noinline)) static void path_malloc(long n)
{
	for (long i = 0; i < n; i++) {
		sink = malloc(SZ_MALLOC);
		free(sink);
	}
}

static void *free_batch(void *arg)
{
	void **v = arg;

	for (int i = 0; i < BATCH && v[i]; i++)
		free(v[i]);
	return NULL;
}

/* calloc'd here, freed by another thread. */
__attribute__((noinline)) static void path_calloc(long n)
{
	void *v[BATCH + 1];

	for (long i = 0; i < n;) {
		pthread_t t;
		int k = 0;

		for (; k < BATCH && i < n; k++, i++) {
			v[k] = calloc(1, SZ_CALLOC);
			if (!v[k])
				fail("calloc\n");
		}
		v[k] = NULL;
		int err = pthread_create(&t, NULL, free_batch, v);

		if (err) {
			fprintf(stderr, "pthread_create: %s\n", strerror(err));
			_exit(99);
		}
		pthread_join(t, NULL);
	}
}

__attribute__((noinline)) static void path_realloc(long chains)
{
	for (long c = 0; c < chains; c++) {
		void *p = NULL;

		for (int k = 1; k <= CHAIN; k++) {
			p = realloc(p, 4096 * (size_t)k);
			if (!p)
				fail("realloc\n");
		}
		free(p);
	}
}

__attribute__((noinline)) static void path_aligned(long n)
{
	for (long i = 0; i < n; i++) {
		void *a, *b, *c;

		if (posix_memalign(&a, 64, SZ_ALIGNED))
			fail("posix_memalign\n");
		b = aligned_alloc(4096, SZ_ALIGNED);
		c = memalign(256, SZ_ALIGNED);
		if (!b || !c)
			fail("aligned\n");
		free(a);
		free(b);
		free(c);
	}
}

__attribute__((noinline)) static void path_wrapper(long n)
{
	for (long i = 0; i < n; i++) {
		sink = xmalloc(SZ_WRAPPER);
		free(sink);
	}
}

__attribute__((noinline)) static void path_child(long n)
{
	for (long i = 0; i < n; i++) {
		sink = malloc(SZ_CHILD);
		free(sink);
	}
}

__attribute__((noinline)) static void path_signal(void)
{
	sink = malloc(SZ_SIGNAL);
	free(sink);
}

static void on_signal(int sig)
{
	(void)sig;
	path_signal();
}

static void paths(long n)
{
	long chains = n / CHAIN > 0 ? n / CHAIN : 1;
	pid_t pid;
	int status;

	path_malloc(n);
	path_calloc(n);
	path_realloc(chains);
	path_aligned(n);
	path_wrapper(n);
	pid = fork();
	if (pid == 0) {
		path_child(n);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("child\n");
	signal(SIGUSR1, on_signal);
	for (long i = 0; i < n; i++)
		raise(SIGUSR1);
	printf("expect path_malloc %ld %ld\n", n * SZ_MALLOC, n);
	printf("expect path_calloc %ld %ld\n", n * SZ_CALLOC, n);
	printf("expect path_realloc %ld %ld\n", chains * 4096L * (CHAIN * (CHAIN + 1) / 2),
	       chains * CHAIN);
	printf("expect path_aligned %ld %ld\n", 3 * n * SZ_ALIGNED, 3 * n);
	printf("expect xmalloc %ld %ld\n", n * SZ_WRAPPER, n);
	printf("expect path_child %ld %ld\n", n * SZ_CHILD, n);
	printf("expect path_signal %ld %ld\n", n * SZ_SIGNAL, n);
}

__attribute__((noinline)) static void leak_one(long n)
{
	for (long i = 0; i < n; i++)
		sink = malloc(60000);
}

__attribute__((noinline)) static void leak_two(long n)
{
	for (long i = 0; i < n; i++)
		sink = malloc(40000);
}

__attribute__((noinline)) static void leak_three(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(10000);

		sink = realloc(p, 30000);
	}
}

static void leaks(long n)
{
	leak_one(n);
	path_malloc(n);
	leak_two(n);
	path_realloc(n / 16 > 0 ? n / 16 : 1);
	leak_three(n);
}

static void serve(long seconds)
{
	struct timespec start, now, nap = { 0, 1000000 };
	long rounds = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		path_malloc(3);
		path_calloc(2);
		path_wrapper(1);
		leak_two(1);
		rounds++;
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < seconds);
	printf("rounds %ld\n", rounds);
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 100;

	if (argc > 1 && !strcmp(argv[1], "serve"))
		serve(n);
	else if (argc > 1 && !strcmp(argv[1], "leaks"))
		leaks(n);
	else
		paths(n);
	return 0;
}
