/* SPDX-License-Identifier: MIT */
#include "model/cct.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* Levels of a stack whose index slots nw_cct_insert() fetches together. */
#define INSERT_WINDOW 32u

/* The root's path hash; a child's is path_hash(its parent's, its ip). */
#define ROOT_HASH 0x2545f491u

static inline uint32_t path_hash(uint32_t parent, uint64_t ip)
{
	uint64_t h = ip ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ULL);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return (uint32_t)(h ^ (h >> 32));
}

/* Room for @cap nodes (more than now): nodes, metrics and change bits.  -ENOMEM. */
static int resize(struct nw_cct *cct, uint32_t cap)
{
	struct nw_cct_node *nodes;
	uint64_t *metrics;

	nodes = realloc(cct->nodes, (size_t)cap * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	cct->nodes = nodes;
	nw_advise_huge(nodes, (size_t)cap * sizeof(*nodes));
	metrics = realloc(cct->metrics, (size_t)cap * cct->nmetrics * sizeof(*metrics) + 1);
	if (!metrics)
		return -ENOMEM;
	cct->metrics = metrics;
	nw_advise_huge(metrics, (size_t)cap * cct->nmetrics * sizeof(*metrics));
	if (cct->changed) {
		size_t had = ((size_t)cct->cap + 63) / 64, words = ((size_t)cap + 63) / 64;
		uint64_t *changed = realloc(cct->changed, words * sizeof(*changed));

		if (!changed)
			return -ENOMEM;
		memset(changed + had, 0, (words - had) * sizeof(*changed));
		cct->changed = changed;
	}
	cct->cap = cap;
	return 0;
}

static int grow_nodes(struct nw_cct *cct)
{
	uint32_t cap = cct->cap ? cct->cap * 2 : 64;

	if (cap <= cct->cap || cap >= NW_CCT_NONE)
		return -ENOMEM;
	return resize(cct, cap);
}

/* Rebuilds the (parent, ip) index at twice the size (or big enough for every node). */
static int grow_slots(struct nw_cct *cct)
{
	uint32_t nslots = cct->nslots ? cct->nslots * 2 : 128, mask;
	uint32_t *slots;

	while ((uint64_t)(cct->n + 1) * 2 > nslots)
		nslots *= 2;
	mask = nslots - 1;
	slots = malloc((size_t)nslots * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	nw_advise_huge(slots, (size_t)nslots * sizeof(*slots));
	memset(slots, 0xff, (size_t)nslots * sizeof(*slots));
	for (uint32_t i = 1; i < cct->n; i++) {
		uint32_t h = cct->nodes[i].hash & mask;

		while (slots[h] != NW_CCT_NONE)
			h = (h + 1) & mask;
		slots[h] = i;
	}
	free(cct->slots);
	cct->slots = slots;
	cct->nslots = nslots;
	return 0;
}

/* The root alone in room for @cap nodes (at least 1), with an index when @index. */
static struct nw_cct *cct_new(unsigned nmetrics, uint32_t cap, bool index)
{
	struct nw_cct *cct = calloc(1, sizeof(*cct));

	if (!cct)
		return NULL;
	cct->nmetrics = nmetrics;
	if (cap < 1 || cap >= NW_CCT_NONE || resize(cct, cap) || (index && grow_slots(cct))) {
		nw_cct_free(cct);
		return NULL;
	}
	cct->n = 1;
	cct->nodes[0] = (struct nw_cct_node){ .parent = NW_CCT_NONE,
					      .first_child = NW_CCT_NONE,
					      .next_sibling = NW_CCT_NONE,
					      .hash = ROOT_HASH };
	memset(cct->metrics, 0, nmetrics * sizeof(uint64_t));
	return cct;
}

struct nw_cct *nw_cct_new(unsigned nmetrics)
{
	return cct_new(nmetrics, 64, true);
}

struct nw_cct *nw_cct_new_sized(unsigned nmetrics, uint32_t cap)
{
	return cct_new(nmetrics, cap, false);
}

void nw_cct_free(struct nw_cct *cct)
{
	if (!cct)
		return;
	free(cct->nodes);
	free(cct->metrics);
	free(cct->changed);
	free(cct->slots);
	free(cct->path);
	free(cct);
}

uint32_t nw_cct_find(const struct nw_cct *cct, uint32_t parent, uint64_t ip)
{
	uint32_t mask = cct->nslots - 1, h = path_hash(cct->nodes[parent].hash, ip) & mask;

	if (!cct->slots) {
		/* A tree built by nw_cct_append(): no index, scan the children. */
		for (uint32_t c = cct->nodes[parent].first_child; c != NW_CCT_NONE;
		     c = cct->nodes[c].next_sibling)
			if (cct->nodes[c].ip == ip)
				return c;
		return NW_CCT_NONE;
	}

	for (;;) {
		uint32_t i = cct->slots[h];

		if (i == NW_CCT_NONE)
			return NW_CCT_NONE;
		if (cct->nodes[i].ip == ip && cct->nodes[i].parent == parent)
			return i;
		h = (h + 1) & mask;
	}
}

/*
 * Node @i (the next, room made) as a new child of @parent with path hash
 * @ph and zero metrics, put first among its siblings: appending as the
 * last would need a tail pointer.
 */
static inline void new_child(struct nw_cct *cct, uint32_t i, uint32_t parent, uint64_t ip,
			     uint64_t sp, uint32_t ph)
{
	struct nw_cct_node *node = &cct->nodes[i];

	node->ip = ip;
	node->sp = sp;
	node->parent = parent;
	node->first_child = NW_CCT_NONE;
	node->hash = ph;
	node->next_sibling = cct->nodes[parent].first_child;
	cct->nodes[parent].first_child = i;
	memset(nw_cct_metrics(cct, i), 0, cct->nmetrics * sizeof(uint64_t));
}

/* nw_cct_child() with the child's path hash @ph known. */
static uint32_t child_of(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp,
			 uint32_t ph)
{
	uint32_t mask, h, i;

	if (!cct->slots && grow_slots(cct))
		return NW_CCT_NONE;
	mask = cct->nslots - 1;
	h = ph & mask;

	for (;;) {
		i = cct->slots[h];
		if (i == NW_CCT_NONE)
			break;
		if (cct->nodes[i].ip == ip && cct->nodes[i].parent == parent) {
			if (!cct->nodes[i].sp && sp) {
				/* A checkpoint's delta carries the tag it gains. */
				cct->nodes[i].sp = sp;
				nw_cct_mark_changed(cct, i);
			}
			return i;
		}
		h = (h + 1) & mask;
	}
	/* Keep the index at most half full so probes stay short. */
	if ((cct->n + 1) * 2 > cct->nslots) {
		if (grow_slots(cct))
			return NW_CCT_NONE;
		mask = cct->nslots - 1;
		h = ph & mask;
		while (cct->slots[h] != NW_CCT_NONE)
			h = (h + 1) & mask;
	}
	if (cct->n == cct->cap && grow_nodes(cct))
		return NW_CCT_NONE;
	i = cct->n++;
	new_child(cct, i, parent, ip, sp, ph);
	cct->slots[h] = i;
	return i;
}

uint32_t nw_cct_child(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp)
{
	return child_of(cct, parent, ip, sp, path_hash(cct->nodes[parent].hash, ip));
}

uint32_t nw_cct_insert(struct nw_cct *cct, const struct nw_frame *frames, size_t n)
{
	uint32_t node = NW_CCT_ROOT;
	size_t k = 0;

	/*
	 * Consecutive samples of a thread mostly share the top of their stacks:
	 * follow the previous path while it matches, each node checked against
	 * its parent and ip, which no other node of the tree has together.
	 */
	for (; k < n && k < cct->npath; k++) {
		const struct nw_frame *f = &frames[n - 1 - k];
		uint32_t c = cct->path[k];

		if (c >= cct->n || cct->nodes[c].parent != node || cct->nodes[c].ip != f->ip)
			break;
		if (!cct->nodes[c].sp && f->sp) {
			cct->nodes[c].sp = f->sp;
			nw_cct_mark_changed(cct, c);
		}
		node = c;
	}
	if (n > cct->cap_path && n <= NW_CCT_NONE) {
		uint32_t *path = realloc(cct->path, n * sizeof(*path));

		if (path) {
			cct->path = path;
			cct->cap_path = (uint32_t)n;
		}
	}
	/*
	 * The rest, a window of levels at a time: their path hashes come from
	 * the ips alone, so the index slots of every level of the window are
	 * fetched at once, then the nodes they hold, and only then walked:
	 * the cache misses of a deep stack overlap instead of coming one
	 * after the other.
	 */
	while (k < n && node != NW_CCT_NONE) {
		uint32_t hs[INSERT_WINDOW], w = n - k < INSERT_WINDOW ? (uint32_t)(n - k) : INSERT_WINDOW;
		uint32_t h = cct->nodes[node].hash;

		for (uint32_t j = 0; j < w; j++) {
			h = hs[j] = path_hash(h, frames[n - 1 - k - j].ip);
			if (cct->slots)
				__builtin_prefetch(&cct->slots[h & (cct->nslots - 1)]);
		}
		for (uint32_t j = 0; cct->slots && j < w; j++) {
			uint32_t i = cct->slots[hs[j] & (cct->nslots - 1)];

			if (i != NW_CCT_NONE)
				__builtin_prefetch(&cct->nodes[i]);
		}
		for (uint32_t j = 0; j < w; j++, k++) {
			node = child_of(cct, node, frames[n - 1 - k].ip, frames[n - 1 - k].sp, hs[j]);
			if (node == NW_CCT_NONE)
				break;
			if (k < cct->cap_path)
				cct->path[k] = node;
		}
	}
	cct->npath = (uint32_t)(k < cct->cap_path ? k : cct->cap_path);
	return node;
}

uint32_t nw_cct_subtree_preorder(const struct nw_cct *cct, uint32_t top, uint32_t *order)
{
	uint32_t n = 0, node = top;

	/* Iterative walk: down to the first child, else to the next sibling of
	 * the nearest ancestor below @top that has one. */
	while (node != NW_CCT_NONE) {
		order[n++] = node;
		if (cct->nodes[node].first_child != NW_CCT_NONE) {
			node = cct->nodes[node].first_child;
			continue;
		}
		while (node != top && cct->nodes[node].next_sibling == NW_CCT_NONE)
			node = cct->nodes[node].parent;
		node = node == top ? NW_CCT_NONE : cct->nodes[node].next_sibling;
	}
	return n;
}

uint32_t nw_cct_preorder(const struct nw_cct *cct, uint32_t *order)
{
	return nw_cct_subtree_preorder(cct, NW_CCT_ROOT, order);
}

int nw_cct_merge(struct nw_cct *dst, const struct nw_cct *src, nw_cct_map_fn map, void *arg)
{
	return nw_cct_merge_at(dst, NW_CCT_ROOT, src, map, arg);
}

int nw_cct_merge_at(struct nw_cct *dst, uint32_t at, const struct nw_cct *src, nw_cct_map_fn map,
		    void *arg)
{
	unsigned nm = dst->nmetrics < src->nmetrics ? dst->nmetrics : src->nmetrics;
	uint32_t *to = malloc((size_t)src->n * sizeof(*to));
	uint32_t *order = malloc((size_t)src->n * sizeof(*order));
	uint32_t n;
	int ret = 0;

	if (!to || !order) {
		ret = -ENOMEM;
		goto out;
	}
	n = nw_cct_preorder(src, order);
	to[NW_CCT_ROOT] = at;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = order[k], d;
		const uint64_t *sm = nw_cct_metrics(src, s);
		uint64_t *dm;

		if (s == NW_CCT_ROOT) {
			d = at;
		} else {
			uint64_t ip = map ? map(src, s, arg) : src->nodes[s].ip;

			d = nw_cct_child(dst, to[src->nodes[s].parent], ip, src->nodes[s].sp);
			if (d == NW_CCT_NONE) {
				ret = -ENOMEM;
				goto out;
			}
		}
		to[s] = d;
		dm = nw_cct_metrics(dst, d);
		for (unsigned m = 0; m < nm; m++)
			dm[m] += sm[m];
	}
out:
	free(to);
	free(order);
	return ret;
}

int nw_cct_reserve(struct nw_cct *cct, uint32_t n)
{
	if (n <= cct->cap)
		return 0;
	if (n >= NW_CCT_NONE)
		return -ENOMEM;
	return resize(cct, n);
}

void nw_cct_trim(struct nw_cct *cct)
{
	struct nw_cct_node *nodes;
	uint64_t *metrics;

	if (cct->n >= cct->cap || cct->changed || cct->slots)
		return;
	/* Shrinking: a failed realloc leaves the larger block, still right. */
	nodes = realloc(cct->nodes, (size_t)cct->n * sizeof(*nodes));
	metrics = nodes ? realloc(cct->metrics, (size_t)cct->n * cct->nmetrics * sizeof(*metrics) + 1)
			: NULL;
	if (nodes)
		cct->nodes = nodes;
	if (metrics) {
		cct->metrics = metrics;
		cct->cap = cct->n;
	}
}

uint32_t nw_cct_extend(struct nw_cct *cct, uint32_t n)
{
	uint32_t first = cct->n;

	if (n >= NW_CCT_NONE - cct->n || nw_cct_reserve(cct, cct->n + n))
		return NW_CCT_NONE;
	nw_cct_drop_index(cct);
	cct->n += n;
	return first;
}

void nw_cct_copy_below(struct nw_cct *dst, uint32_t at, uint32_t base, const struct nw_cct *src,
		       unsigned nm)
{
	/* Node j of @src is node base + j - 1 here; its root is @at. */
#define TO(j) ((j) == NW_CCT_NONE ? NW_CCT_NONE : (j) == NW_CCT_ROOT ? at : base + (j) - 1)
	for (uint32_t j = 1; j < src->n; j++) {
		const struct nw_cct_node *s = &src->nodes[j];
		struct nw_cct_node *d = &dst->nodes[base + j - 1];
		uint32_t parent = TO(s->parent);

		d->ip = s->ip;
		d->sp = s->sp;
		d->parent = parent;
		d->first_child = TO(s->first_child);
		d->next_sibling = TO(s->next_sibling);
		/* Parents come first in @src: the parent's hash is made. */
		d->hash = path_hash(dst->nodes[parent].hash, s->ip);
		memcpy(nw_cct_metrics(dst, base + j - 1), nw_cct_metrics(src, j),
		       nm * sizeof(uint64_t));
		if (dst->nmetrics > nm)
			memset(nw_cct_metrics(dst, base + j - 1) + nm, 0,
			       (dst->nmetrics - nm) * sizeof(uint64_t));
	}
	dst->nodes[at].first_child = TO(src->nodes[NW_CCT_ROOT].first_child);
	for (unsigned k = 0; k < nm; k++)
		nw_cct_metrics(dst, at)[k] += nw_cct_metrics(src, NW_CCT_ROOT)[k];
#undef TO
}

int nw_cct_track_changes(struct nw_cct *cct)
{
	if (!cct->changed) {
		cct->changed = calloc(((size_t)cct->cap + 63) / 64 + 1, sizeof(*cct->changed));
		if (!cct->changed)
			return -ENOMEM;
	}
	return 0;
}

void nw_cct_clear_changes(struct nw_cct *cct)
{
	if (cct->changed)
		memset(cct->changed, 0, ((size_t)cct->cap + 63) / 64 * sizeof(*cct->changed));
}

uint32_t nw_cct_append(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp)
{
	uint32_t i;

	if (cct->n == cct->cap && grow_nodes(cct))
		return NW_CCT_NONE;
	/* The index would have to follow every append: drop it, rebuilt on demand. */
	free(cct->slots);
	cct->slots = NULL;
	cct->nslots = 0;
	cct->npath = 0;
	i = cct->n++;
	new_child(cct, i, parent, ip, sp, path_hash(cct->nodes[parent].hash, ip));
	return i;
}

uint32_t nw_cct_append_unlinked(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp)
{
	struct nw_cct_node *node;

	if (cct->n == cct->cap || cct->slots)
		return NW_CCT_NONE;
	node = &cct->nodes[cct->n];
	node->ip = ip;
	node->sp = sp;
	node->parent = parent;
	node->first_child = NW_CCT_NONE;
	node->next_sibling = NW_CCT_NONE;
	node->hash = path_hash(cct->nodes[parent].hash, ip);
	return cct->n++;
}

void nw_cct_link_in_order(struct nw_cct *cct)
{
	for (uint32_t i = 0; i < cct->n; i++)
		cct->nodes[i].first_child = NW_CCT_NONE;
	/* Backwards, each node put first: every list ends in index order. */
	for (uint32_t i = cct->n; i-- > 1;) {
		struct nw_cct_node *parent = &cct->nodes[cct->nodes[i].parent];

		cct->nodes[i].next_sibling = parent->first_child;
		parent->first_child = i;
	}
}

void nw_cct_reverse_children(struct nw_cct *cct)
{
	for (uint32_t i = 0; i < cct->n; i++) {
		uint32_t prev = NW_CCT_NONE, c = cct->nodes[i].first_child;

		while (c != NW_CCT_NONE) {
			uint32_t next = cct->nodes[c].next_sibling;

			cct->nodes[c].next_sibling = prev;
			prev = c;
			c = next;
		}
		cct->nodes[i].first_child = prev;
	}
}

void nw_cct_truncate(struct nw_cct *cct, uint32_t n)
{
	if (n < 1 || n >= cct->n)
		return;
	nw_cct_drop_index(cct);
	cct->n = n;
}

void nw_cct_drop_index(struct nw_cct *cct)
{
	free(cct->slots);
	cct->slots = NULL;
	cct->nslots = 0;
	free(cct->path);
	cct->path = NULL;
	cct->npath = cct->cap_path = 0;
}
