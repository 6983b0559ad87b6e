/* SPDX-License-Identifier: MIT */
/*
 * What the exports share: text made safe for the formats that need valid
 * UTF-8 (XML, JSON, protobuf strings), the words for a metric's unit, a
 * subtitle saying what a graph shows, and the one call narwhal-record
 * makes to write exports at the end of a run.  The formats themselves live
 * in pprof.h, speedscope.h, chrometrace.h, flamegraph.h and html.h.
 */
#ifndef NW_EXPORT_H
#define NW_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/measurement.h"
#include "report/stacks.h"

/*
 * A copy of @s in which every byte that is not part of a valid UTF-8
 * sequence, every control character and U+FFFE/U+FFFF (not allowed in XML)
 * is replaced by '?'.  NULL for NULL @s or on ENOMEM (*failed then set).
 */
char *nw_export_clean(const char *s, int *failed);

/*
 * Writes @s as a JSON string literal: made valid UTF-8 without control
 * characters (as nw_export_clean() makes it), '"' and '\\' escaped.
 * Returns 0 (errors show in ferror(@out)).
 */
int nw_export_json_str(FILE *out, const char *s);

/* What metric @d counts, for people: "samples", "switches", "ns", "bytes" or "events". */
const char *nw_export_unit(const struct nw_metric *d);
/*
 * A line saying what a graph of @s shows: the command, the metric and its
 * total ("./app - cpu-clock:samples - 991 samples").  From malloc, NULL on
 * ENOMEM.
 */
char *nw_export_subtitle(const struct nw_stacks *s, unsigned metric);

/*
 * Writes the exports of @m whose path is not NULL: @pprof_path (gzipped
 * pprof, every thread), @svg_path (flame graph of every thread merged,
 * weighed by samples) and @html_path (the HTML report, every thread,
 * opening on samples).  For narwhal-record at the end of a run, from the
 * model it has just written.  0, or -errno with a message for the user in
 * @err naming the file that failed.
 */
int nw_export_measurement(const struct nw_measurement *m, const char *pprof_path,
			  const char *svg_path, const char *html_path, char *err, size_t errlen);

#endif
