/* SPDX-License-Identifier: MIT */
/* Comparing two measurements by calling context; see diff.h. */
#include "report/diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/folded.h"

/* Adds @t's weights (metric @m) into the joined tree.s metric @slot, frames by name. */
static int join(struct nw_diff *d, const struct nw_stacks *p, unsigned m, unsigned slot)
{
	const struct nw_cct *t = p->tree;
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint32_t *to = malloc((size_t)t->n * sizeof(*to));
	uint32_t n;
	int ret = 0;

	if (!order || !to) {
		ret = -ENOMEM;
		goto out;
	}
	n = nw_cct_preorder(t, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k], node = NW_CCT_ROOT;
		uint64_t w = nw_cct_metrics(t, i)[m];

		if (i != NW_CCT_ROOT) {
			const struct nw_func *f = &p->frames.v[t->nodes[i].ip];
			int64_t fi = nw_frames_intern(&d->stacks->frames, f->kind, f->name, f->file,
						      f->line, NULL);

			node = fi < 0 ? NW_CCT_NONE
				      : nw_cct_child(d->stacks->tree, to[t->nodes[i].parent],
						     (uint64_t)fi, 0);
			if (node == NW_CCT_NONE) {
				ret = -ENOMEM;
				goto out;
			}
		}
		to[i] = node;
		nw_cct_metrics(d->stacks->tree, node)[slot] += w;
		d->total[slot] += w;
	}
out:
	free(order);
	free(to);
	return ret;
}

static int check_tree(const struct nw_stacks *p, unsigned m)
{
	const struct nw_cct *t = p->tree;

	if (m >= t->nmetrics || t->n == 0)
		return -EINVAL;
	for (uint32_t i = 1; i < t->n; i++)
		if (t->nodes[i].ip >= p->frames.n)
			return -EINVAL;
	return 0;
}

int nw_diff_new(const struct nw_stacks *base, unsigned bm, const struct nw_stacks *new,
		unsigned nm, struct nw_diff **ret)
{
	struct nw_diff *d;
	int err;

	if (check_tree(base, bm) || check_tree(new, nm))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->stacks = nw_stacks_new(NULL, 2);
	if (!d->stacks) {
		nw_diff_free(d);
		return -ENOMEM;
	}
	err = join(d, base, bm, NW_DIFF_BASE);
	if (!err)
		err = join(d, new, nm, NW_DIFF_NEW);
	if (err) {
		nw_diff_free(d);
		return err;
	}
	*ret = d;
	return 0;
}

void nw_diff_free(struct nw_diff *d)
{
	if (!d)
		return;
	nw_stacks_free(d->stacks);
	free(d);
}

/* ---- rows ---- */

struct row {
	char *stack;
	uint64_t w[2];
	double delta; /* change of share, in points */
};

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/*
 * Every calling context with a self weight in either measurement, its
 * stack written as folded stacks write it (report/folded.h), from the
 * visits of the joined tree.
 */
struct collect {
	const struct nw_diff *d;
	struct row *rows;
	uint32_t n;
	struct nw_folded_line line;
};

static int collect_visit(void *arg, const struct nw_visit *v)
{
	struct collect *c = arg;
	struct row *r = &c->rows[c->n];

	if (nw_folded_line_visit(&c->line, c->d->stacks, v))
		return -ENOMEM;
	if (!v->metrics[NW_DIFF_BASE] && !v->metrics[NW_DIFF_NEW])
		return 0;
	r->stack = strdup(nw_sb_str(&c->line.text));
	if (!r->stack)
		return -ENOMEM;
	r->w[0] = v->metrics[NW_DIFF_BASE];
	r->w[1] = v->metrics[NW_DIFF_NEW];
	r->delta = pct(r->w[1], c->d->total[NW_DIFF_NEW]) - pct(r->w[0], c->d->total[NW_DIFF_BASE]);
	c->n++;
	return 0;
}

static void rows_free(struct row *rows, uint32_t n);

static int collect(const struct nw_diff *d, struct row **ret, uint32_t *ret_n)
{
	struct collect c = { .d = d, .rows = calloc(d->stacks->tree->n, sizeof(*c.rows)) };
	int err = c.rows ? nw_stacks_visit(d->stacks, false, collect_visit, &c) : -ENOMEM;

	nw_folded_line_fini(&c.line);
	if (err) {
		rows_free(c.rows, c.n);
		return err;
	}
	*ret = c.rows;
	*ret_n = c.n;
	return 0;
}

static void rows_free(struct row *rows, uint32_t n)
{
	for (uint32_t i = 0; rows && i < n; i++)
		free(rows[i].stack);
	free(rows);
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp(((const struct row *)a)->stack, ((const struct row *)b)->stack);
}

static int cmp_change(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double dx = x->delta < 0 ? -x->delta : x->delta, dy = y->delta < 0 ? -y->delta : y->delta;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->stack, y->stack);
}

static int finish(FILE *out)
{
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}

int nw_diff_view(FILE *out, const struct nw_diff *d, double percent_limit,
		 const char *base_label, const char *new_label)
{
	struct row *rows;
	uint32_t n, hidden = 0;
	int ret;

	ret = collect(d, &rows, &n);
	if (ret)
		return ret;
	qsort(rows, n, sizeof(*rows), cmp_change);
	fprintf(out, "Base: %s (%llu)\nNew:  %s (%llu)\n", base_label ? base_label : "base",
		(unsigned long long)d->total[NW_DIFF_BASE], new_label ? new_label : "new",
		(unsigned long long)d->total[NW_DIFF_NEW]);
	fputs("Change of each calling context's share (self), largest first.\n\n", out);
	fputs("  DELTA   BASE%    NEW%  CONTEXT\n", out);
	for (uint32_t i = 0; i < n; i++) {
		double a = rows[i].delta < 0 ? -rows[i].delta : rows[i].delta;

		if (a < percent_limit) {
			hidden++;
			continue;
		}
		fprintf(out, "%+6.1f%%  %5.1f%%  %5.1f%%  %s\n", rows[i].delta,
			pct(rows[i].w[0], d->total[NW_DIFF_BASE]),
			pct(rows[i].w[1], d->total[NW_DIFF_NEW]), rows[i].stack);
	}
	if (hidden)
		fprintf(out, "(%u contexts changed by less than %.1f points)\n", hidden,
			percent_limit);
	ret = finish(out);
	rows_free(rows, n);
	return ret;
}

int nw_diff_folded(FILE *out, const struct nw_diff *d)
{
	struct row *rows;
	uint32_t n;
	int ret;

	ret = collect(d, &rows, &n);
	if (ret)
		return ret;
	qsort(rows, n, sizeof(*rows), cmp_stack);
	for (uint32_t i = 0; i < n; i++)
		fprintf(out, "%s %llu %llu\n", rows[i].stack, (unsigned long long)rows[i].w[0],
			(unsigned long long)rows[i].w[1]);
	ret = finish(out);
	rows_free(rows, n);
	return ret;
}
