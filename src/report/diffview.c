/* SPDX-License-Identifier: MIT */
/* The flat and tree diffs, with the noise of each change; see diff.h. */
#include "report/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/diffstat.h"
#include "report/views.h"
#include "util/strbuf.h"

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static int finish(FILE *out)
{
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}

/*
 * The change from @b to @n (weights; @bn and @nn their samples): in share
 * points of the totals, or with @absolute in the weights' unit; its
 * z-score from the samples either way.
 */
static struct nw_change change(const struct nw_diff *d, bool absolute, uint64_t b, uint64_t n,
			       uint64_t bn, uint64_t nn)
{
	struct nw_change c;

	if (absolute) {
		c = nw_change_count(bn, nn, 1);
		c.delta = (double)n - (double)b;
	} else {
		c = nw_change_share(bn, d->total[NW_DIFF_BASE_N], nn, d->total[NW_DIFF_NEW_N]);
		c.delta = pct(n, d->total[NW_DIFF_NEW]) - pct(b, d->total[NW_DIFF_BASE]);
	}
	/* A change the samples show none of (z 0) stays 0, whatever the weights say. */
	if (c.z == 0 && !nn && !bn)
		c.delta = 0;
	return c;
}

/* "+12.3" points, or a count or time with @absolute (nanoseconds as ms). */
static void put_delta(FILE *out, const struct nw_diff *d, bool absolute, double delta)
{
	if (!absolute)
		fprintf(out, "%+7.1f", delta);
	else if (d->time)
		fprintf(out, "%+8.1fms", delta / 1e6);
	else
		fprintf(out, "%+10.0f", delta);
}

static void put_z(FILE *out, const struct nw_change *c)
{
	if (isinf(c->z))
		fprintf(out, "  %5s", c->z > 0 ? "+inf" : "-inf");
	else
		fprintf(out, "  %+5.1f", c->z);
}

/* The header: what is compared, and how noise is told. */
static void header(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o,
		   const char *what)
{
	fprintf(out, "Base: %s (%llu samples)\nNew:  %s (%llu samples)\n",
		o->base_label ? o->base_label : "base",
		(unsigned long long)d->total[NW_DIFF_BASE_N], o->new_label ? o->new_label : "new",
		(unsigned long long)d->total[NW_DIFF_NEW_N]);
	fprintf(out, "Change of each %s, %s; Z: the change over its standard error from the "
		     "sample counts (%s), |Z| >= %.0f is beyond sampling noise.\n\n",
		what, o->absolute ? (d->time ? "in time" : "in samples") : "in points of share",
		o->absolute ? "Poisson" : "binomial", NW_DIFF_Z);
}

/* ---- flat ---- */

struct frow {
	uint32_t frame;
	struct nw_change c;
	bool beyond;
	double bself, nself, bcum, ncum;  /* shares */
};

static int cmp_frow(const void *a, const void *b, void *arg)
{
	const struct frow *x = a, *y = b;
	const struct nw_frames *f = arg;
	double dx = fabs(x->c.delta), dy = fabs(y->c.delta);
	int r;

	if (x->beyond != y->beyond)
		return x->beyond ? -1 : 1;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	r = strcmp(f->v[x->frame].name, f->v[y->frame].name);
	return r ? r : (x->frame > y->frame) - (x->frame < y->frame);
}

int nw_diff_flat(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o)
{
	static const unsigned metrics[NW_DIFF_METRICS] = { NW_DIFF_BASE, NW_DIFF_NEW,
							   NW_DIFF_BASE_N, NW_DIFF_NEW_N };
	const struct nw_frames *fr = &d->stacks->frames;
	struct nw_flat_sums f;
	struct frow *rows;
	uint32_t n = 0, quiet = 0;
	int ret = nw_flat_sums(d->stacks, metrics, NW_DIFF_METRICS, &f);

	if (ret)
		return ret;
	rows = malloc((f.nframes ? f.nframes : 1) * sizeof(*rows));
	if (!rows) {
		nw_flat_sums_fini(&f);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < f.nframes; i++) {
		const uint64_t *s = &f.self[(size_t)i * NW_DIFF_METRICS];
		const uint64_t *c = &f.cumul[(size_t)i * NW_DIFF_METRICS];
		struct frow *r = &rows[n];

		if (!c[NW_DIFF_BASE] && !c[NW_DIFF_NEW])
			continue;
		r->frame = i;
		r->c = change(d, o->absolute, s[NW_DIFF_BASE], s[NW_DIFF_NEW], s[NW_DIFF_BASE_N],
			      s[NW_DIFF_NEW_N]);
		r->beyond = nw_change_significant(&r->c);
		r->bself = pct(s[NW_DIFF_BASE], d->total[NW_DIFF_BASE]);
		r->nself = pct(s[NW_DIFF_NEW], d->total[NW_DIFF_NEW]);
		r->bcum = pct(c[NW_DIFF_BASE], d->total[NW_DIFF_BASE]);
		r->ncum = pct(c[NW_DIFF_NEW], d->total[NW_DIFF_NEW]);
		quiet += !r->beyond;
		n++;
	}
	qsort_r(rows, n, sizeof(*rows), cmp_frow, (void *)fr);
	header(out, d, o, "function's self weight");
	fprintf(out, "%*s      Z   BASE%%    NEW%%  BCUM%%   NCUM%%   DCUM  FUNCTION\n",
		o->absolute ? 10 : 7, "DELTA");
	for (uint32_t i = 0; i < n; i++) {
		const struct frow *r = &rows[i];
		const struct nw_func *fn = &fr->v[r->frame];

		if (!r->beyond && !o->all)
			continue;
		put_delta(out, d, o->absolute, r->c.delta);
		put_z(out, &r->c);
		fprintf(out, "  %5.1f%%  %5.1f%%  %5.1f%%  %5.1f%%  %+5.1f  %s", r->bself, r->nself,
			r->bcum, r->ncum, r->ncum - r->bcum, nw_func_name(fn, o->full_names));
		if (!r->bcum)
			fputs(" (new)", out);
		else if (!r->ncum)
			fputs(" (gone)", out);
		fputc('\n', out);
	}
	if (!o->all)
		fprintf(out, "(%u function%s changed within sampling noise; --all lists them)\n",
			quiet, quiet == 1 ? "" : "s");
	free(rows);
	nw_flat_sums_fini(&f);
	return finish(out);
}

