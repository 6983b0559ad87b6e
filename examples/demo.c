/* SPDX-License-Identifier: MIT */
/*
 * Narwhal's example program: two threads with a known split of CPU time.
 *
 *   thread "render":  draw_scene -> shade_pixels   0.60 s
 *                     draw_scene -> rasterize      0.15 s
 *   thread "physics": step_world -> collide        0.25 s
 *
 * So a profile should show shade_pixels near 60 %, collide near 25 % and
 * rasterize near 15 %, and the render thread with three quarters of the
 * samples.  Each function burns CPU time of its own thread
 * (CLOCK_THREAD_CPUTIME_ID), so the split does not depend on the machine.
 *
 *   cc -O1 -g -fno-omit-frame-pointer -pthread demo.c -o demo
 *   narwhal-record ./demo && narwhal-report
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Expanded in place so that the samples land in the function using it. */
#define BURN(seconds)                                                           \
	do {                                                                    \
		double end_ = thread_cpu_seconds() + (seconds);                 \
		volatile uint64_t x_ = 1;                                       \
		while (thread_cpu_seconds() < end_)                             \
			for (int i_ = 0; i_ < 20000; i_++)                      \
				x_ = x_ * 6364136223846793005ull + 1;           \
	} while (0)

__attribute__((noinline)) static void shade_pixels(void)
{
	BURN(0.60);
}

__attribute__((noinline)) static void rasterize(void)
{
	BURN(0.15);
}

__attribute__((noinline)) static void draw_scene(void)
{
	rasterize();
	shade_pixels();
}

__attribute__((noinline)) static void collide(void)
{
	BURN(0.25);
}

__attribute__((noinline)) static void step_world(void)
{
	collide();
}

static void *render_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "render");
	draw_scene();
	return arg;
}

static void *physics_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "physics");
	step_world();
	return arg;
}

int main(void)
{
	pthread_t render, physics;
	int err;

	err = pthread_create(&render, NULL, render_thread, NULL);
	if (!err) {
		err = pthread_create(&physics, NULL, physics_thread, NULL);
		if (err)
			pthread_join(render, NULL);
	}
	if (err) {
		fprintf(stderr, "demo: cannot start a thread: %s\n", strerror(err));
		return 1;
	}
	pthread_join(render, NULL);
	pthread_join(physics, NULL);
	return 0;
}
