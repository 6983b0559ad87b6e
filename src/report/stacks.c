/* SPDX-License-Identifier: MIT */
/*
 * Building symbolic stacks from the model; see stacks.h.  Each physical
 * node is resolved once: its (module, ELF address), or its absence of a
 * module, is looked up in a memo of frame chains, so a symbol entry is
 * turned into frames once however many nodes, threads and epochs share it.
 */
#include "report/stacks.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/parallel.h"
#include "util/strbuf.h"

/* Inline chains deeper than this keep their outermost frames. */
#define MAX_CHAIN 256
/* The recently located (epoch, ip) kept in front of a tree's keys; a power of two. */
#define RECENT 4096
/* Groups of children up to this many are sorted by insertion, not qsort(). */
#define SMALL_SORT 48
/* Workers when nw_stacks_opts.workers leaves it to the machine, and the least work for them. */
#define MAX_WORKERS 8
#define PARALLEL_NODES 200000
/* Work is handed out in groups of a share of the whole to each worker: 1 / (n * PARTS). */
#define PARTS 16

bool nw_filter_thread(const struct nw_filter *f, const struct nw_mthread *th)
{
	if (!f)
		return true;
	if (f->tid >= 0 && (uint64_t)f->tid != th->tid)
		return false;
	if (f->pid >= 0 && (uint64_t)f->pid != th->pid)
		return false;
	if (f->comm && strcmp(f->comm, th->comm ? th->comm : ""))
		return false;
	return true;
}

struct nw_stacks *nw_stacks_new(const struct nw_measurement *m, unsigned nmetrics)
{
	struct nw_stacks *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->m = m;
	nw_frames_init(&s->frames);
	s->tree = nw_cct_new(nmetrics);
	if (!s->tree) {
		free(s);
		return NULL;
	}
	return s;
}

static void free_node_map(struct nw_stacks *s)
{
	for (uint32_t ti = 0; s->node_map && s->m && ti < s->m->nthreads; ti++) {
		for (uint32_t t = 0; s->node_map[ti] && t < s->m->threads[ti].ntrees; t++)
			free(s->node_map[ti][t]);
		free(s->node_map[ti]);
	}
	free(s->node_map);
	s->node_map = NULL;
}

void nw_stacks_free(struct nw_stacks *s)
{
	if (!s)
		return;
	nw_frames_fini(&s->frames);
	nw_cct_free(s->tree);
	free(s->thread_node);
	free(s->unfiltered);
	free_node_map(s);
	free(s);
}

void nw_stacks_set_tree(struct nw_stacks *s, struct nw_cct *tree)
{
	free_node_map(s); /* it names the nodes of the old tree */
	/* Each thread's frame node is found again below the root, by its frame. */
	for (uint32_t ti = 0; s->thread_node && s->m && ti < s->m->nthreads; ti++) {
		uint32_t old = s->thread_node[ti];

		if (old != NW_CCT_NONE)
			s->thread_node[ti] = old < s->tree->n
						     ? nw_cct_find(tree, NW_CCT_ROOT, s->tree->nodes[old].ip)
						     : NW_CCT_NONE;
	}
	nw_cct_free(s->tree);
	s->tree = tree;
}

int nw_stacks_frames_of(struct nw_frames *f, const struct nw_resolved *r, uint32_t *out,
			uint32_t max)
{
	const struct nw_symentry *e = r->sym;
	uint32_t n = 0, first;
	int64_t fi;

	if (!max)
		return 0;
	if (!r->map) {
		fi = nw_frames_intern(f, NW_FRAME_UNKNOWN, "[unknown]", NULL, 0, NULL);
		if (fi < 0)
			return -ENOMEM;
		out[0] = (uint32_t)fi;
		return 1;
	}
	if (!e || !e->nframes) {
		/* Kernel code kallsyms did not name (kptr_restrict): "[kernel]". */
		bool kernel = !strcmp(r->module->path, NW_KERNEL_MODULE);
		char *name = kernel ? strdup("[kernel]")
				    : nw_strdup_printf("%s+0x%llx", nw_basename(r->module->path),
						       (unsigned long long)(r->addr + r->caller));

		if (!name)
			return -ENOMEM;
		fi = nw_frames_intern(f, NW_FRAME_ADDRESS, name, NULL, 0, r->module->path);
		free(name);
		if (fi < 0)
			return -ENOMEM;
		out[0] = (uint32_t)fi;
		return 1;
	}
	/* frames[] is innermost first: the outermost goes nearest the root. */
	first = e->nframes > max ? e->nframes - max : 0;
	for (uint32_t k = e->nframes; k-- > first;) {
		const struct nw_symframe *fr = &e->frames[k];

		fi = nw_frames_intern(f, NW_FRAME_FUNCTION, fr->function ? fr->function : "[unknown]",
				      fr->decl_file ? fr->decl_file : fr->file, fr->decl_line,
				      r->module->path);
		if (fi < 0)
			return -ENOMEM;
		out[n++] = (uint32_t)fi;
	}
	return (int)n;
}

