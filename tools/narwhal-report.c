/* SPDX-License-Identifier: MIT */
/* narwhal-report: reads a measurement directory and prints one view of it. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/chrometrace.h"
#include "export/export.h"
#include "export/flamegraph.h"
#include "export/html.h"
#include "export/pprof.h"
#include "export/speedscope.h"
#include "format/reader.h"
#include "report/callers.h"
#include "report/diff.h"
#include "report/health.h"
#include "report/lines.h"
#include "report/recursion.h"
#include "report/stacks.h"
#include "report/timeline.h"
#include "report/transform.h"
#include "report/views.h"
#include "sections/join.h"
#include "util/file.h"
#include "util/strbuf.h"

/* VIEW_NONE: no view asked for; the tree, unless an export was asked for. */
enum view { VIEW_TREE, VIEW_FLAT, VIEW_THREADS, VIEW_FOLDED, VIEW_HEALTH, VIEW_SECTIONS,
	    VIEW_CALLERS, VIEW_MODULES, VIEW_LINES, VIEW_ADDRESSES, VIEW_TIMELINE, VIEW_LEAKS,
	    VIEW_NONE };

/* A regular expression of an option, compiled once the options are read. */
struct pattern {
	const char *text;
	regex_t re;
	bool compiled;
};

enum { PAT_FOCUS, PAT_IGNORE, PAT_HIDE, PAT_ROOT, PAT_FOCUS_MODULE, PAT_IGNORE_MODULE,
       PAT_VIEW, PAT_COUNT };

static const char *const pattern_option[PAT_COUNT] = {
	"--focus", "--ignore", "--hide", "--root", "--focus-module", "--ignore-module", "",
};

struct report_opts {
	enum view view;
	const char **dirs;      /* the measurements, merged (default narwhal.data) */
	int ndirs;
	const char **bases;     /* --diff BASE..., merged */
	int nbases;
	const char *output;
	const char *metric;
	bool fold_recursion;
	bool per_thread;        /* --folded, --flamegraph: each thread a root frame */
	bool inverted;          /* --tree, --folded, --flamegraph bottom-up */
	bool sort;              /* --lines, --addresses: hottest first */
	const char *pprof, *speedscope, *flamegraph, *chrome_trace, *html; /* export files */
	const char *time;       /* --time START,END */
	struct nw_timeline_opts timeline;
	struct nw_filter filter;
	struct pattern pat[PAT_COUNT]; /* PAT_VIEW: --callers, --lines, --addresses */
	struct nw_stack_filter stack_filter;
	struct nw_view_opts view_opts;
	bool by_section;        /* samples below [section NAME] frames (doc/SECTIONS.md) */
};

/* One measurement (the directories merged) read for the report. */
struct loaded {
	const char *dir;        /* the first, to name in messages */
	struct nw_measurement *m;
	struct nw_sections *sections; /* --sections, --by-section: DIR/sections */
	unsigned metric;
};

enum { OPT_TREE = 256, OPT_FLAT, OPT_LEAKS, OPT_THREADS, OPT_FOLDED, OPT_TID, OPT_PID, OPT_COMM,
       OPT_METRIC, OPT_PERCENT, OPT_VERSION, OPT_FOLD_RECURSION, OPT_STACK_HEALTH, OPT_PPROF,
       OPT_SPEEDSCOPE, OPT_FLAMEGRAPH, OPT_PER_THREAD, OPT_DIFF, OPT_SECTIONS,
       OPT_BY_SECTION, OPT_BY, OPT_CALLERS, OPT_INVERTED, OPT_FOCUS, OPT_IGNORE, OPT_HIDE,
       OPT_ROOT, OPT_FOCUS_MODULE, OPT_IGNORE_MODULE, OPT_LINES, OPT_ADDRESSES, OPT_SORT,
       OPT_FULL_NAMES, OPT_TIME, OPT_TIMELINE, OPT_WIDTH, OPT_CHROME_TRACE, OPT_HTML };

