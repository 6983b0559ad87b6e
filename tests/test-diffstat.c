/* SPDX-License-Identifier: MIT */
/*
 * Noise estimates of report/diffstat.h against values worked out by hand:
 * binomial shares, Poisson counts, Student's t tails with known
 * quantiles, and Welch's test.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "report/diffstat.h"

#define near(a, b, eps) assert_true(fabs((a) - (b)) <= (eps))

/* 20 % of 1000 samples to 30 % of 1000: +10 points, SE 1.9235, z 5.199. */
static void test_share(void **state)
{
	struct nw_change c = nw_change_share(200, 1000, 300, 1000);

	(void)state;
	near(c.delta, 10.0, 1e-9);
	near(c.se, 1.9235384, 1e-6);
	near(c.z, 5.1987524, 1e-6);
	assert_true(nw_change_significant(&c));
	/* From nothing to 5 of 1000: the new side's spread alone, z 2.24: within noise. */
	c = nw_change_share(0, 1000, 5, 1000);
	near(c.delta, 0.5, 1e-12);
	near(c.z, 2.2416792, 1e-6);
	assert_false(nw_change_significant(&c));
	/* The same share: no change. */
	c = nw_change_share(100, 1000, 200, 2000);
	near(c.delta, 0, 1e-12);
	near(c.z, 0, 1e-12);
	/* An empty side is a share of 0, without spread. */
	c = nw_change_share(0, 0, 0, 0);
	assert_true(c.delta == 0 && c.se == 0 && c.z == 0);
	/* Both sides exact (everything, both times): no spread, no change. */
	c = nw_change_share(1000, 1000, 500, 500);
	assert_true(c.delta == 0 && c.z == 0);
}

/* 100 samples to 144 of 1 ms each: +44 ms, SE sqrt(244) ms, z 2.817. */
static void test_count(void **state)
{
	struct nw_change c = nw_change_count(100, 144, 1e6);

	(void)state;
	near(c.delta, 44e6, 1e-3);
	near(c.se, sqrt(244.0) * 1e6, 1e-3);
	near(c.z, 44 / sqrt(244.0), 1e-9);
	assert_false(nw_change_significant(&c));
	c = nw_change_count(0, 0, 1);
	assert_true(c.delta == 0 && c.z == 0);
}

/* Two-sided tails at known quantiles of Student's t. */
static void test_t_tail(void **state)
{
	(void)state;
	/* df 1 is Cauchy: P(|T| > 1) = 1/2. */
	near(nw_t_tail(1.0, 1), 0.5, 1e-9);
	/* t(0.975; 10) = 2.228139: a two-sided 5 %. */
	near(nw_t_tail(2.228139, 10), 0.05, 1e-6);
	/* t(0.995; 4) = 4.604095: 1 %. */
	near(nw_t_tail(4.604095, 4), 0.01, 1e-6);
	/* Large df: the normal's, P(|Z| > 3) = 0.0026998. */
	near(nw_t_tail(3.0, 1e7), 0.0026998, 1e-6);
	near(nw_t_tail(0.0, 5), 1.0, 1e-12);
	near(nw_t_tail(-2.228139, 10), 0.05, 1e-6);
	assert_true(nw_t_tail(INFINITY, 3) == 0);
}

/* Welch: {10,11,12} against {20,21,22}: +10, SE sqrt(2/3), df 4, t 12.25. */
static void test_welch(void **state)
{
	const double b[] = { 10, 11, 12 }, n[] = { 20, 21, 22 }, same[] = { 10.5, 11.5, 12 };
	struct nw_change c = nw_change_welch(b, 3, n, 3);
	double t = 10 / sqrt(2.0 / 3);

	(void)state;
	near(c.delta, 10, 1e-12);
	near(c.se, sqrt(2.0 / 3), 1e-12);
	/* z has the same two-sided tail as t with 4 degrees of freedom. */
	near(erfc(c.z / M_SQRT2), nw_t_tail(t, 4), 1e-9);
	assert_true(c.z > 3 && c.z < t);
	assert_true(nw_change_significant(&c));
	/* Runs that overlap: within noise. */
	c = nw_change_welch(b, 3, same, 3);
	assert_false(nw_change_significant(&c));
	assert_true(c.z > 0);
	/* Too few runs: no estimate. */
	c = nw_change_welch(b, 1, n, 3);
	assert_true(c.delta == 0 && c.se == 0 && c.z == 0);
	/* No spread at all and a change: beyond any noise. */
	{
		const double x[] = { 1, 1 }, y[] = { 2, 2 };

		c = nw_change_welch(x, 2, y, 2);
		assert_true(isinf(c.z) && c.z > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_count),
		cmocka_unit_test(test_t_tail),
		cmocka_unit_test(test_welch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
