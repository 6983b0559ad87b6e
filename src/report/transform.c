/* SPDX-License-Identifier: MIT */
/* Stack filters with pprof's semantics, and inversion; see transform.h. */
#include "report/transform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

enum {
	M_FOCUS = 1 << 0,
	M_IGNORE = 1 << 1,
	M_HIDE = 1 << 2,
	M_ROOT = 1 << 3,
	M_FOCUS_MODULE = 1 << 4,
	M_IGNORE_MODULE = 1 << 5,
	M_THREAD = 1 << 6,
};

bool nw_stack_filter_active(const struct nw_stack_filter *f)
{
	return f && (f->focus || f->ignore || f->hide || f->root || f->focus_module ||
		     f->ignore_module);
}

static bool matches(const regex_t *re, const char *s)
{
	return re && s && regexec(re, s, 0, NULL, 0) == 0;
}

/* What each frame matches; NULL on ENOMEM. */
static uint8_t *match_frames(const struct nw_frames *fr, const struct nw_stack_filter *f)
{
	uint8_t *m = calloc(fr->n ? fr->n : 1, 1);

	if (!m)
		return NULL;
	for (uint32_t i = 0; i < fr->n; i++) {
		const struct nw_func *fn = &fr->v[i];

		if (fn->kind == NW_FRAME_THREAD) {
			m[i] = M_THREAD;
			continue;
		}
		m[i] = (matches(f->focus, fn->name) ? M_FOCUS : 0) |
		       (matches(f->ignore, fn->name) ? M_IGNORE : 0) |
		       (matches(f->hide, fn->name) ? M_HIDE : 0) |
		       (matches(f->root, fn->name) ? M_ROOT : 0) |
		       (matches(f->focus_module, fn->module) ? M_FOCUS_MODULE : 0) |
		       (matches(f->ignore_module, fn->module) ? M_IGNORE_MODULE : 0);
	}
	return m;
}

/* The nodes of @t with weight below them, copied in preorder into a new tree. */
static struct nw_cct *prune(const struct nw_cct *t)
{
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint32_t *to = malloc((size_t)t->n * sizeof(*to));
	bool *live = calloc(t->n, sizeof(*live));
	struct nw_cct *dst = nw_cct_new(t->nmetrics);
	uint32_t n;

	if (!order || !to || !live || !dst)
		goto fail;
	n = nw_cct_preorder(t, order);
	for (uint32_t k = n; k-- > 0;) {
		uint32_t i = order[k];

		for (unsigned m = 0; m < t->nmetrics && !live[i]; m++)
			live[i] = nw_cct_metrics(t, i)[m] != 0;
		if (live[i] && i != NW_CCT_ROOT)
			live[t->nodes[i].parent] = true;
	}
	to[NW_CCT_ROOT] = NW_CCT_ROOT;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];

		if (!live[i])
			continue;
		if (i != NW_CCT_ROOT) {
			to[i] = nw_cct_append(dst, to[t->nodes[i].parent], t->nodes[i].ip,
					      t->nodes[i].sp);
			if (to[i] == NW_CCT_NONE)
				goto fail;
		}
		memcpy(nw_cct_metrics(dst, to[i]), nw_cct_metrics(t, i),
		       t->nmetrics * sizeof(uint64_t));
	}
	nw_cct_reverse_children(dst);
	free(order);
	free(to);
	free(live);
	return dst;
fail:
	free(order);
	free(to);
	free(live);
	nw_cct_free(dst);
	return NULL;
}

/* Per node of the walk: where it lands, and what its path has matched. */
struct walk_state {
	uint32_t dst;     /* the node its frames land on; NW_CCT_NONE: above the root cut */
	uint32_t anchor;  /* where a stack that starts here attaches (root, or thread frame) */
	uint8_t seen;     /* M_* matched on the path */
};

