/* SPDX-License-Identifier: MIT */
/* narwhal-report --callers RE (--peek): who calls a function, and through which paths. */
#ifndef NW_CALLERS_H
#define NW_CALLERS_H

#include <regex.h>
#include <stdio.h>

#include "report/views.h"

/*
 * For each function of @s whose whole name matches @re (heaviest total
 * first): its self and total share, the tree of its callers up to the
 * roots (each with its share of everything and of the function), heaviest
 * first, down to o->percent_limit, and its direct callees.  A recursive
 * function counts once per path.  0, -ENOENT when no function with
 * weight in the tree's metric matches (nothing written), -EINVAL for a
 * metric the tree lacks, -ENOMEM, -EIO.
 */
int nw_view_callers(FILE *out, const struct nw_stacks *s, const regex_t *re,
		    const struct nw_view_opts *o);

#endif
