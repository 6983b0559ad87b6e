/* SPDX-License-Identifier: MIT */
/*
 * The merge of the selected trees, top down (see build.h): the physical
 * nodes that land on one symbolic node form a group, their children (or
 * the next frame of their chain) are sorted by frame, and each run of
 * equal frames becomes one new symbolic node; with several workers, the
 * light groups are left as parts, expanded side by side and grafted in
 * their order.
 */
#include "report/build.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/parallel.h"
#include "util/strbuf.h"

/* Groups of children up to this many are sorted by insertion, not qsort(). */
#define SMALL_SORT 48

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
int nw_merge_roots(struct builder *b, size_t tree)
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
int nw_merge(struct builder *b, uint32_t top, size_t a, size_t e)
{
	sort_cursors(b->cur + a, e - a);
	if (nw_grow(&b->levels, &b->cap_levels, b->nlevels + 1, sizeof(*b->levels)))
		return -ENOMEM;
	b->levels[b->nlevels++] = (struct level){ top, a, e, a };
	return descend(b, b->nlevels - 1);
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
int nw_merge_parts(struct builder *b, uint32_t nworkers)
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
int nw_merge_rank_names(struct builder *b)
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

void nw_merge_fini(struct builder *b)
{
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
