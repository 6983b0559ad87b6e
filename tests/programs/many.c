/* SPDX-License-Identifier: MIT */
/*
 * many [N]: N threads (default 64) named w-0 .. w-N-1 that start 5 ms
 * apart and each burn 40 ms of CPU in thread_work, so they begin and end
 * at different times and overlap.  Each must have its own tree.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "spin.h"

__attribute__((noinline)) static void thread_work(void)
{
	NW_SPIN(0.04);
}

static void *run(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "w-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	thread_work();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	pthread_t *t = calloc((size_t)n, sizeof(*t));

	if (!t || n <= 0)
		return 2;
	for (int i = 0; i < n; i++) {
		pthread_create(&t[i], NULL, run, (void *)(long)i);
		usleep(5000);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
