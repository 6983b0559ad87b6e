/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report: reads a measurement directory and writes the views and
 * exports asked for.  Its options come from one table (getopt's long and
 * short options and --help); what each output reads, and when that is
 * made and freed, is the output plan's (report/plan.h).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/outputs.h"
#include "format/codefile.h"
#include "format/reader.h"
#include "report/outputs.h"
#include "report/plan.h"
#include "sections/join.h"
#include "util/strbuf.h"

/* No view asked for: the tree, unless an export was asked for. */
#define VIEW_NONE (-1)
/* --sections: the sections' output (sections/join.h), numbered after the report's views. */
#define VIEW_SECTIONS NW_VIEWS

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
	int view;               /* enum nw_view, VIEW_SECTIONS or VIEW_NONE */
	const char **dirs;      /* the measurements, merged (default narwhal.data) */
	int ndirs;
	const char **bases;     /* --diff BASE..., merged */
	int nbases;
	const char *metric;
	const char *time;       /* --time START,END */
	const char *export[NW_EXPORTS]; /* each export's file, NULL: not asked for */
	bool by_section;        /* samples below [section NAME] frames (doc/SECTIONS.md) */
	struct nw_filter filter;
	struct pattern pat[PAT_COUNT]; /* PAT_VIEW: --callers, --lines, --addresses */
	struct nw_stack_filter stack_filter;
	struct nw_report_opts rpt;     /* what the outputs are asked for */
};

/* ---- the options: one table for getopt and --help ---- */

/* What an option sets: a view, a flag, a string, an export's file, a pattern, or its own. */
enum opt_sets { SETS_VIEW, SETS_VIEW_RE, SETS_FLAG, SETS_STRING, SETS_EXPORT, SETS_PATTERN,
		SETS_ID, SETS_BY, SETS_FULL_NAMES, SETS_TIMELINE, SETS_WIDTH, SETS_DIFF,
		SETS_PERCENT, SETS_HELP, SETS_VERSION };

struct opt {
	const char *name;       /* the long option as typed ("--tree"); NULL: a heading of --help */
	int has_arg;
	char letter;            /* the short option; 0: none */
	const char *arg;        /* its argument in --help */
	const char *help;       /* its lines in --help; NULL: on the row of the option before */
	enum opt_sets sets;
	size_t what;            /* the view, export or pattern; the offset of a field */
};

#define FIELD(f) offsetof(struct report_opts, f)