static const struct option long_opts[] = {
	{ "tree", no_argument, NULL, OPT_TREE },
	{ "flat", no_argument, NULL, OPT_FLAT },
	{ "leaks", no_argument, NULL, OPT_LEAKS },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "folded", no_argument, NULL, OPT_FOLDED },
	{ "stack-health", no_argument, NULL, OPT_STACK_HEALTH },
	{ "callers", required_argument, NULL, OPT_CALLERS },
	{ "peek", required_argument, NULL, OPT_CALLERS },
	{ "by", required_argument, NULL, OPT_BY },
	{ "lines", required_argument, NULL, OPT_LINES },
	{ "addresses", required_argument, NULL, OPT_ADDRESSES },
	{ "sort", no_argument, NULL, OPT_SORT },
	{ "inverted", no_argument, NULL, OPT_INVERTED },
	{ "focus", required_argument, NULL, OPT_FOCUS },
	{ "ignore", required_argument, NULL, OPT_IGNORE },
	{ "hide", required_argument, NULL, OPT_HIDE },
	{ "root", required_argument, NULL, OPT_ROOT },
	{ "focus-module", required_argument, NULL, OPT_FOCUS_MODULE },
	{ "ignore-module", required_argument, NULL, OPT_IGNORE_MODULE },
	{ "full-names", no_argument, NULL, OPT_FULL_NAMES },
	{ "time", required_argument, NULL, OPT_TIME },
	{ "timeline", optional_argument, NULL, OPT_TIMELINE },
	{ "width", required_argument, NULL, OPT_WIDTH },
	{ "chrome-trace", required_argument, NULL, OPT_CHROME_TRACE },
	{ "fold-recursion", no_argument, NULL, OPT_FOLD_RECURSION },
	{ "pprof", required_argument, NULL, OPT_PPROF },
	{ "speedscope", required_argument, NULL, OPT_SPEEDSCOPE },
	{ "flamegraph", required_argument, NULL, OPT_FLAMEGRAPH },
	{ "html", required_argument, NULL, OPT_HTML },
	{ "per-thread", no_argument, NULL, OPT_PER_THREAD },
	{ "diff", required_argument, NULL, OPT_DIFF },
	{ "sections", no_argument, NULL, OPT_SECTIONS },
	{ "by-section", no_argument, NULL, OPT_BY_SECTION },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "pid", required_argument, NULL, OPT_PID },
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
	fputs("Usage: narwhal-report [OPTIONS] [DIR...]\n"
	      "Reports the measurement in DIR (default narwhal.data); several are merged.\n"
	      "\n"
	      "Views:\n"
	      "  --tree               call tree, inclusive and self (default)\n"
	      "  --flat               functions by self, with cumulative share\n"
	      "  --leaks              call paths of memory still live at exit, largest first\n"
	      "                       (narwhal-record --alloc)\n"
	      "  --threads            one line per thread, most samples first\n"
	      "  --folded             folded stacks (flamegraph.pl input)\n"
	      "  --callers RE, --peek RE  who calls the functions matching RE, through\n"
	      "                       which paths\n"
	      "  --by module          shares per module (the program, libc, ...)\n"
	      "  --lines RE           per source line of the functions matching RE\n"
	      "  --addresses RE       per sampled instruction of the functions matching RE\n"
	      "  --timeline[=functions]  one row per thread over time: how busy it was\n"
	      "                       (or its hottest function) in each column\n"
	      "  --width N            --timeline: columns, 10 to 1000 (default 64)\n"
	      "  --stack-health       how many stacks are complete, where unwinding stops\n"
	      "  --sections           instrumented sections (narwhal.h): tree with counts,\n"
	      "                       times and the samples taken inside each\n"
	      "Selecting and shaping (every view and export):\n"
	      "  --time START,END     only what happened then: seconds from the start (2.5)\n"
	      "                       or percentages of the run (40%,60%); either may be empty\n"
	      "  --tid N, --pid N     only thread N, only process N\n"
	      "  --comm NAME, --thread NAME  only threads named NAME\n"
	      "  --focus RE           only samples with a frame matching RE (pprof's -focus)\n"
	      "  --ignore RE          without the samples with a frame matching RE\n"
	      "  --hide RE            remove the frames matching RE from the stacks\n"
	      "  --root RE            cut each stack above its first frame matching RE\n"
	      "  --focus-module RE, --ignore-module RE  the same by module path\n"
	      "  --inverted           --tree, --folded, flame graph bottom-up (leaf first)\n"
	      "  --metric NAME        weigh by metric or event NAME (default: samples)\n"
	      "  --percent-limit P    --tree, --callers: hide nodes below P% (default 0.5)\n"
	      "  --fold-recursion     one node per function on each path (recursion folded)\n"
	      "  --by-section         samples taken inside instrumented sections below\n"
	      "                       [section NAME] frames (views, exports, --diff)\n"
	      "  --sort               --lines, --addresses: hottest first\n"
	      "  --full-names         whole C++/Rust signatures, not the readable names\n"
	      "  -o, --output FILE    write the view to FILE\n"
	      "  -h, --help           this help\n"
	      "      --version        print the version\n"
	      "Exports (no view is printed unless one is asked for too):\n"
	      "  --pprof FILE         gzipped pprof profile (go tool pprof FILE)\n"
	      "  --speedscope FILE    speedscope JSON, one profile per thread, in time order\n"
	      "  --chrome-trace FILE  Trace Event JSON (Perfetto, chrome://tracing): each\n"
	      "                       thread's stacks over time, off-CPU intervals\n"
	      "  --flamegraph FILE    SVG flame graph (click to zoom, search box)\n"
	      "  --html FILE          interactive HTML report in one file: flame graph, call\n"
	      "                       tree, callers, flat, source lines, timeline\n"
	      "  --per-thread         each thread a root frame, name-tid (--folded, --flamegraph)\n"
	      "Comparing measurements:\n"
	      "  --diff BASE DIR      change in share per calling context from BASE to DIR\n"
	      "                       (--diff repeated: the bases merged); with --folded:\n"
	      "                       \"stack BASE NEW\" lines (difffolded), with --flamegraph\n"
	      "                       FILE: a differential flame graph, with --html FILE: a\n"
	      "                       differential HTML report\n",
	      f);
}

