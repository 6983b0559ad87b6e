/* SPDX-License-Identifier: MIT */
/*
 * The output plan of narwhal-report (pprof's report.Generate(), for
 * several outputs at once): the views and exports asked for, in the order
 * they are written, each of a kind that declares what it reads.  The plan
 * makes each input once for the outputs that read it one after the
 * other, runs them, and frees each input after its last reader, and the
 * model's physical trees as soon as nothing is left to build from them,
 * so that a large measurement and what is derived from it are not held
 * together longer than they must be.  No front end decides any of it.
 *
 * What an output reads (struct nw_reads, NW_READS_*):
 *  - TREES: the model's physical trees (pprof, the HTML report, --lines,
 *    --stack-health); every symbolic input below is made from them.
 *  - TRACES: the model's traces (read with the model: nw_plan_reads()).
 *  - VISITS: the symbolic stacks visited once, depth first
 *    (nw_stacks_visit(): flat, folded, speedscope): merged as they are
 *    visited, no tree kept, when the stacks are not reshaped, not
 *    inverted and not by names per thread; else walked in the tree below.
 *  - TREE: the symbolic tree, merged or per thread, reshaped by the
 *    plan's filters, folding and split, turned bottom up when inverted.
 *  - PRUNED: the same tree, where nothing reshapes or inverts it and it
 *    is merged, without what is lighter than a share of the total
 *    (nw_stacks_opts.prune_share): what the output would not show.
 *  - NODE_MAP: the recorded stacks (merged, not reshaped) with the map
 *    from physical nodes, and the timeline of the selected threads made
 *    from them and the traces for the output (its events read, or with
 *    @events unset only opened: nw_timeline_open()).
 *  - DIFF: the base and the measurement joined (--diff); each run of
 *    them apart too when both were merged from several
 *    (nw_measurement_runs()).
 *  - BASE: the base's physical trees (--diff --html).
 *  - CODE: the machine code of the sampled functions, read with the model
 *    (--disasm, the HTML report's disassembly).
 * An output reads one of VISITS, TREE, PRUNED, NODE_MAP and DIFF at most.
 *
 * Running an output: the views' file (-o FILE, or standard output) is
 * opened first, as a shell's redirection would be; then the output's
 * input is made (and its timeline); then an export's file is opened (no
 * file is made for an export that cannot be), unless the export opens
 * its own; the output runs, its file is closed.  Files are written
 * behind (util/file.h).  A failure stops the plan.
 */
#ifndef NW_PLAN_H
#define NW_PLAN_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report/diff.h"
#include "report/stacks.h"
#include "report/timeline.h"
#include "report/transform.h"
#include "report/views.h"

enum {
	NW_READS_TREES = 1u << 0,
	NW_READS_TRACES = 1u << 1,
	NW_READS_VISITS = 1u << 2,
	NW_READS_TREE = 1u << 3,
	NW_READS_PRUNED = 1u << 4,
	NW_READS_NODE_MAP = 1u << 5,
	NW_READS_DIFF = 1u << 6,
	NW_READS_BASE = 1u << 7,
	NW_READS_CODE = 1u << 8,   /* the machine code stored (format/codefile.h) */
};

/* What an output reads, and which stacks (VISITS, TREE, PRUNED). */
struct nw_reads {
	unsigned what;             /* NW_READS_* */
	bool per_thread;           /* each thread below its frame */
	bool inverted;             /* bottom up */
	bool names;                /* VISITS: siblings of one name as one (folded stacks) */
	bool events;               /* NODE_MAP: the timeline's events read, not just opened */
	bool modules;              /* DIFF: frames joined by module (--diff --by module) */
	double prune_share;        /* PRUNED: the share of the total below which nothing shows */
	unsigned prune_metric;     /* PRUNED: of this metric */
};

/*
 * What the outputs are asked for besides their inputs (pprof's
 * report.Options), read when they run: a front end fills it in (the
 * metric once the measurement is read) and keeps it while the plan lives.
 */
