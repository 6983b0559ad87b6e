/* SPDX-License-Identifier: MIT */
/*
 * Two timed phases and threads that come and go, for the time views
 * (--time, --timeline, the time-ordered exports):
 *
 *   main:     phase_a computes for 0.6 s, then phase_b for 0.6 s;
 *   sleeper:  started at once, sleeps 0.6 s (idle through phase A), then
 *             computes for 0.5 s in sleeper_work (busy through phase B);
 *   late:     started when phase B starts, computes 0.3 s in late_work.
 *
 * The phases are wall-clock time, so that they keep their place in the
 * run on a loaded machine (where they get less of the CPU).
 */
#include <pthread.h>
#include <time.h>

#include "spin.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Computes until @seconds of wall-clock time have passed, in the function that uses it. */
#define SPIN_WALL(seconds)                                                      \
	do {                                                                    \
		double end_ = now() + (seconds);                                \
		volatile uint64_t x_ = 1;                                       \
		while (now() < end_)                                            \
			for (int i_ = 0; i_ < 20000; i_++)                      \
				x_ = x_ * 6364136223846793005ull + 1;           \
	} while (0)

__attribute__((noinline)) static void phase_a(void)
{
	SPIN_WALL(0.6);
}

__attribute__((noinline)) static void phase_b(void)
{
	SPIN_WALL(0.6);
}

__attribute__((noinline)) static void sleeper_work(void)
{
	SPIN_WALL(0.5);
}

__attribute__((noinline)) static void late_work(void)
{
	SPIN_WALL(0.3);
}

static void *sleeper(void *arg)
{
	struct timespec ts = { 0, 600 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
	sleeper_work();
	return NULL;
}

static void *late(void *arg)
{
	(void)arg;
	late_work();
	return NULL;
}

int main(void)
{
	pthread_t s, l;

	if (pthread_create(&s, NULL, sleeper, NULL))
		return 1;
	pthread_setname_np(s, "sleeper");
	phase_a();
	if (pthread_create(&l, NULL, late, NULL))
		return 1;
	pthread_setname_np(l, "late");
	phase_b();
	pthread_join(s, NULL);
	pthread_join(l, NULL);
	return 0;
}
