/* SPDX-License-Identifier: MIT */
/* The views as outputs of a plan; see outputs.h. */
#include "report/outputs.h"

#include "report/disasm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/callers.h"
#include "report/folded.h"
#include "report/health.h"
#include "report/lines.h"
#include "report/locks.h"
#include "util/log.h"

/* ---- what each reads ---- */

static void reads_pruned(const struct nw_plan *p, const struct nw_measurement *m,
			 struct nw_reads *r)
{
	const struct nw_report_opts *o = nw_plan_opts(p);

	/* The tree hides what is under --percent-limit: not built (half of it, for rounding). */
	*r = (struct nw_reads){ .what = NW_READS_PRUNED, .per_thread = o->per_thread,
				.inverted = o->inverted,
				.prune_share = o->view.percent_limit / 100 / 2,
				.prune_metric = o->view.metric };
}

static void reads_visits(const struct nw_plan *p, const struct nw_measurement *m,
			 struct nw_reads *r)
{
	*r = (struct nw_reads){ .what = NW_READS_VISITS,
				.per_thread = nw_plan_opts(p)->per_thread };
}

static void reads_visits_by_name(const struct nw_plan *p, const struct nw_measurement *m,
				 struct nw_reads *r)
{
	const struct nw_report_opts *o = nw_plan_opts(p);

	*r = (struct nw_reads){ .what = NW_READS_VISITS, .per_thread = o->per_thread,
				.inverted = o->inverted, .names = true };
}

static void reads_tree(const struct nw_plan *p, const struct nw_measurement *m,
		       struct nw_reads *r)
{
	*r = (struct nw_reads){ .what = NW_READS_TREE, .per_thread = nw_plan_opts(p)->per_thread };
}

/* The manifest's sample counts, unless a column sums the trees (nw_view_threads_needs_trees()). */
static void reads_threads(const struct nw_plan *p, const struct nw_measurement *m,
			  struct nw_reads *r)
{
	r->what = nw_view_threads_needs_trees(m) ? NW_READS_TREES : 0;
}

/* The stacks as the recorder unwound them, the ip of each frame. */
static void reads_physical(const struct nw_plan *p, const struct nw_measurement *m,
			   struct nw_reads *r)
{
	r->what = NW_READS_TREES;
}

static void reads_timeline(const struct nw_plan *p, const struct nw_measurement *m,
			   struct nw_reads *r)
{
	*r = (struct nw_reads){ .what = NW_READS_NODE_MAP | NW_READS_TRACES, .events = true };
}

static void reads_diff(const struct nw_plan *p, const struct nw_measurement *m,
		       struct nw_reads *r)
{
	r->what = NW_READS_DIFF;
}

static void reads_diff_modules(const struct nw_plan *p, const struct nw_measurement *m,
			       struct nw_reads *r)
{
	*r = (struct nw_reads){ .what = NW_READS_DIFF, .modules = true };
}

/* Both models' stacks as the recorder unwound them. */
static void reads_physical_both(const struct nw_plan *p, const struct nw_measurement *m,
				struct nw_reads *r)
{
	r->what = NW_READS_TREES | NW_READS_BASE;
}

/* ---- how each runs ---- */

/* A failure of a view that reads no tree of its own names the measurement, not the file. */
static int named(struct nw_output_in *in, int ret)
{
	if (ret && ret != -EIO)
		nw_set_err(in->err, in->errlen, "%s: %s", in->model->name, strerror(-ret));
	return ret;
}

static int run_tree(struct nw_output_in *in)
{
	return nw_view_tree(in->out, in->stacks, &in->o->view);
}

static int run_flat(struct nw_output_in *in)
{
	return named(in, nw_view_flat(in->out, in->stacks, &in->o->view));
}

static int run_threads(struct nw_output_in *in)
{
	return nw_view_threads(in->out, in->model->m, in->o->filter);
}

static int run_folded(struct nw_output_in *in)
{
	return named(in, nw_view_folded(in->out, in->stacks, &in->o->view));
}

static int run_callers(struct nw_output_in *in)
{
	int ret = nw_view_callers(in->out, in->stacks, in->o->re, &in->o->view);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s: no function matches %s", in->model->name,
			   in->o->re_text);
	return ret;
}

static int run_modules(struct nw_output_in *in)
{
	return nw_view_modules(in->out, in->stacks, &in->o->view);
}

static int run_leaks(struct nw_output_in *in)
{
	int ret = nw_view_leaks(in->out, in->stacks, &in->o->view);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s: no allocation metrics (record with "
				"narwhal-record --alloc for --leaks)", in->model->name);
	return ret;
}

static int lines(struct nw_output_in *in, bool addresses)
{
	const struct nw_report_opts *o = in->o;
	struct nw_lines_opts lo = { .func = o->re, .metric = o->view.metric, .sort = o->sort,
				    .addresses = addresses, .full_names = o->view.full_names };
	int ret = nw_view_lines(in->out, in->model->m, o->filter, &lo);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s: no sampled function matches %s",
			   in->model->name, o->re_text);
	return ret;
}

static int run_lines(struct nw_output_in *in)
{
	return lines(in, false);
}

static int run_addresses(struct nw_output_in *in)
{
	return lines(in, true);
}

static void reads_code(const struct nw_plan *p, const struct nw_measurement *m,
		       struct nw_reads *r)
{
	r->what = NW_READS_TREES | NW_READS_CODE;
}