static const struct opt opts[] = {
	{ NULL, 0, 0, NULL, "Views:" },
	{ "--tree", no_argument, 0, NULL, "call tree, inclusive and self (default)", SETS_VIEW,
	  NW_VIEW_TREE },
	{ "--flat", no_argument, 0, NULL, "functions by self, with cumulative share", SETS_VIEW,
	  NW_VIEW_FLAT },
	{ "--leaks", no_argument, 0, NULL, "call paths of memory still live at exit, largest first\n"
	  "(narwhal-record --alloc)", SETS_VIEW, NW_VIEW_LEAKS },
	{ "--locks", no_argument, 0, NULL, "locks by time waited, with the paths that waited and\n"
	  "that released them (narwhal-record --locks)", SETS_VIEW, NW_VIEW_LOCKS },
	{ "--threads", no_argument, 0, NULL, "one line per thread, most samples first", SETS_VIEW,
	  NW_VIEW_THREADS },
	{ "--folded", no_argument, 0, NULL, "folded stacks (flamegraph.pl input)", SETS_VIEW,
	  NW_VIEW_FOLDED },
	{ "--callers", required_argument, 0, "RE", "who calls the functions matching RE, through\n"
	  "which paths", SETS_VIEW_RE, NW_VIEW_CALLERS },
	{ "--peek", required_argument, 0, "RE", NULL, SETS_VIEW_RE, NW_VIEW_CALLERS },
	{ "--by", required_argument, 0, "module", "shares per module (the program, libc, ...)",
	  SETS_BY, 0 },
	{ "--lines", required_argument, 0, "RE", "per source line of the functions matching RE",
	  SETS_VIEW_RE, NW_VIEW_LINES },
	{ "--addresses", required_argument, 0, "RE", "per sampled instruction of the functions "
	  "matching RE", SETS_VIEW_RE, NW_VIEW_ADDRESSES },
	{ "--disasm", required_argument, 0, "RE", "annotated disassembly of the functions matching "
	  "RE,\nfrom the code stored in the measurement", SETS_VIEW_RE, NW_VIEW_DISASM },
	{ "--timeline", optional_argument, 0, "[=functions]", "one row per thread over time: how "
	  "busy it was\n(or its hottest function) in each column", SETS_TIMELINE, 0 },
	{ "--width", required_argument, 0, "N", "--timeline: columns, 10 to 1000 (default 64)",
	  SETS_WIDTH, 0 },
	{ "--stack-health", no_argument, 0, NULL, "how many stacks are complete, where unwinding "
	  "stops", SETS_VIEW, NW_VIEW_HEALTH },
	{ "--sections", no_argument, 0, NULL, "instrumented sections (narwhal.h): tree with counts,\n"
	  "times and the samples taken inside each", SETS_VIEW, VIEW_SECTIONS },
	{ NULL, 0, 0, NULL, "Selecting and shaping (every view and export):" },
	{ "--time", required_argument, 0, "START,END", "only what happened then: seconds from the "
	  "start (2.5)\nor percentages of the run (40%,60%); either may be empty", SETS_STRING,
	  FIELD(time) },
	{ "--tid", required_argument, 0, "N", "only thread N, only process N", SETS_ID,
	  FIELD(filter.tid) },
	{ "--pid", required_argument, 0, "N", NULL, SETS_ID, FIELD(filter.pid) },
	{ "--comm", required_argument, 0, "NAME", "only threads named NAME", SETS_STRING,
	  FIELD(filter.comm) },
	{ "--thread", required_argument, 0, "NAME", NULL, SETS_STRING, FIELD(filter.comm) },
	{ "--focus", required_argument, 0, "RE", "only samples with a frame matching RE (pprof's "
	  "-focus)", SETS_PATTERN, PAT_FOCUS },
	{ "--ignore", required_argument, 0, "RE", "without the samples with a frame matching RE",
	  SETS_PATTERN, PAT_IGNORE },
	{ "--hide", required_argument, 0, "RE", "remove the frames matching RE from the stacks",
	  SETS_PATTERN, PAT_HIDE },
	{ "--root", required_argument, 0, "RE", "cut each stack above its first frame matching RE",
	  SETS_PATTERN, PAT_ROOT },
	{ "--focus-module", required_argument, 0, "RE", "the same by module path", SETS_PATTERN,
	  PAT_FOCUS_MODULE },
	{ "--ignore-module", required_argument, 0, "RE", NULL, SETS_PATTERN, PAT_IGNORE_MODULE },
	{ "--inverted", no_argument, 0, NULL, "--tree, --folded, flame graph bottom-up (leaf first)",
	  SETS_FLAG, FIELD(rpt.inverted) },
	{ "--metric", required_argument, 0, "NAME", "weigh by metric or event NAME (default: "
	  "samples)", SETS_STRING, FIELD(metric) },
	{ "--percent-limit", required_argument, 0, "P", "--tree, --callers: hide nodes below P% "
	  "(default 0.5)", SETS_PERCENT, 0 },
	{ "--fold-recursion", no_argument, 0, NULL, "one node per function on each path (recursion "
	  "folded)", SETS_FLAG, FIELD(rpt.fold_recursion) },
	{ "--by-section", no_argument, 0, NULL, "samples taken inside instrumented sections below\n"
	  "[section NAME] frames (views, exports, --diff)", SETS_FLAG, FIELD(by_section) },
	{ "--sort", no_argument, 0, NULL, "--lines, --addresses, --disasm: hottest first", SETS_FLAG,
	  FIELD(rpt.sort) },
	{ "--source", no_argument, 0, NULL, "--disasm: the source lines between the instructions",
	  SETS_FLAG, FIELD(rpt.source) },
	{ "--full-names", no_argument, 0, NULL, "whole C++/Rust signatures, not the readable names",
	  SETS_FULL_NAMES, 0 },
	{ "--output", required_argument, 'o', "FILE", "write the view to FILE", SETS_STRING,
	  FIELD(rpt.output) },
	{ "--help", no_argument, 'h', NULL, "this help", SETS_HELP, 0 },
	{ "--version", no_argument, 0, NULL, "print the version", SETS_VERSION, 0 },
	{ NULL, 0, 0, NULL, "Exports (no view is printed unless one is asked for too):" },
	{ "--pprof", required_argument, 0, "FILE", "gzipped pprof profile (go tool pprof FILE)",
	  SETS_EXPORT, NW_EXPORT_PPROF },
	{ "--speedscope", required_argument, 0, "FILE", "speedscope JSON, one profile per thread, "
	  "in time order", SETS_EXPORT, NW_EXPORT_SPEEDSCOPE },
	{ "--chrome-trace", required_argument, 0, "FILE", "Trace Event JSON (Perfetto, "
	  "chrome://tracing): each\nthread's stacks over time, off-CPU intervals", SETS_EXPORT,
	  NW_EXPORT_CHROME_TRACE },
	{ "--flamegraph", required_argument, 0, "FILE", "SVG flame graph (click to zoom, search box)",
	  SETS_EXPORT, NW_EXPORT_FLAMEGRAPH },
	{ "--html", required_argument, 0, "FILE", "interactive HTML report in one file: flame graph, "
	  "call\ntree, callers, flat, source lines, timeline", SETS_EXPORT, NW_EXPORT_HTML },
	{ "--per-thread", no_argument, 0, NULL, "each thread a root frame, name-tid (--folded, "
	  "--flamegraph)", SETS_FLAG, FIELD(rpt.per_thread) },
	{ NULL, 0, 0, NULL, "Comparing measurements:" },
	{ "--diff", required_argument, 0, "BASE DIR", "what changed from BASE to DIR: per function "
	  "(--flat,\nthe default), per calling context (--tree), --callers RE,\n--lines RE, --by "
	  "module; each change with its z-score.\n--diff B1 --diff B2 D1 D2: runs on each side, "
	  "the noise\nfrom their spread (Welch); with --folded: \"stack BASE NEW\"\nlines, with "
	  "--flamegraph FILE or --html FILE: differential", SETS_DIFF, 0 },
	{ "--all", no_argument, 0, NULL, "--diff: every change, also those within sampling noise",
	  SETS_FLAG, FIELD(rpt.diff_all) },
	{ "--diff-absolute", no_argument, 0, NULL, "--diff: samples or time, not shares (runs of "
	  "different length)", SETS_FLAG, FIELD(rpt.diff_absolute) },
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))
/* Options without a short letter are known to getopt by a code above any character. */
#define LONG_CODE 256

