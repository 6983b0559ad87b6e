/* SPDX-License-Identifier: MIT */
/* The exports as outputs of a plan; see outputs.h. */
#include "export/outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/chrometrace.h"
#include "export/export.h"
#include "export/flamegraph.h"
#include "export/html.h"
#include "export/pprof.h"
#include "export/speedscope.h"
#include "util/strbuf.h"

/* ---- --html: the model's trees and traces (and the base's and the diff, with --diff) ---- */

static void reads_html(const struct nw_plan *p, const struct nw_measurement *m,
		       struct nw_reads *r)
{
	r->what = NW_READS_TREES | NW_READS_TRACES | NW_READS_CODE |
		  (nw_plan_opts(p)->diff ? NW_READS_BASE | NW_READS_DIFF : 0);
}

static int run_html(struct nw_output_in *in)
{
	struct nw_html_opts ho = { .filter = in->o->filter, .metric = in->model->metric,
				   .label = in->model->label,
				   .base = in->base ? in->base->m : NULL,
				   .base_label = in->base ? in->base->label : NULL,
				   .diff = in->diff };

	return nw_html_write(in->out, in->model->m, &ho);
}

/* ---- --pprof: the physical trees, every location an address ---- */

/* Frames hidden, cut or folded are no addresses any more: then the stacks' frames as locations. */
static bool pprof_frames(const struct nw_plan *p)
{
	const struct nw_report_opts *o = nw_plan_opts(p);

	return nw_stack_filter_active(o->stack_filter) || o->fold_recursion;
}

static void reads_pprof(const struct nw_plan *p, const struct nw_measurement *m,
			struct nw_reads *r)
{
	if (pprof_frames(p))
		*r = (struct nw_reads){ .what = NW_READS_TREE, .per_thread = true };
	else
		r->what = NW_READS_TREES;
}

static int run_pprof(struct nw_output_in *in)
{
	struct nw_split *split = NULL;
	struct nw_pprof_file *pf;
	struct nw_pprof *b;
	int ret = nw_pprof_open(in->model->m, in->path, &b, &pf, in->err, in->errlen);

	if (ret)
		return ret;
	if (in->stacks) {
		ret = nw_pprof_add_stacks(b, in->stacks);
	} else {
		ret = nw_output_split(in, nw_pprof_frames(b), &split);
		if (!ret)
			ret = nw_pprof_add(b, in->o->filter, split);
	}
	ret = nw_pprof_close(b, pf, ret, in->err, in->errlen);
	nw_split_free(split);
	return ret;
}

/* ---- --speedscope: in time order from the traces, else each calling context once ---- */

static bool has_traces(const struct nw_measurement *m)
{
	for (uint32_t i = 0; i < m->nthreads; i++)
		if (m->threads[i].trace || m->threads[i].trace_file)
			return true;
	return false;
}

static void reads_speedscope(const struct nw_plan *p, const struct nw_measurement *m,
			     struct nw_reads *r)
{
	/* The traces follow the recorded stacks: not reshaped, not inverted. */
	if (!nw_plan_reshaped(p) && !nw_plan_opts(p)->inverted && has_traces(m))
		r->what = NW_READS_NODE_MAP | NW_READS_TRACES;
	else
		*r = (struct nw_reads){ .what = NW_READS_VISITS | NW_READS_TRACES,
					.per_thread = true };
}

static int run_speedscope(struct nw_output_in *in)
{
	const struct nw_report_opts *o = in->o;
	unsigned metric = o->metric_given ? o->view.metric
					  : nw_speedscope_default_metric(in->model->m);

	/* What speedscope's Time Order view shows; a thread read at a time. */
	if (in->timeline)
		return nw_speedscope_write_timeline(in->out, in->timeline, metric);
	return nw_speedscope_write(in->out, in->stacks, metric);
}

/* ---- --chrome-trace: the timeline ---- */

static void reads_timeline(const struct nw_plan *p, const struct nw_measurement *m,
			   struct nw_reads *r)
{
	*r = (struct nw_reads){ .what = NW_READS_NODE_MAP | NW_READS_TRACES, .events = true };
}

static int run_chrome_trace(struct nw_output_in *in)
{
	return nw_chrome_trace_write(in->out, in->timeline, in->o->view.metric);
}

/* ---- --flamegraph: what can be drawn of the stacks, or of --diff's ---- */

static void reads_flamegraph(const struct nw_plan *p, const struct nw_measurement *m,
			     struct nw_reads *r)
{
	const struct nw_report_opts *o = nw_plan_opts(p);
	struct nw_flamegraph_opts fo = { 0 };

	if (o->diff)
		r->what = NW_READS_DIFF;
	else
		*r = (struct nw_reads){ .what = NW_READS_PRUNED, .per_thread = o->per_thread,
					.inverted = o->inverted,
					.prune_share = nw_flamegraph_min_share(&fo),
					.prune_metric = o->view.metric };
}

static int run_flamegraph(struct nw_output_in *in)
{
	const struct nw_measurement *m = in->model->m;
	unsigned metric = in->model->metric;
	struct nw_flamegraph_opts fo = { .title = in->o->inverted ? "Flame Graph (inverted)"
								  : "Flame Graph",
					 .metric = metric,
					 .unit = nw_export_unit(&m->metrics[metric]),
					 .base_metric = -1 };
	const struct nw_stacks *s = in->stacks;
	char *subtitle;
	int ret;

	if (in->diff) {
		fo.title = "Differential Flame Graph";
		fo.metric = NW_DIFF_NEW;
		fo.base_metric = NW_DIFF_BASE;
		s = in->diff->stacks;
		subtitle = nw_strdup_printf("%s -> %s (%s): red grew, blue shrank",
					    in->base->label, in->model->label,
					    m->metrics[metric].name);
	} else {
		subtitle = nw_export_subtitle(s, metric);
	}
	if (!subtitle)
		return -ENOMEM;
	fo.subtitle = subtitle;
	ret = nw_flamegraph_write(in->out, s, &fo);
	free(subtitle);
	return ret;
}

const struct nw_output_kind nw_exports[NW_EXPORTS] = {
	[NW_EXPORT_HTML] = { "--html", reads_html, run_html },
	[NW_EXPORT_PPROF] = { "--pprof", reads_pprof, run_pprof, .own_file = true },
	[NW_EXPORT_SPEEDSCOPE] = { "--speedscope", reads_speedscope, run_speedscope },
	[NW_EXPORT_CHROME_TRACE] = { "--chrome-trace", reads_timeline, run_chrome_trace },
	[NW_EXPORT_FLAMEGRAPH] = { "--flamegraph", reads_flamegraph, run_flamegraph },
};
