/* SPDX-License-Identifier: MIT */
/*
 * CPU burning for the test programs.  NW_SPIN(seconds) burns that much CPU
 * time of the calling thread (CLOCK_THREAD_CPUTIME_ID) inside the function
 * that uses it: the arithmetic loop is expanded in place, so nearly every
 * sample lands in that function and not in a helper.
 */
#ifndef NW_TEST_SPIN_H
#define NW_TEST_SPIN_H

#include <stdint.h>
#include <time.h>

static inline double nw_thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* About 50 microseconds of arithmetic between clock reads. */
#define NW_SPIN(seconds)                                                        \
	do {                                                                    \
		double nw_end_ = nw_thread_cpu_seconds() + (seconds);           \
		volatile uint64_t nw_x_ = 1;                                    \
		while (nw_thread_cpu_seconds() < nw_end_)                       \
			for (int nw_i_ = 0; nw_i_ < 20000; nw_i_++)             \
				nw_x_ = nw_x_ * 6364136223846793005ull + 1;     \
	} while (0)

#endif
