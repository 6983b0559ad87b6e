/* SPDX-License-Identifier: MIT */
/*
 * The HTML report's differential numbers: the flat diff of the base and
 * the measurement (report/diff.h), every function with the change of its
 * self share, its standard error and z-score, as the "diff" member of the
 * page's JSON: {"noise": how noise is told, "z": the threshold, "rows":
 * [[name, delta, se, z, beyond (0 or 1), base self %, new self %, base
 * cumulative %, new cumulative %], ...], "contexts": [[parent (an index
 * of this list, -1 for none), name, delta, z, beyond], ...]} the rows in
 * the text diff's order, the joined tree's calling contexts in preorder
 * (those a flame graph can draw: over NW_HTML_DIFF_MIN_SHARE percent in a
 * run).  The page shows them in its Flat table and flame graph, and greys
 * out the changes within noise.
 */
#ifndef NW_HTMLDIFF_H
#define NW_HTMLDIFF_H

#include <stdio.h>

#include "report/diff.h"

#define NW_HTML_DIFF_MIN_SHARE 0.02

/* Writes ',"diff":{...}' for @d to @out.  0, -ENOMEM, -EIO. */
int nw_html_write_diff(FILE *out, const struct nw_diff *d);

#endif
