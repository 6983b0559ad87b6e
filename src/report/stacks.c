/* SPDX-License-Identifier: MIT */
/*
 * Symbolic stacks from the model; see stacks.h.  The object and the
 * build, whose jobs are done in chains.c (each physical node's frame
 * chain, through a memo) and merge.c (the trees merged top down); a
 * split is applied here once the tree is made.  Visiting stacks is in
 * visit.c.
 */
#include "report/build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/parallel.h"
#include "util/strbuf.h"

bool nw_filter_thread(const struct nw_filter *f, const struct nw_mthread *th)
{
	if (!f)
		return true;
	if (f->end && (th < f->first || th >= f->end))
		return false;
	if (f->tid >= 0 && (uint64_t)f->tid != th->tid)
		return false;
	if (f->pid >= 0 && (uint64_t)f->pid != th->pid)
		return false;
	if (f->comm && strcmp(f->comm, th->comm ? th->comm : ""))
		return false;
	return true;
}

bool nw_filter_matches(const struct nw_filter *f, const struct nw_measurement *m)
{
	if (!f || (f->tid < 0 && f->pid < 0 && !f->comm))
		return true;
	for (uint32_t i = 0; i < m->nthreads; i++)
		if (nw_filter_thread(f, &m->threads[i]))
			return true;
	return false;
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

void nw_split_free(struct nw_split *sp)
{
	if (!sp)
		return;
	for (uint32_t i = 0; sp->prefixes && i < sp->nprefixes; i++)
		free(sp->prefixes[i].frames);
	free(sp->prefixes);
	free(sp->entries);
	free(sp->values);
	free(sp);
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
	if (!r->module) {
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
	ret = nw_chains_resolve(&b, o, rworkers, thread_frame);
	for (uint32_t ti = 0, t = 0; ti < s->m->nthreads && !ret; ti++) {
		const struct nw_mthread *th = &s->m->threads[ti];
		size_t a = b.ncur, ta = t;

		tops[ti] = NW_CCT_ROOT;
		if (!nw_filter_thread(o->filter, th))
			continue;
		s->nthreads++;
		for (; t < b.ntrees && b.trees[t].ti == ti && !ret; t++)
			ret = nw_merge_roots(&b, t);
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
				ret = nw_merge(&b, top, a, b.ncur);
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
		ret = nw_merge_rank_names(&b);
	if (!ret && !o->per_thread) {
		for (size_t t = 0; t < b.ntrees; t++)
			for (unsigned k = 0; k < b.nm; k++)
				nw_cct_metrics(s->tree, NW_CCT_ROOT)[k] +=
					nw_cct_metrics(b.trees[t].tr->cct, NW_CCT_ROOT)[k];
		ret = nw_merge(&b, NW_CCT_ROOT, 0, b.ncur);
	}
	if (!ret && b.nparts)
		ret = nw_merge_parts(&b, nworkers);
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
	nw_chains_fini(&b);
	nw_merge_fini(&b);
	return ret;
}
