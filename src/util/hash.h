/* SPDX-License-Identifier: MIT */
/*
 * The project's hash index: an open-addressing table of u32 entry numbers
 * into an array the caller owns (strings, frames, mappings, locations,
 * processes...).  The caller hashes its key and says how to compare a key
 * with an entry and how to hash an entry again when the table grows; the
 * index never copies keys.  At most half full, so probes stay short.  A
 * new table of keys and entries uses it.
 *
 * Two tables on hot paths keep their own, for reasons of their own:
 *
 *  - the CCT's (parent, ip) index (model/cct.c) is keyed by each node's
 *    path hash, which comes from the ips of a stack alone and is kept in
 *    the node: an insert computes the hashes of a window of 32 levels and
 *    prefetches all their slots before it reads any node, so the cache
 *    misses of a deep stack overlap (that needs the table's layout, which
 *    this index hides), and growing rehashes from the nodes, with no call
 *    per entry;
 *  - the unwinder's cache of compiled CFI rules (unwind/dwarf.c, one
 *    lookup per frame of every sample) stores each 24-byte rule in its
 *    slot, keyed by (module, file offset) in one u64 whose 0 marks an
 *    empty slot: a lookup is one multiply and, mostly, one cache line,
 *    where this index would read a slot, then the entry in another array
 *    through a compare callback.  Rules are never removed.
 *
 *	uint32_t *slot = nw_index_slot(&ix, hash, eq, rehash, ctx, key);
 *	if (!slot) return -ENOMEM;
 *	if (*slot != NW_INDEX_NONE) return *slot;	// found
 *	... append the entry as number id ...
 *	nw_index_fill(&ix, slot, id);
 */
#ifndef NW_HASH_H
#define NW_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NW_INDEX_NONE UINT32_MAX

struct nw_index {
	uint32_t *slots;  /* entry numbers, NW_INDEX_NONE where empty */
	uint32_t nslots;  /* a power of two, or 0 before the first use */
	uint32_t n;       /* entries filled in */
};

/* Does entry @entry of @ctx equal @key? */
typedef bool (*nw_index_eq_fn)(const void *ctx, uint32_t entry, const void *key);
/* The hash of entry @entry of @ctx (the same the caller gives for its key). */
typedef uint64_t (*nw_index_hash_fn)(const void *ctx, uint32_t entry);

/*
 * The slot of @key (hash @hash): it holds the equal entry's number, or
 * NW_INDEX_NONE where a new entry goes (fill it with nw_index_fill()
 * before the next call).  Grows the table first, when one more entry would
 * make it more than half full, rehashing the entries with @rehash.  NULL
 * on ENOMEM (the table is unchanged).
 */
uint32_t *nw_index_slot(struct nw_index *ix, uint64_t hash, nw_index_eq_fn eq,
			nw_index_hash_fn rehash, const void *ctx, const void *key);
/*
 * The entry equal to @key, or NW_INDEX_NONE; never grows the table.
 * Inline, so that a caller's own @eq is inlined into the probe: a lookup
 * per node of every tree (the places, model/places.h) pays no call per
 * probe.
 */
static inline uint32_t nw_index_find(const struct nw_index *ix, uint64_t hash,
				     nw_index_eq_fn eq, const void *ctx, const void *key)
{
	uint32_t mask, h;

	if (!ix->nslots)
		return NW_INDEX_NONE;
	mask = ix->nslots - 1;
	for (h = (uint32_t)hash & mask; ix->slots[h] != NW_INDEX_NONE; h = (h + 1) & mask)
		if (eq(ctx, ix->slots[h], key))
			return ix->slots[h];
	return NW_INDEX_NONE;
}
/* Stores entry number @entry in @slot, from nw_index_slot(). */
static inline void nw_index_fill(struct nw_index *ix, uint32_t *slot, uint32_t entry)
{
	*slot = entry;
	ix->n++;
}
/*
 * Removes the entry equal to @key and returns its number (NW_INDEX_NONE
 * when there is none); the caller may then reuse or drop the entry.
 */
uint32_t nw_index_remove(struct nw_index *ix, uint64_t hash, nw_index_eq_fn eq,
			 nw_index_hash_fn rehash, const void *ctx, const void *key);
/* Forgets every entry (keeps the memory). */
void nw_index_clear(struct nw_index *ix);
void nw_index_fini(struct nw_index *ix);

/* Hash helpers: a 64-bit finalizer, and FNV-1a over a string (NULL hashes apart from ""). */
static inline uint64_t nw_hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

#define NW_HASH_SEED 0xcbf29ce484222325ULL

static inline uint64_t nw_hash_str(uint64_t h, const char *s)
{
	if (!s)
		return (h ^ 0xff) * 0x100000001b3ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	/* A terminator keeps ("ab", "c") apart from ("a", "bc"). */
	return (h ^ 0x1ff) * 0x100000001b3ULL;
}

/* Combines @h with @v. */
static inline uint64_t nw_hash_add(uint64_t h, uint64_t v)
{
	return nw_hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

#endif
