/* SPDX-License-Identifier: MIT */
/*
 * Sampling by bytes, as tcmalloc and Go do: allocations are points on a
 * line of bytes, and a Poisson process with mean interval RATE picks
 * the bytes sampled; an allocation is sampled when one of its bytes is.
 * Each thread keeps the distance to the next sampled byte, drawn from an
 * exponential distribution, and counts it down: the unsampled path is a
 * subtraction and a compare.  Memoryless, so after a sample the next
 * distance is drawn afresh from the end of the allocation.
 *
 * An allocation of s bytes is sampled with probability 1 - exp(-s/RATE);
 * weighing each sample by the inverse (nw_alloc_weight()) makes the sums
 * unbiased estimates of the allocated objects and bytes.  RATE 1 samples
 * every allocation (zero-sized ones too) with weight 1.
 *
 * Header only and free of locks and allocation: the interposer inlines
 * it, the recorder and the unit tests use the same functions.
 */
#ifndef NW_ALLOC_SAMPLER_H
#define NW_ALLOC_SAMPLER_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nw_alloc_sampler {
	uint64_t rng; /* xorshift64* state, never 0 once seeded */
	int64_t left; /* bytes until the next sampled byte */
};

/* Seeds @s (any @seed) and draws its first interval. */
static inline uint64_t nw_alloc_rng_next(struct nw_alloc_sampler *s)
{
	uint64_t x = s->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Bytes to the next sampled byte: exponential with mean @rate, at least 1. */
static inline int64_t nw_alloc_next_interval(struct nw_alloc_sampler *s, uint64_t rate)
{
	/* A uniform in (0, 1]: 53 random bits plus one. */
	double u = ((double)(nw_alloc_rng_next(s) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
	double v = -log(u) * (double)rate;

	if (rate <= 1)
		return 1;
	if (!(v < 9.0e18))
		v = 9.0e18;
	return v < 1.0 ? 1 : (int64_t)v;
}

static inline void nw_alloc_sampler_seed(struct nw_alloc_sampler *s, uint64_t seed, uint64_t rate)
{
	s->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
	s->left = nw_alloc_next_interval(s, rate);
}

/* Is an allocation of @size bytes sampled?  Counts it down either way. */
static inline bool nw_alloc_sample(struct nw_alloc_sampler *s, size_t size, uint64_t rate)
{
	if (rate <= 1)
		return true;
	if ((uint64_t)s->left > size) {
		s->left -= (int64_t)size;
		return false;
	}
	s->left = nw_alloc_next_interval(s, rate);
	return true;
}

/*
 * What one sample of @size bytes at mean interval @rate stands for: the
 * expected number of such allocations per sample, 1 / (1 - exp(-size/rate)),
 * into @objects, and @size times that into @bytes (both 1 and @size at
 * rate 1; a sampled zero-sized allocation counts as one object).
 */
static inline void nw_alloc_weight(uint64_t size, uint64_t rate, double *objects, double *bytes)
{
	double p;

	if (rate <= 1 || size == 0) {
		*objects = 1.0;
		*bytes = (double)size;
		return;
	}
	p = -expm1(-(double)size / (double)rate);
	*objects = 1.0 / p;
	*bytes = (double)size / p;
}

#endif
