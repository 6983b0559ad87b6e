/* SPDX-License-Identifier: MIT */
/*
 * bench-lockmech: what a lock costs under each mechanism weighed in
 * doc/LOCKS.md (bench/locks.py runs it).
 *
 *   bench-lockmech pair N            N uncontended lock+unlock pairs of a
 *                                    pthread mutex: ns per pair
 *   bench-lockmech contend N T       T threads on two mutexes, N pairs
 *                                    each, critical sections of about
 *                                    1 us, 1 us outside: wall and CPU s
 *   bench-lockmech futex N           N futex waits that return at once
 *                                    (EAGAIN: the word is not the value
 *                                    expected): ns per call, what a
 *                                    contended acquisition's system call
 *                                    costs at the least
 *
 * Run bare, under narwhal-record --locks (kernel tracepoints: nothing in
 * the program), or with bench-lockinterpose.so preloaded (the
 * interposer's way: a trylock first, timing only on contention).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t locks[2] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static uint64_t per_thread;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(unsigned n)
{
	volatile uint64_t x = 1;

	for (unsigned i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1;
}

static void *worker(void *arg)
{
	for (uint64_t i = (uintptr_t)arg; i < per_thread + (uintptr_t)arg; i++) {
		pthread_mutex_t *m = &locks[i % 2];

		pthread_mutex_lock(m);
		spin(300);
		pthread_mutex_unlock(m);
		spin(300);
	}
	return arg;
}

int main(int argc, char **argv)
{
	struct rusage ru;

	if (argc == 3 && !strcmp(argv[1], "pair")) {
		uint64_t n = strtoull(argv[2], NULL, 10), t0 = now_ns();

		for (uint64_t i = 0; i < n; i++) {
			pthread_mutex_lock(&locks[0]);
			__asm__ volatile("" ::: "memory");
			pthread_mutex_unlock(&locks[0]);
		}
		printf("pair %.2f ns\n", (double)(now_ns() - t0) / (double)n);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "futex")) {
		uint64_t n = strtoull(argv[2], NULL, 10), t0 = now_ns();
		static uint32_t word;

		for (uint64_t i = 0; i < n; i++)
			syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
		printf("futex %.1f ns\n", (double)(now_ns() - t0) / (double)n);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "contend")) {
		unsigned nt = (unsigned)atoi(argv[3]);
		uint64_t t0 = now_ns();
		pthread_t t[64];

		if (nt < 1 || nt > 64)
			return 2;
		per_thread = strtoull(argv[2], NULL, 10);
		for (unsigned i = 0; i < nt; i++)
			pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
		for (unsigned i = 0; i < nt; i++)
			pthread_join(t[i], NULL);
		getrusage(RUSAGE_SELF, &ru);
		printf("contend %.3f wall %.3f cpu\n", (double)(now_ns() - t0) / 1e9,
		       (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
			       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
		return 0;
	}
	fprintf(stderr, "usage: bench-lockmech pair N | futex N | contend N THREADS\n");
	return 2;
}
