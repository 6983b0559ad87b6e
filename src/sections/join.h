/* SPDX-License-Identifier: MIT */
/*
 * Instrumented sections joined with the samples (doc/SECTIONS.md).
 *
 * A measurement of a program linked with libnarwhal holds DIR/sections/:
 * the program's section intervals (CLOCK_MONOTONIC); the threads' traces
 * hold the time and CCT leaf of every sample (model/trace.h).  Each sample falls inside the
 * intervals of its thread that were open at its time; the innermost one
 * and those around it form its section path.
 *
 *  - nw_sectree_build(): the tree of section paths (count, total, self,
 *    min, max time per path) with the samples inside each path:
 *    narwhal-report --sections.
 *  - nw_sections_split(): the samples taken inside sections, moved below
 *    frames "[section NAME]" (outermost section first, above their own
 *    stacks) when symbolic stacks are built (report/stacks.h):
 *    narwhal-report --by-section, for every view and export.
 */
#ifndef NW_REPORT_SECTIONS_H
#define NW_REPORT_SECTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "model/measurement.h"
#include "report/plan.h"
#include "report/stacks.h"
#include "sections/seclog.h"
#include "util/hash.h"

/* One sample (or off-CPU interval) of a thread's trace, as the join reads it. */
struct nw_stime {
	uint64_t time;     /* CLOCK_MONOTONIC ns */
	uint64_t period;   /* a sample's period; an off-CPU interval's ns */
	uint32_t node;     /* node id in the thread's tree of @epoch */
	uint32_t epoch;    /* nw_epoch.index in the thread's process */
	uint16_t event;    /* event index: metrics of run.events[event] */
};

/* The sample times of model thread @thread, sorted by time. */
struct nw_stimes_thread {
	uint32_t pid, tid, thread;
	struct nw_stime *v;
	uint64_t n;
};

struct nw_stimes {
	struct nw_stimes_thread *threads;
	uint32_t nthreads;
};

struct nw_sections {
	struct nw_seclog *log;
	struct nw_stimes *times; /* NULL when the measurement has no traces */
};

/*
 * Loads DIR/sections, and the sample times from the traces of @m (read
 * from @dir with its traces, format/reader.h; threads without one are not
 * joined).  -ENOENT when the measurement has no sections (with a message
 * that says how to get them), -EBADMSG for a corrupt file, -errno;
 * messages name the file.  *ret is the caller's.
 */
int nw_sections_load(const char *dir, const struct nw_measurement *m, struct nw_sections **ret,
		     char *err, size_t errlen);
void nw_sections_free(struct nw_sections *s);

#define NW_SECNODE_ROOT 0u

/* One section path: the sections open around it, outermost at the root. */
struct nw_secnode {
	uint32_t name;          /* index into log->names (unused for the root) */
	uint32_t parent, first_child, next_sibling; /* UINT32_MAX: none */
	uint32_t depth;         /* 0 for the root, 1 for top-level sections */
	uint64_t count;         /* intervals */
	uint64_t open;          /* of them, still open when their program ended */
	uint64_t total_ns, self_ns, min_ns, max_ns;
	uint64_t weight;        /* joined samples (or metric) inside, inclusive */
	uint64_t self_weight;   /* ... with this path innermost */
};

struct nw_sectree {
	struct nw_secnode *nodes; /* node 0 is the root: samples outside any section */
	uint32_t n, cap;
	struct nw_index index;    /* over (parent, name) */
	uint32_t nthreads;        /* threads with intervals the filter selected */
	uint64_t nintervals;
	bool joined;              /* sample times were there */
	uint64_t total_weight;    /* all joined samples of the selected threads */
	uint64_t unmatched;       /* samples of threads without intervals (at the root) */
};

/*
 * The tree of the threads @f selects (NULL: all; names from the model @p),
 * each sample weighing what it adds to metric @metric of @p (a count: 1;
 * a sum: its period).  -ENOMEM.
 */
int nw_sectree_build(const struct nw_sections *s, const struct nw_measurement *p,
		     const struct nw_filter *f, unsigned metric, struct nw_sectree **ret);
void nw_sectree_free(struct nw_sectree *t);

/* narwhal-report --sections: the tree as a table.  -EIO, -ENOMEM. */
int nw_sections_view(FILE *out, const struct nw_sections *s, const struct nw_measurement *p,
		     const struct nw_filter *f, unsigned metric);

/*
 * The split of @m by section: every sample of a thread with sample times
 * that was taken inside sections, moved from its node to the same stack
 * below the frames of its section path (interned into @frames, the
 * stacks' table), the metrics of its event moved as counted (a sum moves
 * by the samples' periods, or shared by counts where those do not add
 * up).  Totals do not change: samples the join cannot place keep their
 * place.  -ENOMEM.  *ret is the caller's (nw_split_free(), report/stacks.h).
 */
int nw_sections_split(const struct nw_sections *s, const struct nw_measurement *m,
		      struct nw_frames *frames, struct nw_split **ret);

/*
 * narwhal-report's outputs (report/plan.h): --sections, of a model whose
 * nw_plan_model.sections is its struct nw_sections, and the split of
 * --by-section (nw_report_opts.split).
 */
extern const struct nw_output_kind nw_sections_output;
int nw_sections_split_plan(const void *sections, const struct nw_measurement *m,
			   struct nw_frames *frames, struct nw_split **ret);

#endif
