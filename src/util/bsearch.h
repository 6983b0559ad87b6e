/* SPDX-License-Identifier: MIT */
/*
 * The binary search the model and the symbol readers share: over an array
 * sorted by a u64 key (mappings by start or end, functions, symbols, CU
 * ranges, perf map entries), how many entries have a key at or below a
 * value.  That count is the index of the first entry above it, and the
 * entry before it, if any, is the last one that starts at or below it:
 * the one that may hold an address.  Header only, so that a caller's key
 * function (a static function reading one field) is inlined into the loop.
 */
#ifndef NW_BSEARCH_H
#define NW_BSEARCH_H

#include <stddef.h>
#include <stdint.h>

/* The key of entry @i of the array @arr. */
typedef uint64_t (*nw_bsearch_key_fn)(const void *arr, size_t i);

/* The number of the @n entries of @arr (sorted by @key) whose key is at or below @x. */
static inline size_t nw_bsearch_le(const void *arr, size_t n, uint64_t x, nw_bsearch_key_fn key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key(arr, mid) <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
