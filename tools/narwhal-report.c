/* SPDX-License-Identifier: MIT */
/* narwhal-report: reads a measurement directory and prints one view of it. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/flamegraph.h"
#include "export/pprof.h"
#include "export/speedscope.h"
#include "format/reader.h"
#include "report/diff.h"
#include "report/health.h"
#include "report/recursion.h"
#include "report/stacks.h"
#include "report/views.h"
#include "sections/join.h"
#include "util/strbuf.h"

/* VIEW_NONE: no view asked for; the tree, unless an export was asked for. */
enum view { VIEW_TREE, VIEW_FLAT, VIEW_THREADS, VIEW_FOLDED, VIEW_HEALTH, VIEW_SECTIONS,
	    VIEW_NONE };

struct report_opts {
	enum view view;
	const char *dir;
	const char *output;
	const char *metric;
	bool fold_recursion;
	bool per_thread;        /* --folded, --flamegraph: each thread a root frame */
	const char *pprof, *speedscope, *flamegraph; /* export files */
	const char *diff_base;  /* --diff BASE: compare DIR with BASE */
	struct nw_filter filter;
	struct nw_view_opts view_opts;
	bool by_section;        /* samples below [section NAME] frames (doc/SECTIONS.md) */
};

/* One measurement read for the report, with what the options need of it. */
struct loaded {
	const char *dir;
	struct nw_measurement *m;
	struct nw_sections *sections; /* --sections, --by-section: DIR/sections */
	unsigned metric;
};

enum { OPT_TREE = 256, OPT_FLAT, OPT_THREADS, OPT_FOLDED, OPT_TID, OPT_COMM, OPT_METRIC,
       OPT_PERCENT, OPT_VERSION, OPT_FOLD_RECURSION, OPT_STACK_HEALTH, OPT_PPROF,
       OPT_SPEEDSCOPE, OPT_FLAMEGRAPH, OPT_PER_THREAD, OPT_DIFF, OPT_SECTIONS,
       OPT_BY_SECTION };

static const struct option long_opts[] = {
	{ "tree", no_argument, NULL, OPT_TREE },
	{ "flat", no_argument, NULL, OPT_FLAT },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "folded", no_argument, NULL, OPT_FOLDED },
	{ "stack-health", no_argument, NULL, OPT_STACK_HEALTH },
	{ "fold-recursion", no_argument, NULL, OPT_FOLD_RECURSION },
	{ "pprof", required_argument, NULL, OPT_PPROF },
	{ "speedscope", required_argument, NULL, OPT_SPEEDSCOPE },
	{ "flamegraph", required_argument, NULL, OPT_FLAMEGRAPH },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "diff", required_argument, NULL, OPT_DIFF },
	{ "sections", no_argument, NULL, OPT_SECTIONS },
	{ "by-section", no_argument, NULL, OPT_BY_SECTION },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "thread", required_argument, NULL, OPT_COMM },
	{ "metric", required_argument, NULL, OPT_METRIC },
	{ "percent-limit", required_argument, NULL, OPT_PERCENT },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("Usage: narwhal-report [OPTIONS] [DIR]\n"
	      "Reports the measurement in DIR (default narwhal.data).\n"
	      "\n"
	      "Views:\n"
	      "  --tree               call tree, inclusive and self (default)\n"
	      "  --flat               functions by self, with cumulative share\n"
	      "  --threads            one line per thread\n"
	      "  --folded             folded stacks (flamegraph.pl input)\n"
	      "  --stack-health       how many stacks are complete, where unwinding stops\n"
	      "  --sections           instrumented sections (narwhal.h): tree with counts,\n"
	      "                       times and the samples taken inside each\n"
	      "Options:\n"
	      "  --tid N              only thread N\n"
	      "  --comm NAME          only threads named NAME (also --thread NAME)\n"
	      "  --metric NAME        weigh by metric or event NAME (default: samples)\n"
	      "  --percent-limit P    --tree: hide nodes below P% inclusive (default 0.5)\n"
	      "  --fold-recursion     one node per function on each path (recursion folded)\n"
	      "  --by-section         samples taken inside instrumented sections below\n"
	      "                       [section NAME] frames (views, exports, --diff)\n"
	      "  -o, --output FILE    write the view to FILE\n"
	      "  -h, --help           this help\n"
	      "      --version        print the version\n"
	      "Exports (no view is printed unless one is asked for too):\n"
	      "  --pprof FILE         gzipped pprof profile (go tool pprof FILE)\n"
	      "  --speedscope FILE    speedscope JSON, one profile per thread\n"
	      "  --flamegraph FILE    SVG flame graph (click to zoom, search box)\n"
	      "  --per-thread         each thread a root frame, name-tid (--folded, --flamegraph)\n"
	      "Comparing two measurements:\n"
	      "  --diff BASE DIR      change in share per calling context from BASE to DIR;\n"
	      "                       with --folded: \"stack BASE NEW\" lines (difffolded),\n"
	      "                       with --flamegraph FILE: a differential flame graph\n",
	      f);
}

