/* SPDX-License-Identifier: MIT */
/*
 * The interposer's set of sampled pointers, so that free() knows in a few
 * nanoseconds whether the recorder must hear of it.  Lock-free (threads,
 * signal handlers and fork never wait on it) and allocation-free: the
 * caller hands it memory (the interposer an mmap'd, MAP_NORESERVE area,
 * the unit tests calloc'd arrays).
 *
 *  - filter: 2^fbits counters, one per hash bucket of pointers in the
 *    set; a free whose counter is 0 is not sampled (one load from a table
 *    that stays in cache, the common case at the default rate);
 *  - slots: 2^sbits pointers, open addressing with linear probing over at
 *    most NW_PTRTABLE_PROBES slots; 0 is empty, 1 a removed entry that
 *    insertions reuse.  Each slot changes by compare-and-swap.
 *
 * An insertion that finds no slot within the probe limit fails (the set
 * is too full): the caller reports the allocation as untracked.
 */
#ifndef NW_ALLOC_PTRTABLE_H
#define NW_ALLOC_PTRTABLE_H

#include <stdbool.h>
#include <stdint.h>

#define NW_PTRTABLE_PROBES 64
#define NW_PTRTABLE_EMPTY 0u
#define NW_PTRTABLE_REMOVED 1u

struct nw_ptrtable {
	uintptr_t *slots;
	uint32_t *filter;
	unsigned sbits, fbits;
};

static inline uint64_t nw_ptrtable_hash(uintptr_t p)
{
	uint64_t x = (uint64_t)p >> 4;

	x ^= x >> 31;
	x *= 0x9E3779B97F4A7C15ULL;
	return x ^ (x >> 29);
}

static inline uint32_t *nw_ptrtable_bucket(const struct nw_ptrtable *t, uint64_t h)
{
	return &t->filter[h >> (64 - t->fbits)];
}

/* Adds @p (not 0 or 1).  false when no slot was free within the probe limit. */
static inline bool nw_ptrtable_insert(struct nw_ptrtable *t, uintptr_t p)
{
	uint64_t h = nw_ptrtable_hash(p), mask = (1ull << t->sbits) - 1;

	for (unsigned i = 0; i < NW_PTRTABLE_PROBES; i++) {
		uintptr_t *slot = &t->slots[(h + i) & mask];
		uintptr_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);

		while (cur == NW_PTRTABLE_EMPTY || cur == NW_PTRTABLE_REMOVED) {
			if (__atomic_compare_exchange_n(slot, &cur, p, false, __ATOMIC_RELEASE,
							__ATOMIC_RELAXED)) {
				__atomic_fetch_add(nw_ptrtable_bucket(t, h), 1, __ATOMIC_RELEASE);
				return true;
			}
		}
	}
	return false;
}

/* Is @p in the set?  Removes it if so: only one caller removes a pointer. */
static inline bool nw_ptrtable_remove(struct nw_ptrtable *t, uintptr_t p)
{
	uint64_t h = nw_ptrtable_hash(p), mask = (1ull << t->sbits) - 1;

	if (!__atomic_load_n(nw_ptrtable_bucket(t, h), __ATOMIC_ACQUIRE))
		return false;
	for (unsigned i = 0; i < NW_PTRTABLE_PROBES; i++) {
		uintptr_t *slot = &t->slots[(h + i) & mask];
		uintptr_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

		if (cur == NW_PTRTABLE_EMPTY)
			return false;
		if (cur == p && __atomic_compare_exchange_n(slot, &cur, NW_PTRTABLE_REMOVED, false,
							    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_fetch_sub(nw_ptrtable_bucket(t, h), 1, __ATOMIC_RELEASE);
			return true;
		}
	}
	return false;
}

#endif
