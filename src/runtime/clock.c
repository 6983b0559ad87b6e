/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal's timer: the CPU's cycle counter where it is invariant, else
 * CLOCK_MONOTONIC, and the calibration points that map its ticks to
 * CLOCK_MONOTONIC nanoseconds (the clock of the samples).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "rt.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) uint64_t rt_mono_ns(void)
{
	return mono_ns();
}

/* Whether the cycle counter runs at a constant rate in every state (invariant TSC). */
int rt_counter_usable(void)
{
	const char *env = getenv("NARWHAL_TIMER");

	if (env && strcmp(env, "clock") == 0)
		return 0;
#if defined(__x86_64__) || defined(__i386__)
	{
		unsigned a, b, c, d;

		if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
			return 0;
		return (d >> 8) & 1;
	}
#elif defined(__aarch64__)
	return 1; /* the generic timer counts at a fixed frequency by architecture */
#else
	return 0;
#endif
}

/* A (ticks, ns) pair read as close together as this machine allows. */
struct rt_cal_point rt_cal_read(void)
{
	struct rt_cal_point best = { 0, 0 };
	uint64_t best_gap = UINT64_MAX;

	if (!rt_state.use_tsc) {
		best.ns = mono_ns();
		best.ticks = best.ns;
		return best;
	}
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = ticks(), ns = mono_ns(), t1 = ticks();

		if (t1 - t0 < best_gap) {
			best_gap = t1 - t0;
			best.ticks = t0 + (t1 - t0) / 2;
			best.ns = ns;
		}
	}
	return best;
}

/* Adds a point (cal_lock held); every other old point goes when full. */
void rt_cal_add(struct rt_cal_point p)
{
	if (rt_state.ncal && p.ticks <= rt_state.cal[rt_state.ncal - 1].ticks)
		return;
	if (rt_state.ncal == MAX_CAL) {
		uint32_t n = 1;

		for (uint32_t i = 2; i < MAX_CAL - 1; i += 2)
			rt_state.cal[n++] = rt_state.cal[i];
		rt_state.cal[n++] = rt_state.cal[MAX_CAL - 1];
		rt_state.ncal = n;
	}
	rt_state.cal[rt_state.ncal++] = p;
}

/* ticks -> ns through the segment of @a and @b (a.ticks < b.ticks). */
static uint64_t cal_interp(struct rt_cal_point a, struct rt_cal_point b, uint64_t t)
{
	double slope = (double)(int64_t)(b.ns - a.ns) / (double)(int64_t)(b.ticks - a.ticks);
	double d = (double)(int64_t)(t - a.ticks) * slope;

	return (uint64_t)((int64_t)a.ns + (int64_t)d);
}

/*
 * ticks -> CLOCK_MONOTONIC ns (cal_lock held), @last being a point read
 * after every tick count converted: the calibration points, then @last
 * where it is newer, are the corners of a piecewise linear map.  The search
 * starts at the newest segment: what is flushed is mostly recent.
 */
uint64_t rt_cal_convert(uint64_t t, struct rt_cal_point last)
{
	uint32_t n = rt_state.ncal, m, k;

#define P(i) ((i) < n ? rt_state.cal[(i)] : last)
	if (!rt_state.use_tsc)
		return t;
	m = n + (n == 0 || last.ticks > rt_state.cal[n - 1].ticks);
	if (m < 2)
		return P(0).ns;
	for (k = m - 1; k > 0 && P(k).ticks > t; k--)
		;
	/* Segment (k, k+1); beyond the ends the nearest segment extrapolates. */
	if (k == m - 1)
		k = m - 2;
	return cal_interp(P(k), P(k + 1), t);
#undef P
}

/* Nanoseconds per tick over the whole run so far. */
double rt_ns_per_tick(struct rt_cal_point now)
{
	if (!rt_state.use_tsc || rt_state.ncal == 0 || now.ticks <= rt_state.cal[0].ticks)
		return 1.0;
	return (double)(now.ns - rt_state.cal[0].ns) / (double)(now.ticks - rt_state.cal[0].ticks);
}
