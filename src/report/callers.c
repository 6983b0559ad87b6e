/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report --callers RE (--peek): for each function whose name
 * matches, its self and total weight and the tree of its callers up to
 * the roots, heaviest first, then its direct callees.  Totals count a
 * recursive function once per sample: only its outermost occurrences on
 * a path add their inclusive weight (perf's children mode).
 */
#include "report/callers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

struct fn_total {
	uint32_t frame;
	uint64_t self, total;
};

struct ctx {
	const struct nw_stacks *s;
	const struct nw_view_opts *o;
	FILE *out;
	uint64_t *incl;       /* per node of s->tree */
	uint32_t *order;      /* preorder */
	uint64_t whole;
};

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static const char *name_of(const struct ctx *c, uint32_t frame)
{
	return nw_func_name(&c->s->frames.v[frame], c->o->full_names);
}

static int cmp_total(const void *a, const void *b, void *arg)
{
	const struct fn_total *x = a, *y = b;
	const struct ctx *c = arg;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(name_of(c, x->frame), name_of(c, y->frame));
}

/* Is there a node of frame @f above @node? */
static bool below(const struct nw_cct *t, uint32_t node, uint64_t f)
{
	for (uint32_t i = t->nodes[node].parent; i != NW_CCT_ROOT && i != NW_CCT_NONE;
	     i = t->nodes[i].parent)
		if (t->nodes[i].ip == f)
			return true;
	return false;
}

static void add_metrics(struct nw_cct *t, uint32_t node, const uint64_t *w, unsigned nm)
{
	uint64_t *v = nw_cct_metrics(t, node);

	for (unsigned m = 0; m < nm; m++)
		v[m] += w[m];
}

int nw_callers_walk(const struct nw_cct *t, uint32_t top,
		    int (*cmp)(const void *, const void *, void *),
		    int (*visit)(void *arg, uint32_t node, uint32_t depth), void *arg)
{
	uint32_t *stack = malloc((size_t)t->n * sizeof(*stack));
	uint32_t *depth = malloc((size_t)t->n * sizeof(*depth));
	uint32_t *kids = malloc((size_t)t->n * sizeof(*kids));
	size_t sp = 0;
	int ret = 0;

	if (!stack || !depth || !kids) {
		ret = -ENOMEM;
		goto out;
	}
	stack[sp] = top;
	depth[sp++] = 0;
	while (sp && ret >= 0) {
		uint32_t node = stack[--sp], d = depth[sp], nk = 0;

		ret = visit(arg, node, d);
		if (ret <= 0)
			continue;
		for (uint32_t k = t->nodes[node].first_child; k != NW_CCT_NONE;
		     k = t->nodes[k].next_sibling)
			kids[nk++] = k;
		qsort_r(kids, nk, sizeof(*kids), cmp, arg);
		/* Pushed in reverse: the first in @cmp's order comes out first. */
		while (nk) {
			stack[sp] = kids[--nk];
			depth[sp++] = d + 1;
		}
	}
out:
	free(stack);
	free(depth);
	free(kids);
	return ret < 0 ? ret : 0;
}

/* A tree printed: @t's weights (metric 0) of everything and of @of, below @top. */
struct print {
	const struct ctx *c;
	const struct nw_cct *t;
	uint32_t top;
	uint64_t of;
};

static int cmp_weight(const void *a, const void *b, void *arg)
{
	const struct print *pr = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t wx = nw_cct_metrics(pr->t, x)[0], wy = nw_cct_metrics(pr->t, y)[0];

	if (wx != wy)
		return wx > wy ? -1 : 1;
	return strcmp(name_of(pr->c, (uint32_t)pr->t->nodes[x].ip),
		      name_of(pr->c, (uint32_t)pr->t->nodes[y].ip));
}

static int print_node(void *arg, uint32_t node, uint32_t d)
{
	const struct print *pr = arg;
	const struct ctx *c = pr->c;
	uint64_t w = nw_cct_metrics(pr->t, node)[0];

	if (node != pr->top && pct(w, c->whole) < c->o->percent_limit)
		return 0;
	fprintf(c->out, "%6.1f%%  %6.1f%%  %*s%s\n", pct(w, c->whole), pct(w, pr->of),
		(int)(2 * (d < 1000000 ? d : 1000000)), "",
		name_of(c, (uint32_t)pr->t->nodes[node].ip));
	return 1;
}

/* Prints tree @t (weights in metric 0) from @top, children heaviest first. */
static int print_tree(const struct ctx *c, const struct nw_cct *t, uint32_t top, uint64_t of)
{
	struct print pr = { c, t, top, of };

	return nw_callers_walk(t, top, cmp_weight, print_node, &pr);
}

int nw_callers_trees(const struct nw_stacks *s, const uint32_t *order, const uint64_t *incl,
		     unsigned nm, uint32_t frame, struct nw_cct **ret_callers,
		     struct nw_cct **ret_callees)
{
	const struct nw_cct *t = s->tree;
	struct nw_cct *callers = nw_cct_new(nm), *callees = nw_cct_new(nm);
	uint32_t top;

	if (!callers || !callees)
		goto fail;
	top = nw_cct_child(callers, NW_CCT_ROOT, frame, 0);
	if (top == NW_CCT_NONE || nw_cct_child(callees, NW_CCT_ROOT, frame, 0) == NW_CCT_NONE)
		goto fail;
	for (uint32_t k = 0; k < t->n; k++) {
		uint32_t i = order[k], at = top;
		const uint64_t *w = &incl[(size_t)i * nm];

		if (i == NW_CCT_ROOT || t->nodes[i].ip != frame || below(t, i, frame))
			continue;
		add_metrics(callers, top, w, nm);
		for (uint32_t p = t->nodes[i].parent; p != NW_CCT_ROOT; p = t->nodes[p].parent) {
			at = nw_cct_child(callers, at, t->nodes[p].ip, 0);
			if (at == NW_CCT_NONE)
				goto fail;
			add_metrics(callers, at, w, nm);
		}
		for (uint32_t ch = t->nodes[i].first_child; ch != NW_CCT_NONE;
		     ch = t->nodes[ch].next_sibling) {
			uint32_t n = nw_cct_child(callees, 1, t->nodes[ch].ip, 0);

			if (n == NW_CCT_NONE)
				goto fail;
			add_metrics(callees, n, &incl[(size_t)ch * nm], nm);
		}
	}
	/* The function's total, as among its callers (once per path). */
	add_metrics(callees, 1, nw_cct_metrics(callers, top), nm);
	*ret_callers = callers;
	*ret_callees = callees;
	return 0;
fail:
	nw_cct_free(callers);
	nw_cct_free(callees);
	return -ENOMEM;
}

/* The callers of @f (its outermost occurrences' paths, reversed) and its callees. */
static int peek(const struct ctx *c, const struct fn_total *ft)
{
	struct nw_cct *callers = NULL, *callees = NULL;
	const struct nw_func *fn = &c->s->frames.v[ft->frame];
	int ret = nw_callers_trees(c->s, c->order, c->incl, 1, ft->frame, &callers, &callees);

	if (ret)
		return ret;
	fprintf(c->out, "Function: %s", name_of(c, ft->frame));
	if (fn->file && fn->line)
		fprintf(c->out, " (%s:%u)", nw_basename(fn->file), fn->line);
	if (fn->module)
		fprintf(c->out, " in %s", nw_basename(fn->module));
	fprintf(c->out, "\nSelf: %5.1f%% (%llu)   Total: %5.1f%% (%llu)\n\n", pct(ft->self, c->whole),
		(unsigned long long)ft->self, pct(ft->total, c->whole),
		(unsigned long long)ft->total);
	fputs("Callers:\n   ALL%    FUNC%  CALLER\n", c->out);
	ret = print_tree(c, callers, 1, ft->total);
	if (!ret && callees->nodes[1].first_child != NW_CCT_NONE) {
		fputs("\nCallees:\n   ALL%    FUNC%  CALLEE\n", c->out);
		ret = print_tree(c, callees, 1, ft->total);
	}
	if (!ret)
		fputc('\n', c->out);
	nw_cct_free(callers);
	nw_cct_free(callees);
	return ret;
}

int nw_view_callers(FILE *out, const struct nw_stacks *s, const regex_t *re,
		    const struct nw_view_opts *o)
{
	const struct nw_cct *t = s->tree;
	struct ctx c = { .s = s, .o = o, .out = out };
	struct fn_total *fns = NULL;
	uint32_t nfns = 0, *slot_of = NULL;
	int ret = -ENOMEM;

	if (o->metric >= t->nmetrics)
		return -EINVAL;
	c.incl = malloc((size_t)t->n * sizeof(*c.incl));
	c.order = malloc((size_t)t->n * sizeof(*c.order));
	slot_of = malloc((s->frames.n ? s->frames.n : 1) * sizeof(*slot_of));
	fns = calloc(s->frames.n ? s->frames.n : 1, sizeof(*fns));
	if (!c.incl || !c.order || !slot_of || !fns)
		goto out;
	for (uint32_t i = 0; i < t->n; i++)
		c.incl[i] = nw_cct_metrics(t, i)[o->metric];
	nw_cct_preorder(t, c.order);
	for (uint32_t k = t->n; k-- > 1;)
		c.incl[t->nodes[c.order[k]].parent] += c.incl[c.order[k]];
	c.whole = c.incl[NW_CCT_ROOT];
	/* The functions that match, with their self and (once per path) total weight. */
	for (uint32_t f = 0; f < s->frames.n; f++) {
		const struct nw_func *fn = &s->frames.v[f];

		slot_of[f] = UINT32_MAX;
		if (fn->kind == NW_FRAME_THREAD || regexec(re, fn->name, 0, NULL, 0))
			continue;
		slot_of[f] = nfns;
		fns[nfns++].frame = f;
	}
	for (uint32_t i = 1; i < t->n; i++) {
		uint32_t f = (uint32_t)t->nodes[i].ip;

		if (f >= s->frames.n || slot_of[f] == UINT32_MAX)
			continue;
		fns[slot_of[f]].self += nw_cct_metrics(t, i)[o->metric];
		if (!below(t, i, f))
			fns[slot_of[f]].total += c.incl[i];
	}
	ret = 0;
	qsort_r(fns, nfns, sizeof(*fns), cmp_total, &c);
	/* Heaviest first: a frame left without weight (filters, the metric) is no match. */
	if (!nfns || !fns[0].total) {
		ret = -ENOENT;
		goto out;
	}
	for (uint32_t k = 0; k < nfns && !ret; k++)
		if (fns[k].total)
			ret = peek(&c, &fns[k]);
	if (!ret && (fflush(out) != 0 || ferror(out)))
		ret = -EIO;
out:
	free(c.incl);
	free(c.order);
	free(slot_of);
	free(fns);
	return ret;
}
