/* SPDX-License-Identifier: MIT */
/* The places of a measurement; see places.h. */
#include "model/places.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* Ids fit in 31 bits: a cache slot keeps the caller flag in the 32nd. */
#define MAX_PLACES ((size_t)INT32_MAX - 1)
#define SLOT_EMPTY UINT32_MAX

void nw_places_init(struct nw_places *p)
{
	memset(p, 0, sizeof(*p));
}

void nw_places_fini(struct nw_places *p)
{
	free(p->v);
	nw_index_fini(&p->ix);
	memset(p, 0, sizeof(*p));
}

struct nw_places *nw_places_new(void)
{
	struct nw_places *p = malloc(sizeof(*p));

	if (p)
		nw_places_init(p);
	return p;
}

void nw_places_free(struct nw_places *p)
{
	if (!p)
		return;
	nw_places_fini(p);
	free(p);
}

void nw_places_clear(struct nw_places *p)
{
	nw_places_fini(p);
}

/* One finalizer of both: interning runs per node of every tree read. */
static uint64_t key_hash(uint32_t module, uint64_t addr)
{
	return nw_hash_u64(addr + (uint64_t)module * 0x9e3779b97f4a7c15ULL);
}

static uint64_t place_hash(const void *ctx, uint32_t i)
{
	const struct nw_place *pl = &((const struct nw_places *)ctx)->v[i];

	return key_hash(pl->module, pl->addr);
}

static bool place_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_place *a = &((const struct nw_places *)ctx)->v[i], *b = key;

	return a->module == b->module && a->addr == b->addr;
}

