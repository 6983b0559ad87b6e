/* SPDX-License-Identifier: MIT */
/* Comparing two measurements by calling context; see diff.h. */
#include "report/diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/folded.h"
#include "util/strbuf.h"

/* The frame of the joined tree that frame @f of a run stands for. */
static int64_t joined_frame(struct nw_diff *d, const struct nw_func *f)
{
	if (d->modules)
		return nw_frames_intern(&d->stacks->frames, NW_FRAME_FUNCTION,
					f->module ? nw_basename(f->module) : "[unknown]", NULL, 0,
					NULL);
	return nw_frames_intern(&d->stacks->frames, f->kind, f->name, f->file, f->line, NULL);
}

/*
 * Adds run @r's weights and samples into the joined tree's metrics of
 * side @side (NW_DIFF_BASE or NW_DIFF_NEW, its samples 2 further), and
 * with runs into metric @slot, frames by name.
 */
static int join(struct nw_diff *d, const struct nw_diff_run *r, unsigned side, unsigned slot)
{
	const struct nw_cct *t = r->s->tree;
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
		uint64_t w = nw_cct_metrics(t, i)[r->metric], c = nw_cct_metrics(t, i)[r->samples];
		uint64_t *v;

		if (i != NW_CCT_ROOT) {
			int64_t fi = joined_frame(d, &r->s->frames.v[t->nodes[i].ip]);

			node = fi < 0 ? NW_CCT_NONE
				      : nw_cct_child(d->stacks->tree, to[t->nodes[i].parent],
						     (uint64_t)fi, 0);
			if (node == NW_CCT_NONE) {
				ret = -ENOMEM;
				goto out;
			}
		}
		to[i] = node;
		v = nw_cct_metrics(d->stacks->tree, node);
		v[side] += w;
		v[side + 2] += c;
		d->total[side] += w;
		d->total[side + 2] += c;
		if (d->runs) {
			v[slot] += w;
			d->total[slot] += w;
		}
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

static int check_runs(const struct nw_diff_run *r, unsigned n)
{
	if (!n || n > NW_DIFF_MAX_RUNS)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (check_tree(r[i].s, r[i].metric) || check_tree(r[i].s, r[i].samples))
			return -EINVAL;
	return 0;
}

int nw_diff_join(const struct nw_diff_run *base, unsigned nbase, const struct nw_diff_run *new,
		 unsigned nnew, unsigned flags, struct nw_diff **ret)
{
	const struct nw_stacks *last;
	struct nw_diff *d;
	int err = 0;

	if (check_runs(base, nbase) || check_runs(new, nnew))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->nbase = nbase;
	d->nnew = nnew;
	d->runs = nbase >= 2 && nnew >= 2;
	d->modules = flags & NW_DIFF_BY_MODULE;
	d->nmetrics = NW_DIFF_METRICS + (d->runs ? nbase + nnew : 0);
	d->total = calloc(d->nmetrics, sizeof(*d->total));
	d->stacks = nw_stacks_new(NULL, d->nmetrics);
	if (!d->total || !d->stacks) {
		nw_diff_free(d);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nbase && !err; i++)
		err = join(d, &base[i], NW_DIFF_BASE, NW_DIFF_RUN + i);
	for (unsigned i = 0; i < nnew && !err; i++)
		err = join(d, &new[i], NW_DIFF_NEW, NW_DIFF_RUN + nbase + i);
	last = new[nnew - 1].s;
	if (!err && last->m && new[nnew - 1].metric < last->m->nmetrics)
		d->time = last->m->metrics[new[nnew - 1].metric].unit == NW_UNIT_NANOSECONDS;
	if (err) {
		nw_diff_free(d);
		return err;
	}
	*ret = d;
	return 0;
}

int nw_diff_new(const struct nw_stacks *base, unsigned bm, unsigned bsm,
		const struct nw_stacks *new, unsigned nm, unsigned nsm, struct nw_diff **ret)
{
	struct nw_diff_run b = { base, bm, bsm }, n = { new, nm, nsm };

	return nw_diff_join(&b, 1, &n, 1, 0, ret);
}

void nw_diff_count_runs(struct nw_diff *d, unsigned nbase, unsigned nnew)
{
	if (!d->runs) {
		d->nbase = nbase;
		d->nnew = nnew;
	}
}

void nw_diff_free(struct nw_diff *d)
{
	if (!d)
		return;
	nw_stacks_free(d->stacks);
	free(d->total);
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
