/* SPDX-License-Identifier: MIT */
/*
 * Three threads with a known split of CPU time: worker-a burns 0.6 s in
 * spin_a, worker-b 0.2 s in spin_b, the main thread 0.2 s in spin_main.
 * Expected shares: spin_a 60 %, spin_b 20 %, spin_main 20 %.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "spin.h"

__attribute__((noinline)) static void spin_a(void)
{
	NW_SPIN(0.6);
}

__attribute__((noinline)) static void spin_b(void)
{
	NW_SPIN(0.2);
}

__attribute__((noinline)) static void spin_main(void)
{
	NW_SPIN(0.2);
}

/* Each worker names itself before it burns, so all its samples carry the name. */
static void *worker_a(void *arg)
{
	pthread_setname_np(pthread_self(), "worker-a");
	spin_a();
	return arg;
}

static void *worker_b(void *arg)
{
	pthread_setname_np(pthread_self(), "worker-b");
	spin_b();
	return arg;
}

int main(void)
{
	pthread_t a, b;
	int err;

	err = pthread_create(&a, NULL, worker_a, NULL);
	if (!err)
		err = pthread_create(&b, NULL, worker_b, NULL);
	if (err) {
		fprintf(stderr, "threads: %s\n", strerror(err));
		return 1;
	}
	spin_main();
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
