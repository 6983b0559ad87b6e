/* SPDX-License-Identifier: MIT */
/*
 * --diff --lines RE: the rows --lines counts (report/lines.h), of each
 * run of both sides, joined by function, file and line, as a flat diff
 * of lines (nw_diff_rows()); see diff.h.
 */
#include "report/diff.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/lines.h"
#include "report/names.h"
#include "util/strbuf.h"

/* What one run says of one line: its weight (or samples) as metric @slot of the row. */
struct item {
	char *key;                 /* "function\tfile\tline\tcallee": what joins the runs */
	unsigned slot;
	uint64_t self, total;
};

struct items {
	struct item *v;
	size_t n, cap;
};

static void items_fini(struct items *it)
{
	for (size_t i = 0; i < it->n; i++)
		free(it->v[i].key);
	free(it->v);
}

static char *key_of(const struct nw_addr_weight *w)
{
	char *k = NULL;

	if (asprintf(&k, "%s\t%s\t%u\t%s", w->func, w->file ? w->file : "", w->line,
		     w->callee ? w->callee : "") < 0)
		return NULL;
	return k;
}

/*
 * The lines of run @f of @m, by @metric, as items of metric @slot (and
 * @run_slot unless 0), its whole into @d's totals.  -EINVAL, -ENOMEM.
 */
static int add_run(struct items *it, struct nw_diff *d, const struct nw_measurement *m,
		   const struct nw_filter *f, const regex_t *re, unsigned metric, unsigned slot,
		   unsigned run_slot)
{
	struct nw_addr_weights w;
	int ret = nw_lines_weights(m, f, re, metric, &w);

	for (size_t i = 0; !ret && i < w.n; i++) {
		for (unsigned k = 0; k < (run_slot ? 2u : 1u) && !ret; k++) {
			struct item x = { key_of(&w.v[i]), k ? run_slot : slot, w.v[i].self,
					  w.v[i].total };

			if (!x.key || nw_grow(&it->v, &it->cap, it->n + 1, sizeof(*it->v))) {
				free(x.key);
				ret = -ENOMEM;
			} else {
				it->v[it->n++] = x;
			}
		}
	}
	d->total[slot] += w.whole;
	if (run_slot)
		d->total[run_slot] += w.whole;
	nw_addr_weights_fini(&w);
	return ret;
}

/* Each run of side @side (model @m by @metric): its weights, its samples. */
static int add_side(struct items *it, struct nw_diff *d, const struct nw_measurement *m,
		    unsigned metric, const struct nw_filter *of, const regex_t *re, unsigned side)
{
	int sm = nw_measurement_samples_metric(m, metric), ret = 0;
	unsigned n = d->runs ? nw_measurement_runs(m) : 1;
	unsigned first_slot = NW_DIFF_RUN + (side == NW_DIFF_NEW ? d->nbase : 0);

	for (unsigned j = 0; j < n && !ret; j++) {
		struct nw_filter f = of ? *of : NW_FILTER_ALL;
		uint32_t first, end;

		if (d->runs) {
			nw_measurement_run(m, j, &first, &end);
			f.first = m->threads + first;
			f.end = m->threads + end;
		}
		ret = add_run(it, d, m, &f, re, metric, side, d->runs ? first_slot + j : 0);
		if (!ret)
			ret = add_run(it, d, m, &f, re, sm >= 0 ? (unsigned)sm : metric, side + 2,
				      0);
	}
	return ret;
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *)a)->key, ((const struct item *)b)->key);
}

/* The readable name of the row of @key: "function (file:line)", ", inlined callee". */
static char *name_of(const char *key, bool full)
{
	char *fn = strdup(key), *file, *line, *callee, *name = NULL;
	char a[1024], b[1024];

	/* key_of() wrote three tabs. */
	if (!fn)
		return NULL;
	file = strchr(fn, '\t');
	*file++ = 0;
	line = strchr(file, '\t');
	*line++ = 0;
	callee = strchr(line, '\t');
	*callee++ = 0;
	if (asprintf(&name, "%s (%s:%s)%s%s", full ? fn : nw_short_name(fn, a, sizeof(a)),
		     *file ? (full ? file : nw_basename(file)) : "??", line,
		     *callee ? ", inlined " : "",
		     *callee ? (full ? callee : nw_short_name(callee, b, sizeof(b))) : "") < 0)
		name = NULL;
	free(fn);
	return name;
}

/* The rows of the items, sorted: one per key, its metrics summed into @sums (2 * nm each). */
static int join_items(struct items *it, unsigned nm, bool full, struct nw_diff_row **ret_rows,
		      uint64_t **ret_sums, uint32_t *ret_n)
{
	struct nw_diff_row *rows = calloc(it->n ? it->n : 1, sizeof(*rows));
	uint64_t *sums = calloc((it->n ? it->n : 1) * 2 * nm, sizeof(*sums));
	uint32_t n = 0;

	if (!rows || !sums)
		goto fail;
	qsort(it->v, it->n, sizeof(*it->v), cmp_item);
	for (size_t i = 0; i < it->n; i++) {
		uint64_t *s;

		if (!n || strcmp(it->v[i].key, it->v[i - 1].key)) {
			rows[n].name = name_of(it->v[i].key, full);
			if (!rows[n].name)
				goto fail;
			rows[n].self = &sums[(size_t)n * 2 * nm];
			rows[n].cumul = &sums[(size_t)n * 2 * nm + nm];
			n++;
		}
		s = &sums[(size_t)(n - 1) * 2 * nm];
		s[it->v[i].slot] += it->v[i].self;
		s[nm + it->v[i].slot] += it->v[i].total;
	}
	*ret_rows = rows;
	*ret_sums = sums;
	*ret_n = n;
	return 0;
fail:
	for (uint32_t i = 0; rows && i < n; i++)
		free((char *)rows[i].name);
	free(rows);
	free(sums);
	return -ENOMEM;
}

int nw_diff_lines(FILE *out, const struct nw_measurement *base, unsigned bm,
		  const struct nw_measurement *new, unsigned nm, const struct nw_filter *f,
		  const regex_t *re, const struct nw_diff_opts *o)
{
	uint32_t nb = nw_measurement_runs(base), nn = nw_measurement_runs(new), n = 0;
	struct nw_diff d = { 0 };
	struct items it = { 0 };
	struct nw_diff_row *rows = NULL;
	uint64_t *sums = NULL;
	int ret;

	if (bm >= base->nmetrics || nm >= new->nmetrics)
		return -EINVAL;
	d.runs = nb >= 2 && nn >= 2 && nb <= NW_DIFF_MAX_RUNS && nn <= NW_DIFF_MAX_RUNS;
	d.nbase = nb;
	d.nnew = nn;
	d.nmetrics = NW_DIFF_METRICS + (d.runs ? nb + nn : 0);
	d.time = new->metrics[nm].unit == NW_UNIT_NANOSECONDS;
	d.total = calloc(d.nmetrics, sizeof(*d.total));
	ret = d.total ? add_side(&it, &d, base, bm, f, re, NW_DIFF_BASE) : -ENOMEM;
	if (!ret)
		ret = add_side(&it, &d, new, nm, f, re, NW_DIFF_NEW);
	if (!ret)
		ret = join_items(&it, d.nmetrics, o->full_names, &rows, &sums, &n);
	if (!ret && !n)
		ret = -ENOENT;
	if (!ret)
		ret = nw_diff_rows(out, &d, o, "line", rows, n);
	for (uint32_t i = 0; i < n; i++)
		free((char *)rows[i].name);
	free(rows);
	free(sums);
	items_fini(&it);
	free(d.total);
	return ret;
}