/* Parses the command line; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct report_opts *o)
{
	char *end;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_TREE:
			o->view = VIEW_TREE;
			break;
		case OPT_FLAT:
			o->view = VIEW_FLAT;
			break;
		case OPT_THREADS:
			o->view = VIEW_THREADS;
			break;
		case OPT_FOLDED:
			o->view = VIEW_FOLDED;
			break;
		case OPT_STACK_HEALTH:
			o->view = VIEW_HEALTH;
			break;
		case OPT_FOLD_RECURSION:
			o->fold_recursion = true;
			break;
		case OPT_PPROF:
			o->pprof = optarg;
			break;
		case OPT_SPEEDSCOPE:
			o->speedscope = optarg;
			break;
		case OPT_FLAMEGRAPH:
			o->flamegraph = optarg;
			break;
		case OPT_PER_THREAD:
			o->per_thread = true;
			break;
		case OPT_DIFF:
			o->diff_base = optarg;
			break;
		case OPT_SECTIONS:
			o->view = VIEW_SECTIONS;
			break;
		case OPT_BY_SECTION:
			o->by_section = true;
			break;
		case OPT_TID:
			errno = 0;
			o->filter.tid = strtoll(optarg, &end, 10);
			if (errno || end == optarg || *end || o->filter.tid < 0 ||
			    o->filter.tid > UINT32_MAX) {
				fprintf(stderr, "narwhal-report: --tid: not a thread id: %s\n",
					optarg);
				return 2;
			}
			break;
		case OPT_COMM:
			o->filter.comm = optarg;
			break;
		case OPT_METRIC:
			o->metric = optarg;
			break;
		case OPT_PERCENT:
			errno = 0;
			o->view_opts.percent_limit = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o->view_opts.percent_limit >= 0) ||
			    o->view_opts.percent_limit > 100) {
				fprintf(stderr,
					"narwhal-report: --percent-limit: not a percentage: %s\n",
					optarg);
				return 2;
			}
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("narwhal-report %s\n", NW_VERSION);
			return 0;
		default:
			if (optopt > 0 && optopt < 256)
				fprintf(stderr, "narwhal-report: -%c: %s\n", optopt,
					c == ':' ? "needs an argument" : "unknown option");
			else
				fprintf(stderr, "narwhal-report: %s: %s\n", argv[optind - 1],
					c == ':' ? "needs an argument" : "unknown option");
			fputs("Try 'narwhal-report --help'.\n", stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "narwhal-report: one measurement directory at most, got %d\n",
			argc - optind);
		fputs("Try 'narwhal-report --help'.\n", stderr);
		return 2;
	}
	if (optind < argc)
		o->dir = argv[optind];
	return -1;
}

/* Reads @dir (and its sections when asked); 0, else the exit status after telling the user. */
static int load(const struct report_opts *o, const char *dir, struct loaded *l)
{
	char err[1024];
	int ret, metric;

	memset(l, 0, sizeof(*l));
	l->dir = dir;
	ret = nw_measurement_read(dir, &l->m, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "narwhal-report: %s\n", err[0] ? err : strerror(-ret));
		return 1;
	}
	metric = nw_measurement_find_metric(l->m, o->metric);
	if (metric < 0) {
		fprintf(stderr, "narwhal-report: %s: no metric %s; the measurement has:", dir,
			o->metric ? o->metric : "");
		for (unsigned i = 0; i < l->m->nmetrics; i++)
			fprintf(stderr, " %s", l->m->metrics[i].name);
		fputc('\n', stderr);
		return 2;
	}
	l->metric = (unsigned)metric;
	if (o->view == VIEW_SECTIONS || o->by_section) {
		ret = nw_sections_load(dir, &l->sections, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "narwhal-report: %s\n", err);
			return 1;
		}
	}
	return 0;
}

