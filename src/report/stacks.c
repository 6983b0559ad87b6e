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

void nw_stacks_free(struct nw_stacks *s)
{
	if (!s)
		return;
	nw_frames_fini(&s->frames);
	nw_cct_free(s->tree);
	free(s->thread_node);
	free(s);
}

void nw_stacks_set_tree(struct nw_stacks *s, struct nw_cct *tree)
{
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
		char *name = nw_strdup_printf("%s+0x%llx", nw_basename(r->module->path),
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

struct builder {
	struct nw_stacks *s;
	const struct nw_measurement *m;
	struct chain *chains;
	size_t nchains, cap_chains;
	struct nw_index ix;
	uint32_t *pool;
	size_t npool, cap_pool;
	uint32_t *to, *order;     /* per node of the tree being added */
	size_t cap_nodes;
	uint64_t *weight;         /* nmetrics: a node's weight less what a split moves */
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

/* The chain of ip @ip of a tree of epoch @epoch (caller frames at ip - 1); NULL on ENOMEM. */
static const struct chain *chain_of(struct builder *b, uint32_t epoch, uint64_t ip, bool caller)
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

static void builder_fini(struct builder *b)
{
	free(b->chains);
	nw_index_fini(&b->ix);
	free(b->pool);
	free(b->to);
	free(b->order);
	free(b->weight);
}

/* Inserts @chain's frames below @node of the symbolic tree; NW_CCT_NONE on ENOMEM. */
static uint32_t insert_chain(struct nw_cct *dst, uint32_t node, const struct builder *b,
			     const struct chain *c, uint64_t sp)
{
	for (uint32_t k = 0; k < c->n && node != NW_CCT_NONE; k++)
		node = nw_cct_child(dst, node, b->pool[c->first + k], sp);
	return node;
}

static void add_weight(struct nw_cct *dst, uint32_t node, const uint64_t *w, unsigned nm)
{
	uint64_t *dm = nw_cct_metrics(dst, node);

	for (unsigned i = 0; i < nm; i++)
		dm[i] += w[i];
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

/* Adds tree @t of thread @ti (selected) below @top. */
static int add_tree(struct builder *b, uint32_t ti, uint32_t t, uint32_t top,
		    const struct nw_split *split, size_t *se)
{
	const struct nw_mthread *th = &b->m->threads[ti];
	const struct nw_tree *tr = &th->trees[t];
	const struct nw_cct *src = tr->cct;
	struct nw_cct *dst = b->s->tree;
	unsigned nm = src->nmetrics < dst->nmetrics ? src->nmetrics : dst->nmetrics;

	if (nw_grow(&b->to, &b->cap_nodes, src->n, sizeof(*b->to)))
		return -ENOMEM;
	free(b->order);
	b->order = malloc((size_t)src->n * sizeof(*b->order));
	if (!b->order)
		return -ENOMEM;
	nw_cct_preorder(src, b->order);
	b->to[NW_CCT_ROOT] = top;
	for (uint32_t k = 0; k < src->n; k++) {
		uint32_t i = b->order[k];
		const struct nw_cct_node *sn = &src->nodes[i];

		if (i != NW_CCT_ROOT) {
			const struct chain *c = chain_of(b, tr->epoch, sn->ip,
							 sn->first_child != NW_CCT_NONE);

			if (!c)
				return -ENOMEM;
			b->to[i] = insert_chain(dst, b->to[sn->parent], b, c, sn->sp);
			if (b->to[i] == NW_CCT_NONE)
				return -ENOMEM;
		}
		add_weight(dst, b->to[i], nw_cct_metrics(src, i), nm);
	}
	/* What a split moves: out of its node, below the prefix frames. */
	for (; split && *se < split->n && split->entries[*se].thread == ti &&
	       split->entries[*se].tree == t;
	     (*se)++) {
		const struct nw_split_entry *e = &split->entries[*se];
		const uint64_t *w = split->values + *se * src->nmetrics;
		uint32_t at;

		if (e->node >= src->n || e->prefix >= split->nprefixes)
			continue;
		at = below_prefix(dst, top, &split->prefixes[e->prefix], b->to[e->node]);
		if (at == NW_CCT_NONE)
			return -ENOMEM;
		for (unsigned m = 0; m < nm; m++) {
			uint64_t *from = &nw_cct_metrics(dst, b->to[e->node])[m];
			uint64_t v = w[m] < *from ? w[m] : *from;

			*from -= v;
			nw_cct_metrics(dst, at)[m] += v;
		}
	}
	return 0;
}

int nw_stacks_build(struct nw_stacks *s, const struct nw_stacks_opts *o)
{
	const struct nw_split *split = o->split;
	struct builder b = { .s = s, .m = s->m };
	size_t se = 0;
	int ret = 0;

	if (!s->m)
		return -EINVAL;
	if (o->per_thread) {
		free(s->thread_node);
		s->thread_node = malloc((s->m->nthreads ? s->m->nthreads : 1) *
					sizeof(*s->thread_node));
		if (!s->thread_node)
			return -ENOMEM;
		memset(s->thread_node, 0xff, (s->m->nthreads ? s->m->nthreads : 1) *
						     sizeof(*s->thread_node));
	}
	for (uint32_t ti = 0; ti < s->m->nthreads && !ret; ti++) {
		const struct nw_mthread *th = &s->m->threads[ti];
		uint32_t top = NW_CCT_ROOT;

		/* Entries of threads that are not selected are skipped. */
		while (split && se < split->n && split->entries[se].thread < ti)
			se++;
		if (!nw_filter_thread(o->filter, th))
			continue;
		s->nthreads++;
		if (o->per_thread && th->ntrees) {
			int64_t fi = nw_stacks_thread_frame(&s->frames, th);

			top = fi < 0 ? NW_CCT_NONE : nw_cct_child(s->tree, NW_CCT_ROOT, (uint64_t)fi, 0);
			if (top == NW_CCT_NONE) {
				ret = -ENOMEM;
				break;
			}
			s->thread_node[ti] = top;
		}
		for (uint32_t t = 0; t < th->ntrees && !ret; t++) {
			while (split && se < split->n && split->entries[se].thread == ti &&
			       split->entries[se].tree < t)
				se++;
			ret = add_tree(&b, ti, t, top, split, &se);
		}
	}
	builder_fini(&b);
	return ret;
}