/* nw_places_intern() of @key of hash @h. */
static int64_t intern_hashed(struct nw_places *p, const struct nw_place *key, uint64_t h)
{
	uint32_t i = nw_index_find(&p->ix, h, place_eq, p, key), *slot;

	/* Found (the comparison inline), or new: once per place, the slot to fill. */
	if (i != NW_INDEX_NONE)
		return i;
	slot = nw_index_slot(&p->ix, h, place_eq, place_hash, p, key);
	if (!slot)
		return -ENOMEM;
	if (p->n >= MAX_PLACES || nw_grow(&p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return -ENOMEM;
	p->v[p->n] = *key;
	nw_index_fill(&p->ix, slot, (uint32_t)p->n);
	return (int64_t)p->n++;
}

int64_t nw_places_intern(struct nw_places *p, const struct nw_place *key)
{
	return intern_hashed(p, key, key_hash(key->module, key->addr));
}

void nw_places_seal(struct nw_places *p)
{
	nw_index_fini(&p->ix);
	if (p->n && p->n < p->cap) {
		struct nw_place *fit = realloc(p->v, p->n * sizeof(*p->v));

		if (fit) {
			p->v = fit;
			p->cap = p->n;
		}
	}
}

void nw_place_resolved(const struct nw_measurement *m, const struct nw_place *pl, bool caller,
		       struct nw_resolved *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->addr = pl->addr;
	ret->caller = caller;
	if (pl->module == NW_PLACE_NO_MODULE)
		return;
	ret->module_index = pl->module;
	ret->module = &m->modules->v[pl->module];
	ret->sym = nw_symtab_lookup(m->symtab, pl->module, pl->addr);
}

/* ---- the cache of recent ips ---- */

int nw_place_cache_init(struct nw_place_cache *c, uint32_t slots)
{
	uint32_t n = 1;

	if (!slots)
		slots = NW_PLACE_CACHE_SLOTS;
	while (n < slots && n < (1u << 24))
		n *= 2;
	c->slots = malloc(n * sizeof(*c->slots));
	c->mask = n - 1;
	if (!c->slots)
		return -ENOMEM;
	nw_place_cache_clear(c);
	return 0;
}

void nw_place_cache_fini(struct nw_place_cache *c)
{
	free(c->slots);
	c->slots = NULL;
	c->mask = 0;
}

void nw_place_cache_clear(struct nw_place_cache *c)
{
	for (uint32_t i = 0; c->slots && i <= c->mask; i++)
		c->slots[i].key = SLOT_EMPTY;
}

/*
 * The slot of (@epoch, @ip, @caller): two multiplies and a shift, for a table
 * that keeps nothing but recent answers (a collision costs a lookup).
 */
static struct nw_place_slot *slot_of(const struct nw_place_cache *c, uint32_t epoch, uint64_t ip,
				     bool caller)
{
	uint64_t h = (ip ^ ((uint64_t)epoch << 1 | caller) * 0xff51afd7ed558ccdULL) *
		     0x9e3779b97f4a7c15ULL;

	return &c->slots[(h >> 32) & c->mask];
}

static bool slot_holds(const struct nw_place_slot *s, uint32_t epoch, uint64_t ip, bool caller)
{
	return s->key != SLOT_EMPTY && s->ip == ip && s->epoch == epoch && s->key >> 31 == caller;
}

/* The key of @ip (epoch @epoch, a return address when @caller), and its mapping in *@ret_map. */
static struct nw_place key_of(const struct nw_measurement *m, uint32_t epoch, uint64_t ip,
			      bool caller, const struct nw_map **ret_map)
{
	struct nw_resolved r;

	nw_measurement_locate(m, epoch, ip, caller, &r);
	if (r.map && r.module_index >= NW_PLACE_NO_MODULE)
		r.map = NULL; /* past what a place can name: never met */
	*ret_map = r.map;
	if (r.map)
		return (struct nw_place){ .addr = r.addr, .module = r.module_index, .caller = caller };
	return (struct nw_place){ .addr = nw_ip_pc(ip) - caller, .module = NW_PLACE_NO_MODULE,
				  .caller = caller };
}

static void slot_fill(struct nw_place_slot *s, uint32_t epoch, uint64_t ip, bool caller,
		      int64_t id, const struct nw_map *map)
{
	*s = (struct nw_place_slot){ .ip = ip, .epoch = epoch,
				     .key = (uint32_t)caller << 31 | (uint32_t)id, .map = map };
}

int64_t nw_places_resolve(struct nw_places *p, struct nw_place_cache *c,
			  const struct nw_measurement *m, uint32_t epoch, uint64_t ip, bool caller,
			  const struct nw_map **ret_map)
{
	struct nw_place_slot *s = slot_of(c, epoch, ip, caller);
	const struct nw_map *map;
	struct nw_place key;
	int64_t id;

	if (slot_holds(s, epoch, ip, caller)) {
		if (ret_map)
			*ret_map = s->map;
		return s->key & INT32_MAX;
	}
	key = key_of(m, epoch, ip, caller, &map);
	id = nw_places_intern(p, &key);
	if (id < 0)
		return id;
	slot_fill(s, epoch, ip, caller, id, map);
	if (ret_map)
		*ret_map = map;
	return id;
}

/* ---- a whole tree ---- */

/* Lookups of the table under way at once in nw_places_resolve_tree() (a power of two). */
#define AHEAD 16

/* A node whose place is being looked up: its key, and the slots fetched ahead. */
struct pending {
	struct nw_place key;
	uint32_t node;
	uint64_t hash;
	struct nw_place_slot *slot;
	const struct nw_map *map;
};

/* Fetches the index's slot of @q, where the lookup will read it. */
static void fetch_slot(const struct nw_places *p, const struct pending *q)
{
	if (p->ix.nslots)
		__builtin_prefetch(&p->ix.slots[(uint32_t)q->hash & (p->ix.nslots - 1)]);
}

/* Fetches the entry the slot of @q names, which the lookup compares with the key. */
static void fetch_entry(const struct nw_places *p, const struct pending *q)
{
	uint32_t e = p->ix.nslots ? p->ix.slots[(uint32_t)q->hash & (p->ix.nslots - 1)]
				  : NW_INDEX_NONE;

	if (e != NW_INDEX_NONE)
		__builtin_prefetch(&p->v[e]);
}

/* Interns @q's key: its id in @ids, @maps, and the cache.  -ENOMEM. */
static int finish(struct nw_places *p, const struct nw_tree *tr, const struct pending *q,
		  uint32_t *ids, const struct nw_map **maps)
{
	int64_t id = intern_hashed(p, &q->key, q->hash);

	if (id < 0)
		return (int)id;
	ids[q->node] = (uint32_t)id;
	if (maps)
		maps[q->node] = q->map;
	slot_fill(q->slot, tr->epoch, tr->cct->nodes[q->node].ip, q->key.caller, id, q->map);
	return 0;
}

int nw_places_resolve_tree(struct nw_places *p, struct nw_place_cache *c,
			   const struct nw_measurement *m, const struct nw_tree *tr, uint32_t *ids,
			   const struct nw_map **maps)
{
	const struct nw_cct *t = tr->cct;
	struct pending q[AHEAD];
	size_t k = 0, done;

	/*
	 * The places of a tree's nodes are scattered over a table larger
	 * than the caches: a node's slot is fetched AHEAD lookups before it
	 * is read, and the entry it names AHEAD / 2 before, so the misses
	 * overlap.  Lookups are made in node order all the same, so new
	 * places are numbered as node after node would number them.
	 */
	for (uint32_t n = 1; n < t->n; n++) {
		bool caller = nw_cct_is_return(t, n);
		uint64_t ip = t->nodes[n].ip;
		struct nw_place_slot *s = slot_of(c, tr->epoch, ip, caller);
		struct pending *at = &q[k % AHEAD];

		if (slot_holds(s, tr->epoch, ip, caller)) {
			ids[n] = s->key & INT32_MAX;
			if (maps)
				maps[n] = s->map;
			continue;
		}
		if (k >= AHEAD && finish(p, tr, at, ids, maps))
			return -ENOMEM;
		at->key = key_of(m, tr->epoch, ip, caller, &at->map);
		at->node = n;
		at->hash = key_hash(at->key.module, at->key.addr);
		at->slot = s;
		fetch_slot(p, at);
		if (++k > AHEAD / 2)
			fetch_entry(p, &q[(k - 1 - AHEAD / 2) % AHEAD]);
	}
	for (done = k > AHEAD ? k - AHEAD : 0; done < k; done++)
		if (finish(p, tr, &q[done % AHEAD], ids, maps))
			return -ENOMEM;
	return 0;
}
