/* SPDX-License-Identifier: MIT */
/*
 * The frame chain of every physical node, found before the merge (see
 * build.h): each physical node is resolved once, its (module, ELF
 * address), or its absence of a module, looked up in a memo of frame
 * chains, so a symbol entry is turned into frames once however many
 * nodes, threads and epochs share it.
 */
#include "report/build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/parallel.h"
#include "util/strbuf.h"

/* Inline chains deeper than this keep their outermost frames. */
#define MAX_CHAIN 256
/* The recently located (epoch, ip) kept in front of a tree's keys; a power of two. */
#define RECENT 4096

/* An ip recently located: its tree's key without the resolver or the keys' hash. */
struct recent {
	uint64_t ip;              /* ip << 1 | caller */
	uint32_t epoch;
	uint32_t key;             /* in struct tree_keys; UINT32_MAX: empty */
};

static uint64_t chain_key_hash(uint32_t module, uint64_t addr)
{
	return nw_hash_add(nw_hash_u64(addr), module);
}

static uint64_t chain_hash(const void *ctx, uint32_t i)
{
	const struct builder *b = ctx;

	return chain_key_hash(b->chains[i].module, b->chains[i].addr);
}

static bool chain_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct builder *b = ctx;
	const struct chain *k = key;

	return b->chains[i].module == k->module && b->chains[i].addr == k->addr;
}

/* The chain of the place @r (located, not yet looked up): the memo's, made on a miss. */
static const struct chain *chain_for(struct builder *b, struct nw_resolved r)
{
	struct chain key, *c;
	uint32_t *slot, buf[MAX_CHAIN];
	int n;

	key.module = r.map ? r.module_index : UINT32_MAX;
	key.addr = r.map ? r.addr : 0;
	slot = nw_index_slot(&b->ix, chain_key_hash(key.module, key.addr), chain_eq, chain_hash, b,
			     &key);
	if (!slot)
		return NULL;
	if (*slot != NW_INDEX_NONE)
		return &b->chains[*slot];
	if (r.map)
		r.sym = nw_symtab_lookup(b->m->symtab, r.module_index, r.addr);
	n = nw_stacks_frames_of(&b->s->frames, &r, buf, MAX_CHAIN);
	if (n < 0 || nw_grow(&b->chains, &b->cap_chains, b->nchains + 1, sizeof(*b->chains)) ||
	    nw_grow(&b->pool, &b->cap_pool, b->npool + (size_t)n, sizeof(*b->pool)))
		return NULL;
	c = &b->chains[b->nchains];
	*c = key;
	c->first = (uint32_t)b->npool;
	c->n = (uint32_t)n;
	memcpy(b->pool + b->npool, buf, (size_t)n * sizeof(*buf));
	b->npool += (size_t)n;
	nw_index_fill(&b->ix, slot, (uint32_t)b->nchains);
	return &b->chains[b->nchains++];
}

/*
 * The places a tree's nodes stand for, before the merge: each node's
 * (module, address), found by a worker per tree (the model is only read),
 * numbered in the order the tree's nodes meet them.  Their chains are
 * then taken from the memo tree by tree, in order, so the frames are
 * numbered by the trees alone, as one thread going through them would.
 */
struct tree_keys {
	struct nw_resolved *v;    /* located, not looked up */
	size_t n, cap;
	struct nw_index ix;
	uint32_t *to_chain;       /* per key: its chain in the memo */
};

static uint64_t place_hash(const struct nw_resolved *r)
{
	return r->map ? chain_key_hash(r->module_index, r->addr) : chain_key_hash(UINT32_MAX, 0);
}

static uint64_t key_rehash(const void *ctx, uint32_t i)
{
	return place_hash(&((const struct tree_keys *)ctx)->v[i]);
}

static bool key_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_resolved *a = &((const struct tree_keys *)ctx)->v[i], *b = key;

	if (!a->map || !b->map)
		return !a->map && !b->map;
	return a->module_index == b->module_index && a->addr == b->addr;
}