int64_t nw_stacks_thread_frame(struct nw_frames *f, const struct nw_mthread *th)
{
	char *name = nw_strdup_printf("%s-%u", th->comm ? th->comm : "", th->tid);
	int64_t fi;

	if (!name)
		return -ENOMEM;
	for (char *c = name; *c; c++)
		if (*c == ' ' || *c == ';')
			*c = '_';
	fi = nw_frames_intern(f, NW_FRAME_THREAD, name, NULL, 0, NW_FRAMES_THREAD_MODULE);
	free(name);
	return fi;
}

/* ---- the memo: (module, address) -> frame chain ---- */

struct chain {
	uint32_t module;          /* UINT32_MAX: no module */
	uint64_t addr;
	uint32_t first, n;        /* in pool */
};

/*
 * The build merges every selected tree at once, top down: the physical
 * nodes that land on one symbolic node are a group; their children (or
 * the next frame of their inline chain) are sorted by frame, and each run
 * of equal frames becomes one new symbolic child, created once, in
 * preorder.  No (parent, frame) lookups in the growing tree, which would
 * miss the caches once it is large.
 *
 * Each node's chain is found before the merge (each tree located on a
 * worker, the chains then taken tree by tree in node order), so the
 * frames are numbered by the trees alone.  On a machine of several
 * processors, a group of less than a share of the work (physical nodes
 * below it) is left as a part: after the top of the tree is merged,
 * workers expand the parts side by side into trees of their own, each
 * part whole by one of them, and the parts are grafted in their order.
 * Each symbolic node's children are in frame order either way: the tree
 * does not depend on the number of workers.
 */

/*
 * A physical node of tree @tree at position @pos of its frame chain, with
 * what the merge reads of the node (read once, where its sibling list is
 * walked, not again in the merge's order, which jumps between trees).
 */
struct cursor {
	uint32_t tree, node, chain, pos;
	uint32_t frame; /* the chain's frame at pos: sorted and compared without the pool */
	uint32_t first_child;
	uint64_t sp;
};

/* A symbolic node being expanded: its child cursors [begin, end), the next run. */
struct level {
	uint32_t sym;
	size_t begin, end, next;
};

/* A tree being merged. */
struct btree {
	const struct nw_tree *tr;
	uint32_t ti, t;
	uint32_t *chain;          /* each node's frame chain (the root's is not used) */
	uint32_t *size;           /* in parallel: each node's subtree's node count */
	uint32_t *to;             /* with a split: each node's symbolic node */
	uint32_t *part;           /* with both and workers: the part whose tree @to names */
	uint64_t *incl;           /* pruning: each node's inclusive weight */
};

/*
 * A group left to the workers: symbolic node @sym of the tree, to be
 * expanded from the cursors [first, first + n) of the deferred ones.  The
 * worker @worker builds it in a tree of its own, then it is grafted at
 * @sym.
 */
struct part {
	uint32_t sym;
	size_t first, n;
	uint64_t work;            /* physical nodes below */
	uint32_t worker;
	struct nw_cct *tree;      /* its root is @sym */
	uint32_t base;            /* grafted: its node j is the stacks' tree's base + j - 1 */
};

/* An ip recently located: its tree's key without the resolver or the keys' hash. */
struct recent {
	uint64_t ip;              /* ip << 1 | caller */
	uint32_t epoch;
	uint32_t key;             /* in struct tree_keys; UINT32_MAX: empty */
};

