/* SPDX-License-Identifier: MIT */
/* narwhal-report --sections: the section tree as a table (doc/SECTIONS.md). */
#include "sections/join.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* ---- the --sections view ---- */

static const char *fmt_time(char *buf, size_t len, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.3f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	return buf;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

struct view_ctx {
	FILE *out;
	const struct nw_sectree *t;
	const struct nw_seclog *log;
};

static int cmp_total_desc(const void *a, const void *b, void *arg)
{
	const struct nw_sectree *t = arg;
	const struct nw_secnode *x = &t->nodes[*(const uint32_t *)a];
	const struct nw_secnode *y = &t->nodes[*(const uint32_t *)b];

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Node indexes in depth-first order, children by total time, largest first. */
static uint32_t *view_order(const struct nw_sectree *t, uint32_t *ret_n)
{
	uint32_t *order = malloc(t->n * sizeof(*order)), *stack = malloc(t->n * sizeof(*stack));
	uint32_t *kids = malloc(t->n * sizeof(*kids));
	uint32_t n = 0, sp = 0;

	if (!order || !stack || !kids) {
		free(order);
		free(stack);
		free(kids);
		return NULL;
	}
	stack[sp++] = NW_SECNODE_ROOT;
	while (sp) {
		uint32_t node = stack[--sp], nk = 0;

		if (node != NW_SECNODE_ROOT)
			order[n++] = node;
		for (uint32_t c = t->nodes[node].first_child; c != NONE; c = t->nodes[c].next_sibling)
			kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), cmp_total_desc, (void *)t);
		while (nk)
			stack[sp++] = kids[--nk];
	}
	free(stack);
	free(kids);
	*ret_n = n;
	return order;
}

int nw_sections_view(FILE *out, const struct nw_sections *s, const struct nw_measurement *p,
		     const struct nw_filter *f, unsigned metric)
{
	const struct nw_seclog *log = s->log;
	struct nw_sectree *t = NULL;
	char a[32], b[32], c[32], d[32], w[32];
	uint32_t *order = NULL, n = 0;
	const char *mname = p && metric < p->nmetrics ? p->metrics[metric].name : "samples";
	int rc;

	rc = nw_sectree_build(s, p, f, metric, &t);
	if (rc)
		return rc;
	order = view_order(t, &n);
	if (!order) {
		nw_sectree_free(t);
		return -ENOMEM;
	}
	fprintf(out, "Sections: %u section%s, %llu interval%s in %u thread%s of %u process "
		     "image%s\n",
		n, n == 1 ? "" : "s", (unsigned long long)t->nintervals,
		t->nintervals == 1 ? "" : "s", t->nthreads, t->nthreads == 1 ? "" : "s",
		log->nimages, log->nimages == 1 ? "" : "s");
	if (t->joined)
		fprintf(out, "Joined with %s: %llu in all, %.1f%% inside sections\n", mname,
			(unsigned long long)t->total_weight,
			pct(t->total_weight - t->nodes[0].self_weight, t->total_weight));
	else
		fprintf(out, "No sample times in this measurement: times only\n");
	if (log->dropped || log->overflow || log->unbalanced || log->unregistered ||
	    log->truncated || log->unended)
		fprintf(out, "Notes: %llu intervals dropped (log size limit), %llu opened too "
			     "deep, %llu unbalanced, %llu past the name/path limits; %u log%s cut "
			     "short, %u image%s without an end\n",
			(unsigned long long)log->dropped, (unsigned long long)log->overflow,
			(unsigned long long)log->unbalanced, (unsigned long long)log->unregistered,
			log->truncated, log->truncated == 1 ? "" : "s", log->unended,
			log->unended == 1 ? "" : "s");
	fprintf(out, "\n%10s %12s %12s %12s %12s %10s %6s %6s  %s\n", "CALLS", "TOTAL", "SELF",
		"MIN", "MAX", "SAMPLES", "INCL%", "SELF%", "SECTION");
	for (uint32_t k = 0; k < n; k++) {
		const struct nw_secnode *nd = &t->nodes[order[k]];

		if (t->joined)
			snprintf(w, sizeof(w), "%llu", (unsigned long long)nd->weight);
		else
			snprintf(w, sizeof(w), "-");
		fprintf(out, "%10llu %12s %12s %12s %12s %10s %5.1f%% %5.1f%%  %*s%s",
			(unsigned long long)nd->count, fmt_time(a, sizeof(a), nd->total_ns),
			fmt_time(b, sizeof(b), nd->self_ns), fmt_time(c, sizeof(c), nd->min_ns),
			fmt_time(d, sizeof(d), nd->max_ns), w, pct(nd->weight, t->total_weight),
			pct(nd->self_weight, t->total_weight), (int)(2 * (nd->depth - 1)), "",
			log->names[nd->name].name);
		if (nd->open)
			fprintf(out, "  (%llu open at the end)", (unsigned long long)nd->open);
		fputc('\n', out);
	}
	if (t->joined)
		fprintf(out, "%10s %12s %12s %12s %12s %10llu %5.1f%% %5.1f%%  %s\n", "", "", "", "",
			"", (unsigned long long)t->nodes[0].self_weight,
			pct(t->nodes[0].self_weight, t->total_weight),
			pct(t->nodes[0].self_weight, t->total_weight), "(outside any section)");
	free(order);
	nw_sectree_free(t);
	return ferror(out) ? -EIO : 0;
}


/* ---- as outputs of narwhal-report's plan ---- */

/* The section log and the samples' times (traces), joined with the trees. */
static void sections_reads(const struct nw_plan *p, const struct nw_measurement *m,
			   struct nw_reads *r)
{
	r->what = NW_READS_TREES | NW_READS_TRACES;
}

static int sections_run(struct nw_output_in *in)
{
	return nw_sections_view(in->out, in->model->sections, in->model->m, in->o->filter,
				in->o->view.metric);
}

const struct nw_output_kind nw_sections_output = { "--sections", sections_reads, sections_run };

int nw_sections_split_plan(const void *sections, const struct nw_measurement *m,
			   struct nw_frames *frames, struct nw_split **ret)
{
	return nw_sections_split(sections, m, frames, ret);
}