/* ---- tree ---- */

struct tctx {
	FILE *out;
	const struct nw_diff *d;
	const struct nw_diff_opts *o;
	uint64_t *incl;   /* NW_DIFF_METRICS per node */
	uint32_t *kids;   /* scratch for sorting siblings */
};

/* Children of @node by their larger inclusive share, heaviest first. */
static int cmp_kid(const void *a, const void *b, void *arg)
{
	const struct tctx *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const uint64_t *ix = &t->incl[(size_t)x * NW_DIFF_METRICS];
	const uint64_t *iy = &t->incl[(size_t)y * NW_DIFF_METRICS];
	double sx = fmax(pct(ix[0], t->d->total[0]), pct(ix[1], t->d->total[1]));
	double sy = fmax(pct(iy[0], t->d->total[0]), pct(iy[1], t->d->total[1]));

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return (x > y) - (x < y);
}

static int tree_print(struct tctx *t)
{
	const struct nw_cct *tree = t->d->stacks->tree;
	const struct nw_frames *fr = &t->d->stacks->frames;
	uint32_t *stack = malloc((size_t)tree->n * sizeof(*stack));
	uint32_t *depth = malloc((size_t)tree->n * sizeof(*depth));
	size_t sp = 0;

	if (!stack || !depth) {
		free(stack);
		free(depth);
		return -ENOMEM;
	}
	stack[sp] = NW_CCT_ROOT;
	depth[sp++] = 0;
	while (sp) {
		uint32_t node = stack[--sp], dep = depth[sp], nk = 0;

		if (node != NW_CCT_ROOT) {
			const uint64_t *in = &t->incl[(size_t)node * NW_DIFF_METRICS];
			struct nw_change c = change(t->d, t->o->absolute, in[0], in[1], in[2], in[3]);

			put_delta(t->out, t->d, t->o->absolute, c.delta);
			put_z(t->out, &c);
			fprintf(t->out, "  %5.1f%%  %5.1f%%  %*s%s\n", pct(in[0], t->d->total[0]),
				pct(in[1], t->d->total[1]), (int)(2 * (dep - 1)), "",
				nw_func_name(&fr->v[tree->nodes[node].ip], t->o->full_names));
		}
		for (uint32_t k = tree->nodes[node].first_child; k != NW_CCT_NONE;
		     k = tree->nodes[k].next_sibling) {
			const uint64_t *in = &t->incl[(size_t)k * NW_DIFF_METRICS];

			if (pct(in[0], t->d->total[0]) >= t->o->percent_limit ||
			    pct(in[1], t->d->total[1]) >= t->o->percent_limit)
				t->kids[nk++] = k;
		}
		qsort_r(t->kids, nk, sizeof(*t->kids), cmp_kid, t);
		/* Pushed in reverse: the heaviest is printed first. */
		while (nk) {
			stack[sp] = t->kids[--nk];
			depth[sp++] = dep + 1;
		}
	}
	free(stack);
	free(depth);
	return 0;
}

int nw_diff_tree(FILE *out, const struct nw_diff *d, const struct nw_diff_opts *o)
{
	const struct nw_cct *tree = d->stacks->tree;
	struct tctx t = { out, d, o, NULL, NULL };
	uint32_t *order = malloc((size_t)tree->n * sizeof(*order));
	int ret = -ENOMEM;

	t.incl = malloc((size_t)tree->n * NW_DIFF_METRICS * sizeof(*t.incl));
	t.kids = malloc((size_t)tree->n * sizeof(*t.kids));
	if (!order || !t.incl || !t.kids)
		goto out;
	memcpy(t.incl, tree->metrics, (size_t)tree->n * NW_DIFF_METRICS * sizeof(*t.incl));
	/* Inclusive weights: each node added to its parent, children first. */
	for (uint32_t k = nw_cct_preorder(tree, order); k-- > 1;) {
		uint32_t i = order[k], p = tree->nodes[i].parent;

		for (unsigned m = 0; m < NW_DIFF_METRICS; m++)
			t.incl[(size_t)p * NW_DIFF_METRICS + m] += t.incl[(size_t)i * NW_DIFF_METRICS + m];
	}
	header(out, d, o, "calling context's inclusive weight");
	fprintf(out, "%*s      Z   BASE%%    NEW%%  FUNCTION\n", o->absolute ? 10 : 7, "DELTA");
	ret = tree_print(&t);
	if (!ret)
		ret = finish(out);
out:
	free(order);
	free(t.incl);
	free(t.kids);
	return ret;
}