static int parse_id(const char *opt, const char *arg, int64_t *ret)
{
	char *end;

	errno = 0;
	*ret = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || *ret < 0 || *ret > UINT32_MAX) {
		fprintf(stderr, "narwhal-report: %s: not an id: %s\n", opt, arg);
		return 2;
	}
	return -1;
}

static int add_dir(const char ***v, int *n, const char *dir)
{
	const char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(*nv));

	if (!nv)
		return 1;
	*v = nv;
	nv[(*n)++] = dir;
	return -1;
}

/* Compiles the patterns given: -1 to go on, else the exit status. */
static int compile_patterns(struct report_opts *o)
{
	const regex_t **slot[PAT_COUNT] = {
		&o->stack_filter.focus,	       &o->stack_filter.ignore, &o->stack_filter.hide,
		&o->stack_filter.root,	       &o->stack_filter.focus_module,
		&o->stack_filter.ignore_module, NULL,
	};

	for (int i = 0; i < PAT_COUNT; i++) {
		struct pattern *p = &o->pat[i];
		char msg[256];
		int rc;

		if (!p->text)
			continue;
		rc = regcomp(&p->re, p->text, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			regerror(rc, &p->re, msg, sizeof(msg));
			fprintf(stderr, "narwhal-report: %s: not a regular expression: %s (%s)\n",
				pattern_option[i][0] ? pattern_option[i] : "pattern", p->text, msg);
			return 2;
		}
		p->compiled = true;
		if (slot[i])
			*slot[i] = &p->re;
	}
	return -1;
}

/* Parses the command line; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct report_opts *o)
{
	char *end;
	int c, ret = -1;

	opterr = 0;
	while (ret < 0 && (c = getopt_long(argc, argv, ":o:h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_TREE:
			o->view = VIEW_TREE;
			break;
		case OPT_FLAT:
			o->view = VIEW_FLAT;
			break;
		case OPT_LEAKS:
			o->view = VIEW_LEAKS;
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
		case OPT_CALLERS:
			o->view = VIEW_CALLERS;
			o->pat[PAT_VIEW].text = optarg;
			break;
		case OPT_LINES:
			o->view = VIEW_LINES;
			o->pat[PAT_VIEW].text = optarg;
			break;
		case OPT_ADDRESSES:
			o->view = VIEW_ADDRESSES;
			o->pat[PAT_VIEW].text = optarg;
			break;
		case OPT_BY:
			if (!strcmp(optarg, "module")) {
				o->view = VIEW_MODULES;
			} else if (!strcmp(optarg, "section")) {
				o->by_section = true;
			} else {
				fprintf(stderr, "narwhal-report: --by: module or section, not %s\n",
					optarg);
				ret = 2;
			}
			break;
		case OPT_SORT:
			o->sort = true;
			break;
		case OPT_INVERTED:
			o->inverted = true;
			break;
		case OPT_FOCUS:
		case OPT_IGNORE:
		case OPT_HIDE:
		case OPT_ROOT:
		case OPT_FOCUS_MODULE:
		case OPT_IGNORE_MODULE:
			o->pat[c - OPT_FOCUS].text = optarg;
			break;
		case OPT_FULL_NAMES:
			o->view_opts.full_names = true;
			o->timeline.full_names = true;
			break;
		case OPT_TIME:
			o->time = optarg;
			break;
		case OPT_TIMELINE:
			o->view = VIEW_TIMELINE;
			if (optarg && strcmp(optarg, "functions")) {
				fprintf(stderr, "narwhal-report: --timeline=functions, or --timeline; "
						"not --timeline=%s\n", optarg);
				ret = 2;
			}
			o->timeline.functions = optarg != NULL;
			break;
		case OPT_WIDTH: {
			unsigned long w;

			errno = 0;
			w = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || w < 10 || w > 1000) {
				fprintf(stderr, "narwhal-report: --width: columns from 10 to 1000, "
						"not %s\n", optarg);
				ret = 2;
			}
			o->timeline.width = (unsigned)w;
			break;
		}
		case OPT_CHROME_TRACE:
			o->chrome_trace = optarg;
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
		case OPT_HTML:
			o->html = optarg;
			break;
		case OPT_FLAMEGRAPH:
			o->flamegraph = optarg;
			break;
		case OPT_PER_THREAD:
			o->per_thread = true;
			break;
		case OPT_DIFF:
			ret = add_dir(&o->bases, &o->nbases, optarg);
			break;
		case OPT_SECTIONS:
			o->view = VIEW_SECTIONS;
			break;
		case OPT_BY_SECTION:
			o->by_section = true;
			break;
		case OPT_TID:
			ret = parse_id("--tid", optarg, &o->filter.tid);
			break;
		case OPT_PID:
			ret = parse_id("--pid", optarg, &o->filter.pid);
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
				ret = 2;
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
	if (ret >= 0)
		return ret;
	for (; optind < argc && ret < 0; optind++)
		ret = add_dir(&o->dirs, &o->ndirs, argv[optind]);
	if (ret < 0 && !o->ndirs)
		ret = add_dir(&o->dirs, &o->ndirs, "narwhal.data");
	if (ret >= 0) {
		fprintf(stderr, "narwhal-report: out of memory\n");
		return ret;
	}
	return compile_patterns(o);
}

static void opts_fini(struct report_opts *o)
{
	for (int i = 0; i < PAT_COUNT; i++)
		if (o->pat[i].compiled)
			regfree(&o->pat[i].re);
	free(o->dirs);
	free(o->bases);
}

/* Whether what @o asks for needs the time of each sample (the threads' traces). */
/*
 * Whether the report of measurement @m (its manifest read) needs its
 * symbols and trees: all but --threads alone, whose sample counts the
 * manifest has (nw_view_threads_needs_trees()).
 */
