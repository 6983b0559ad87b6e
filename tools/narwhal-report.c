/* SPDX-License-Identifier: MIT */
/* narwhal-report: reads a measurement directory and prints one view of it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/profile.h"
#include "report/views.h"

enum view { VIEW_TREE, VIEW_FLAT, VIEW_THREADS, VIEW_FOLDED };

struct report_opts {
	enum view view;
	const char *dir;
	const char *output;
	const char *metric;
	struct nw_filter filter;
	struct nw_view_opts view_opts;
};

enum { OPT_TREE = 256, OPT_FLAT, OPT_THREADS, OPT_FOLDED, OPT_TID, OPT_COMM, OPT_METRIC,
       OPT_PERCENT, OPT_VERSION };

static const struct option long_opts[] = {
	{ "tree", no_argument, NULL, OPT_TREE },
	{ "flat", no_argument, NULL, OPT_FLAT },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "folded", no_argument, NULL, OPT_FOLDED },
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
	      "Options:\n"
	      "  --tid N              only thread N\n"
	      "  --comm NAME          only threads named NAME (also --thread NAME)\n"
	      "  --metric NAME        weigh by metric or event NAME (default: samples)\n"
	      "  --percent-limit P    --tree: hide nodes below P%% inclusive (default 0.5)\n"
	      "  -o, --output FILE    write the view to FILE\n"
	      "  -h, --help           this help\n"
	      "      --version        print the version\n",
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

static int run_view(FILE *out, const struct report_opts *o, const struct nw_profile *p)
{
	struct nw_cct *tree;
	int ret;

	if (o->view == VIEW_THREADS)
		return nw_view_threads(out, p, &o->filter);
	tree = nw_profile_merge(p, &o->filter);
	if (!tree)
		return -ENOMEM;
	switch (o->view) {
	case VIEW_FLAT:
		ret = nw_view_flat(out, p, tree, &o->view_opts);
		break;
	case VIEW_FOLDED:
		ret = nw_view_folded(out, p, tree, &o->view_opts);
		break;
	default:
		ret = nw_view_tree(out, p, tree, &o->view_opts);
		break;
	}
	nw_cct_free(tree);
	return ret;
}

int main(int argc, char **argv)
{
	struct report_opts o = {
		.view = VIEW_TREE,
		.dir = "narwhal.data",
		.filter = { .tid = -1 },
		.view_opts = { .percent_limit = 0.5 },
	};
	struct nw_profile *p = NULL;
	char err[1024];
	FILE *out = stdout;
	int ret, metric, matched = 0;

	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	o.view_opts.filter = &o.filter;

	ret = nw_profile_load(o.dir, &p, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "narwhal-report: %s\n", err[0] ? err : strerror(-ret));
		return 1;
	}
	metric = nw_profile_find_metric(p, o.metric);
	if (metric < 0) {
		fprintf(stderr, "narwhal-report: %s: no metric %s; the measurement has:", o.dir,
			o.metric ? o.metric : "");
		for (unsigned i = 0; i < p->nmetrics; i++)
			fprintf(stderr, " %s", p->metric_names[i]);
		fputc('\n', stderr);
		ret = 2;
		goto out;
	}
	o.view_opts.metric = (unsigned)metric;
	for (uint32_t i = 0; i < p->nthreads; i++)
		matched += nw_filter_match(&o.filter, &p->threads[i]);
	if (!matched && (o.filter.tid >= 0 || o.filter.comm)) {
		fprintf(stderr, "narwhal-report: %s: no thread matches the filter; "
				"see narwhal-report --threads\n",
			o.dir);
		ret = 1;
		goto out;
	}

	if (o.output) {
		out = fopen(o.output, "w");
		if (!out) {
			fprintf(stderr, "narwhal-report: %s: %s\n", o.output, strerror(errno));
			ret = 1;
			goto out;
		}
	}
	ret = run_view(out, &o, p);
	if (out != stdout && fclose(out) != 0 && !ret)
		ret = -EIO;
	if (ret) {
		fprintf(stderr, "narwhal-report: %s: %s\n", o.output ? o.output : "stdout",
			strerror(-ret));
		ret = 1;
	}
out:
	nw_profile_free(p);
	return ret;
}
