/* SPDX-License-Identifier: MIT */
/*
 * Flame graphs as one self-contained SVG file, drawn by Narwhal: an
 * icicle, the root on top, each frame as wide as its inclusive weight,
 * children in name order, as deep as the deepest frame at least a pixel
 * wide (the narrower ones below it are in the file, hidden until a zoom
 * widens them); names where they fit, a tooltip per frame (name, weight,
 * percent), click to zoom with a reset, a search box that highlights the
 * frames matching a regular expression, colours stable per module.  The
 * script that does the zooming and searching is inside the file.
 *
 * A differential flame graph draws the widths of one metric and colours
 * each frame by the change of its inclusive share from another metric of
 * the same tree: red grew, blue shrank, grey unchanged.
 */
#ifndef NW_FLAMEGRAPH_H
#define NW_FLAMEGRAPH_H

#include <stdio.h>

#include "report/stacks.h"

struct nw_flamegraph_opts {
	const char *title;     /* NULL: "Flame Graph" */
	const char *subtitle;  /* NULL: none */
	unsigned metric;       /* the metric widths are drawn by */
	const char *unit;      /* what the metric counts, for tooltips; NULL: "samples" */
	int base_metric;       /* >= 0: differential, colours by the change from this metric */
	unsigned width;        /* pixels; 0: 1200 */
};

/*
 * The share of the total under which a frame is too narrow to draw
 * (a tenth of a pixel): stacks built with it as nw_stacks_opts.prune_share
 * (by the metric drawn) draw the same flame graph.
 */
double nw_flamegraph_min_share(const struct nw_flamegraph_opts *o);

/*
 * Writes the flame graph of the stacks @s to @out.  0, -EINVAL when a
 * metric is not a metric of the tree or a node's frame is not in the
 * table, -ENOMEM, or -EIO when writing failed.
 */
int nw_flamegraph_write(FILE *out, const struct nw_stacks *s, const struct nw_flamegraph_opts *o);

#endif