/* An option's part of a row of --help: "-o, --output FILE", "--tid N". */
static size_t synopsis(const struct opt *t, bool indent, char *buf, size_t len)
{
	char letter[8] = "";

	if (t->letter)
		snprintf(letter, sizeof(letter), "-%c, ", t->letter);
	return (size_t)snprintf(buf, len, "%s%s%s%s%s", indent ? "    " : "", letter, t->name,
				t->arg && t->has_arg != optional_argument ? " " : "",
				t->arg ? t->arg : "");
}

/*
 * --help from the table: each row the options that share it, then its text
 * from column 23 (or two spaces after a longer column), line by line.
 */
static void usage(FILE *f)
{
	fputs("Usage: narwhal-report [OPTIONS] [DIR...]\n"
	      "Reports the measurement in DIR (default narwhal.data); several are merged.\n\n", f);
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *t = &opts[i];
		char row[128];
		size_t n;

		if (!t->name) {
			fprintf(f, "%s\n", t->help);
			continue;
		}
		/* A long option among short ones lines up with their long names. */
		n = synopsis(t, !t->letter && i && opts[i - 1].letter, row, sizeof(row));
		for (; i + 1 < NOPTS && opts[i + 1].name && !opts[i + 1].help &&
		       n + 2 < sizeof(row); i++) {
			n += (size_t)snprintf(row + n, sizeof(row) - n, ", ");
			n += synopsis(&opts[i + 1], false, row + n, sizeof(row) - n);
		}
		fprintf(f, "  %-*s", n < 20 ? 21 : (int)n + 2, row);
		for (const char *h = t->help, *nl; h; h = nl ? nl + 1 : NULL) {
			nl = strchr(h, '\n');
			fprintf(f, "%s%.*s\n", h == t->help ? "" : "                       ",
				nl ? (int)(nl - h) : (int)strlen(h), h);
		}
	}
}

