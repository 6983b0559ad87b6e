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

struct child_sort {
	const struct ctx *c;
	const struct nw_cct *t;
};

static int cmp_weight(const void *a, const void *b, void *arg)
{
	const struct child_sort *cs = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t wx = nw_cct_metrics(cs->t, x)[0], wy = nw_cct_metrics(cs->t, y)[0];

	if (wx != wy)
		return wx > wy ? -1 : 1;
	return strcmp(name_of(cs->c, (uint32_t)cs->t->nodes[x].ip),
		      name_of(cs->c, (uint32_t)cs->t->nodes[y].ip));
}

/* Prints tree @t (weights in metric 0) from @top, children heaviest first. */
static int print_tree(const struct ctx *c, const struct nw_cct *t, uint32_t top, uint64_t of)
{
	struct child_sort cs = { c, t };
	uint32_t *stack = malloc((size_t)t->n * sizeof(*stack));
	uint32_t *depth = malloc((size_t)t->n * sizeof(*depth));
	uint32_t sp = 0;

	if (!stack || !depth) {
		free(stack);
		free(depth);
		return -ENOMEM;
	}
	stack[sp] = top;
	depth[sp++] = 0;
	while (sp) {
		uint32_t node = stack[--sp], d = depth[sp], first = sp;
		uint64_t w = nw_cct_metrics(t, node)[0];

		if (node != top && pct(w, c->whole) < c->o->percent_limit)
			continue;
		fprintf(c->out, "%6.1f%%  %6.1f%%  %*s%s\n", pct(w, c->whole), pct(w, of),
			(int)(2 * (d < 1000000 ? d : 1000000)), "", name_of(c, (uint32_t)t->nodes[node].ip));
		for (uint32_t k = t->nodes[node].first_child; k != NW_CCT_NONE;
		     k = t->nodes[k].next_sibling) {
			stack[sp] = k;
			depth[sp++] = d + 1;
		}
		/* Pushed reversed: the heaviest comes out first. */
		qsort_r(stack + first, sp - first, sizeof(*stack), cmp_weight, &cs);
		for (uint32_t a = first, b = sp; a + 1 < b; a++, b--) {
			uint32_t tmp = stack[a], td = depth[a];

			stack[a] = stack[b - 1];
			depth[a] = depth[b - 1];
			stack[b - 1] = tmp;
			depth[b - 1] = td;
		}
	}
	free(stack);
	free(depth);
	return 0;
}

/* The callers of @f (its outermost occurrences' paths, reversed) and its callees. */
static int peek(const struct ctx *c, const struct fn_total *ft)
{
	const struct nw_cct *t = c->s->tree;
	struct nw_cct *callers = nw_cct_new(1), *callees = nw_cct_new(1);
	const struct nw_func *fn = &c->s->frames.v[ft->frame];
	uint32_t top;
	int ret = -ENOMEM;

	if (!callers || !callees)
		goto out;
	top = nw_cct_child(callers, NW_CCT_ROOT, ft->frame, 0);
	if (top == NW_CCT_NONE || nw_cct_child(callees, NW_CCT_ROOT, ft->frame, 0) == NW_CCT_NONE)
		goto out;
	for (uint32_t k = 0; k < t->n; k++) {
		uint32_t i = c->order[k], at = top;

		if (i == NW_CCT_ROOT || t->nodes[i].ip != ft->frame || below(t, i, ft->frame))
			continue;
		nw_cct_metrics(callers, top)[0] += c->incl[i];
		for (uint32_t p = t->nodes[i].parent; p != NW_CCT_ROOT; p = t->nodes[p].parent) {
			at = nw_cct_child(callers, at, t->nodes[p].ip, 0);
			if (at == NW_CCT_NONE)
				goto out;
			nw_cct_metrics(callers, at)[0] += c->incl[i];
		}
		for (uint32_t ch = t->nodes[i].first_child; ch != NW_CCT_NONE;
		     ch = t->nodes[ch].next_sibling) {
			uint32_t n = nw_cct_child(callees, 1, t->nodes[ch].ip, 0);

			if (n == NW_CCT_NONE)
				goto out;
			nw_cct_metrics(callees, n)[0] += c->incl[ch];
		}
	}
	nw_cct_metrics(callees, 1)[0] = ft->total;
	fprintf(c->out, "Function: %s", name_of(c, ft->frame));
	if (fn->file && fn->line)
		fprintf(c->out, " (%s:%u)", nw_basename(fn->file), fn->line);
	if (fn->module)
		fprintf(c->out, " in %s", nw_basename(fn->module));
	fprintf(c->out, "\nSelf: %5.1f%% (%llu)   Total: %5.1f%% (%llu)\n\n", pct(ft->self, c->whole),
		(unsigned long long)ft->self, pct(ft->total, c->whole),
		(unsigned long long)ft->total);
	fputs("Callers:\n   ALL%    FUNC%  CALLER\n", c->out);
	ret = print_tree(c, callers, top, ft->total);
	if (ret)
		goto out;
	if (callees->nodes[1].first_child != NW_CCT_NONE) {
		fputs("\nCallees:\n   ALL%    FUNC%  CALLEE\n", c->out);
		ret = print_tree(c, callees, 1, ft->total);
	}
	fputc('\n', c->out);
out:
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
