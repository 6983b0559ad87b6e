/* SPDX-License-Identifier: MIT */
/*
 * Building symbolic stacks from the model; see stacks.h.  Each physical
 * node is resolved once: its (module, ELF address), or its absence of a
 * module, is looked up in a memo of frame chains, so a symbol entry is
 * turned into frames once however many nodes, threads and epochs share it.
 */
#include "report/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* Inline chains deeper than this keep their outermost frames. */
#define MAX_CHAIN 256
/* The recently met (epoch, ip) kept in front of the chain memo; a power of two. */
#define RECENT 4096
/* Groups of children up to this many are sorted by insertion, not qsort(). */
#define SMALL_SORT 48

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
						       (unsigned long long)r->addr);

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
	uint32_t *to;             /* with a split: each node's symbolic node */
	uint64_t *incl;           /* pruning: each node's inclusive weight */
};

/* A chain recently looked up: the memo's answer without the resolver or its hash. */
struct recent {
	uint64_t ip;              /* ip << 1 | caller */
	uint32_t epoch;
	uint32_t chain;           /* UINT32_MAX: empty */
};

struct builder {
	struct nw_stacks *s;
	const struct nw_measurement *m;
	struct recent *recent;    /* RECENT slots, direct-mapped */
	struct chain *chains;
	size_t nchains, cap_chains;
	struct nw_index ix;
	uint32_t *pool;
	size_t npool, cap_pool;
	struct btree *trees;
	size_t ntrees, cap_trees;
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

/* chain_of() past the recent ones: the memo by (module, address), made on a miss. */
static struct chain *chain_of_slow(struct builder *b, uint32_t epoch, uint64_t ip, bool caller)
{
	struct nw_resolved r;
	struct chain key, *c;
	uint32_t *slot, buf[MAX_CHAIN];
	int n;