static void unload(struct loaded *l)
{
	nw_sections_free(l->sections);
	nw_measurement_free(l->m);
}

/*
 * The stacks the views and the graphs show: merged or per thread, split by
 * section, recursion folded.  @last: nothing reads the model's trees after
 * this, so they are freed once the stacks are built (a large measurement
 * and its stacks are then not both held).  NULL after telling the user.
 */
static struct nw_stacks *report_stacks(const struct report_opts *o, const struct loaded *l,
				       bool per_thread, bool last)
{
	struct nw_stacks_opts so = { .filter = &o->filter, .per_thread = per_thread };
	struct nw_stacks *s = nw_stacks_new(l->m, l->m->nmetrics);
	struct nw_split *split = NULL;
	int ret = s ? 0 : -ENOMEM;

	if (!ret && o->by_section)
		ret = nw_sections_split(l->sections, l->m, &s->frames, &split);
	so.split = split;
	if (!ret)
		ret = nw_stacks_build(s, &so);
	nw_split_free(split);
	if (!ret && last)
		nw_measurement_drop_trees(l->m);
	if (!ret && o->fold_recursion) {
		struct nw_cct *folded = nw_frames_fold_recursion(&s->frames, s->tree);

		if (folded)
			nw_stacks_set_tree(s, folded);
		else
			ret = -ENOMEM;
	}
	if (ret) {
		fprintf(stderr, "narwhal-report: %s: %s\n", l->dir, strerror(-ret));
		nw_stacks_free(s);
		return NULL;
	}
	return s;
}

static int run_view(FILE *out, const struct report_opts *o, const struct loaded *l)
{
	struct nw_stacks *s;
	int ret;

	if (o->view == VIEW_THREADS)
		return nw_view_threads(out, l->m, &o->filter);
	if (o->view == VIEW_SECTIONS)
		return nw_sections_view(out, l->sections, l->m, &o->filter, o->view_opts.metric);
	s = report_stacks(o, l, o->per_thread || o->view == VIEW_HEALTH, true);
	if (!s)
		return -ENOMEM;
	switch (o->view) {
	case VIEW_HEALTH: {
		struct nw_health *h;

		ret = nw_health_classify(s, &h);
		if (!ret)
			ret = nw_health_print(out, h);
		nw_health_free(h);
		break;
	}
	case VIEW_FLAT:
		ret = nw_view_flat(out, s, &o->view_opts);
		break;
	case VIEW_FOLDED:
		ret = nw_view_folded(out, s, &o->view_opts);
		break;
	default:
		ret = nw_view_tree(out, s, &o->view_opts);
		break;
	}
	nw_stacks_free(s);
	return ret;
}

/* ---- exports and --diff ---- */

static bool wants_export(const struct report_opts *o)
{
	return o->pprof || o->speedscope || o->flamegraph;
}

/* Opens @path for writing; NULL after telling the user. */
static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fprintf(stderr, "narwhal-report: %s: %s\n", path, strerror(errno));
	return f;
}