static bool needs_trees(const struct report_opts *o, const struct nw_measurement *m)
{
	return o->view != VIEW_THREADS || o->nbases || o->pprof || o->speedscope ||
	       o->flamegraph || o->chrome_trace || o->html || o->time || o->by_section ||
	       nw_view_threads_needs_trees(m);
}

static bool needs_traces(const struct report_opts *o)
{
	return o->view == VIEW_SECTIONS || o->by_section || o->time || o->view == VIEW_TIMELINE ||
	       o->chrome_trace || o->speedscope || o->html;
}

/* One end of --time: seconds ("2.5", "2.5s") or a percentage ("40%") of @span ns after @base. */
static int parse_time_end(const char *s, size_t len, uint64_t base, uint64_t span, uint64_t *ret)
{
	char buf[64], *end;
	double v;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end == buf || !(v >= 0))
		return -EINVAL;
	if (!strcmp(end, "%")) {
		if (v > 100)
			return -EINVAL;
		*ret = base + (uint64_t)(v / 100.0 * (double)span);
	} else if (!*end || !strcmp(end, "s")) {
		*ret = base + (uint64_t)(v * 1e9);
	} else {
		return -EINVAL;
	}
	return 0;
}

/* --time: restricts @l to the range asked for; 0, else the exit status after telling the user. */
static int apply_time(const struct report_opts *o, struct loaded *l)
{
	const struct nw_run *r = &l->m->run;
	const char *comma = strchr(o->time, ',');
	uint64_t base = r->clock_start_ns, span, lo, hi;
	int rc;

	if (!r->clock_start_ns || r->clock_end_ns <= r->clock_start_ns) {
		fprintf(stderr, "narwhal-report: %s: no time in this measurement (recorded before "
				"traces existed): --time needs them\n", l->dir);
		return 1;
	}
	span = r->clock_end_ns - base;
	lo = base;
	hi = r->clock_end_ns;
	if (!comma || (comma != o->time && parse_time_end(o->time, (size_t)(comma - o->time), base,
							   span, &lo)) ||
	    (comma[1] && parse_time_end(comma + 1, strlen(comma + 1), base, span, &hi)) || hi <= lo) {
		fprintf(stderr, "narwhal-report: --time: START,END in seconds from the start "
				"(1.5,3) or percent of the run (40%%,60%%), START before END; "
				"not %s\n", o->time);
		return 2;
	}
	/* Up to the end of the run: its end included (its last event may be at its end). */
	if (hi >= r->clock_end_ns)
		hi = r->clock_end_ns + 1;
	if (lo >= hi) {
		fprintf(stderr, "narwhal-report: --time %s starts after the run, which lasted "
				"%.3f s\n", o->time, (double)span / 1e9);
		return 2;
	}
	rc = nw_measurement_restrict_time(l->m, lo, hi);
	if (rc == -ENODATA) {
		fprintf(stderr, "narwhal-report: %s was recorded with --no-trace: --time needs "
				"the time of each sample\n", l->dir);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "narwhal-report: %s: --time: %s\n", l->dir, strerror(-rc));
		return 1;
	}
	return 0;
}

