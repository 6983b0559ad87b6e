/* SPDX-License-Identifier: MIT */
/*
 * bench-lockinterpose.so: the interposer weighed against the kernel's
 * futex tracepoints in doc/LOCKS.md, for bench/locks.py only (not
 * shipped).  pthread_mutex_lock tries the lock first; only when that
 * fails does it take the time around glibc's own lock and, for a wait the
 * Poisson sampler picks (mean 100 us), call an empty marker a uprobe
 * would watch.  The unlock goes straight to glibc's.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

int __pthread_mutex_lock(pthread_mutex_t *m);
int __pthread_mutex_trylock(pthread_mutex_t *m);

static __thread int64_t left = 100000;

void narwhal_lock_sample(void *lock, uint64_t ns);

__attribute__((noinline, used)) void narwhal_lock_sample(void *lock, uint64_t ns)
{
	__asm__ volatile("" : : "r"(lock), "r"(ns) : "memory");
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	uint64_t t0;
	int ret;

	if (__builtin_expect(__pthread_mutex_trylock(m) == 0, 1))
		return 0;
	t0 = now_ns();
	ret = __pthread_mutex_lock(m);
	t0 = now_ns() - t0;
	if ((left -= (int64_t)t0) <= 0) {
		left = 100000;
		narwhal_lock_sample(m, t0);
	}
	return ret;
}
