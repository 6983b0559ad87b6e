/* SPDX-License-Identifier: MIT */
/*
 * Where inside a function the weight is (narwhal-report --lines FUNC,
 * --addresses FUNC; perf annotate's and pprof list's question), from the
 * model's physical trees and the symbol table, which keeps the file and
 * line of every frame of every sampled address: no binary is opened.
 *
 * Per source line of each function whose name matches: self (samples
 * whose innermost frame is the function, at that line) and total (samples
 * with the function anywhere on the stack, at the line it was at then;
 * a line counted once per sample).  Code inlined into the function counts
 * at the line of the function where it was inlined (the call site), and
 * separately at the inlined callee's own lines.  With --addresses, the
 * same per sampled instruction (module offset; a caller's row is its
 * return address, the instruction after the call, with the call's line).
 */
#ifndef NW_LINES_H
#define NW_LINES_H

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>

#include "model/measurement.h"
#include "report/stacks.h"

struct nw_lines_opts {
	const regex_t *func;       /* the functions (whole names) to show */
	unsigned metric;
	bool sort;                 /* hottest first (else by line / address) */
	bool addresses;            /* per instruction address, not per line */
	bool full_names;
	unsigned context;          /* source lines shown around sampled ones (0: 2) */
};

/*
 * Writes the table of each matching function, with the source text beside
 * the lines where the file is readable here.  0, -ENOENT when no sampled
 * function matches (none with weight in o->metric in the threads @f
 * selects; nothing written), -EINVAL for a metric the model lacks,
 * -ENOMEM, -EIO.
 */
int nw_view_lines(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
		  const struct nw_lines_opts *o);

/*
 * One sampled instruction of a function asked about: a row of --addresses;
 * or one of its source lines: a row of --lines (nw_lines_weights()).
 */
struct nw_addr_weight {
	const char *func;       /* the function (the symbol table's string) */
	uint32_t module;
	uint64_t addr;          /* the ELF address looked up: a return address - 1 where ret */
	bool ret;               /* reached as a return address (a call site), not as a PC */
	uint64_t self, total;   /* as --addresses (--lines) counts them */
	/* --lines: the line, of the function or of a callee inlined into it there */
	const char *callee;     /* NULL: the function's own line */
	const char *file;       /* NULL when unknown */
	uint32_t line;
};

/* A function asked about: its weight once per sample (--addresses' header line). */
struct nw_fn_weight {
	const char *name;
	uint64_t self, total;
};

struct nw_addr_weights {
	struct nw_addr_weight *v;
	size_t n;
	struct nw_fn_weight *fns;
	size_t nfns;
	uint64_t whole;         /* everything the selected threads weigh */
};

/*
 * The rows --addresses prints, for views built on them (--disasm,
 * report/disasm.h): each sampled (function, address) of the functions
 * matching @func in the threads @f selects, weighed by @metric.  Strings
 * are the model's.  -EINVAL for a metric the model lacks, -ENOMEM.
 */
int nw_lines_addresses(const struct nw_measurement *m, const struct nw_filter *f,
		       const regex_t *func, unsigned metric, struct nw_addr_weights *ret);
/* The same per source line, the rows --lines prints (no address, module 0). */
int nw_lines_weights(const struct nw_measurement *m, const struct nw_filter *f,
		     const regex_t *func, unsigned metric, struct nw_addr_weights *ret);
void nw_addr_weights_fini(struct nw_addr_weights *w);

/* The lines of a source file, read whole (what --lines shows beside its rows). */
struct nw_source {
	char *text;
	char **line;            /* line[1..n] */
	uint32_t n;
};

/* Reads @path (at most 64 MiB); false when it cannot be read (@s then empty). */
bool nw_source_read(struct nw_source *s, const char *path);
void nw_source_fini(struct nw_source *s);

#endif
