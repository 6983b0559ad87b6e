/* SPDX-License-Identifier: MIT */
/*
 * sleepwork: two threads that each alternate 0.1 s of CPU in compute_part
 * and 0.1 s asleep in sleep_part, five times: 0.5 s on the CPU and 0.5 s
 * off it, per thread.  For --off-cpu: on-CPU plus off-CPU time per thread
 * must add up to its wall time, and the off-CPU time must sit under
 * sleep_part.  Each thread prints its wall time ("wall NAME SECONDS") to
 * stdout, since a loaded machine stretches it.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "spin.h"

__attribute__((noinline)) static void compute_part(void)
{
	NW_SPIN(0.1);
}

__attribute__((noinline)) static void sleep_part(void)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *cycle(void *arg)
{
	double start = now();

	for (int i = 0; i < 5; i++) {
		compute_part();
		sleep_part();
	}
	if (arg)
		printf("wall %s %.3f\n", (const char *)arg, now() - start);
	return arg;
}

int main(void)
{
	double start = now();
	pthread_t t;

	pthread_create(&t, NULL, cycle, "sleeper-b");
	pthread_setname_np(t, "sleeper-b");
	cycle(NULL);
	pthread_join(t, NULL);
	printf("wall sleepwork %.3f\n", now() - start);
	return 0;
}
