/* SPDX-License-Identifier: MIT */
#include "model/epoch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/bsearch.h"

void nw_addrspace_init(struct nw_addrspace *as)
{
	memset(as, 0, sizeof(*as));
}

void nw_addrspace_fini(struct nw_addrspace *as)
{
	for (uint32_t i = 0; i < as->nepochs; i++)
		free(as->epochs[i]);
	free(as->epochs);
	free(as->cur);
	memset(as, 0, sizeof(*as));
}

static int reserve(struct nw_addrspace *as, uint32_t extra)
{
	uint32_t cap = as->cap ? as->cap : 16;
	struct nw_map *v;

	while (cap < as->n + extra)
		cap *= 2;
	if (cap == as->cap)
		return 0;
	v = realloc(as->cur, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	as->cur = v;
	as->cap = cap;
	return 0;
}

int nw_addrspace_map(struct nw_addrspace *as, uint64_t start, uint64_t len, uint64_t pgoff,
		     uint64_t vaddr, uint32_t module)
{
	uint64_t end = start + len;
	struct nw_map *out;
	uint32_t n = 0, at;

	if (!len || end < start)
		return -EINVAL;
	/* At most one old mapping splits in two, plus the new one. */
	out = malloc((as->n + 2) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (uint32_t i = 0; i < as->n; i++) {
		struct nw_map m = as->cur[i];

		if (m.end <= start || m.start >= end) {
			out[n++] = m;
			continue;
		}
		/* Overlap: keep what sticks out below and above the new mapping. */
		if (m.start < start)
			out[n++] = (struct nw_map){ m.start, start, m.pgoff, m.vaddr, m.module };
		if (m.end > end)
			out[n++] = (struct nw_map){ end, m.end, m.pgoff + (end - m.start),
						    m.vaddr + (end - m.start), m.module };
	}
	for (at = 0; at < n && out[at].start < start; at++)
		;
	memmove(&out[at + 1], &out[at], (n - at) * sizeof(*out));
	out[at] = (struct nw_map){ start, end, pgoff, vaddr, module };
	n++;
	free(as->cur);
	as->cur = out;
	as->n = n;
	as->cap = n + 2;
	as->changed = true;
	return 0;
}

void nw_addrspace_reset(struct nw_addrspace *as)
{
	as->n = 0;
	as->changed = true;
}

int nw_addrspace_copy(struct nw_addrspace *dst, const struct nw_addrspace *src)
{
	if (reserve(dst, src->n))
		return -ENOMEM;
	memcpy(dst->cur, src->cur, src->n * sizeof(*src->cur));
	dst->n = src->n;
	dst->changed = true;
	return 0;
}

const struct nw_epoch *nw_addrspace_epoch(struct nw_addrspace *as)
{
	struct nw_epoch *e;

	if (!as->changed && as->nepochs)
		return as->epochs[as->nepochs - 1];
	if (as->nepochs == as->cap_epochs) {
		uint32_t cap = as->cap_epochs ? as->cap_epochs * 2 : 4;
		struct nw_epoch **v = realloc(as->epochs, cap * sizeof(*v));

		if (!v)
			return NULL;
		as->epochs = v;
		as->cap_epochs = cap;
	}
	e = malloc(sizeof(*e) + as->n * sizeof(e->maps[0]));
	if (!e)
		return NULL;
	e->index = as->nepochs;
	e->n = as->n;
	if (as->n) /* as->cur is NULL before the first map */
		memcpy(e->maps, as->cur, as->n * sizeof(e->maps[0]));
	as->epochs[as->nepochs++] = e;
	as->changed = false;
	return e;
}

static uint64_t map_end(const void *maps, size_t i)
{
	return ((const struct nw_map *)maps)[i].end;
}

const struct nw_map *nw_epoch_find(const struct nw_epoch *epoch, uint64_t addr)
{
	/* The first mapping that ends above @addr (they are disjoint and sorted). */
	size_t lo = nw_bsearch_le(epoch->maps, epoch->n, addr, map_end);

	if (lo < epoch->n && epoch->maps[lo].start <= addr)
		return &epoch->maps[lo];
	return NULL;
}

static int cmp_map_start(const void *a, const void *b)
{
	const struct nw_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct nw_epoch *nw_epoch_new(const struct nw_map *maps, uint32_t n, uint32_t index)
{
	struct nw_epoch *e = malloc(sizeof(*e) + (size_t)n * sizeof(e->maps[0]));

	if (!e)
		return NULL;
	e->index = index;
	e->n = n;
	if (n)
		memcpy(e->maps, maps, (size_t)n * sizeof(e->maps[0]));
	qsort(e->maps, n, sizeof(e->maps[0]), cmp_map_start);
	return e;
}