static int run_disasm(struct nw_output_in *in)
{
	const struct nw_report_opts *o = in->o;
	struct nw_disasm_opts d = { .func = o->re, .metric = o->view.metric, .sort = o->sort,
				    .source = o->source, .full_names = o->view.full_names };
	int ret = nw_view_disasm(in->out, in->model->m, o->filter, &d);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s: no sampled function matches %s",
			   in->model->name, o->re_text);
	else if (ret == -ENODATA)
		nw_set_err(in->err, in->errlen, "%s holds no machine code (recorded with "
			   "--no-code, or by a narwhal-record before it stored code)",
			   in->model->name);
	return ret;
}

static int run_timeline(struct nw_output_in *in)
{
	struct nw_timeline_opts to = in->o->timeline;

	to.metric = in->o->view.metric;
	return nw_view_timeline(in->out, in->timeline, &to);
}

static int run_health(struct nw_output_in *in)
{
	struct nw_health *h = NULL;
	int ret = nw_health_classify(in->model->m, in->o->filter, &h);

	if (!ret)
		ret = nw_health_print(in->out, h);
	nw_health_free(h);
	return named(in, ret);
}

static int run_locks(struct nw_output_in *in)
{
	int ret = nw_view_locks(in->out, in->model->m, in->o->filter, in->o->view.full_names);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s: no locks recorded (record with "
				"narwhal-record --locks for --locks)", in->model->name);
	return ret == -ENOENT ? ret : named(in, ret);
}

static struct nw_diff_opts diff_opts(const struct nw_output_in *in)
{
	return (struct nw_diff_opts){ .base_label = in->base->label,
				      .new_label = in->model->label,
				      .percent_limit = in->o->view.percent_limit,
				      .all = in->o->diff_all,
				      .absolute = in->o->diff_absolute,
				      .full_names = in->o->view.full_names };
}

static int run_diff(struct nw_output_in *in)
{
	struct nw_diff_opts o = diff_opts(in);

	return nw_diff_flat(in->out, in->diff, &o);
}

static int run_diff_tree(struct nw_output_in *in)
{
	struct nw_diff_opts o = diff_opts(in);

	return nw_diff_tree(in->out, in->diff, &o);
}

static int run_diff_folded(struct nw_output_in *in)
{
	return nw_diff_folded(in->out, in->diff);
}

static int run_diff_callers(struct nw_output_in *in)
{
	struct nw_diff_opts o = diff_opts(in);
	int ret = nw_diff_callers(in->out, in->diff, in->o->re, &o);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s, %s: no function matches %s", in->base->name,
			   in->model->name, in->o->re_text);
	return ret;
}

static int run_diff_lines(struct nw_output_in *in)
{
	struct nw_diff_opts o = diff_opts(in);
	int ret = nw_diff_lines(in->out, in->base->m, in->base->metric, in->model->m,
				in->model->metric, in->o->filter, in->o->re, &o);

	if (ret == -ENOENT)
		nw_set_err(in->err, in->errlen, "%s, %s: no sampled function matches %s",
			   in->base->name, in->model->name, in->o->re_text);
	return ret;
}

int nw_view_diff(int view)
{
	switch (view) {
	case NW_VIEW_FLAT:
		return NW_VIEW_DIFF;
	case NW_VIEW_TREE:
		return NW_VIEW_DIFF_TREE;
	case NW_VIEW_FOLDED:
		return NW_VIEW_DIFF_FOLDED;
	case NW_VIEW_MODULES:
		return NW_VIEW_DIFF_MODULES;
	case NW_VIEW_CALLERS:
		return NW_VIEW_DIFF_CALLERS;
	case NW_VIEW_LINES:
		return NW_VIEW_DIFF_LINES;
	default:
		return -1;
	}
}

const struct nw_output_kind nw_views[NW_VIEWS] = {
	[NW_VIEW_TREE] = { "--tree", reads_pruned, run_tree },
	[NW_VIEW_FLAT] = { "--flat", reads_visits, run_flat },
	[NW_VIEW_THREADS] = { "--threads", reads_threads, run_threads },
	[NW_VIEW_FOLDED] = { "--folded", reads_visits_by_name, run_folded },
	[NW_VIEW_CALLERS] = { "--callers", reads_tree, run_callers },
	[NW_VIEW_MODULES] = { "--by module", reads_tree, run_modules },
	[NW_VIEW_LEAKS] = { "--leaks", reads_tree, run_leaks },
	[NW_VIEW_LINES] = { "--lines", reads_physical, run_lines },
	[NW_VIEW_ADDRESSES] = { "--addresses", reads_physical, run_addresses },
	[NW_VIEW_TIMELINE] = { "--timeline", reads_timeline, run_timeline },
	[NW_VIEW_HEALTH] = { "--stack-health", reads_physical, run_health },
	[NW_VIEW_DISASM] = { "--disasm", reads_code, run_disasm },
	[NW_VIEW_DIFF] = { "--diff", reads_diff, run_diff },
	[NW_VIEW_DIFF_TREE] = { "--diff --tree", reads_diff, run_diff_tree },
	[NW_VIEW_DIFF_FOLDED] = { "--diff --folded", reads_diff, run_diff_folded },
	[NW_VIEW_DIFF_MODULES] = { "--diff --by module", reads_diff_modules, run_diff },
	[NW_VIEW_DIFF_CALLERS] = { "--diff --callers", reads_diff, run_diff_callers },
	[NW_VIEW_DIFF_LINES] = { "--diff --lines", reads_physical_both, run_diff_lines },
	[NW_VIEW_LOCKS] = { "--locks", reads_physical, run_locks },
};
