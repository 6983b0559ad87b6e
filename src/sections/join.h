/* SPDX-License-Identifier: MIT */
/*
 * Instrumented sections joined with the samples (doc/SECTIONS.md).
 *
 * A measurement of a program linked with libnarwhal holds DIR/sections/:
 * the program's section intervals (CLOCK_MONOTONIC) and the time and CCT
 * leaf of every sample (format/sectionlog.h).  Each sample falls inside the
 * intervals of its thread that were open at its time; the innermost one
 * and those around it form its section path.
 *
 *  - nw_sectree_build(): the tree of section paths (count, total, self,
 *    min, max time per path) with the samples inside each path:
 *    narwhal-report --sections.
 *  - nw_sections_split(): a copy of the measurement in which every sample
 *    taken inside sections hangs below pseudo-frames "[section NAME]",
 *    outermost section first, above its own stack: narwhal-report
 *    --by-section, which then runs any view or export on the copy.
 */
#ifndef NW_REPORT_SECTIONS_H
#define NW_REPORT_SECTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "sections/seclog.h"
#include "report/profile.h"

/* The pseudo-frames' module in a split measurement, and where it is mapped. */
#define NW_SECTIONS_MODULE "[sections]"
#define NW_SECTIONS_BASE 0xffffff0000000000ull
#define NW_SECTIONS_FRAME_PREFIX "[section "

struct nw_sections {
	struct nw_seclog *log;
	struct nw_stimes *times; /* NULL when the measurement has no sample times */
};

/*
 * Loads DIR/sections.  -ENOENT when the measurement has no sections (with
 * a message that says how to get them), -EBADMSG for a corrupt file,
 * -errno; messages name the file.  *ret is the caller's.
 */
int nw_sections_load(const char *dir, struct nw_sections **ret, char *err, size_t errlen);
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
	uint32_t *slots;          /* index over (parent, name) */
	uint32_t nslots;
	uint32_t nthreads;        /* threads with intervals the filter selected */
	uint64_t nintervals;
	bool joined;              /* sample times were there */
	uint64_t total_weight;    /* all joined samples of the selected threads */
	uint64_t unmatched;       /* samples of threads without intervals (at the root) */
};

/*
 * The tree of the threads @f selects (NULL: all; names from @p's manifest),
 * each sample weighing what it adds to metric @metric of @p (samples: 1;
 * period metrics: its period).  -ENOMEM.
 */
int nw_sectree_build(const struct nw_sections *s, const struct nw_profile *p,
		     const struct nw_filter *f, unsigned metric, struct nw_sectree **ret);
void nw_sectree_free(struct nw_sectree *t);

/* narwhal-report --sections: the tree as a table.  -EIO, -ENOMEM. */
int nw_sections_view(FILE *out, const struct nw_sections *s, const struct nw_profile *p,
		     const struct nw_filter *f, unsigned metric);

/*
 * Writes to the empty directory @out a copy of measurement @dir (its
 * manifest, symbol table and thread files) in which every sample taken
 * inside sections is moved below their "[section NAME]" pseudo-frames:
 * module NW_SECTIONS_MODULE, mapped at NW_SECTIONS_BASE in every epoch.
 * Totals do not change: samples the join cannot place keep their place.
 * -errno with a message naming the file.
 */
int nw_sections_split(const char *dir, const struct nw_sections *s, const char *out, char *err,
		      size_t errlen);
/*
 * nw_sections_split() of @dir into a new directory under $TMPDIR (or /tmp),
 * whose path goes to @tmp.  -errno with a message; @tmp is then "".
 */
int nw_sections_split_tmp(const char *dir, char *tmp, size_t len, char *err, size_t errlen);
/* Removes a directory nw_sections_split_tmp() made, and its files. */
void nw_sections_remove_tmp(const char *tmp);

#endif
