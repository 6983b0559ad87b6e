/* SPDX-License-Identifier: MIT */
/*
 * Instrumented sections with known behaviour (tests/integration/sections*.sh).
 *
 *   sections shares      alpha 0.3 s, beta 0.2 s around gamma 0.1 s, and
 *                        0.2 s outside any section, all CPU time of the main
 *                        thread: alpha 37.5 %, beta 37.5 % (self 25 %),
 *                        gamma 12.5 %, outside 25 % of the samples
 *   sections nest        known counts: outer 3 times, each with inner 4
 *                        times; early() 10 calls with early returns;
 *                        narwhal_begin/end 5 times; a C++-free recursion
 *   sections threads N K N threads, each entering "work" K times with
 *                        "step" inside: counts N*K each
 *   sections exit        exit(3) inside sections: status 3, report
 *   sections return      NARWHAL_FUNC in main, return 0
 *   sections crash       SIGSEGV inside a section: the report, status 139
 *   sections overflow    recursion 200 deep: 72 openings over the depth limit
 *   sections unbalanced  a narwhal_begin without end, an end without begin
 *   sections fork        sections in a parent and its forked child
 *   sections exec        a section, then exec of "sections return"
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <narwhal.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spin.h"

static void shares(void)
{
	NARWHAL_SECTION("alpha") {
		NW_SPIN(0.3);
	}
	NARWHAL_SECTION("beta") {
		NW_SPIN(0.2);
		NARWHAL_SECTION("gamma") {
			NW_SPIN(0.1);
		}
	}
	NW_SPIN(0.2);
}

static volatile int sink;

/* Three ways out: every return closes the section. */
__attribute__((noinline)) static int early(int i)
{
	NARWHAL_FUNC();
	if (i % 3 == 0)
		return 0;
	sink += i;
	if (i % 3 == 1)
		return 1;
	sink += 2 * i;
	return 2;
}

__attribute__((noinline)) static int fib(int n)
{
	NARWHAL_FUNC();
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void nest(void)
{
	for (int i = 0; i < 3; i++) {
		NARWHAL_SECTION("outer") {
			for (int k = 0; k < 4; k++) {
				NARWHAL_SECTION("inner") {
					sink += k;
					if (k == 2)
						continue; /* leaves the inner section's loop only */
					sink++;
				}
			}
		}
	}
	for (int i = 0; i < 10; i++)
		early(i);
	for (int i = 0; i < 5; i++) {
		narwhal_begin("manual");
		sink += i;
		narwhal_end();
	}
	fib(5); /* 15 calls */
}

static long iterations;

static void *worker(void *arg)
{
	for (long i = 0; i < iterations; i++) {
		NARWHAL_SECTION("work") {
			NARWHAL_SECTION("step") {
				sink++;
			}
		}
	}
	return arg;
}

static int threads(int n, long k)
{
	pthread_t tids[64];

	iterations = k;
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		if (pthread_create(&tids[i], NULL, worker, NULL))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	return 0;
}

__attribute__((noinline)) static void deep(int n)
{
	NARWHAL_FUNC();
	if (n > 1)
		deep(n - 1);
	sink++;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "shares";

	if (!strcmp(mode, "shares")) {
		shares();
	} else if (!strcmp(mode, "nest")) {
		nest();
	} else if (!strcmp(mode, "threads")) {
		return threads(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atol(argv[3]) : 10000);
	} else if (!strcmp(mode, "exit")) {
		NARWHAL_FUNC();
		NARWHAL_SECTION("before_exit") {
			NW_SPIN(0.05);
			exit(3);
		}
	} else if (!strcmp(mode, "return")) {
		NARWHAL_FUNC();
		NARWHAL_SECTION("in_main") {
			NW_SPIN(0.02);
		}
		return 0;
	} else if (!strcmp(mode, "crash")) {
		NARWHAL_SECTION("crashing") {
			NW_SPIN(0.02);
			*(volatile int *)(uintptr_t)sink = 1; /* sink is 0: a NULL store */
		}
	} else if (!strcmp(mode, "overflow")) {
		deep(200);
	} else if (!strcmp(mode, "unbalanced")) {
		narwhal_end(); /* nothing open */
		NARWHAL_SECTION("scope") {
			narwhal_begin("left_open"); /* closed by the scope's exit */
			sink++;
		}
	} else if (!strcmp(mode, "fork")) {
		pid_t pid;
		int status;

		NARWHAL_SECTION("parent") {
			pid = fork();
			if (pid == 0) {
				NARWHAL_SECTION("child") {
					NW_SPIN(0.02);
				}
				exit(0);
			}
			waitpid(pid, &status, 0);
		}
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	} else if (!strcmp(mode, "exec")) {
		NARWHAL_SECTION("before_exec") {
			NW_SPIN(0.02);
		}
		narwhal_report(); /* exec runs no exit handlers: write what we have */
		execl("/proc/self/exe", argv[0], "return", (char *)NULL);
		return 127;
	} else {
		fprintf(stderr, "sections: unknown mode %s\n", mode);
		return 2;
	}
	return 0;
}
