/* SPDX-License-Identifier: MIT */
#include "util/hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int grow(struct nw_index *ix, nw_index_hash_fn rehash, const void *ctx)
{
	uint32_t nslots = ix->nslots ? ix->nslots * 2 : 64, mask = nslots - 1;
	uint32_t *slots;

	if (nslots <= ix->nslots)
		return -ENOMEM;
	slots = malloc((size_t)nslots * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, (size_t)nslots * sizeof(*slots));
	for (uint32_t i = 0; i < ix->nslots; i++) {
		uint32_t e = ix->slots[i], h;

		if (e == NW_INDEX_NONE)
			continue;
		h = (uint32_t)rehash(ctx, e) & mask;
		while (slots[h] != NW_INDEX_NONE)
			h = (h + 1) & mask;
		slots[h] = e;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->nslots = nslots;
	return 0;
}

uint32_t *nw_index_slot(struct nw_index *ix, uint64_t hash, nw_index_eq_fn eq,
			nw_index_hash_fn rehash, const void *ctx, const void *key)
{
	uint32_t mask, h;

	if ((uint64_t)(ix->n + 1) * 2 > ix->nslots && grow(ix, rehash, ctx))
		return NULL;
	mask = ix->nslots - 1;
	h = (uint32_t)hash & mask;
	while (ix->slots[h] != NW_INDEX_NONE && !eq(ctx, ix->slots[h], key))
		h = (h + 1) & mask;
	return &ix->slots[h];
}

uint32_t nw_index_remove(struct nw_index *ix, uint64_t hash, nw_index_eq_fn eq,
			 nw_index_hash_fn rehash, const void *ctx, const void *key)
{
	uint32_t mask, h, found;

	if (!ix->nslots)
		return NW_INDEX_NONE;
	mask = ix->nslots - 1;
	for (h = (uint32_t)hash & mask; ix->slots[h] != NW_INDEX_NONE; h = (h + 1) & mask)
		if (eq(ctx, ix->slots[h], key))
			break;
	found = ix->slots[h];
	if (found == NW_INDEX_NONE)
		return NW_INDEX_NONE;
	ix->slots[h] = NW_INDEX_NONE;
	ix->n--;
	/* Re-place the rest of the probe run, so lookups still reach them. */
	for (h = (h + 1) & mask; ix->slots[h] != NW_INDEX_NONE; h = (h + 1) & mask) {
		uint32_t e = ix->slots[h], g;

		ix->slots[h] = NW_INDEX_NONE;
		for (g = (uint32_t)rehash(ctx, e) & mask; ix->slots[g] != NW_INDEX_NONE;
		     g = (g + 1) & mask)
			;
		ix->slots[g] = e;
	}
	return found;
}

void nw_index_clear(struct nw_index *ix)
{
	if (ix->slots)
		memset(ix->slots, 0xff, (size_t)ix->nslots * sizeof(*ix->slots));
	ix->n = 0;
}

void nw_index_fini(struct nw_index *ix)
{
	free(ix->slots);
	memset(ix, 0, sizeof(*ix));
}
