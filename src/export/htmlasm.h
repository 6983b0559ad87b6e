/* SPDX-License-Identifier: MIT */
/*
 * The HTML report's Disassembly panel (doc/DISASSEMBLY.md, doc/EXPORTS.md):
 * the annotated disassembly (report/disasm.h) of the functions with the
 * most samples, heaviest first, while their instructions fit in a cap, as
 * the "disasm" member of the page's JSON.  Per function: its name and
 * module (strings of the page), its self and total weight; per part (one
 * code record): its start (hex), size, bytes stored, machine, status, and
 * column arrays of its instructions (offset, text, self, total, file,
 * line, innermost inlined function, marks: 1 a jump lands here, 2 a
 * sampled PC inside it), and the rows no instruction holds.
 */
#ifndef NW_HTMLASM_H
#define NW_HTMLASM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/measurement.h"
#include "report/stacks.h"

/* JSON text of instructions embedded at most (about 30 bytes each). */
#define NW_HTML_DISASM_CAP (1u << 20)

/* The page's string table: the number of string @s (which must live until it is written). */
typedef int64_t (*nw_html_str_fn)(void *ctx, const char *s);

/*
 * Writes ',"disasm":[...],"disasmLeft":N' to @out for the threads @f
 * selects, weighed by @metric, at most @cap bytes of instructions (0:
 * NW_HTML_DISASM_CAP); nothing when @m holds no code.  "disasmLeft" counts
 * the functions with code left out for the cap.  0, -ENOMEM.
 */
int nw_html_write_disasm(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
			 unsigned metric, size_t cap, nw_html_str_fn str, void *ctx);

#endif
