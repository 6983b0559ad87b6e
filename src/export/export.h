/* SPDX-License-Identifier: MIT */
/*
 * What the exports share: the per-thread tree (each thread a root frame,
 * as perf script | stackcollapse does it), text made safe for the formats
 * that need valid UTF-8 (XML, JSON, protobuf strings), and the one call
 * narwhal-record makes to write exports at the end of a run.  The formats
 * themselves live in pprof.h, speedscope.h, flamegraph.h and diff.h.
 */
#ifndef NW_EXPORT_H
#define NW_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "report/profile.h"

/* The module of the thread frames that nw_export_thread_tree() adds. */
#define NW_EXPORT_THREAD_MODULE "[thread]"

/*
 * One tree holding the threads @f selects (all when NULL), each below a
 * root frame named "comm-tid" (spaces and ';' in the name become '_'),
 * interned in @p with module NW_EXPORT_THREAD_MODULE.  Metrics as in the
 * thread trees.  NULL on ENOMEM.
 */
struct nw_cct *nw_export_thread_tree(struct nw_profile *p, const struct nw_filter *f);

/*
 * A copy of @s in which every byte that is not part of a valid UTF-8
 * sequence, every control character and U+FFFE/U+FFFF (not allowed in XML)
 * is replaced by '?'.  NULL for NULL @s or on ENOMEM (*failed then set).
 */
char *nw_export_clean(const char *s, int *failed);

/* The event part of metric name "event:kind" (up to the last ':'), into @buf. */
const char *nw_export_event_of(const char *metric, char *buf, size_t len);
/* True for metrics in nanoseconds: the period of cpu-clock and task-clock. */
int nw_export_metric_is_ns(const char *metric);
/* What metric @metric counts, for people: "samples", "ns" or "events". */
const char *nw_export_unit(const char *metric);
/*
 * A line saying what a graph of @tree shows: the command, the metric and
 * its total ("./app - cpu-clock:samples - 991 samples").  From malloc, NULL
 * on ENOMEM.
 */
char *nw_export_subtitle(const struct nw_profile *p, const struct nw_cct *tree, unsigned metric);

/*
 * Loads the measurement in @dir and writes the exports whose path is not
 * NULL: @pprof_path (gzipped pprof, every thread) and @svg_path (flame
 * graph of every thread merged, weighed by samples).  For narwhal-record
 * at the end of a run.  0, or -errno with a message for the user in @err
 * naming the file that failed.
 */
int nw_export_measurement(const char *dir, const char *pprof_path, const char *svg_path,
			  char *err, size_t errlen);

#endif
