/* SPDX-License-Identifier: MIT */
/*
 * The output plan; see plan.h.  Before anything runs, each output's input
 * is chosen (made for it, or the one the output before made, when equal),
 * and for each model the last output that needs its physical trees: a
 * direct reader, the output whose input is made from them, a reader of
 * the stacks merged as visited or of the node map (whose timelines check
 * trace nodes against the trees).  The trees go right after the last
 * input made from them when nothing else needs them there (before the
 * transformations that follow the merge make trees of their own), else
 * after that output.
 */
#include "report/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/recursion.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strbuf.h"

/* The inputs a plan makes (the kinds of struct input). */
enum { IN_DEFERRED, IN_TREE, IN_NODE_MAP, IN_DIFF };

/* The models of a plan run: the measurement, and the base of --diff. */
enum { MODEL, BASE, NMODELS };

struct output {
	const struct nw_output_kind *kind;
	const char *path;
};

struct nw_plan {
	const struct nw_report_opts *o;
	struct output *v;
	size_t n, cap;
};

/* An input: made before output @first runs, freed after output @last ran. */
struct input {
	int kind;
	bool per_thread, inverted;
	bool modules;              /* IN_DIFF: joined by module */
	double prune_share;
	unsigned prune_metric;
	size_t first, last;
	struct nw_stacks *stacks;
	struct nw_diff *diff;
};

struct run {
	const struct nw_plan *p;
	const struct nw_plan_model *model[NMODELS];
	struct nw_reads *reads;    /* per output */
	long *input;               /* per output: its input, -1 for none */
	struct input *in;
	size_t nin, cap_in;
	long trees_last[NMODELS];  /* the last output that needs the model's trees, -1 for none */
	bool dropped[NMODELS];
	char *err;
	size_t errlen;
};

struct nw_plan *nw_plan_new(const struct nw_report_opts *o)
{
	struct nw_plan *p = calloc(1, sizeof(*p));

	if (p)
		p->o = o;
	return p;
}