/* Closes @f, written with result @ret; 0, or 1 after telling the user. */
static int close_out(FILE *f, const char *path, int ret)
{
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
	if (!ret)
		return 0;
	fprintf(stderr, "narwhal-report: %s: %s\n", path, strerror(-ret));
	return 1;
}

static int write_flamegraph(const char *path, const struct nw_stacks *s,
			    const struct nw_flamegraph_opts *fo)
{
	FILE *f = open_out(path);

	if (!f)
		return 1;
	return close_out(f, path, nw_flamegraph_write(f, s, fo));
}

static int write_pprof(const struct report_opts *o, const struct loaded *l)
{
	struct nw_split *split = NULL;
	struct nw_pprof_file *pf;
	struct nw_pprof *b;
	char err[1024] = "";
	int ret = 0;

	if (nw_pprof_open(l->m, o->pprof, &b, &pf, err, sizeof(err))) {
		fprintf(stderr, "narwhal-report: %s\n", err);
		return 1;
	}
	if (o->by_section)
		ret = nw_sections_split(l->sections, l->m, nw_pprof_frames(b), &split);
	if (!ret)
		ret = nw_pprof_add(b, &o->filter, split);
	ret = nw_pprof_close(b, pf, ret, err, sizeof(err));
	if (ret)
		fprintf(stderr, "narwhal-report: %s\n", err);
	nw_split_free(split);
	return ret ? 1 : 0;
}

/* Writes the exports asked for: 0, or 1 after telling the user. */
static int run_exports(const struct report_opts *o, const struct loaded *l)
{
	unsigned metric = o->view_opts.metric;
	struct nw_stacks *s;
	int ret;

	if (o->pprof && write_pprof(o, l))
		return 1;
	if (o->speedscope) {
		FILE *f;

		s = report_stacks(o, l, true, !o->flamegraph && o->view == VIEW_NONE);
		if (!s)
			return 1;
		f = open_out(o->speedscope);
		ret = f ? close_out(f, o->speedscope,
				    nw_speedscope_write(f, s, o->metric ? metric
									: nw_speedscope_default_metric(
										  l->m)))
			: 1;
		nw_stacks_free(s);
		if (ret)
			return 1;
	}
	if (o->flamegraph) {
		struct nw_flamegraph_opts fo = { .title = "Flame Graph", .metric = metric,
						 .unit = nw_export_unit(&l->m->metrics[metric]),
						 .base_metric = -1 };
		char *subtitle;

		s = report_stacks(o, l, o->per_thread, o->view == VIEW_NONE);
		if (!s)
			return 1;
		subtitle = nw_export_subtitle(s, metric);
		if (!subtitle) {
			fprintf(stderr, "narwhal-report: %s: %s\n", o->flamegraph,
				strerror(ENOMEM));
			nw_stacks_free(s);
			return 1;
		}
		fo.subtitle = subtitle;
		ret = write_flamegraph(o->flamegraph, s, &fo);
		free(subtitle);
		nw_stacks_free(s);
		if (ret)
			return 1;
	}
	return 0;
}

