/* SPDX-License-Identifier: MIT */
/*
 * attachee LIBRARY SECONDS: a program to attach to.  It loads LIBRARY
 * (libplug.so) with dlopen first, then its thread "early" calls plug_work
 * in a loop; after 1 s a second thread "late" starts, burning in
 * late_work.  Everything stops after SECONDS.  An attach after the first
 * moments must name plug_work (a module loaded before the attach, known
 * only from /proc/PID/maps) and see "late" (a thread created after it).
 * It prints "ready" on stdout once the library is loaded and "early" runs.
 *
 * attachee LIBRARY SECONDS mainexit: "late" starts before "ready", and
 * the main thread exits (pthread_exit) 1 s after it; a thread "stopper"
 * waits out the SECONDS instead.  All threads are there at an attach
 * after "ready", so the main thread's events have no inherited ones.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

static int (*work)(void);
static volatile int stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *early(void *arg)
{
	while (!stop)
		work();
	return arg;
}

__attribute__((noinline)) static void late_work(void)
{
	while (!stop)
		NW_SPIN(0.05);
}

static void *late(void *arg)
{
	late_work();
	return arg;
}

static double end;

static void *stopper(void *arg)
{
	while (now() < end)
		usleep(10 * 1000);
	stop = 1;
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t a, b, c;
	void *lib;

	if (argc != 3 && (argc != 4 || strcmp(argv[3], "mainexit")))
		return 2;
	end = now() + atof(argv[2]);
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib || !(work = (int (*)(void))dlsym(lib, "plug_work")))
		return 3;
	pthread_create(&a, NULL, early, NULL);
	pthread_setname_np(a, "early");
	if (argc == 4) {
		pthread_create(&b, NULL, late, NULL);
		pthread_setname_np(b, "late");
		pthread_create(&c, NULL, stopper, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	usleep(1000 * 1000);
	if (argc == 4)
		pthread_exit(NULL); /* the process ends with its last thread */
	pthread_create(&b, NULL, late, NULL);
	pthread_setname_np(b, "late");
	stopper(NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
