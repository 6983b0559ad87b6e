/* SPDX-License-Identifier: MIT */
/*
 * The HTML report: one self-contained file that holds the page (its code
 * and styles, compiled into Narwhal from web/) and the profile, and needs
 * nothing else to open: no network, no server, no npm.  The page shows a
 * flame graph, the call tree, callers and callees, a flat table, each
 * thread's samples over time, the source lines of a function, and, with a
 * base measurement, the change from it; every view filters by the same
 * threads, metric and time range (doc/EXPORTS.md, "HTML report").
 *
 * The profile is JSON, gzipped and base64-encoded into the page (the
 * browser inflates it with DecompressionStream): a string table; the
 * frames (function, module, file, line); each thread's calling context
 * tree as flat arrays of parent, frame, source line and self value per
 * metric, its nodes split by the line the frame was at, so the page can
 * give per-line shares; each thread's samples in time order (time and
 * node) from its trace; the threads' processes (pid, parent, name), by
 * which the page groups them; the text of the hottest source files this
 * machine can read, up to a size cap.
 */
#ifndef NW_HTML_H
#define NW_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "model/measurement.h"
#include "report/diff.h"
#include "report/stacks.h"

/* Source text embedded at most by default: the hottest files first. */
#define NW_HTML_SOURCE_CAP (2u << 20)

struct nw_html_opts {
	const struct nw_filter *filter;    /* the threads shown; NULL: every thread */
	unsigned metric;                   /* the metric the page opens with */
	size_t source_cap;                 /* bytes of source text at most; 0: NW_HTML_SOURCE_CAP */
	const char *label;                 /* what the measurement is called (its directory); NULL: none */
	/* A differential report: the change from @base (every thread of it); NULL: none. */
	const struct nw_measurement *base;
	const char *base_label;
	/* The base and @m joined (report/diff.h): their changes and noise shown; NULL: none. */
	const struct nw_diff *diff;
};

/*
 * Writes the report of @m (its trees, and its traces where read) to @out.
 * 0, -EINVAL for a metric @m lacks or a model without trees, -ENOMEM,
 * -EIO when writing failed.
 */
int nw_html_write(FILE *out, const struct nw_measurement *m, const struct nw_html_opts *o);

/* nw_html_write() into the file at @path (created or replaced).  0 or -errno. */
int nw_html_export(const char *path, const struct nw_measurement *m,
		   const struct nw_html_opts *o);

#endif