struct nw_report_opts {
	const struct nw_filter *filter;             /* the threads (NULL: all) */
	const struct nw_stack_filter *stack_filter; /* --focus and the like (NULL: none) */
	bool fold_recursion;
	/*
	 * --by-section: moves samples below the frames of their sections,
	 * interned into @frames (sections/join.h); NULL: no split.  Called
	 * with a model's @sections (struct nw_plan_model).
	 */
	int (*split)(const void *sections, const struct nw_measurement *m, struct nw_frames *frames,
		     struct nw_split **ret);
	bool inverted;             /* the views and graphs that can, bottom up */
	bool per_thread;           /* each thread a root frame (--folded, --flamegraph, ...) */
	bool diff;                 /* a base measurement is compared (--diff) */
	bool diff_all;             /* --all: every change, also those within noise */
	bool diff_absolute;        /* --diff-absolute: samples or time, not shares */
	struct nw_view_opts view;  /* --percent-limit, the metric, --full-names */
	struct nw_timeline_opts timeline;
	const regex_t *re;         /* --callers, --lines, --addresses: the functions */
	const char *re_text;       /* ... as given, for messages */
	bool sort;                 /* --lines, --addresses, --disasm: hottest first */
	bool source;               /* --disasm: the source lines between the instructions */
	bool metric_given;         /* --metric (else speedscope weighs by the default period) */
	const char *output;        /* the views' file (-o); NULL: standard output */
};

/* A measurement the plan reads. */
struct nw_plan_model {
	struct nw_measurement *m;  /* its trees are dropped once nothing reads them */
	const char *name;          /* in messages: its (first) directory */
	const char *label;         /* in reports: what it is called (its directories) */
	unsigned metric;           /* the metric it is weighed by */
	const void *sections;      /* what nw_report_opts.split reads of it; NULL: none */
};

/* What an output runs with. */
struct nw_output_in {
	const struct nw_report_opts *o;
	const char *path;          /* the file it writes; NULL: the views' */
	FILE *out;                 /* that file, open; NULL for a kind that opens its own */
	const struct nw_plan_model *model;
	const struct nw_plan_model *base;  /* with --diff, else NULL */
	struct nw_stacks *stacks;          /* VISITS, TREE, PRUNED */
	const struct nw_timeline *timeline; /* NODE_MAP */
	const struct nw_diff *diff;        /* DIFF */
	char *err;                 /* a message for the user, when the output has one */
	size_t errlen;
};

struct nw_plan;

/* A kind of output: a view or an export. */
struct nw_output_kind {
	const char *name;          /* the option that asks for it, for messages */
	/*
	 * What an output of this kind reads of model @m, into @r (zeroed):
	 * called with each model as opened (its manifest: what to read of
	 * it) and as read (which inputs to make), so the same for both.
	 */
	void (*reads)(const struct nw_plan *p, const struct nw_measurement *m, struct nw_reads *r);
	/*
	 * Writes the output.  0 or -errno; with a message in in->err, else
	 * the plan says "FILE: strerror".
	 */
	int (*run)(struct nw_output_in *in);
	bool own_file;             /* opens in->path itself */
};

/* A plan for @o (kept by the caller while the plan lives); NULL on ENOMEM. */
struct nw_plan *nw_plan_new(const struct nw_report_opts *o);
void nw_plan_free(struct nw_plan *p);
/*
 * Adds an output of @kind, written after those added before, to @path
 * (NULL: the views' file, or standard output).  0 or -ENOMEM.
 */
int nw_plan_add(struct nw_plan *p, const struct nw_output_kind *kind, const char *path);
const struct nw_report_opts *nw_plan_opts(const struct nw_plan *p);
/*
 * Whether the plan reshapes the stacks (--focus and the like, folding,
 * a split): what was recorded is then not what the stacks show.
 */
bool nw_plan_reshaped(const struct nw_plan *p);
/*
 * What the outputs read of measurement @m as opened (its manifest):
 * NW_READS_TREES (symbols and trees) and NW_READS_TRACES.
 */
unsigned nw_plan_reads(const struct nw_plan *p, const struct nw_measurement *m);
/*
 * Runs the outputs on @model (and @base with --diff; NULL otherwise), in
 * order.  0, or -errno with a message for the user in @err (the first
 * failure: the outputs after it are not written).
 */
int nw_plan_run(struct nw_plan *p, const struct nw_plan_model *model,
		const struct nw_plan_model *base, char *err, size_t errlen);

/*
 * The split of the model's samples by section into the frames @frames,
 * or NULL without --by-section (for an output that reads the physical
 * trees: pprof).  0 or -errno.
 */
int nw_output_split(const struct nw_output_in *in, struct nw_frames *frames,
		    struct nw_split **ret);

#endif