struct builder {
	struct nw_stacks *s;
	const struct nw_measurement *m;
	struct nw_cct *dst;       /* the stacks' tree, or a worker's */
	struct chain *chains;
	size_t nchains, cap_chains;
	struct nw_index ix;
	uint32_t *pool;
	size_t npool, cap_pool;
	struct btree *trees;
	size_t ntrees, cap_trees;
	bool with_to;             /* each physical node's symbolic node kept */
	struct tree_keys *keys;   /* while resolving: per tree */
	int *keys_ret;
	struct cursor *cur;       /* a stack of the levels' child cursors */
	size_t ncur, cap_cur;
	struct level *levels;
	size_t nlevels, cap_levels;
	unsigned nm;              /* metrics copied */
	bool prune;               /* weigh each tree's nodes, prune at prune_below */
	unsigned prune_metric;
	uint64_t prune_below;     /* 0: no pruning */
	uint32_t *walk;           /* pruning: a stack of physical nodes */
	size_t cap_walk;
	uint64_t defer_below;     /* groups of less work go to the workers; 0: none */
	/* nw_stacks_opts.visit; with visit_names, frames sorted by the rank of their names */
	int (*visit)(void *arg, const struct nw_visit *v);
	void *visit_arg;
	struct nw_visit at;       /* the thread visited, and the depth of its frame */
	uint32_t *rank;           /* each frame's rank among the names */
	uint32_t *rep;            /* a frame of each rank */
	uint32_t in_part;         /* a worker: the part being expanded */
	struct cursor *dcur;      /* the deferred groups' cursors */
	size_t ndcur, cap_dcur;
	struct part *parts;
	size_t nparts, cap_parts;
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

static void free_keys(struct builder *b);

static void builder_fini(struct builder *b)
{
	free_keys(b);
	free(b->chains);
	nw_index_fini(&b->ix);
	free(b->pool);
	for (size_t i = 0; i < b->ntrees; i++) {
		free(b->trees[i].chain);
		free(b->trees[i].size);
		free(b->trees[i].to);
		free(b->trees[i].part);
		free(b->trees[i].incl);
	}
	free(b->rank);
	free(b->rep);
	free(b->dcur);
	for (size_t i = 0; i < b->nparts; i++)
		nw_cct_free(b->parts[i].tree);
	free(b->parts);
	free(b->trees);
	free(b->walk);
	free(b->cur);
	free(b->levels);
}

/* What the merge sorts and groups by: the frame, or with a visitor its name. */
static uint32_t key_of(const struct builder *b, uint32_t frame)
{
	return b->rank ? b->rank[frame] : frame;
}

static uint32_t frame_of(const struct builder *b, const struct cursor *c)
{
	return key_of(b, b->pool[b->chains[c->chain].first + c->pos]);
}

/* Appends the cursor of node @node of tree @tree (at its chain's start).  -ENOMEM. */
static int push_node(struct builder *b, uint32_t tree, uint32_t node)
{
	const struct btree *bt = &b->trees[tree];
	const struct nw_cct_node *n = &bt->tr->cct->nodes[node];
	uint32_t c = bt->chain[node];

	if (nw_grow(&b->cur, &b->cap_cur, b->ncur + 1, sizeof(*b->cur)))
		return -ENOMEM;
	/* A chain of no frames cannot happen: frames_of gives one at least. */
	b->cur[b->ncur++] = (struct cursor){ tree, node, c, 0, key_of(b, b->pool[b->chains[c].first]),
					     n->first_child, n->sp };
	return 0;
}

/* Appends the children of every physical node of @tree below symbolic node @top. */
static int push_roots(struct builder *b, size_t tree)
{
	const struct nw_cct *t = b->trees[tree].tr->cct;
	int ret = 0;

	for (uint32_t c = t->nodes[NW_CCT_ROOT].first_child; c != NW_CCT_NONE && !ret;
	     c = t->nodes[c].next_sibling)
		ret = push_node(b, (uint32_t)tree, c);
	return ret;
}

static int cmp_cursor(const void *x, const void *y)
{
	const struct cursor *cx = x, *cy = y;
	uint32_t fx = cx->frame, fy = cy->frame;

	if (fx != fy)
		return fx < fy ? -1 : 1;
	/* Then physical order: the first sp tag is the first tree's. */
	if (cx->tree != cy->tree)
		return cx->tree < cy->tree ? -1 : 1;
	return cx->node < cy->node ? -1 : cx->node > cy->node;
}

/* Sorts @n cursors by cmp_cursor(): most groups are a few children, for which qsort() costs. */
static void sort_cursors(struct cursor *v, size_t n)
{
	if (n > SMALL_SORT) {
		qsort(v, n, sizeof(*v), cmp_cursor);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		struct cursor c = v[i];
		size_t j = i;

		for (; j > 0 && cmp_cursor(&v[j - 1], &c) > 0; j--)
			v[j] = v[j - 1];
		v[j] = c;
	}
}

/*
 * Symbolic node @sym gets the cursors [a, e): the weight of the physical
 * nodes whose chain ends there, and a level of their children, sorted.
 */
static int expand(struct builder *b, uint32_t sym, size_t a, size_t e)
{
	struct nw_cct *dst = b->dst;
	size_t begin = b->ncur;
	int ret = 0;

	for (size_t i = a; i < e && !ret; i++) {
		struct cursor c = b->cur[i];
		const struct btree *bt = &b->trees[c.tree];
		const struct nw_cct *src = bt->tr->cct;

		if (c.pos + 1 < b->chains[c.chain].n) {
			if (nw_grow(&b->cur, &b->cap_cur, b->ncur + 1, sizeof(*b->cur)))
				return -ENOMEM;
			c.pos++;
			c.frame = frame_of(b, &c);
			b->cur[b->ncur++] = c;
			continue;
		}
		/* The end of the node's chain: its weight is here. */
		for (unsigned k = 0; k < b->nm; k++)
			nw_cct_metrics(dst, sym)[k] += nw_cct_metrics(src, c.node)[k];
		if (bt->to)
			bt->to[c.node] = sym;
		if (bt->part)
			bt->part[c.node] = b->in_part;
		for (uint32_t k = c.first_child; k != NW_CCT_NONE && !ret;
		     k = src->nodes[k].next_sibling)
			ret = push_node(b, c.tree, k);
	}
	if (ret)
		return ret;
	sort_cursors(b->cur + begin, b->ncur - begin);
	if (nw_grow(&b->levels, &b->cap_levels, b->nlevels + 1, sizeof(*b->levels)))
		return -ENOMEM;
	b->levels[b->nlevels++] = (struct level){ sym, begin, b->ncur, begin };
	return 0;
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
 * Symbolic node @sym, too light to draw, takes as its own the metrics of
 * the physical subtrees of the cursors [a, e).  -ENOMEM.
 */
static int collapse(struct builder *b, uint32_t sym, size_t a, size_t e)
{
	uint64_t *dst = nw_cct_metrics(b->dst, sym);

	for (size_t i = a; i < e; i++) {
		const struct nw_cct *src = b->trees[b->cur[i].tree].tr->cct;
		size_t n = 0;

		if (nw_grow(&b->walk, &b->cap_walk, 1, sizeof(*b->walk)))
			return -ENOMEM;
		b->walk[n++] = b->cur[i].node;
		while (n) {
			uint32_t node = b->walk[--n];

			for (unsigned k = 0; k < b->nm; k++)
				dst[k] += nw_cct_metrics(src, node)[k];
			for (uint32_t c = src->nodes[node].first_child; c != NW_CCT_NONE;
			     c = src->nodes[c].next_sibling) {
				if (nw_grow(&b->walk, &b->cap_walk, n + 1, sizeof(*b->walk)))
					return -ENOMEM;
				b->walk[n++] = c;
			}
		}
	}
	return 0;
}

/* Leaves symbolic node @sym, to be expanded from the cursors [a, e), to the workers. */
static int defer(struct builder *b, uint32_t sym, size_t a, size_t e, uint64_t work)
{
	if (nw_grow(&b->dcur, &b->cap_dcur, b->ndcur + (e - a), sizeof(*b->dcur)) ||
	    nw_grow(&b->parts, &b->cap_parts, b->nparts + 1, sizeof(*b->parts)))
		return -ENOMEM;
	memcpy(b->dcur + b->ndcur, b->cur + a, (e - a) * sizeof(*b->cur));
	b->parts[b->nparts++] = (struct part){ .sym = sym, .first = b->ndcur, .n = e - a,
					       .work = work };
	b->ndcur += e - a;
	return 0;
}

/* Expands the levels above @base, each symbolic child in turn, depth first. */
static int descend(struct builder *b, size_t base)
{
	int ret = 0;

	while (b->nlevels > base && !ret) {
		struct level *l = &b->levels[b->nlevels - 1];
		size_t r = l->next, a;
		uint32_t f, child, depth;
		uint64_t sp = 0, weight = 0, work = 0;

		if (r == l->end) {
			b->ncur = l->begin;
			b->nlevels--;
			/* Visited: the node and all below it are done with. */
			if (b->visit)
				nw_cct_truncate(b->dst, l->sym);
			continue;
		}
		f = b->cur[r].frame;
		for (; r < l->end && b->cur[r].frame == f; r++) {
			const struct cursor *c = &b->cur[r];

			if (!sp)
				sp = c->sp;
			if (b->prune_below)
				weight += b->trees[c->tree].incl[c->node];
			if (b->defer_below)
				work += b->trees[c->tree].size[c->node];
		}
		child = nw_cct_append(b->dst, l->sym, b->rep ? b->rep[f] : f, sp);
		if (child == NW_CCT_NONE)
			return -ENOMEM;
		depth = (uint32_t)(b->nlevels - base) + b->at.depth;
		a = l->next;
		/* Before expand(), which may move the levels. */
		l->next = r;
		if (b->prune_below && weight < b->prune_below)
			ret = collapse(b, child, a, r);
		else if (work < b->defer_below)
			ret = defer(b, child, a, r, work);
		else
			ret = expand(b, child, a, r);
		if (!ret && b->visit) {
			struct nw_visit v = { depth, (uint32_t)b->dst->nodes[child].ip,
					      b->at.thread, nw_cct_metrics(b->dst, child) };

			ret = b->visit(b->visit_arg, &v);
		}
	}
	return ret;
}

/* Merges the cursors at [a, e) (children of the symbolic root @top) into the tree. */
static int merge(struct builder *b, uint32_t top, size_t a, size_t e)
{
	sort_cursors(b->cur + a, e - a);
	if (nw_grow(&b->levels, &b->cap_levels, b->nlevels + 1, sizeof(*b->levels)))
		return -ENOMEM;
	b->levels[b->nlevels++] = (struct level){ top, a, e, a };
	return descend(b, b->nlevels - 1);
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

/*
 * The trees of the threads @o selects, each node's chain and what the
 * merge reads (resolve_tree()), on @nworkers threads; the frames of each
 * thread's chains are numbered thread by thread, each followed by the
 * thread's own frame with per_thread (its number in @thread_frame).
 * -ENOMEM.
 */
static int resolve(struct builder *b, const struct nw_stacks_opts *o, uint32_t nworkers,
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

/* ---- the workers: the deferred groups, expanded side by side ---- */

/* A worker: a builder of its own cursors and levels, sharing the rest. */
struct worker {
	struct builder b;
	struct builder *main;
	uint32_t index;
	pthread_t thread;
	int ret;
};

/* Expands the parts given to @w, each into a tree of its own, from its root. */
static void *worker_run(void *arg)
{
	struct worker *w = arg;
	struct builder *b = &w->b;

	for (size_t i = 0; i < w->main->nparts && !w->ret; i++) {
		struct part *p = &w->main->parts[i];

		if (p->worker != w->index)
			continue;
		p->tree = b->dst = nw_cct_new(w->main->dst->nmetrics);
		if (!p->tree || nw_grow(&b->cur, &b->cap_cur, p->n, sizeof(*b->cur))) {
			w->ret = -ENOMEM;
			break;
		}
		memcpy(b->cur, w->main->dcur + p->first, p->n * sizeof(*b->cur));
		b->ncur = p->n;
		b->in_part = (uint32_t)i;
		w->ret = expand(b, NW_CCT_ROOT, 0, p->n);
		if (!w->ret)
			w->ret = descend(b, 0);
		/* Every part is held until all are grafted: without their slack. */
		if (!w->ret)
			nw_cct_trim(p->tree);
		b->ncur = 0;
	}
	return NULL;
}

/* Gives each part to the least loaded worker, the heaviest parts first. */
static int assign(struct builder *b, uint32_t nworkers)
{
	uint64_t load[MAX_WORKERS] = { 0 };
	size_t *order = malloc((b->nparts ? b->nparts : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < b->nparts; i++)
		order[i] = i;
	/* Insertion by work, stable: the same parts, the same workers. */
	for (size_t i = 1; i < b->nparts; i++) {
		size_t v = order[i], j = i;

		for (; j > 0 && b->parts[order[j - 1]].work < b->parts[v].work; j--)
			order[j] = order[j - 1];
		order[j] = v;
	}
	for (size_t i = 0; i < b->nparts; i++) {
		uint32_t least = 0;

		for (uint32_t k = 1; k < nworkers; k++)
			if (load[k] < load[least])
				least = k;
		b->parts[order[i]].worker = least;
		load[least] += b->parts[order[i]].work;
	}
	free(order);
	return 0;
}

/* A part's tree copied below its symbolic node, on a worker, then freed. */
static void graft_part(void *arg, uint32_t i)
{
	struct builder *b = arg;
	struct part *p = &b->parts[i];

	nw_cct_copy_below(b->dst, p->sym, p->base, p->tree, b->nm);
	nw_cct_free(p->tree);
	p->tree = NULL;
}

/*
 * The physical nodes the workers expanded were mapped to their parts'
 * trees: node j of a part is now node base + j - 1 of the stacks' tree,
 * its root the part's symbolic node.  On a worker per tree.
 */
static void remap_tree(void *arg, uint32_t t)
{
	const struct builder *b = arg;
	const struct btree *bt = &b->trees[t];

	for (uint32_t n = 0; bt->part && n < bt->tr->cct->n; n++) {
		const struct part *p;

		if (bt->part[n] == UINT32_MAX)
			continue;
		p = &b->parts[bt->part[n]];
		bt->to[n] = bt->to[n] == NW_CCT_ROOT ? p->sym : p->base + bt->to[n] - 1;
	}
}

/*
 * Copies each part's tree below its symbolic node, the parts one after
 * the other in their order (as appending them in turn would), each on a
 * worker into its own range of nodes.  -ENOMEM.
 */
static int graft(struct builder *b, uint32_t nworkers)
{
	uint64_t total = 0;
	uint32_t base;

	for (size_t i = 0; i < b->nparts; i++)
		total += b->parts[i].tree->n - 1;
	if (total >= NW_CCT_NONE)
		return -ENOMEM;
	base = nw_cct_extend(b->dst, (uint32_t)total);
	if (base == NW_CCT_NONE)
		return -ENOMEM;
	for (size_t i = 0; i < b->nparts; i++) {
		b->parts[i].base = base;
		base += b->parts[i].tree->n - 1;
	}
	nw_parallel_for((uint32_t)b->nparts, nworkers, graft_part, b);
	if (b->with_to)
		nw_parallel_for((uint32_t)b->ntrees, nworkers, remap_tree, b);
	return 0;
}

/* Expands the deferred parts on @nworkers threads (this one among them) and grafts them. */
static int run_parts(struct builder *b, uint32_t nworkers)
{
	struct worker w[MAX_WORKERS];
	uint32_t started = 0;
	int ret = assign(b, nworkers);

	for (uint32_t k = 0; k < nworkers; k++) {
		w[k] = (struct worker){ .b = *b, .main = b, .index = k };
		/* Shared: the trees, chains and frames, read only now.  Its own: */
		w[k].b.cur = NULL, w[k].b.ncur = w[k].b.cap_cur = 0;
		w[k].b.levels = NULL, w[k].b.nlevels = w[k].b.cap_levels = 0;
		w[k].b.walk = NULL, w[k].b.cap_walk = 0;
		w[k].b.defer_below = 0;
	}
	for (uint32_t k = 1; k < nworkers && !ret; k++) {
		if (pthread_create(&w[k].thread, NULL, worker_run, &w[k]))
			break;
		started++;
	}
	if (!ret) {
		worker_run(&w[0]);
		/* Workers that could not start run here. */
		for (uint32_t k = started + 1; k < nworkers; k++)
			worker_run(&w[k]);
	}
	for (uint32_t k = 1; k <= started; k++)
		pthread_join(w[k].thread, NULL);
	for (uint32_t k = 0; k < nworkers; k++) {
		if (!ret)
			ret = w[k].ret;
		free(w[k].b.cur);
		free(w[k].b.levels);
		free(w[k].b.walk);
	}
	/* Every node is expanded: what the merge read of them goes before the tree grows. */
	for (size_t t = 0; t < b->ntrees; t++) {
		free(b->trees[t].chain);
		free(b->trees[t].size);
		b->trees[t].chain = NULL;
		b->trees[t].size = NULL;
	}
	if (!ret)
		ret = graft(b, nworkers);
	return ret;
}

/*
 * The copy of symbolic node @node's path below @prefix (the frames of
 * prefix path @p under @top): NW_CCT_NONE on ENOMEM.
 */
static uint32_t below_prefix(struct nw_cct *dst, uint32_t top, const struct nw_split_prefix *p,
			     uint32_t node)
{
	uint32_t path[1024], n = 0, at = top;
	uint32_t *heap = NULL, *v = path;
	size_t cap = sizeof(path) / sizeof(path[0]);

	for (uint32_t i = 0; i < p->n && at != NW_CCT_NONE; i++)
		at = nw_cct_child(dst, at, p->frames[i], 0);
	/* The symbolic path from @top down to @node, collected leaf first. */
	for (uint32_t i = node; i != top && i != NW_CCT_ROOT; i = dst->nodes[i].parent) {
		if (n == cap) {
			uint32_t *nv = malloc(2 * cap * sizeof(*nv));

			if (!nv) {
				free(heap);
				return NW_CCT_NONE;
			}
			memcpy(nv, v, n * sizeof(*nv));
			free(heap);
			heap = v = nv;
			cap *= 2;
		}
		v[n++] = i;
	}
	while (n > 0 && at != NW_CCT_NONE) {
		uint32_t i = v[--n];

		at = nw_cct_child(dst, at, dst->nodes[i].ip, dst->nodes[i].sp);
	}
	free(heap);
	return at;
}

/* What a split moves: out of its node, below the prefix frames. */
static int apply_split(struct builder *b, const struct nw_split *split, const uint32_t *tops)
{
	struct nw_cct *dst = b->dst;
	size_t se = 0;

	uint64_t *left = malloc((b->nm ? b->nm : 1) * sizeof(*left));

	if (!left)
		return -ENOMEM;
	for (size_t i = 0; i < b->ntrees; i++) {
		const struct btree *bt = &b->trees[i];
		const struct nw_cct *src = bt->tr->cct;
		uint32_t cur = NW_CCT_NONE;

		while (se < split->n && (split->entries[se].thread < bt->ti ||
					 (split->entries[se].thread == bt->ti &&
					  split->entries[se].tree < bt->t)))
			se++;
		for (; se < split->n && split->entries[se].thread == bt->ti &&
		       split->entries[se].tree == bt->t;
		     se++) {
			const struct nw_split_entry *e = &split->entries[se];
			const uint64_t *w = split->values + se * src->nmetrics;
			uint32_t at, from;

			if (e->node >= src->n || e->prefix >= split->nprefixes)
				continue;
			/* No more than the physical node holds moves: not another thread's. */
			if (e->node != cur) {
				memcpy(left, nw_cct_metrics(src, e->node), b->nm * sizeof(*left));
				cur = e->node;
			}
			from = bt->to[e->node];
			at = below_prefix(dst, tops[bt->ti], &split->prefixes[e->prefix], from);
			if (at == NW_CCT_NONE) {
				free(left);
				return -ENOMEM;
			}
			for (unsigned m = 0; m < b->nm; m++) {
				uint64_t v = w[m] < left[m] ? w[m] : left[m];

				left[m] -= v;
				nw_cct_metrics(dst, from)[m] -= v;
				nw_cct_metrics(dst, at)[m] += v;
			}
		}
	}
	free(left);
	return 0;
}

/* Moves the builder's node maps into s->node_map.  -ENOMEM. */
static int keep_node_map(struct nw_stacks *s, struct builder *b)
{
	free_node_map(s);
	s->node_map = calloc(s->m->nthreads ? s->m->nthreads : 1, sizeof(*s->node_map));
	if (!s->node_map)
		return -ENOMEM;
	for (size_t i = 0; i < b->ntrees; i++) {
		struct btree *bt = &b->trees[i];
		uint32_t ***slot = &s->node_map[bt->ti];

		if (!*slot) {
			*slot = calloc(s->m->threads[bt->ti].ntrees, sizeof(**slot));
			if (!*slot)
				return -ENOMEM;
		}
		(*slot)[bt->t] = bt->to;
		bt->to = NULL;
	}
	return 0;
}

static int cmp_name(const void *x, const void *y, void *arg)
{
	const struct nw_frames *f = arg;

	return strcmp(nw_func_name(&f->v[*(const uint32_t *)x], true),
		      nw_func_name(&f->v[*(const uint32_t *)y], true));
}

/*
 * Ranks the frames by name, equal names one rank, for a visitor; the
 * cursors pushed so far are keyed by rank from now.  -ENOMEM.
 */
static int rank_names(struct builder *b)
{
	const struct nw_frames *f = &b->s->frames;
	uint32_t *order = malloc((f->n ? f->n : 1) * sizeof(*order)), r = 0;

	b->rank = malloc((f->n ? f->n : 1) * sizeof(*b->rank));
	b->rep = malloc((f->n ? f->n : 1) * sizeof(*b->rep));
	if (!order || !b->rank || !b->rep) {
		free(order);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < f->n; i++)
		order[i] = i;
	qsort_r(order, f->n, sizeof(*order), cmp_name, (void *)f);
	for (uint32_t i = 0; i < f->n; i++) {
		if (i && cmp_name(&order[i - 1], &order[i], (void *)f))
			r++;
		b->rank[order[i]] = r;
		b->rep[r] = order[i];
	}
	for (size_t i = 0; i < b->ncur; i++)
		b->cur[i].frame = b->rank[b->cur[i].frame];
	free(order);
	return 0;
}

/*
 * How many workers expand the tree: @o's, else one per processor once the
 * selected trees are large enough to pay for the threads.
 */
static uint32_t workers_for(const struct nw_stacks *s, const struct nw_stacks_opts *o,
			    uint64_t *nodes)
{
	uint32_t cpus;

	*nodes = 0;
	for (uint32_t ti = 0; ti < s->m->nthreads; ti++)
		for (uint32_t t = 0; nw_filter_thread(o->filter, &s->m->threads[ti]) &&
				     t < s->m->threads[ti].ntrees;
		     t++)
			*nodes += s->m->threads[ti].trees[t].cct->n;
	if (o->workers)
		return o->workers < MAX_WORKERS ? o->workers : MAX_WORKERS;
	if (*nodes < PARALLEL_NODES)
		return 1;
	cpus = nw_parallel_workers();
	return cpus > MAX_WORKERS ? MAX_WORKERS : cpus;
}

int nw_stacks_build(struct nw_stacks *s, const struct nw_stacks_opts *o)
{
	const struct nw_split *split = o->split;
	struct builder b = { .s = s, .m = s->m, .dst = s->tree, .in_part = UINT32_MAX };
	uint32_t *tops = NULL, nworkers, rworkers;
	int64_t *thread_frame = NULL;
	uint64_t nodes = 0;
	int ret = 0;

	if (!s->m || (o->node_map && split) ||
	    (o->prune_share > 0 && (o->per_thread || split || o->node_map)) ||
	    (o->visit && (split || o->node_map || o->prune_share > 0 ||
			   (o->visit_names && o->per_thread))))
		return -EINVAL;
	b.visit = o->visit;
	b.visit_arg = o->visit_arg;
	b.at.thread = UINT32_MAX;
	b.nm = s->tree->nmetrics < s->m->nmetrics ? s->tree->nmetrics : s->m->nmetrics;
	b.prune = o->prune_share > 0 && o->prune_metric < b.nm;
	b.prune_metric = o->prune_metric;
	/*
	 * A visitor is called in order: one worker, this thread, for the
	 * merge; the trees' nodes are located on all of them still.
	 */
	rworkers = workers_for(s, o, &nodes);
	nworkers = o->visit ? 1 : rworkers;
	/* Groups of less than a share of the work for each worker are theirs. */
	if (nworkers > 1)
		b.defer_below = nodes / (nworkers * PARTS) + 1;
	tops = malloc((s->m->nthreads ? s->m->nthreads : 1) * sizeof(*tops));
	thread_frame = malloc((s->m->nthreads ? s->m->nthreads : 1) * sizeof(*thread_frame));
	if (!tops || !thread_frame) {
		ret = -ENOMEM;
		goto out;
	}
	if (o->per_thread) {
		free(s->thread_node);
		s->thread_node = malloc((s->m->nthreads ? s->m->nthreads : 1) *
					sizeof(*s->thread_node));
		if (!s->thread_node) {
			ret = -ENOMEM;
			goto out;
		}
		memset(s->thread_node, 0xff, (s->m->nthreads ? s->m->nthreads : 1) *
						     sizeof(*s->thread_node));
	}
	b.with_to = split != NULL || o->node_map;
	ret = resolve(&b, o, rworkers, thread_frame);
	for (uint32_t ti = 0, t = 0; ti < s->m->nthreads && !ret; ti++) {
		const struct nw_mthread *th = &s->m->threads[ti];
		size_t a = b.ncur, ta = t;

		tops[ti] = NW_CCT_ROOT;
		if (!nw_filter_thread(o->filter, th))
			continue;
		s->nthreads++;
		for (; t < b.ntrees && b.trees[t].ti == ti && !ret; t++)
			ret = push_roots(&b, t);
		if (ret || !o->per_thread || !th->ntrees)
			continue;
		/* Each thread below its own frame: its trees merge there, now. */
		{
			int64_t fi = thread_frame[ti];
			/*
			 * Found among the root's few children, not by nw_cct_child():
			 * merge() appends, which drops the tree's index, and
			 * rebuilding it for every thread costs the whole tree each.
			 */
			uint32_t top = o->visit ? NW_CCT_NONE
						: nw_cct_find(s->tree, NW_CCT_ROOT, (uint64_t)fi);

			if (top == NW_CCT_NONE)
				top = nw_cct_append(s->tree, NW_CCT_ROOT, (uint64_t)fi, 0);
			if (top == NW_CCT_NONE) {
				ret = -ENOMEM;
				break;
			}
			s->thread_node[ti] = tops[ti] = top;
			for (size_t k = ta; k < t; k++)
				for (unsigned j = 0; j < b.nm; j++)
					nw_cct_metrics(s->tree, top)[j] +=
						nw_cct_metrics(b.trees[k].tr->cct, NW_CCT_ROOT)[j];
			if (o->visit) {
				/* The thread's frame, then its stacks below it; then none of it is kept. */
				struct nw_visit v = { 1, (uint32_t)fi, ti,
						      nw_cct_metrics(s->tree, top) };

				b.at = v;
				ret = o->visit(o->visit_arg, &v);
				s->thread_node[ti] = NW_CCT_NONE;
			}
			if (!ret)
				ret = merge(&b, top, a, b.ncur);
			if (o->visit)
				nw_cct_truncate(s->tree, top);
			b.ncur = a;
		}
	}
	if (!ret && b.prune) {
		/* The selected trees' roots weigh the total: what is lighter than its share goes. */
		uint64_t total = 0;

		for (size_t t = 0; t < b.ntrees; t++)
			total += b.trees[t].incl[NW_CCT_ROOT];
		b.prune_below = (uint64_t)((double)total * o->prune_share);
	}
	if (!ret && o->visit_names)
		ret = rank_names(&b);
	if (!ret && !o->per_thread) {
		for (size_t t = 0; t < b.ntrees; t++)
			for (unsigned k = 0; k < b.nm; k++)
				nw_cct_metrics(s->tree, NW_CCT_ROOT)[k] +=
					nw_cct_metrics(b.trees[t].tr->cct, NW_CCT_ROOT)[k];
		ret = merge(&b, NW_CCT_ROOT, 0, b.ncur);
	}
	if (!ret && b.nparts)
		ret = run_parts(&b, nworkers);
	/* Visited, the tree is its root: its child lists name nodes gone. */
	if (o->visit)
		s->tree->nodes[NW_CCT_ROOT].first_child = NW_CCT_NONE;
	else if (!ret)
		nw_cct_reverse_children(s->tree);
	if (!ret && split)
		ret = apply_split(&b, split, tops);
	if (!ret && o->node_map)
		ret = keep_node_map(s, &b);
out:
	free(tops);
	free(thread_frame);
	builder_fini(&b);
	return ret;
}
