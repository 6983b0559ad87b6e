/* SPDX-License-Identifier: MIT */
/*
 * The frame chain of every physical node, found before the merge (see
 * build.h): each physical node is resolved once to its place (the
 * model's places, model/places.h), and each place given a chain once, so
 * a symbol entry is turned into frames once however many nodes, threads
 * and epochs share it.
 */
#include "report/build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/places.h"
#include "util/parallel.h"
#include "util/strbuf.h"

/* Inline chains deeper than this keep their outermost frames. */
#define MAX_CHAIN 256
/* The cache of recent ips of a tree's worker, at most (model/places.h). */
#define RECENT 4096

/*
 * A new chain of the frames of place @pl (a caller's named at its return
 * address), its index in *@ret.  -ENOMEM.
 */
static int make_chain(struct builder *b, const struct nw_place *pl, uint32_t *ret)
{
	uint32_t buf[MAX_CHAIN];
	struct nw_resolved r;
	int n;

	nw_place_resolved(b->m, pl, pl->caller, &r);
	n = nw_stacks_frames_of(&b->s->frames, &r, buf, MAX_CHAIN);
	if (n < 0 || nw_grow(&b->chains, &b->cap_chains, b->nchains + 1, sizeof(*b->chains)) ||
	    nw_grow(&b->pool, &b->cap_pool, b->npool + (size_t)n, sizeof(*b->pool)))
		return -ENOMEM;
	b->chains[b->nchains] = (struct chain){ .first = (uint32_t)b->npool, .n = (uint32_t)n };
	memcpy(b->pool + b->npool, buf, (size_t)n * sizeof(*buf));
	b->npool += (size_t)n;
	*ret = (uint32_t)b->nchains++;
	return 0;
}

/*
 * The chain of place @id of the model, @pl (a worker's copy of it, as the
 * first tree that met it met it): made on its first use.  Every place
 * without a module shares one chain, "[unknown]".  -ENOMEM.
 */
static int chain_of_place(struct builder *b, size_t id, const struct nw_place *pl, uint32_t *ret)
{
	uint32_t *c;

	if (pl->module == NW_PLACE_NO_MODULE) {
		c = &b->unknown_chain;
	} else {
		if (nw_grow_fill(&b->place_chain, &b->nplace_chain, &b->cap_place_chain, id,
				 sizeof(*b->place_chain), 0xff))
			return -ENOMEM;
		c = &b->place_chain[id];
	}
	if (*c == UINT32_MAX && make_chain(b, pl, c))
		return -ENOMEM;
	*ret = *c;
	return 0;
}

/*
 * The places a tree's nodes stand for, before the merge: a table of the
 * tree's own, filled by a worker per tree (the model is only read), in
 * the order the tree's nodes meet them.  They are then interned into the
 * model's places and given chains tree by tree, in order, so the frames
 * are numbered by the trees alone, as one thread going through them
 * would.
 */
struct tree_keys {
	struct nw_places places;  /* sealed once the tree is resolved */
	uint32_t *to_chain;       /* per place of the tree: its chain */
};

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
 * node's place in the tree's own table (see struct tree_keys) in
 * bt->chain, taken for its chain later; with workers, each node's subtree size (their work); pruning,
 * each node's inclusive weight; with a split or node map, room for each
 * node's symbolic node.  -ENOMEM in b->keys_ret[i].
 */
static void resolve_tree(void *arg, uint32_t i)
{
	struct builder *b = arg;
	struct btree *bt = &b->trees[i];
	struct tree_keys *k = &b->keys[i];
	const struct nw_cct *t = bt->tr->cct;
	struct nw_place_cache recent = { 0 };
	int ret = -ENOMEM;

	/* A small tree, a small cache: most trees of a build are a few nodes. */
	bt->chain = malloc((size_t)t->n * sizeof(*bt->chain));
	if (!bt->chain || nw_place_cache_init(&recent, t->n < RECENT ? t->n : RECENT) ||
	    nw_places_resolve_tree(&k->places, &recent, b->m, bt->tr, bt->chain, NULL))
		goto out;
	bt->chain[NW_CCT_ROOT] = 0;
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
	nw_place_cache_fini(&recent);
	/*
	 * Every tree's places live until all are interned: without the index
	 * (not read again) and the slack, 12 bytes a place.
	 */
	nw_places_seal(&k->places);
	b->keys_ret[i] = ret;
}

/*
 * Tree @i's places interned into the model's and given their chains, in
 * the order the tree met them.  -ENOMEM.
 */
static int intern_keys(struct builder *b, uint32_t i)
{
	struct tree_keys *k = &b->keys[i];

	k->to_chain = malloc((k->places.n ? k->places.n : 1) * sizeof(*k->to_chain));
	if (!k->to_chain)
		return -ENOMEM;
	for (size_t j = 0; j < k->places.n; j++) {
		const struct nw_place *pl = &k->places.v[j];
		int64_t id = nw_places_intern(b->m->places, pl);

		if (id < 0 || chain_of_place(b, (size_t)id, pl, &k->to_chain[j]))
			return -ENOMEM;
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
		nw_places_fini(&b->keys[i].places);
		free(b->keys[i].to_chain);
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
	b->unknown_chain = UINT32_MAX;
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
	free(b->place_chain);
	free(b->pool);
}