	nw_measurement_locate(b->m, epoch, ip, caller, &r);
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

/* The chain of ip @ip of a tree of epoch @epoch (caller frames at ip - 1); NULL on ENOMEM. */
static const struct chain *chain_of(struct builder *b, uint32_t epoch, uint64_t ip, bool caller)
{
	uint64_t key_ip = ip << 1 | caller;
	struct recent *rc = &b->recent[nw_hash_add(nw_hash_u64(key_ip), epoch) & (RECENT - 1)];
	const struct chain *c;

	if (rc->chain != UINT32_MAX && rc->ip == key_ip && rc->epoch == epoch)
		return &b->chains[rc->chain];
	c = chain_of_slow(b, epoch, ip, caller);
	if (c)
		*rc = (struct recent){ key_ip, epoch, (uint32_t)(c - b->chains) };
	return c;
}

static void builder_fini(struct builder *b)
{
	free(b->recent);
	free(b->chains);
	nw_index_fini(&b->ix);
	free(b->pool);
	for (size_t i = 0; i < b->ntrees; i++) {
		free(b->trees[i].to);
		free(b->trees[i].incl);
	}
	free(b->trees);
	free(b->walk);
	free(b->cur);
	free(b->levels);
}

static uint32_t frame_of(const struct builder *b, const struct cursor *c)
{
	return b->pool[b->chains[c->chain].first + c->pos];
}

/* Appends the cursor of node @node of tree @tree (at its chain's start).  -ENOMEM. */
static int push_node(struct builder *b, uint32_t tree, uint32_t node)
{
	const struct nw_tree *tr = b->trees[tree].tr;
	const struct nw_cct_node *n = &tr->cct->nodes[node];
	const struct chain *c = chain_of(b, tr->epoch, n->ip, n->first_child != NW_CCT_NONE);

	if (!c || nw_grow(&b->cur, &b->cap_cur, b->ncur + 1, sizeof(*b->cur)))
		return -ENOMEM;
	/* A chain of no frames cannot happen: frames_of gives one at least. */
	b->cur[b->ncur++] = (struct cursor){ tree, node, (uint32_t)(c - b->chains), 0,
					     b->pool[c->first], n->first_child, n->sp };
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
	struct nw_cct *dst = b->s->tree;
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
	uint64_t *dst = nw_cct_metrics(b->s->tree, sym);

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

/* Merges the cursors at [a, e) (children of the symbolic root @top) into the tree. */
static int merge(struct builder *b, uint32_t top, size_t a, size_t e)
{
	struct nw_cct *dst = b->s->tree;
	size_t base = b->nlevels;
	int ret = 0;

	sort_cursors(b->cur + a, e - a);
	if (nw_grow(&b->levels, &b->cap_levels, b->nlevels + 1, sizeof(*b->levels)))
		return -ENOMEM;
	b->levels[b->nlevels++] = (struct level){ top, a, e, a };
	while (b->nlevels > base && !ret) {
		struct level *l = &b->levels[b->nlevels - 1];
		size_t r = l->next;
		uint32_t f, child;
		uint64_t sp = 0, weight;

		if (r == l->end) {
			b->ncur = l->begin;
			b->nlevels--;
			continue;
		}
		f = b->cur[r].frame;
		weight = 0;
		for (; r < l->end && b->cur[r].frame == f; r++) {
			const struct cursor *c = &b->cur[r];

			if (!sp)
				sp = c->sp;
			if (b->prune_below)
				weight += b->trees[c->tree].incl[c->node];
		}
		child = nw_cct_append(dst, l->sym, f, sp);
		if (child == NW_CCT_NONE)
			return -ENOMEM;
		a = l->next;
		/* Before expand(), which may move the levels. */
		l->next = r;
		if (b->prune_below && weight < b->prune_below)
			ret = collapse(b, child, a, r);
		else
			ret = expand(b, child, a, r);
	}
	return ret;
}

/* The cursors of the roots of every tree of thread @ti. */
static int push_thread(struct builder *b, uint32_t ti, bool with_to)
{
	const struct nw_mthread *th = &b->m->threads[ti];
	int ret = 0;

	for (uint32_t t = 0; t < th->ntrees && !ret; t++) {
		struct btree *bt;

		if (nw_grow(&b->trees, &b->cap_trees, b->ntrees + 1, sizeof(*b->trees)))
			return -ENOMEM;
		bt = &b->trees[b->ntrees];
		*bt = (struct btree){ .tr = &th->trees[t], .ti = ti, .t = t };
		if (with_to) {
			bt->to = malloc((size_t)th->trees[t].cct->n * sizeof(*bt->to));
			if (!bt->to)
				return -ENOMEM;
			bt->to[NW_CCT_ROOT] = NW_CCT_ROOT;
		}
		if (b->prune) {
			bt->incl = malloc((size_t)th->trees[t].cct->n * sizeof(*bt->incl));
			if (!bt->incl)
				return -ENOMEM;
			inclusive(th->trees[t].cct, b->prune_metric, bt->incl);
		}
		b->ntrees++;
		ret = push_roots(b, b->ntrees - 1);
	}
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
	struct nw_cct *dst = b->s->tree;
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

int nw_stacks_build(struct nw_stacks *s, const struct nw_stacks_opts *o)
{
	const struct nw_split *split = o->split;
	struct builder b = { .s = s, .m = s->m };
	uint32_t *tops = NULL;
	int ret = 0;

	if (!s->m || (o->node_map && split) ||
	    (o->prune_share > 0 && (o->per_thread || split || o->node_map)))
		return -EINVAL;
	b.nm = s->tree->nmetrics < s->m->nmetrics ? s->tree->nmetrics : s->m->nmetrics;
	b.prune = o->prune_share > 0 && o->prune_metric < b.nm;
	b.prune_metric = o->prune_metric;
	tops = malloc((s->m->nthreads ? s->m->nthreads : 1) * sizeof(*tops));
	b.recent = malloc(RECENT * sizeof(*b.recent));
	if (!tops || !b.recent) {
		free(tops);
		free(b.recent);
		return -ENOMEM;
	}
	memset(b.recent, 0xff, RECENT * sizeof(*b.recent));
	if (o->per_thread) {
		free(s->thread_node);
		s->thread_node = malloc((s->m->nthreads ? s->m->nthreads : 1) *
					sizeof(*s->thread_node));
		if (!s->thread_node) {
			free(tops);
			return -ENOMEM;
		}
		memset(s->thread_node, 0xff, (s->m->nthreads ? s->m->nthreads : 1) *
						     sizeof(*s->thread_node));
	}
	for (uint32_t ti = 0; ti < s->m->nthreads && !ret; ti++) {
		const struct nw_mthread *th = &s->m->threads[ti];
		size_t a = b.ncur, ta = b.ntrees;

		tops[ti] = NW_CCT_ROOT;
		if (!nw_filter_thread(o->filter, th))
			continue;
		s->nthreads++;
		ret = push_thread(&b, ti, split != NULL || o->node_map);
		if (ret || !o->per_thread || !th->ntrees)
			continue;
		/* Each thread below its own frame: its trees merge there, now. */
		{
			int64_t fi = nw_stacks_thread_frame(&s->frames, th);
			/*
			 * Found among the root's few children, not by nw_cct_child():
			 * merge() appends, which drops the tree's index, and
			 * rebuilding it for every thread costs the whole tree each.
			 */
			uint32_t top = fi < 0 ? NW_CCT_NONE
					      : nw_cct_find(s->tree, NW_CCT_ROOT, (uint64_t)fi);

			if (top == NW_CCT_NONE && fi >= 0)
				top = nw_cct_append(s->tree, NW_CCT_ROOT, (uint64_t)fi, 0);

			if (top == NW_CCT_NONE) {
				ret = -ENOMEM;
				break;
			}
			s->thread_node[ti] = tops[ti] = top;
			for (size_t t = ta; t < b.ntrees; t++)
				for (unsigned k = 0; k < b.nm; k++)
					nw_cct_metrics(s->tree, top)[k] +=
						nw_cct_metrics(b.trees[t].tr->cct, NW_CCT_ROOT)[k];
			ret = merge(&b, top, a, b.ncur);
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
	if (!ret && !o->per_thread) {
		for (size_t t = 0; t < b.ntrees; t++)
			for (unsigned k = 0; k < b.nm; k++)
				nw_cct_metrics(s->tree, NW_CCT_ROOT)[k] +=
					nw_cct_metrics(b.trees[t].tr->cct, NW_CCT_ROOT)[k];
		ret = merge(&b, NW_CCT_ROOT, 0, b.ncur);
	}
	if (!ret)
		nw_cct_reverse_children(s->tree);
	if (!ret && split)
		ret = apply_split(&b, split, tops);
	if (!ret && o->node_map)
		ret = keep_node_map(s, &b);
	free(tops);
	builder_fini(&b);
	return ret;
}
