/* SPDX-License-Identifier: MIT */
/*
 * vdsoclock: calls clock_gettime(CLOCK_MONOTONIC) in a loop for 0.3 s of
 * CPU, so that most samples land in the kernel's vdso
 * (__vdso_clock_gettime), which the C library calls without a system call.
 */
#include <time.h>

#include "spin.h"

__attribute__((noinline)) static unsigned long read_clock_often(void)
{
	unsigned long sum = 0;
	struct timespec ts;

	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += (unsigned long)ts.tv_nsec;
	}
	return sum;
}

int main(void)
{
	double end = nw_thread_cpu_seconds() + 0.3;
	unsigned long sum = 0;

	while (nw_thread_cpu_seconds() < end)
		sum += read_clock_often();
	return sum == 42;
}
