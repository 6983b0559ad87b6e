/* SPDX-License-Identifier: MIT */
/* Noise estimates for changes between measurements; see diffstat.h. */
#include "report/diffstat.h"

#include <math.h>

static struct nw_change change_of(double delta, double se)
{
	struct nw_change c = { delta, se, 0.0 };

	if (se > 0)
		c.z = delta / se;
	else if (delta != 0)
		c.z = delta > 0 ? INFINITY : -INFINITY;
	return c;
}

/* The variance of a share @k / @total (0 for an empty side). */
static double share_var(uint64_t k, uint64_t total)
{
	double p;

	if (!total)
		return 0;
	p = (double)k / (double)total;
	return p * (1 - p) / (double)total;
}

struct nw_change nw_change_share(uint64_t b, uint64_t btotal, uint64_t n, uint64_t ntotal)
{
	double p1 = btotal ? (double)b / (double)btotal : 0, p2 = ntotal ? (double)n / (double)ntotal : 0;

	return change_of(100 * (p2 - p1), 100 * sqrt(share_var(b, btotal) + share_var(n, ntotal)));
}

struct nw_change nw_change_count(uint64_t b, uint64_t n, double unit)
{
	return change_of(((double)n - (double)b) * unit, sqrt((double)b + (double)n) * unit);
}

/*
 * The continued fraction of the incomplete beta function (modified
 * Lentz), which converges fast for x < (a + 1) / (a + b + 2).
 */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h;

	d = fabs(d) < tiny ? tiny : d;
	d = 1 / d;
	h = d;
	for (int m = 1; m <= 300; m++) {
		double m2 = 2.0 * m, num, del;

		/* The even step, then the odd one. */
		num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		h *= d * c;
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
		d = 1 + num * d;
		d = fabs(d) < tiny ? tiny : d;
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < 1e-14)
			break;
	}
	return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double beta_inc(double a, double b, double x)
{
	double front;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double nw_t_tail(double t, double df)
{
	if (!isfinite(t))
		return 0;
	return beta_inc(df / 2, 0.5, df / (df + t * t));
}

/* The z with the two-sided normal tail probability @p: erfc(z / sqrt 2) = p, by bisection. */
static double z_of_tail(double p)
{
	double lo = 0, hi = 40;

	if (p >= 1)
		return 0;
	if (p <= 0)
		return INFINITY;
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (erfc(mid / M_SQRT2) > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

static void mean_var(const double *v, unsigned n, double *mean, double *var)
{
	double s = 0, ss = 0;

	for (unsigned i = 0; i < n; i++)
		s += v[i];
	*mean = s / n;
	for (unsigned i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*var = ss / (n - 1);
}

struct nw_change nw_change_welch(const double *bv, unsigned nb, const double *nv, unsigned nn)
{
	double mb, vb, mn, vn, qb, qn, se, t, df;
	struct nw_change c = { 0 };

	if (nb < 2 || nn < 2)
		return c;
	mean_var(bv, nb, &mb, &vb);
	mean_var(nv, nn, &mn, &vn);
	qb = vb / nb;
	qn = vn / nn;
	se = sqrt(qb + qn);
	c = change_of(mn - mb, se);
	if (!(se > 0))
		return c;
	t = c.delta / se;
	/* Welch-Satterthwaite degrees of freedom. */
	df = (qb + qn) * (qb + qn) / (qb * qb / (nb - 1) + qn * qn / (nn - 1));
	c.z = copysign(z_of_tail(nw_t_tail(t, df)), t);
	return c;
}

bool nw_change_significant(const struct nw_change *c)
{
	return fabs(c->z) >= NW_DIFF_Z;
}