/* narwhal-report --diff BASE DIR: the exit status. */
static int run_diff(const struct report_opts *o)
{
	struct loaded base = { 0 }, new = { 0 };
	struct nw_stacks *bs = NULL, *ns = NULL;
	struct nw_diff *d = NULL;
	FILE *out = stdout;
	int ret;

	if (o->pprof || o->speedscope || o->per_thread ||
	    (o->view != VIEW_NONE && o->view != VIEW_FOLDED)) {
		fputs("narwhal-report: --diff shows the change per calling context, as text, "
		      "--folded or --flamegraph FILE; other views and exports do not apply\n",
		      stderr);
		return 2;
	}
	ret = load(o, o->diff_base, &base);
	if (!ret)
		ret = load(o, o->dir, &new);
	if (ret)
		goto out;
	ret = 1;
	bs = report_stacks(o, &base, false, true);
	ns = bs ? report_stacks(o, &new, false, true) : NULL;
	if (!bs || !ns)
		goto out;
	if (nw_diff_new(bs, base.metric, ns, new.metric, &d)) {
		fprintf(stderr, "narwhal-report: --diff: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (o->flamegraph) {
		struct nw_flamegraph_opts fo = { .title = "Differential Flame Graph",
						 .metric = NW_DIFF_NEW,
						 .unit = nw_export_unit(&new.m->metrics[new.metric]),
						 .base_metric = NW_DIFF_BASE };
		char *subtitle = nw_strdup_printf("%s -> %s (%s): red grew, blue shrank",
						  o->diff_base, o->dir,
						  new.m->metrics[new.metric].name);

		if (!subtitle) {
			fprintf(stderr, "narwhal-report: %s: %s\n", o->flamegraph,
				strerror(ENOMEM));
			goto out;
		}
		fo.subtitle = subtitle;
		ret = write_flamegraph(o->flamegraph, d->stacks, &fo);
		free(subtitle);
		if (ret)
			goto out;
		if (o->view == VIEW_NONE) {
			ret = 0;
			goto out;
		}
	}
	if (o->output) {
		out = open_out(o->output);
		if (!out) {
			ret = 1;
			goto out;
		}
	}
	ret = o->view == VIEW_FOLDED
		      ? nw_diff_folded(out, d)
		      : nw_diff_view(out, d, o->view_opts.percent_limit, o->diff_base, o->dir);
	if (out != stdout)
		ret = close_out(out, o->output, ret);
	else if (ret)
		ret = close_out(stdout, "stdout", ret);
out:
	nw_diff_free(d);
	nw_stacks_free(bs);
	nw_stacks_free(ns);
	unload(&base);
	unload(&new);
	return ret;
}

int main(int argc, char **argv)
{
	struct report_opts o = {
		.view = VIEW_NONE,
		.dir = "narwhal.data",
		.filter = { .tid = -1, .pid = -1 },
		.view_opts = { .percent_limit = 0.5 },
	};
	struct loaded l = { 0 };
	FILE *out = stdout;
	int ret, matched = 0;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (o.by_section && (o.view == VIEW_SECTIONS || o.view == VIEW_HEALTH)) {
		fprintf(stderr, "narwhal-report: --by-section does not apply to %s\n",
			o.view == VIEW_SECTIONS ? "--sections" : "--stack-health");
		return 2;
	}
	if (o.diff_base)
		return run_diff(&o);

	ret = load(&o, o.dir, &l);
	if (ret)
		goto out;
	o.view_opts.metric = l.metric;
	for (uint32_t i = 0; i < l.m->nthreads; i++)
		matched += nw_filter_thread(&o.filter, &l.m->threads[i]);
	if (!matched && (o.filter.tid >= 0 || o.filter.comm)) {
		fprintf(stderr, "narwhal-report: %s: no thread matches the filter; "
				"see narwhal-report --threads\n",
			o.dir);
		ret = 1;
		goto out;
	}

	if (wants_export(&o)) {
		ret = run_exports(&o, &l);
		if (ret || o.view == VIEW_NONE)
			goto out;
	}
	if (o.view == VIEW_NONE)
		o.view = VIEW_TREE;
	if (o.output) {
		out = fopen(o.output, "w");
		if (!out) {
			fprintf(stderr, "narwhal-report: %s: %s\n", o.output, strerror(errno));
			ret = 1;
			goto out;
		}
	}
	ret = run_view(out, &o, &l);
	if (out != stdout && fclose(out) != 0 && !ret)
		ret = -EIO;
	if (ret) {
		fprintf(stderr, "narwhal-report: %s: %s\n", o.output ? o.output : "stdout",
			strerror(-ret));
		ret = 1;
	}
out:
	unload(&l);
	return ret;
}
