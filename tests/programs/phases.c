/* SPDX-License-Identifier: MIT */
/*
 * Two timed phases and threads that come and go, for the time views
 * (--time, --timeline, the time-ordered exports):
 *
 *   main:     phase_a burns 0.6 s of CPU, then phase_b burns 0.6 s;
 *   sleeper:  started at once, sleeps 0.6 s (idle through phase A), then
 *             burns 0.5 s in sleeper_work (busy through phase B);
 *   late:     started when phase B starts, burns 0.3 s in late_work.
 *
 * The phases are CPU time of one thread, so on a loaded machine they
 * stretch, but their order and the threads' lifetimes hold.
 */
#include <pthread.h>
#include <time.h>

#include "spin.h"

__attribute__((noinline)) static void phase_a(void)
{
	NW_SPIN(0.6);
}

__attribute__((noinline)) static void phase_b(void)
{
	NW_SPIN(0.6);
}

__attribute__((noinline)) static void sleeper_work(void)
{
	NW_SPIN(0.5);
}

__attribute__((noinline)) static void late_work(void)
{
	NW_SPIN(0.3);
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
