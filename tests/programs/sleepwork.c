/* SPDX-License-Identifier: MIT */
/*
 * sleepwork: two threads that each alternate 0.1 s of CPU in compute_part
 * and 0.1 s asleep in sleep_part, five times: 0.5 s on the CPU and 0.5 s
 * off it, per thread.  For --off-cpu: on-CPU plus off-CPU time per thread
 * must add up to its wall time, and the off-CPU time must sit under
 * sleep_part.
 */
#include <pthread.h>
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

static void *cycle(void *arg)
{
	for (int i = 0; i < 5; i++) {
		compute_part();
		sleep_part();
	}
	return arg;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, NULL, cycle, NULL);
	pthread_setname_np(t, "sleeper-b");
	cycle(NULL);
	pthread_join(t, NULL);
	return 0;
}