/* Reads @dirs, merged (and the sections when asked); 0, else the exit status after telling the user. */
static int load(const struct report_opts *o, const char **dirs, int ndirs, struct loaded *l)
{
	char err[1024];
	int ret, metric;

	memset(l, 0, sizeof(*l));
	l->dir = dirs[0];
	for (int i = 0; i < ndirs; i++) {
		struct nw_measurement *m = NULL;

		ret = nw_measurement_open(dirs[i], &m, err, sizeof(err));
		if (!ret && needs_trees(o, m))
			ret = nw_measurement_load(m, dirs[i], err, sizeof(err));
		if (!ret && needs_traces(o))
			ret = nw_measurement_read_traces(m, dirs[i], err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "narwhal-report: %s\n", err[0] ? err : strerror(-ret));
			if (l->m != m)
				nw_measurement_free(m);
			return 1;
		}
		if (!l->m) {
			l->m = m;
			continue;
		}
		ret = nw_measurement_merge(l->m, m, err, sizeof(err));
		nw_measurement_free(m);
		if (ret) {
			fprintf(stderr, "narwhal-report: cannot merge %s with %s: %s\n", dirs[i],
				dirs[0], err);
			return ret == -EINVAL ? 2 : 1;
		}
	}
	metric = nw_measurement_find_metric(l->m, o->metric);
	if (metric < 0) {
		fprintf(stderr, "narwhal-report: %s: no metric %s; the measurement has:", l->dir,
			o->metric ? o->metric : "");
		for (unsigned i = 0; i < l->m->nmetrics; i++)
			fprintf(stderr, " %s", l->m->metrics[i].name);
		fputc('\n', stderr);
		return 2;
	}
	l->metric = (unsigned)metric;
	if (o->time) {
		ret = apply_time(o, l);
		if (ret)
			return ret;
	}
	if (o->view == VIEW_SECTIONS || o->by_section) {
		if (ndirs > 1) {
			fprintf(stderr, "narwhal-report: --sections and --by-section read one "
					"measurement, not %d\n", ndirs);
			return 2;
		}
		ret = nw_sections_load(l->dir, l->m, &l->sections, err, sizeof(err));
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

/* Does @o reshape the stacks (which the time-ordered outputs cannot follow)? */
static bool shaped(const struct report_opts *o)
{
	return nw_stack_filter_active(&o->stack_filter) || o->inverted || o->fold_recursion ||
	       o->by_section;
}

/*
 * The stacks the views and the graphs show: merged or per thread, split by
 * section, recursion folded, --focus and the like applied, turned bottom
 * up with @inverted.  @last: nothing reads the model's trees after this, so
 * they are freed once the stacks are built (a large measurement and its
 * stacks are then not both held).  NULL after telling the user.
 */
static struct nw_stacks *report_stacks_pruned(const struct report_opts *o,
					      const struct loaded *l, bool per_thread,
					      bool inverted, bool last, double prune_share,
					      unsigned prune_metric)
{
	struct nw_stacks_opts so = { .filter = &o->filter, .per_thread = per_thread };
	struct nw_stacks *s = nw_stacks_new(l->m, l->m->nmetrics);
	struct nw_split *split = NULL;
	int ret = s ? 0 : -ENOMEM;

	if (!ret && o->by_section)
		ret = nw_sections_split(l->sections, l->m, &s->frames, &split);
	so.split = split;
	/*
	 * Stacks shown by one metric as merged, down to @prune_share of the
	 * total: what is lighter is not built (the stacks that --focus,
	 * inversion or folding reshape need every frame).
	 */
	if (prune_share > 0 && !per_thread && !shaped(o)) {
		so.prune_share = prune_share;
		so.prune_metric = prune_metric;
	}
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
	if (!ret && nw_stack_filter_active(&o->stack_filter))
		ret = nw_stacks_filter(s, &o->stack_filter);
	if (!ret && inverted)
		ret = nw_stacks_invert(s);
	if (ret) {
		fprintf(stderr, "narwhal-report: %s: %s\n", l->dir, strerror(-ret));
		nw_stacks_free(s);
		return NULL;
	}
	return s;
}

static struct nw_stacks *report_stacks(const struct report_opts *o, const struct loaded *l,
				       bool per_thread, bool inverted, bool last)
{
	return report_stacks_pruned(o, l, per_thread, inverted, last, 0, 0);
}

/*
 * The timeline of the selected threads, with the stacks its events name
 * in *@ret_s (the caller frees both); with @open_only, its threads' events
 * not read yet (nw_timeline_open()).  NULL after telling the user.
 */
static struct nw_timeline *report_timeline(const struct report_opts *o, const struct loaded *l,
					   bool open_only, struct nw_stacks **ret_s)
{
	struct nw_stacks_opts so = { .filter = &o->filter, .node_map = true };
	struct nw_stacks *s = nw_stacks_new(l->m, l->m->nmetrics);
	struct nw_timeline *tl = NULL;
	int ret = s ? nw_stacks_build(s, &so) : -ENOMEM;

	if (!ret)
		ret = open_only ? nw_timeline_open(s, &o->filter, &tl)
				: nw_timeline_build(s, &o->filter, &tl);
	if (ret == -ENODATA)
		fprintf(stderr, "narwhal-report: %s: no trace of the threads selected (recorded "
				"with --no-trace?): the time of each sample is needed\n", l->dir);
	else if (ret)
		fprintf(stderr, "narwhal-report: %s: %s\n", l->dir, strerror(-ret));
	if (ret) {
		nw_stacks_free(s);
		return NULL;
	}
	*ret_s = s;
	return tl;
}

/* Whether some thread of @l has a trace. */
static bool has_traces(const struct loaded *l)
{
	for (uint32_t i = 0; i < l->m->nthreads; i++)
		if (l->m->threads[i].trace)
			return true;
	return false;
}

static int run_timeline(FILE *out, const struct report_opts *o, const struct loaded *l)
{
	struct nw_timeline_opts to = o->timeline;
	struct nw_stacks *s = NULL;
	struct nw_timeline *tl = report_timeline(o, l, false, &s);
	int ret;

	if (!tl)
		return 1;
	to.metric = o->view_opts.metric;
	ret = nw_view_timeline(out, tl, &to);
	nw_timeline_free(tl);
	nw_stacks_free(s);
	return ret;
}

static int run_lines(FILE *out, const struct report_opts *o, const struct loaded *l)
{
	struct nw_lines_opts lo = { .func = &o->pat[PAT_VIEW].re, .metric = o->view_opts.metric,
				    .sort = o->sort, .addresses = o->view == VIEW_ADDRESSES,
				    .full_names = o->view_opts.full_names };
	int ret = nw_view_lines(out, l->m, &o->filter, &lo);

	if (ret == -ENOENT) {
		fprintf(stderr, "narwhal-report: %s: no sampled function matches %s\n", l->dir,
			o->pat[PAT_VIEW].text);
		return 1;
	}
	return ret;
}

static int run_view(FILE *out, const struct report_opts *o, const struct loaded *l)
{
	struct nw_stacks *s;
	int ret;

	if (o->view == VIEW_THREADS)
		return nw_view_threads(out, l->m, &o->filter);
	if (o->view == VIEW_SECTIONS)
		return nw_sections_view(out, l->sections, l->m, &o->filter, o->view_opts.metric);
	if (o->view == VIEW_LINES || o->view == VIEW_ADDRESSES)
		return run_lines(out, o, l);
	if (o->view == VIEW_TIMELINE)
		return run_timeline(out, o, l);
	if (o->view == VIEW_HEALTH) {
		/* The stacks as the recorder unwound them: the physical trees. */
		struct nw_health *h = NULL;

		ret = nw_health_classify(l->m, &o->filter, &h);
		if (!ret)
			ret = nw_health_print(out, h);
		nw_health_free(h);
		if (ret && ret != -EIO)
			fprintf(stderr, "narwhal-report: %s: %s\n", l->dir, strerror(-ret));
		return ret ? 1 : 0;
	}
	if ((o->view == VIEW_FOLDED || o->view == VIEW_FLAT) && !o->per_thread && !shaped(o)) {
		/* Folded stacks and the flat profile as they are merged: no tree beside the model's. */
		s = nw_stacks_new(l->m, l->m->nmetrics);
		ret = !s		       ? -ENOMEM
		      : o->view == VIEW_FLAT ? nw_view_flat_stream(out, s, &o->filter, &o->view_opts)
					     : nw_view_folded_stream(out, s, &o->filter, &o->view_opts);
		nw_stacks_free(s);
		if (ret && ret != -EIO) {
			fprintf(stderr, "narwhal-report: %s: %s\n", l->dir, strerror(-ret));
			return 1;
		}
		return ret;
	}
	/* The tree hides what is under --percent-limit: it need not be built (half, for rounding). */
	s = report_stacks_pruned(o, l, o->per_thread,
				 o->inverted && (o->view == VIEW_TREE || o->view == VIEW_FOLDED), true,
				 o->view == VIEW_TREE ? o->view_opts.percent_limit / 100 / 2 : 0,
				 o->view_opts.metric);
	if (!s)
		return 1;
	switch (o->view) {
	case VIEW_CALLERS:
		ret = nw_view_callers(out, s, &o->pat[PAT_VIEW].re, &o->view_opts);
		if (ret == -ENOENT) {
			fprintf(stderr, "narwhal-report: %s: no function matches %s\n", l->dir,
				o->pat[PAT_VIEW].text);
			ret = 1;
		}
		break;
	case VIEW_MODULES:
		ret = nw_view_modules(out, s, &o->view_opts);
		break;
	case VIEW_FLAT:
		ret = nw_view_flat(out, s, &o->view_opts);
		break;
	case VIEW_LEAKS:
		ret = nw_view_leaks(out, s, &o->view_opts);
		if (ret == -ENOENT) {
			fprintf(stderr, "narwhal-report: %s: no allocation metrics (record with "
					"narwhal-record --alloc for --leaks)\n", l->dir);
			ret = 1;
		}
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
	return o->pprof || o->speedscope || o->flamegraph || o->chrome_trace || o->html;
}

/* Opens @path for writing; NULL after telling the user. */
static FILE *open_out(const char *path)
{
	/* Exports run to tens of megabytes: written behind, while the next is made. */
	FILE *f = nw_fopen_behind(path);

	if (!f)
		fprintf(stderr, "narwhal-report: %s: %s\n", path, strerror(errno));
	return f;
}

/* Closes @f, written with result @ret; 0, or 1 after telling the user. */
static int close_out(FILE *f, const char *path, int ret)
{
	errno = 0;
	/* A writer that saw its stream fail says -EIO; fclose() says why. */
	if (fclose(f) != 0 && (!ret || ret == -EIO))
		ret = errno ? -errno : -EIO;
	if (!ret)
		return 0;
	fprintf(stderr, "narwhal-report: %s: %s\n", path, strerror(-ret));
	return 1;
}

/*
 * --html FILE: the report of @l (the threads the filter selects), and
 * the change from @base with --diff.  0, or 1 after telling the user.
 */
static int write_html(const struct report_opts *o, const struct loaded *l, const char *label,
		      const struct loaded *base, const char *base_label)
{
	struct nw_html_opts ho = { .filter = &o->filter, .metric = l->metric, .label = label,
				   .base = base ? base->m : NULL, .base_label = base_label };
	FILE *f = open_out(o->html);

	if (!f)
		return 1;
	return close_out(f, o->html, nw_html_write(f, l->m, &ho));
}

static int write_flamegraph(const char *path, const struct nw_stacks *s,
			    const struct nw_flamegraph_opts *fo)
{
	FILE *f = open_out(path);

	if (!f)
		return 1;
	return close_out(f, path, nw_flamegraph_write(f, s, fo));
}

static int write_pprof(const struct report_opts *o, const struct loaded *l, bool last)
{
	struct nw_split *split = NULL;
	struct nw_stacks *s = NULL;
	struct nw_pprof_file *pf;
	struct nw_pprof *b;
	char err[1024] = "";
	int ret = 0;

	if (nw_pprof_open(l->m, o->pprof, &b, &pf, err, sizeof(err))) {
		fprintf(stderr, "narwhal-report: %s\n", err);
		return 1;
	}
	if (nw_stack_filter_active(&o->stack_filter) || o->fold_recursion) {
		/* Frames hidden, cut or folded are no addresses any more: frames as locations. */
		s = report_stacks(o, l, true, false, last);
		ret = s ? nw_pprof_add_stacks(b, s) : -ENOMEM;
	} else {
		if (o->by_section)
			ret = nw_sections_split(l->sections, l->m, nw_pprof_frames(b), &split);
		if (!ret)
			ret = nw_pprof_add(b, &o->filter, split);
	}
	ret = nw_pprof_close(b, pf, ret, err, sizeof(err));
	if (ret)
		fprintf(stderr, "narwhal-report: %s\n", err);
	nw_split_free(split);
	nw_stacks_free(s);
	return ret ? 1 : 0;
}

/* Writes the exports asked for: 0, or 1 after telling the user. */
static int run_exports(const struct report_opts *o, const struct loaded *l)
{
	unsigned metric = o->view_opts.metric;
	bool view = o->view != VIEW_NONE;
	struct nw_stacks *s;
	int ret;

	/* First: the page reads the model's trees, which the exports below may free. */
	if (o->html && write_html(o, l, l->dir, NULL, NULL))
		return 1;
	if (o->pprof &&
	    write_pprof(o, l, !o->speedscope && !o->flamegraph && !o->chrome_trace && !view))
		return 1;
	if (o->speedscope && has_traces(l) && !shaped(o)) {
		/* In time order: what speedscope's Time Order view shows; a thread read at a time. */
		struct nw_timeline *tl = report_timeline(o, l, true, &s);
		FILE *f;

		if (!tl)
			return 1;
		f = open_out(o->speedscope);
		ret = f ? close_out(f, o->speedscope,
				    nw_speedscope_write_timeline(
					    f, tl, o->metric ? metric
							     : nw_speedscope_default_metric(l->m)))
			: 1;
		nw_timeline_free(tl);
		nw_stacks_free(s);
		if (ret)
			return 1;
	} else if (o->speedscope && !shaped(o)) {
		/* Each thread's stacks written as they are merged: no tree beside the model's. */
		FILE *f = open_out(o->speedscope);

		s = f ? nw_stacks_new(l->m, l->m->nmetrics) : NULL;
		ret = s ? nw_speedscope_write_stream(
				  f, s, &o->filter,
				  o->metric ? metric : nw_speedscope_default_metric(l->m))
			: -ENOMEM;
		nw_stacks_free(s);
		if (!f || close_out(f, o->speedscope, ret))
			return 1;
	} else if (o->speedscope) {
		FILE *f;

		s = report_stacks(o, l, true, false, !o->flamegraph && !o->chrome_trace && !view);
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
	if (o->chrome_trace) {
		struct nw_timeline *tl = report_timeline(o, l, false, &s);
		FILE *f;

		if (!tl)
			return 1;
		f = open_out(o->chrome_trace);
		ret = f ? close_out(f, o->chrome_trace, nw_chrome_trace_write(f, tl, metric)) : 1;
		nw_timeline_free(tl);
		nw_stacks_free(s);
		if (ret)
			return 1;
	}
	if (o->flamegraph) {
		struct nw_flamegraph_opts fo = { .title = o->inverted ? "Flame Graph (inverted)"
								       : "Flame Graph",
						 .metric = metric,
						 .unit = nw_export_unit(&l->m->metrics[metric]),
						 .base_metric = -1 };
		char *subtitle;

		s = report_stacks_pruned(o, l, o->per_thread, o->inverted, !view,
					 nw_flamegraph_min_share(&fo), metric);
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

/* "a,b,c" of @n names, into @buf. */
static const char *names_of(const char **v, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "," : "", v[i]);
	return buf;
}

/* narwhal-report --diff BASE DIR: the exit status. */
static int run_diff(const struct report_opts *o)
{
	struct loaded base = { 0 }, new = { 0 };
	struct nw_stacks *bs = NULL, *ns = NULL;
	struct nw_diff *d = NULL;
	char bname[1024], nname[1024];
	FILE *out = stdout;
	int ret;

	if (o->pprof || o->speedscope || o->per_thread ||
	    (o->view != VIEW_NONE && o->view != VIEW_FOLDED)) {
		fputs("narwhal-report: --diff shows the change per calling context, as text, "
		      "--folded, --flamegraph FILE or --html FILE; other views and exports do "
		      "not apply\n",
		      stderr);
		return 2;
	}
	names_of(o->bases, o->nbases, bname, sizeof(bname));
	names_of(o->dirs, o->ndirs, nname, sizeof(nname));
	ret = load(o, o->bases, o->nbases, &base);
	if (!ret)
		ret = load(o, o->dirs, o->ndirs, &new);
	if (ret)
		goto out;
	ret = 1;
	if (o->html) {
		/* Before the stacks below free the models' trees. */
		if (write_html(o, &new, nname, &base, bname))
			goto out;
		if (o->view == VIEW_NONE && !o->flamegraph) {
			ret = 0;
			goto out;
		}
	}
	bs = report_stacks(o, &base, false, false, true);
	ns = bs ? report_stacks(o, &new, false, false, true) : NULL;
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
		char *subtitle = nw_strdup_printf("%s -> %s (%s): red grew, blue shrank", bname,
						  nname, new.m->metrics[new.metric].name);

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
	ret = o->view == VIEW_FOLDED ? nw_diff_folded(out, d)
				     : nw_diff_view(out, d, o->view_opts.percent_limit, bname, nname);
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

/* The view and exports asked for: the exit status. */
static int report(struct report_opts *o)
{
	const char *name = o->output ? o->output : "stdout";
	struct loaded l = { 0 };
	FILE *out = stdout;
	int ret, matched = 0;

	ret = load(o, o->dirs, o->ndirs, &l);
	if (ret)
		goto out;
	o->view_opts.metric = l.metric;
	for (uint32_t i = 0; i < l.m->nthreads; i++)
		matched += nw_filter_thread(&o->filter, &l.m->threads[i]);
	if (!matched && (o->filter.tid >= 0 || o->filter.pid >= 0 || o->filter.comm)) {
		fprintf(stderr, "narwhal-report: %s: no thread matches the filter; "
				"see narwhal-report --threads\n",
			l.dir);
		ret = 1;
		goto out;
	}
	if (wants_export(o)) {
		ret = run_exports(o, &l);
		if (ret || o->view == VIEW_NONE)
			goto out;
	}
	if (o->view == VIEW_NONE)
		o->view = VIEW_TREE;
	/* Folded stacks run to tens of megabytes too. */
	out = o->output ? nw_fopen_behind(o->output) : nw_fdopen_behind(fileno(stdout), false);
	if (!out) {
		fprintf(stderr, "narwhal-report: %s: %s\n", name, strerror(errno));
		ret = 1;
		goto out;
	}
	ret = run_view(out, o, &l);
	/* Positive: told already; negative: an errno close_out() tells. */
	if (ret > 0)
		fclose(out);
	else
		ret = close_out(out, name, ret);
out:
	unload(&l);
	return ret;
}

int main(int argc, char **argv)
{
	struct report_opts o = {
		.view = VIEW_NONE,
		.filter = { .tid = -1, .pid = -1 },
		.view_opts = { .percent_limit = 0.5 },
	};
	int ret;

	/*
	 * Fixed thresholds: glibc's dynamic ones rise with the first large
	 * block freed, and every later tree and buffer then comes from a heap
	 * that is never given back (a 1,000-thread build's HTML report: 66
	 * MiB resident, not 52).
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
	ret = parse_args(argc, argv, &o);
	if (ret >= 0)
		goto out;
	if (o.by_section && (o.view == VIEW_SECTIONS || o.view == VIEW_HEALTH)) {
		fprintf(stderr, "narwhal-report: --by-section does not apply to %s\n",
			o.view == VIEW_SECTIONS ? "--sections" : "--stack-health");
		ret = 2;
		goto out;
	}
	if (o.html && shaped(&o)) {
		fputs("narwhal-report: --html holds the recorded stacks (the page inverts and "
		      "zooms by itself): --focus, --ignore, --hide, --root, --inverted, "
		      "--fold-recursion and --by-section do not apply\n", stderr);
		ret = 2;
		goto out;
	}
	if ((o.view == VIEW_TIMELINE || o.chrome_trace) && shaped(&o)) {
		fputs("narwhal-report: --timeline and --chrome-trace show the recorded stacks over "
		      "time: --focus, --hide, --root, --inverted, --fold-recursion and "
		      "--by-section do not apply\n", stderr);
		ret = 2;
		goto out;
	}
	if ((o.view == VIEW_LINES || o.view == VIEW_ADDRESSES) &&
	    (nw_stack_filter_active(&o.stack_filter) || o.inverted || o.by_section)) {
		fputs("narwhal-report: --lines and --addresses read the recorded stacks: --focus, "
		      "--hide, --inverted and --by-section do not apply\n", stderr);
		ret = 2;
		goto out;
	}
	ret = o.nbases ? run_diff(&o) : report(&o);
out:
	opts_fini(&o);
	return ret;
}