/* The key of ip @ip of a tree of epoch @epoch (caller frames at ip - 1) in @k.  -ENOMEM. */
static int64_t key_of_ip(const struct builder *b, struct tree_keys *k, struct recent *recent,
			 uint32_t epoch, uint64_t ip, bool caller)
{
	uint64_t key_ip = ip << 1 | caller;
	struct recent *rc = &recent[nw_hash_add(nw_hash_u64(key_ip), epoch) & (RECENT - 1)];
	struct nw_resolved r;
	uint32_t *slot;

	if (rc->key != UINT32_MAX && rc->ip == key_ip && rc->epoch == epoch)
		return rc->key;
	nw_measurement_locate(b->m, epoch, ip, caller, &r);
	slot = nw_index_slot(&k->ix, place_hash(&r), key_eq, key_rehash, k, &r);
	if (!slot || (*slot == NW_INDEX_NONE && nw_grow(&k->v, &k->cap, k->n + 1, sizeof(*k->v))))
		return -ENOMEM;
	if (*slot == NW_INDEX_NONE) {
		k->v[k->n] = r;
		nw_index_fill(&k->ix, slot, (uint32_t)k->n++);
	}
	*rc = (struct recent){ key_ip, epoch, *slot };
	return *slot;
}

/* The weight of metric prune_metric of every node of @tree below and with it, in @v. */
static void inclusive(const struct nw_cct *tree, unsigned metric, uint64_t *v)
{
	for (uint32_t i = 0; i < tree->n; i++)
		v[i] = metric < tree->nmetrics ? nw_cct_metrics(tree, i)[metric] : 0;
	/* Parents come before their children in every tree: one pass up. */
	for (uint32_t i = tree->n; i-- > 1;)
		v[tree->nodes[i].parent] += v[i];
}

/*
 * What the merge reads of tree @i besides the tree, on a worker: each
 * node's key (see struct tree_keys) in bt->chain, taken for its chain
 * later; with workers, each node's subtree size (their work); pruning,
 * each node's inclusive weight; with a split or node map, room for each
 * node's symbolic node.  -ENOMEM in b->keys_ret[i].
 */
static void resolve_tree(void *arg, uint32_t i)
{
	struct builder *b = arg;
	struct btree *bt = &b->trees[i];
	struct tree_keys *k = &b->keys[i];
	const struct nw_cct *t = bt->tr->cct;
	struct recent *recent = malloc(RECENT * sizeof(*recent));
	int ret = -ENOMEM;

	bt->chain = malloc((size_t)t->n * sizeof(*bt->chain));
	if (!recent || !bt->chain)
		goto out;
	memset(recent, 0xff, RECENT * sizeof(*recent));
	bt->chain[NW_CCT_ROOT] = 0;
	for (uint32_t n = 1; n < t->n; n++) {
		int64_t key = key_of_ip(b, k, recent, bt->tr->epoch, t->nodes[n].ip,
					nw_cct_is_return(t, n));

		if (key < 0)
			goto out;
		bt->chain[n] = (uint32_t)key;
	}
	if (b->defer_below) {
		bt->size = malloc((size_t)t->n * sizeof(*bt->size));
		if (!bt->size)
			goto out;
		for (uint32_t n = 0; n < t->n; n++)
			bt->size[n] = 1;
		for (uint32_t n = t->n; n-- > 1;)
			bt->size[t->nodes[n].parent] += bt->size[n];
	}
	if (b->with_to) {
		bt->to = malloc((size_t)t->n * sizeof(*bt->to));
		if (!bt->to)
			goto out;
		bt->to[NW_CCT_ROOT] = NW_CCT_ROOT;
		if (b->defer_below) {
			bt->part = malloc((size_t)t->n * sizeof(*bt->part));
			if (!bt->part)
				goto out;
			memset(bt->part, 0xff, (size_t)t->n * sizeof(*bt->part));
		}
	}
	if (b->prune) {
		bt->incl = malloc((size_t)t->n * sizeof(*bt->incl));
		if (!bt->incl)
			goto out;
		inclusive(t, b->prune_metric, bt->incl);
	}
	ret = 0;
out:
	free(recent);
	/*
	 * Every tree's keys live until all are interned: without the index
	 * (not read again) and the slack, a build's 1,400 trees hold 3 MB,
	 * not 10.
	 */
	nw_index_fini(&k->ix);
	if (k->n && k->n < k->cap) {
		struct nw_resolved *fit = realloc(k->v, k->n * sizeof(*k->v));

		if (fit) {
			k->v = fit;
			k->cap = k->n;
		}
	}
	b->keys_ret[i] = ret;
}