void nw_plan_free(struct nw_plan *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

int nw_plan_add(struct nw_plan *p, const struct nw_output_kind *kind, const char *path)
{
	if (nw_grow(&p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return -ENOMEM;
	p->v[p->n++] = (struct output){ kind, path };
	return 0;
}

const struct nw_report_opts *nw_plan_opts(const struct nw_plan *p)
{
	return p->o;
}

bool nw_plan_reshaped(const struct nw_plan *p)
{
	return nw_stack_filter_active(p->o->stack_filter) || p->o->fold_recursion || p->o->split;
}

/* Every input but the model's own trees and traces. */
#define DERIVED                                                                                \
	(NW_READS_VISITS | NW_READS_TREE | NW_READS_PRUNED | NW_READS_NODE_MAP | NW_READS_DIFF)

unsigned nw_plan_reads(const struct nw_plan *p, const struct nw_measurement *m)
{
	unsigned what = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct nw_reads r = { 0 };

		p->v[i].kind->reads(p, m, &r);
		if (r.what & (NW_READS_TREES | NW_READS_BASE | DERIVED))
			what |= NW_READS_TREES;
		what |= r.what & (NW_READS_TRACES | NW_READS_CODE);
	}
	return what;
}

/* ---- choosing the inputs ---- */

/* The input output @i reads, as it would be made for it (@x); false for none. */
static bool input_for(const struct run *r, size_t i, struct input *x)
{
	const struct nw_reads *rd = &r->reads[i];
	bool reshaped = nw_plan_reshaped(r->p);

	*x = (struct input){ .first = i, .last = i, .per_thread = rd->per_thread,
			     .inverted = rd->inverted };
	if (rd->what & NW_READS_DIFF) {
		x->kind = IN_DIFF;
		x->modules = rd->modules;
	} else if (rd->what & NW_READS_NODE_MAP) {
		x->kind = IN_NODE_MAP;
	} else if ((rd->what & NW_READS_VISITS) && !reshaped && !rd->inverted &&
		   !(rd->names && rd->per_thread)) {
		/* The merge visits what it makes: no tree beside the model's. */
		x->kind = IN_DEFERRED;
	} else if (rd->what & (NW_READS_VISITS | NW_READS_TREE | NW_READS_PRUNED)) {
		x->kind = IN_TREE;
		/* A reshaped or inverted tree needs every frame before it is made. */
		if ((rd->what & NW_READS_PRUNED) && !rd->per_thread && !reshaped && !rd->inverted) {
			x->prune_share = rd->prune_share;
			x->prune_metric = rd->prune_metric;
		}
	} else {
		return false;
	}
	return true;
}

static bool same_input(const struct input *a, const struct input *b)
{
	if (a->kind != b->kind || a->kind == IN_DEFERRED)
		return false;
	if (a->kind == IN_DIFF)
		return a->modules == b->modules;
	if (a->kind != IN_TREE)
		return true;
	return a->per_thread == b->per_thread && a->inverted == b->inverted &&
	       a->prune_share == b->prune_share &&
	       (!a->prune_share || a->prune_metric == b->prune_metric);
}

/* Output @i reads model @k's trees itself, or through an input it reads as it runs. */
static bool reads_trees_itself(const struct run *r, size_t i, int k)
{
	const struct input *x = r->input[i] >= 0 ? &r->in[r->input[i]] : NULL;

	if (k == BASE)
		return r->reads[i].what & NW_READS_BASE;
	return (r->reads[i].what & NW_READS_TREES) ||
	       (x && (x->kind == IN_DEFERRED || x->kind == IN_NODE_MAP));
}

/*
 * Each output's input: the input of the output before it when that is
 * the same (made once for the outputs that read it one after the other;
 * one further on is made again, not held while others are made), else a
 * new one; and the last output that needs each model's trees.  -ENOMEM,
 * -EINVAL for an output that reads two inputs.
 */
static int choose(struct run *r)
{
	const struct nw_plan *p = r->p;

	for (size_t i = 0; i < p->n; i++) {
		struct input x, *last = r->nin ? &r->in[r->nin - 1] : NULL;
		unsigned derived;

		p->v[i].kind->reads(p, r->model[MODEL]->m, &r->reads[i]);
		derived = r->reads[i].what & DERIVED;
		if (!!(derived & (NW_READS_VISITS | NW_READS_TREE | NW_READS_PRUNED)) +
			    !!(derived & NW_READS_NODE_MAP) + !!(derived & NW_READS_DIFF) > 1) {
			nw_set_err(r->err, r->errlen, "%s: reads two inputs", p->v[i].kind->name);
			return -EINVAL;
		}
		r->input[i] = -1;
		if (!input_for(r, i, &x))
			continue;
		if (last && last->last + 1 == i && same_input(last, &x)) {
			last->last = i;
		} else {
			if (nw_grow(&r->in, &r->cap_in, r->nin + 1, sizeof(*r->in)))
				return -ENOMEM;
			r->in[r->nin++] = x;
		}
		r->input[i] = (long)r->nin - 1;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct input *x = r->input[i] >= 0 ? &r->in[r->input[i]] : NULL;

		for (int k = 0; k < NMODELS; k++)
			if (reads_trees_itself(r, i, k) || (x && x->first == i && (k == MODEL ||
									 x->kind == IN_DIFF)))
				r->trees_last[k] = (long)i;
	}
	return 0;
}

/* ---- making them ---- */

/* Frees model @k's trees after output @i when it is their last. */
static void drop_trees(struct run *r, int k, size_t i)
{
	if (r->trees_last[k] == (long)i && !r->dropped[k] && r->model[k]) {
		nw_measurement_drop_trees(r->model[k]->m);
		r->dropped[k] = true;
	}
}

/*
 * The symbolic tree @x of model @k, of the threads @f selects, for output
 * @i: merged or per thread, split by section, then folded, filtered and
 * inverted (each a tree from a tree).  Unless @more trees are to be made
 * of them, the model's trees are freed once it is made when nothing later
 * needs them, before the transformations add trees of their own.
 */
static int make_tree(struct run *r, const struct input *x, int k, size_t i,
		     const struct nw_filter *f, bool more, struct nw_stacks **ret_s)
{
	const struct nw_report_opts *o = r->p->o;
	const struct nw_plan_model *pm = r->model[k];
	struct nw_stacks_opts so = { .filter = f, .per_thread = x->per_thread,
				     .prune_share = x->prune_share,
				     .prune_metric = x->prune_metric };
	struct nw_stacks *s = nw_stacks_new(pm->m, pm->m->nmetrics);
	struct nw_split *split = NULL;
	int ret = s ? 0 : -ENOMEM;

	if (!ret && o->split)
		ret = o->split(pm->sections, pm->m, &s->frames, &split);
	so.split = split;
	if (!ret)
		ret = nw_stacks_build(s, &so);
	nw_split_free(split);
	if (!ret && !more && !reads_trees_itself(r, i, k))
		drop_trees(r, k, i);
	if (!ret && o->fold_recursion) {
		struct nw_cct *folded = nw_frames_fold_recursion(&s->frames, s->tree);

		if (folded)
			nw_stacks_set_tree(s, folded);
		else
			ret = -ENOMEM;
	}
	if (!ret && nw_stack_filter_active(o->stack_filter))
		ret = nw_stacks_filter(s, o->stack_filter);
	if (!ret && x->inverted)
		ret = nw_stacks_invert(s);
	if (ret) {
		nw_set_err(r->err, r->errlen, "%s: %s", pm->name, strerror(-ret));
		nw_stacks_free(s);
		return ret;
	}
	*ret_s = s;
	return 0;
}

/*
 * The runs of side @k of a diff (model @k), each its merged tree, into
 * @runs: the model's runs apart (@apart: a tree of each run's threads) or
 * merged.  -errno with a message.
 */
static int diff_side(struct run *r, int k, size_t i, bool apart, struct nw_diff_run *runs,
		     struct nw_stacks **trees)
{
	const struct nw_plan_model *pm = r->model[k];
	const struct nw_filter *of = r->p->o->filter;
	struct input merged = { .kind = IN_TREE };
	uint32_t n = apart ? nw_measurement_runs(pm->m) : 1;
	int sm = nw_measurement_samples_metric(pm->m, pm->metric), ret = 0;

	for (uint32_t j = 0; j < n && !ret; j++) {
		struct nw_filter f = of ? *of : NW_FILTER_ALL;
		uint32_t first, end;

		if (apart) {
			nw_measurement_run(pm->m, j, &first, &end);
			f.first = pm->m->threads + first;
			f.end = pm->m->threads + end;
		}
		/* The noise of a change is that of the samples behind it. */
		runs[j] = (struct nw_diff_run){ .metric = pm->metric,
						.samples = sm >= 0 ? (unsigned)sm : pm->metric };
		ret = make_tree(r, &merged, k, i, &f, j + 1 < n, &trees[j]);
		runs[j].s = trees[j];
	}
	return ret;
}

/*
 * --diff: both models' merged trees, joined by frame names (or modules);
 * with two or more runs on each side, a tree of each run.
 */
static int make_diff(struct run *r, struct input *x, size_t i)
{
	const struct nw_plan_model *b = r->model[BASE], *n = r->model[MODEL];
	uint32_t nb = b ? nw_measurement_runs(b->m) : 0, nn = nw_measurement_runs(n->m);
	bool apart = nb >= 2 && nn >= 2 && nb <= NW_DIFF_MAX_RUNS && nn <= NW_DIFF_MAX_RUNS;
	struct nw_diff_run *runs;
	struct nw_stacks **trees;
	int ret = 0;

	if (!b)
		return -EINVAL;
	nb = apart ? nb : 1;
	nn = apart ? nn : 1;
	runs = calloc(nb + nn, sizeof(*runs));
	trees = calloc(nb + nn, sizeof(*trees));
	if (!runs || !trees)
		ret = -ENOMEM;
	if (!ret)
		ret = diff_side(r, BASE, i, apart, runs, trees);
	if (!ret)
		ret = diff_side(r, MODEL, i, apart, runs + nb, trees + nb);
	if (!ret) {
		ret = nw_diff_join(runs, nb, runs + nb, nn, x->modules ? NW_DIFF_BY_MODULE : 0,
				   &x->diff);
		if (ret)
			nw_set_err(r->err, r->errlen, "--diff: %s", strerror(-ret));
		else
			nw_diff_count_runs(x->diff, nw_measurement_runs(b->m),
					   nw_measurement_runs(n->m));
	}
	for (uint32_t j = 0; trees && j < nb + nn; j++)
		nw_stacks_free(trees[j]);
	free(runs);
	free(trees);
	return ret;
}

/* Makes input @x for its first reader, output @i.  -errno with a message. */
static int make_input(struct run *r, struct input *x, size_t i)
{
	const struct nw_plan_model *pm = r->model[MODEL];
	struct nw_stacks_opts so = { .filter = r->p->o->filter, .node_map = true };
	int ret = 0;

	switch (x->kind) {
	case IN_DEFERRED:
		x->stacks = nw_stacks_new(pm->m, pm->m->nmetrics);
		if (x->stacks)
			nw_stacks_defer(x->stacks, r->p->o->filter, x->per_thread);
		else
			ret = -ENOMEM;
		break;
	case IN_TREE:
		return make_tree(r, x, MODEL, i, r->p->o->filter, false, &x->stacks);
	case IN_NODE_MAP:
		x->stacks = nw_stacks_new(pm->m, pm->m->nmetrics);
		ret = x->stacks ? nw_stacks_build(x->stacks, &so) : -ENOMEM;
		break;
	case IN_DIFF:
		return make_diff(r, x, i);
	}
	if (ret)
		nw_set_err(r->err, r->errlen, "%s: %s", pm->name, strerror(-ret));
	return ret;
}

static void free_input(struct input *x)
{
	nw_stacks_free(x->stacks);
	nw_diff_free(x->diff);
	x->stacks = NULL;
	x->diff = NULL;
}

/* ---- running them ---- */

/* Opens the file output @op writes, @name, into *@ret.  -errno with a message. */
static int open_output(struct run *r, const struct output *op, const char *name, FILE **ret)
{
	int err;

	/* Exports and views run to tens of megabytes: written behind, while the next is made. */
	if (op->path || r->p->o->output)
		*ret = nw_fopen_behind(name);
	else
		*ret = nw_fdopen_behind(fileno(stdout), false);
	if (*ret)
		return 0;
	err = errno ? errno : EIO;
	nw_set_err(r->err, r->errlen, "%s: %s", name, strerror(err));
	return -err;
}

/* The timeline output @i reads, of the node map @x: opened, or with its events.  -errno. */
static int make_timeline(struct run *r, size_t i, const struct input *x,
			 struct nw_timeline **ret)
{
	const struct nw_filter *f = r->p->o->filter;
	int rc = r->reads[i].events ? nw_timeline_build(x->stacks, f, ret)
				    : nw_timeline_open(x->stacks, f, ret);

	if (rc == -ENODATA)
		nw_set_err(r->err, r->errlen, "%s: no trace of the threads selected (recorded "
				"with --no-trace?): the time of each sample is needed",
			   r->model[MODEL]->name);
	else if (rc)
		nw_set_err(r->err, r->errlen, "%s: %s", r->model[MODEL]->name, strerror(-rc));
	return rc;
}

static int run_output(struct run *r, size_t i)
{
	const struct output *op = &r->p->v[i];
	const char *name = op->path ? op->path : r->p->o->output ? r->p->o->output : "stdout";
	struct input *x = r->input[i] >= 0 ? &r->in[r->input[i]] : NULL;
	struct nw_output_in in = { .o = r->p->o, .path = op->path, .model = r->model[MODEL],
				   .base = r->model[BASE], .err = r->err, .errlen = r->errlen };
	struct nw_timeline *tl = NULL;
	int ret = 0;

	if (!op->path)
		ret = open_output(r, op, name, &in.out);
	if (!ret && x && x->first == i)
		ret = make_input(r, x, i);
	if (!ret && x && x->kind == IN_NODE_MAP)
		ret = make_timeline(r, i, x, &tl);
	if (!ret && op->path && !op->kind->own_file)
		ret = open_output(r, op, name, &in.out);
	if (!ret && x) {
		in.stacks = x->kind == IN_NODE_MAP ? NULL : x->stacks;
		in.timeline = tl;
		in.diff = x->diff;
	}
	if (!ret)
		ret = op->kind->run(&in);
	if (in.out) {
		errno = 0;
		/* A writer that saw its stream fail says -EIO; fclose() says why. */
		if (fclose(in.out) != 0 && (!ret || ret == -EIO))
			ret = errno ? -errno : -EIO;
	}
	nw_timeline_free(tl);
	if (ret && !r->err[0])
		nw_set_err(r->err, r->errlen, "%s: %s", name, strerror(-ret));
	return ret;
}

int nw_plan_run(struct nw_plan *p, const struct nw_plan_model *model,
		const struct nw_plan_model *base, char *err, size_t errlen)
{
	char none[1];
	struct run r = { .p = p, .model = { model, base }, .trees_last = { -1, -1 },
			 .err = err && errlen ? err : none, .errlen = err && errlen ? errlen : 1 };
	int ret = -ENOMEM;

	r.err[0] = 0;
	r.reads = calloc(p->n ? p->n : 1, sizeof(*r.reads));
	r.input = calloc(p->n ? p->n : 1, sizeof(*r.input));
	if (r.reads && r.input)
		ret = choose(&r);
	for (size_t i = 0; !ret && i < p->n; i++) {
		ret = run_output(&r, i);
		/* Each input after its last reader, then the trees nothing reads any more. */
		for (size_t k = 0; k < r.nin; k++)
			if (r.in[k].last == i)
				free_input(&r.in[k]);
		for (int k = 0; k < NMODELS; k++)
			drop_trees(&r, k, i);
	}
	if (ret && !r.err[0])
		nw_set_err(r.err, r.errlen, "%s", strerror(-ret));
	for (size_t k = 0; k < r.nin; k++)
		free_input(&r.in[k]);
	free(r.in);
	free(r.reads);
	free(r.input);
	return ret;
}

/* ---- for the outputs ---- */

int nw_output_split(const struct nw_output_in *in, struct nw_frames *frames,
		    struct nw_split **ret)
{
	*ret = NULL;
	if (!in->o->split)
		return 0;
	return in->o->split(in->model->sections, in->model->m, frames, ret);
}