static const struct opt *opt_of(int code)
{
	if (code >= LONG_CODE)
		return code - LONG_CODE < (int)NOPTS ? &opts[code - LONG_CODE] : NULL;
	for (size_t i = 0; code > 0 && i < NOPTS; i++)
		if (opts[i].name && opts[i].letter == code)
			return &opts[i];
	return NULL;
}

/* getopt's long options (their names without the dashes) and short ones, from the table. */
static void getopt_table(struct option *lo, char *so)
{
	size_t n = 0;

	*so++ = ':';
	for (size_t i = 0; i < NOPTS; i++) {
		if (!opts[i].name)
			continue;
		lo[n++] = (struct option){ opts[i].name + 2, opts[i].has_arg, NULL,
					   opts[i].letter ? opts[i].letter : LONG_CODE + (int)i };
		if (!opts[i].letter)
			continue;
		*so++ = opts[i].letter;
		if (opts[i].has_arg != no_argument)
			*so++ = ':';
		if (opts[i].has_arg == optional_argument)
			*so++ = ':';
	}
	lo[n] = (struct option){ 0 };
	*so = 0;
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

/* Tells the user what went wrong; returns @status, the exit status (2: how it was asked). */
__attribute__((format(printf, 2, 3))) static int tell(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("narwhal-report: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

/* Option @t with argument @arg: -1 to go on, else the exit status. */
static int set(struct report_opts *o, const struct opt *t, const char *arg)
{
	char *end;
	unsigned long w;
	long long id;

	switch (t->sets) {
	case SETS_VIEW_RE:
		o->pat[PAT_VIEW].text = arg;
		/* fall through */
	case SETS_VIEW:
		o->view = (int)t->what;
		return -1;
	case SETS_FLAG:
		*(bool *)((char *)o + t->what) = true;
		return -1;
	case SETS_STRING:
		*(const char **)((char *)o + t->what) = arg;
		return -1;
	case SETS_EXPORT:
		o->export[t->what] = arg;
		return -1;
	case SETS_PATTERN:
		o->pat[t->what].text = arg;
		return -1;
	case SETS_ID:
		errno = 0;
		id = strtoll(arg, &end, 10);
		if (errno || end == arg || *end || id < 0 || id > UINT32_MAX)
			return tell(2, "%s: not an id: %s", t->name, arg);
		*(int64_t *)((char *)o + t->what) = id;
		return -1;
	case SETS_BY:
		if (!strcmp(arg, "module"))
			o->view = NW_VIEW_MODULES;
		else if (!strcmp(arg, "section"))
			o->by_section = true;
		else
			return tell(2, "--by: module or section, not %s", arg);
		return -1;
	case SETS_FULL_NAMES:
		o->rpt.view.full_names = o->rpt.timeline.full_names = true;
		return -1;
	case SETS_TIMELINE:
		o->view = NW_VIEW_TIMELINE;
		o->rpt.timeline.functions = arg != NULL;
		if (arg && strcmp(arg, "functions"))
			return tell(2, "--timeline=functions, or --timeline; not --timeline=%s",
				    arg);
		return -1;
	case SETS_WIDTH:
		errno = 0;
		w = strtoul(arg, &end, 10);
		o->rpt.timeline.width = (unsigned)w;
		if (errno || end == arg || *end || w < 10 || w > 1000)
			return tell(2, "--width: columns from 10 to 1000, not %s", arg);
		return -1;
	case SETS_DIFF:
		return add_dir(&o->bases, &o->nbases, arg);
	case SETS_PERCENT:
		errno = 0;
		o->rpt.view.percent_limit = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->rpt.view.percent_limit >= 0) ||
		    o->rpt.view.percent_limit > 100)
			return tell(2, "--percent-limit: not a percentage: %s", arg);
		return -1;
	case SETS_HELP:
		usage(stdout);
		return 0;
	case SETS_VERSION:
		printf("narwhal-report %s\n", NW_VERSION);
		return 0;
	}
	return -1;
}

/* Compiles the patterns given: -1 to go on, else the exit status. */
static int compile_patterns(struct report_opts *o)
{
	const regex_t **slot[PAT_COUNT] = {
		&o->stack_filter.focus,	       &o->stack_filter.ignore, &o->stack_filter.hide,
		&o->stack_filter.root,	       &o->stack_filter.focus_module,
		&o->stack_filter.ignore_module, &o->rpt.re,
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
		*slot[i] = &p->re;
	}
	o->rpt.re_text = o->pat[PAT_VIEW].text;
	return -1;
}

/* Parses the command line; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct report_opts *o)
{
	struct option longopts[NOPTS + 1];
	char shortopts[3 * NOPTS + 2], name[8];
	int c, ret = -1;

	getopt_table(longopts, shortopts);
	opterr = 0;
	while (ret < 0 && (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct opt *t = c == ':' || c == '?' ? NULL : opt_of(c);

		if (t) {
			ret = set(o, t, optarg);
			continue;
		}
		snprintf(name, sizeof(name), "-%c", optopt);
		fprintf(stderr, "narwhal-report: %s: %s\nTry 'narwhal-report --help'.\n",
			optopt > 0 && optopt < LONG_CODE ? name : argv[optind - 1],
			c == ':' ? "needs an argument" : "unknown option");
		return 2;
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

/* Does @o reshape the stacks (which the time-ordered outputs cannot follow)? */
static bool shaped(const struct report_opts *o)
{
	return nw_stack_filter_active(&o->stack_filter) || o->rpt.inverted ||
	       o->rpt.fold_recursion || o->by_section;
}

/* Options that do not go together: 0, else the exit status after telling the user. */
static int check_opts(const struct report_opts *o)
{
	const char *const *e = o->export;

	if (o->by_section && (o->view == VIEW_SECTIONS || o->view == NW_VIEW_HEALTH))
		return tell(2, "--by-section does not apply to %s",
			    o->view == VIEW_SECTIONS ? "--sections" : "--stack-health");
	if (e[NW_EXPORT_HTML] && shaped(o))
		return tell(2, "--html holds the recorded stacks (the page inverts and zooms by "
			    "itself): --focus, --ignore, --hide, --root, --inverted, "
			    "--fold-recursion and --by-section do not apply");
	if ((o->view == NW_VIEW_TIMELINE || e[NW_EXPORT_CHROME_TRACE]) && shaped(o))
		return tell(2, "--timeline and --chrome-trace show the recorded stacks over "
			    "time: --focus, --hide, --root, --inverted, --fold-recursion and "
			    "--by-section do not apply");
	if ((o->view == NW_VIEW_LINES || o->view == NW_VIEW_ADDRESSES ||
	     o->view == NW_VIEW_DISASM) &&
	    (nw_stack_filter_active(&o->stack_filter) || o->rpt.inverted || o->by_section))
		return tell(2, "--lines, --addresses and --disasm read the recorded stacks: "
			    "--focus, --hide, --inverted and --by-section do not apply");
	if (o->nbases && (e[NW_EXPORT_PPROF] || e[NW_EXPORT_SPEEDSCOPE] || o->rpt.per_thread ||
			  (o->view != VIEW_NONE && nw_view_diff(o->view) < 0)))
		return tell(2, "--diff shows the change per function (--flat, the default), per "
			    "calling context (--tree), --callers RE, --lines RE, --by module, as "
			    "--folded, --flamegraph FILE or --html FILE; other views and exports "
			    "do not apply");
	if (!o->nbases && (o->rpt.diff_all || o->rpt.diff_absolute))
		return tell(2, "--all and --diff-absolute apply to --diff");
	return 0;
}

/*
 * The outputs asked for, in the order they are written: the exports (with
 * --diff, the HTML report and the flame graph only), then the view, the
 * tree when nothing else was asked for.  NULL on ENOMEM.
 */
static struct nw_plan *make_plan(struct report_opts *o)
{
	struct nw_plan *p = nw_plan_new(&o->rpt);
	int view = o->view, ret = p ? 0 : -ENOMEM, n = 0;

	for (int k = 0; k < NW_EXPORTS && !ret; k++) {
		if (!o->export[k] ||
		    (o->nbases && k != NW_EXPORT_HTML && k != NW_EXPORT_FLAMEGRAPH))
			continue;
		ret = nw_plan_add(p, &nw_exports[k], o->export[k]);
		n++;
	}
	/* What perf diff and pprof's top print first: the change per function. */
	if (view == VIEW_NONE && !n)
		view = o->nbases ? NW_VIEW_FLAT : NW_VIEW_TREE;
	if (o->nbases && view != VIEW_NONE)
		view = nw_view_diff(view);
	if (!ret && view != VIEW_NONE)
		ret = nw_plan_add(p, view == VIEW_SECTIONS ? &nw_sections_output : &nw_views[view],
				  NULL);
	if (ret) {
		nw_plan_free(p);
		return NULL;
	}
	return p;
}

/* ---- reading the measurements ---- */

/* One measurement (the directories merged) read for the report. */
struct loaded {
	const char *dir;        /* the first, to name in messages */
	struct nw_measurement *m;
	struct nw_sections *sections; /* --sections, --by-section: DIR/sections */
	unsigned metric;
};

/* --time: restricts @l to the range asked for; 0, else the exit status after telling the user. */
static int apply_time(const struct report_opts *o, struct loaded *l)
{
	const struct nw_run *r = &l->m->run;
	uint64_t lo, hi;
	int rc = nw_run_time_range(r, o->time, &lo, &hi);

	if (rc == -ENODATA)
		return tell(1, "%s: no time in this measurement (recorded before traces "
			    "existed): --time needs them", l->dir);
	if (rc == -ERANGE)
		return tell(2, "--time %s starts after the run, which lasted %.3f s", o->time,
			    (double)(r->clock_end_ns - r->clock_start_ns) / 1e9);
	if (rc)
		return tell(2, "--time: START,END in seconds from the start (1.5,3) or percent "
			    "of the run (40%%,60%%), START before END; not %s", o->time);
	rc = nw_measurement_restrict_time(l->m, lo, hi);
	if (rc == -ENODATA)
		return tell(1, "%s was recorded with --no-trace: --time needs the time of each "
			    "sample", l->dir);
	if (rc)
		return tell(1, "%s: --time: %s", l->dir, strerror(-rc));
	return 0;
}

struct reads_arg {
	const struct nw_plan *p;
	bool whole;                /* the trees and the traces, whatever the outputs read */
};

/* What of a measurement the plan's outputs read (nw_measurement_read_parts()). */
static unsigned parts_read(void *arg, const struct nw_measurement *m)
{
	const struct reads_arg *a = arg;
	unsigned reads = nw_plan_reads(a->p, m);

	return (a->whole || (reads & NW_READS_TREES) ? NW_READ_TREES : 0) |
	       (a->whole || (reads & NW_READS_TRACES) ? NW_READ_TRACES : 0) |
	       (reads & NW_READS_CODE ? NW_READ_CODE : 0);
}

/*
 * Reads @dirs, merged: what the plan's outputs read of them (--time and
 * --by-section: the trees and the traces too), and the sections when
 * asked.  0, else the exit status after telling the user.
 */
static int load(const struct report_opts *o, const struct nw_plan *p, const char **dirs,
		int ndirs, struct loaded *l)
{
	bool whole = o->time || o->by_section;
	char err[1024];
	int ret, metric;

	memset(l, 0, sizeof(*l));
	l->dir = dirs[0];
	for (int i = 0; i < ndirs; i++) {
		struct reads_arg arg = { p, whole };
		struct nw_measurement *m = NULL;

		ret = nw_measurement_read_parts(dirs[i], parts_read, &arg, &m, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "narwhal-report: %s\n", err[0] ? err : strerror(-ret));
			return 1;
		}
		if (!l->m) {
			l->m = m;
			continue;
		}
		ret = nw_measurement_merge(l->m, m, err, sizeof(err));
		nw_measurement_free(m);
		if (ret)
			return tell(ret == -EINVAL ? 2 : 1, "cannot merge %s with %s: %s", dirs[i],
				    dirs[0], err);
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
	if ((o->view == VIEW_SECTIONS || o->by_section) && ndirs > 1)
		return tell(2, "--sections and --by-section read one measurement, not %d", ndirs);
	if ((o->view == VIEW_SECTIONS || o->by_section) &&
	    nw_sections_load(l->dir, l->m, &l->sections, err, sizeof(err)))
		return tell(1, "%s", err);
	return 0;
}

static void unload(struct loaded *l)
{
	nw_sections_free(l->sections);
	nw_measurement_free(l->m);
}

/* ---- the report ---- */

/* Reads the measurements (and the bases of --diff) and runs the plan: the exit status. */
static int report(struct report_opts *o, struct nw_plan *p)
{
	struct loaded l = { 0 }, base = { 0 };
	struct nw_plan_model model, bmodel;
	char nname[1024], bname[1024], err[1024];
	int ret = 0;

	nw_join(o->dirs, (size_t)o->ndirs, ",", nname, sizeof(nname));
	nw_join(o->bases, (size_t)o->nbases, ",", bname, sizeof(bname));
	if (o->nbases)
		ret = load(o, p, o->bases, o->nbases, &base);
	if (!ret)
		ret = load(o, p, o->dirs, o->ndirs, &l);
	if (ret)
		goto out;
	if (!o->nbases && !nw_filter_matches(&o->filter, l.m)) {
		ret = tell(1, "%s: no thread matches the filter; see narwhal-report --threads",
			   l.dir);
		goto out;
	}
	o->rpt.view.metric = l.metric;
	model = (struct nw_plan_model){ l.m, l.dir, o->nbases ? nname : l.dir, l.metric,
					l.sections };
	bmodel = (struct nw_plan_model){ base.m, base.dir, bname, base.metric, base.sections };
	if (nw_plan_run(p, &model, o->nbases ? &bmodel : NULL, err, sizeof(err)))
		ret = tell(1, "%s", err);
out:
	unload(&base);
	unload(&l);
	return ret;
}

int main(int argc, char **argv)
{
	struct report_opts o = {
		.view = VIEW_NONE,
		.filter = { .tid = -1, .pid = -1 },
		.rpt = { .view = { .percent_limit = 0.5 } },
	};
	struct nw_plan *p = NULL;
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
	ret = check_opts(&o);
	if (ret)
		goto out;
	o.rpt.filter = &o.filter;
	o.rpt.stack_filter = &o.stack_filter;
	o.rpt.split = o.by_section ? nw_sections_split_plan : NULL;
	o.rpt.diff = o.nbases > 0;
	o.rpt.metric_given = o.metric != NULL;
	p = make_plan(&o);
	if (!p) {
		fputs("narwhal-report: out of memory\n", stderr);
		ret = 1;
		goto out;
	}
	ret = report(&o, p);
out:
	nw_plan_free(p);
	opts_fini(&o);
	return ret;
}