int nw_stacks_filter(struct nw_stacks *s, const struct nw_stack_filter *f)
{
	const struct nw_cct *t = s->tree;
	uint8_t *match = match_frames(&s->frames, f);
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	struct walk_state *st = malloc((size_t)t->n * sizeof(*st));
	struct nw_cct *dst = nw_cct_new(t->nmetrics), *pruned;
	uint32_t n;
	int ret = -ENOMEM;

	if (!match || !order || !st || !dst)
		goto out;
	n = nw_cct_preorder(t, order);
	st[NW_CCT_ROOT] = (struct walk_state){ .dst = f->root ? NW_CCT_NONE : NW_CCT_ROOT,
					       .anchor = NW_CCT_ROOT };
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		struct walk_state w = st[NW_CCT_ROOT];
		bool keep;

		if (i != NW_CCT_ROOT) {
			const struct nw_cct_node *nd = &t->nodes[i];
			uint8_t mi = match[nd->ip];

			w = st[nd->parent];
			w.seen |= mi;
			if (mi & M_THREAD) {
				/* A thread stays at the top: stacks start below it. */
				w.anchor = nw_cct_child(dst, w.anchor, nd->ip, nd->sp);
				if (w.anchor == NW_CCT_NONE)
					goto out;
				w.dst = f->root ? NW_CCT_NONE : w.anchor;
			} else if (w.dst == NW_CCT_NONE && !(mi & M_ROOT)) {
				/* Above the first frame the root cut keeps. */
			} else if (!(mi & M_HIDE)) {
				uint32_t at = w.dst == NW_CCT_NONE ? w.anchor : w.dst;

				w.dst = nw_cct_child(dst, at, nd->ip, nd->sp);
				if (w.dst == NW_CCT_NONE)
					goto out;
			}
		}
		st[i] = w;
		keep = w.dst != NW_CCT_NONE && (!f->focus || (w.seen & M_FOCUS)) &&
		       (!f->focus_module || (w.seen & M_FOCUS_MODULE)) &&
		       !(w.seen & (M_IGNORE | M_IGNORE_MODULE));
		/* A stack whose frames were all hidden is no stack (pprof drops it too). */
		if (i != NW_CCT_ROOT && !(match[t->nodes[i].ip] & M_THREAD) && w.dst == w.anchor)
			keep = false;
		if (!keep)
			continue;
		for (unsigned m = 0; m < t->nmetrics; m++)
			nw_cct_metrics(dst, w.dst)[m] += nw_cct_metrics(t, i)[m];
	}
	if (!s->unfiltered) {
		s->unfiltered = calloc(t->nmetrics ? t->nmetrics : 1, sizeof(*s->unfiltered));
		if (!s->unfiltered)
			goto out;
		for (uint32_t i = 0; i < t->n; i++)
			for (unsigned m = 0; m < t->nmetrics; m++)
				s->unfiltered[m] += nw_cct_metrics(t, i)[m];
	}
	pruned = prune(dst);
	if (!pruned)
		goto out;
	nw_stacks_set_tree(s, pruned);
	ret = 0;
out:
	nw_cct_free(dst);
	free(match);
	free(order);
	free(st);
	return ret;
}

int nw_stacks_invert(struct nw_stacks *s)
{
	const struct nw_cct *t = s->tree;
	struct nw_cct *dst = nw_cct_new(t->nmetrics);
	uint32_t *path = NULL;
	size_t cap = 0;

	if (!dst)
		return -ENOMEM;
	for (uint32_t i = 1; i < t->n; i++) {
		const uint64_t *w = nw_cct_metrics(t, i);
		uint32_t n = 0, at = NW_CCT_ROOT;
		bool any = false;

		for (unsigned m = 0; m < t->nmetrics; m++)
			any |= w[m] != 0;
		if (!any)
			continue;
		for (uint32_t j = i; j != NW_CCT_ROOT; j = t->nodes[j].parent) {
			if (nw_grow(&path, &cap, (size_t)n + 1, sizeof(*path)))
				goto fail;
			path[n++] = j;
		}
		/* A thread frame stays on top; the stack below it turns around. */
		if (s->frames.v[t->nodes[path[n - 1]].ip].kind == NW_FRAME_THREAD) {
			const struct nw_cct_node *tn = &t->nodes[path[--n]];

			at = nw_cct_child(dst, NW_CCT_ROOT, tn->ip, tn->sp);
		}
		for (uint32_t k = 0; k < n && at != NW_CCT_NONE; k++)
			at = nw_cct_child(dst, at, t->nodes[path[k]].ip, t->nodes[path[k]].sp);
		if (at == NW_CCT_NONE)
			goto fail;
		for (unsigned m = 0; m < t->nmetrics; m++)
			nw_cct_metrics(dst, at)[m] += w[m];
	}
	/* The root's own weight (samples without a frame) stays there. */
	for (unsigned m = 0; m < t->nmetrics; m++)
		nw_cct_metrics(dst, NW_CCT_ROOT)[m] += nw_cct_metrics(t, NW_CCT_ROOT)[m];
	free(path);
	nw_stacks_set_tree(s, dst);
	return 0;
fail:
	free(path);
	nw_cct_free(dst);
	return -ENOMEM;
}
