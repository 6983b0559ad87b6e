/* SPDX-License-Identifier: MIT */
/*
 * forks [N]: a build in small: N short processes (default 300) one after
 * the other, each named job-I, burning 3 ms of CPU in job_work, and every
 * 60th a larger one, heavy-I, of four threads (heavy-I-tJ, the main one
 * heavy-I itself) burning 40 ms each in heavy_work.  The HTML report's
 * timeline and selectors must group the threads under their process, put
 * the heavy processes first and fold the short ones (export-html.sh).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spin.h"

__attribute__((noinline)) static void job_work(void)
{
	NW_SPIN(0.003);
}

__attribute__((noinline)) static void heavy_work(void)
{
	NW_SPIN(0.04);
}

static void *heavy_thread(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "%s", (const char *)arg);
	prctl(PR_SET_NAME, name);
	heavy_work();
	return NULL;
}

static void heavy(int i)
{
	pthread_t t[3];
	char names[3][16];

	for (int j = 0; j < 3; j++) {
		snprintf(names[j], sizeof(names[j]), "heavy-%d-t%d", i, j + 1);
		pthread_create(&t[j], NULL, heavy_thread, names[j]);
	}
	heavy_work();
	for (int j = 0; j < 3; j++)
		pthread_join(t[j], NULL);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 300;

	if (n <= 0)
		return 2;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		char name[16];

		if (pid < 0)
			return 1;
		if (pid == 0) {
			snprintf(name, sizeof(name), "%s-%d", i % 60 == 30 ? "heavy" : "job", i);
			prctl(PR_SET_NAME, name);
			if (i % 60 == 30)
				heavy(i);
			else
				job_work();
			_exit(0);
		}
		if (waitpid(pid, NULL, 0) != pid)
			return 1;
	}
	return 0;
}
