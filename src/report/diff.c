/* SPDX-License-Identifier: MIT */
/* Comparing two measurements by calling context; see diff.h. */
#include "report/diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/folded.h"

/*
 * Adds @p's weights (metric @m) and samples (metric @sm) into the joined
 * tree's metrics @slot and @slot + 2, frames by name.
 */
static int join(struct nw_diff *d, const struct nw_stacks *p, unsigned m, unsigned sm,
		unsigned slot)
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
		uint64_t w = nw_cct_metrics(t, i)[m], n = nw_cct_metrics(t, i)[sm];

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
		nw_cct_metrics(d->stacks->tree, node)[slot + 2] += n;
		d->total[slot] += w;
		d->total[slot + 2] += n;
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

int nw_diff_new(const struct nw_stacks *base, unsigned bm, unsigned bsm,
		const struct nw_stacks *new, unsigned nm, unsigned nsm, struct nw_diff **ret)
{
	struct nw_diff *d;
	int err;

	if (check_tree(base, bm) || check_tree(new, nm) || check_tree(base, bsm) ||
	    check_tree(new, nsm))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->stacks = nw_stacks_new(NULL, NW_DIFF_METRICS);
	if (!d->stacks) {
		nw_diff_free(d);
		return -ENOMEM;
	}
	err = join(d, base, bm, bsm, NW_DIFF_BASE);
	if (!err)
		err = join(d, new, nm, nsm, NW_DIFF_NEW);
	if (!err && new->m && nm < new->m->nmetrics)
		d->time = new->m->metrics[nm].unit == NW_UNIT_NANOSECONDS;
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
};

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

static int finish(FILE *out)
{
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
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