/* Tree @i's keys to chains of the memo, in the order the tree met them.  -ENOMEM. */
static int intern_keys(struct builder *b, uint32_t i)
{
	struct tree_keys *k = &b->keys[i];

	k->to_chain = malloc((k->n ? k->n : 1) * sizeof(*k->to_chain));
	if (!k->to_chain)
		return -ENOMEM;
	for (size_t j = 0; j < k->n; j++) {
		const struct chain *c = chain_for(b, k->v[j]);

		if (!c)
			return -ENOMEM;
		k->to_chain[j] = (uint32_t)(c - b->chains);
	}
	return 0;
}

/* Tree @i's nodes' keys replaced by their chains, on a worker. */
static void keys_to_chains(void *arg, uint32_t i)
{
	struct builder *b = arg;
	const struct btree *bt = &b->trees[i];
	const uint32_t *to = b->keys[i].to_chain;

	for (uint32_t n = 1; n < bt->tr->cct->n; n++)
		bt->chain[n] = to[bt->chain[n]];
}

static void free_keys(struct builder *b)
{
	for (size_t i = 0; b->keys && i < b->ntrees; i++) {
		free(b->keys[i].v);
		free(b->keys[i].to_chain);
		nw_index_fini(&b->keys[i].ix);
	}
	free(b->keys);
	free(b->keys_ret);
	b->keys = NULL;
	b->keys_ret = NULL;
}

int nw_chains_resolve(struct builder *b, const struct nw_stacks_opts *o, uint32_t nworkers,
		      int64_t *thread_frame)
{
	const struct nw_measurement *m = b->m;
	size_t t = 0;
	int ret = 0;

	for (uint32_t ti = 0; ti < m->nthreads; ti++) {
		const struct nw_mthread *th = &m->threads[ti];

		if (!nw_filter_thread(o->filter, th))
			continue;
		if (nw_grow(&b->trees, &b->cap_trees, b->ntrees + th->ntrees, sizeof(*b->trees)))
			return -ENOMEM;
		for (uint32_t k = 0; k < th->ntrees; k++)
			b->trees[b->ntrees++] = (struct btree){ .tr = &th->trees[k], .ti = ti, .t = k };
	}
	b->keys = calloc(b->ntrees ? b->ntrees : 1, sizeof(*b->keys));
	b->keys_ret = calloc(b->ntrees ? b->ntrees : 1, sizeof(*b->keys_ret));
	if (!b->keys || !b->keys_ret)
		return -ENOMEM;
	nw_parallel_for((uint32_t)b->ntrees, nworkers, resolve_tree, b);
	for (size_t i = 0; i < b->ntrees && !ret; i++)
		ret = b->keys_ret[i];
	for (uint32_t ti = 0; ti < m->nthreads && !ret; ti++) {
		const struct nw_mthread *th = &m->threads[ti];

		if (!nw_filter_thread(o->filter, th))
			continue;
		for (; t < b->ntrees && b->trees[t].ti == ti && !ret; t++)
			ret = intern_keys(b, (uint32_t)t);
		if (!ret && o->per_thread && th->ntrees) {
			thread_frame[ti] = nw_stacks_thread_frame(&b->s->frames, th);
			if (thread_frame[ti] < 0)
				ret = -ENOMEM;
		}
	}
	if (!ret)
		nw_parallel_for((uint32_t)b->ntrees, nworkers, keys_to_chains, b);
	free_keys(b);
	return ret;
}

void nw_chains_fini(struct builder *b)
{
	free_keys(b);
	free(b->chains);
	nw_index_fini(&b->ix);
	free(b->pool);
}
