/* SPDX-License-Identifier: MIT */
/*
 * Annotated disassembly of the functions matching a pattern
 * (narwhal-report --disasm RE, the HTML report's Disassembly panel;
 * doc/DISASSEMBLY.md), from the measurement alone: the code store's bytes
 * (model/codestore.h) decoded by the arch layer, every instruction with
 * its share of the samples, built on the per-address rows of --addresses
 * (report/lines.h) so both count alike:
 *
 *  - self: samples whose PC was the instruction (an instruction's own rows
 *    add up to the function's self, the code inlined into it included);
 *  - total: samples with the instruction on the stack, as the PC or as the
 *    call a return address points after;
 *  - the address as --addresses prints it (module+0xELF address), the
 *    instruction (AT&T on x86-64), direct jump and call targets by name
 *    (the code store's functions named by the symbol table) or, inside
 *    the function, by arrow, the source line of each instruction and the
 *    innermost function inlined there.
 *
 * nw_annotate() finds the functions and their weights; each part (the
 * rows of one code record) is decoded on demand (nw_annotate_decode()), so
 * a caller that shows a few functions decodes only those.
 */
#ifndef NW_DISASM_VIEW_H
#define NW_DISASM_VIEW_H

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>

#include "arch/disasm.h"
#include "model/measurement.h"
#include "report/lines.h"
#include "report/stacks.h"

/* One instruction of an annotated function. */
struct nw_asm_insn {
	struct nw_insn in;         /* decoded (arch/disasm.h) */
	uint64_t self, total;
	bool landing;              /* a jump inside the function lands here */
	bool odd;                  /* holds a sampled PC that is not its first byte */
	/* A direct branch's target: inside the function (by arrow), or named where stored. */
	bool target_inside;
	const char *target_name;   /* the function holding the target; NULL: not known */
	uint64_t target_off;       /* the target's offset in that function */
	int32_t inl;               /* innermost inlined range here (code->inlines); -1: none */
	const char *file;          /* its source line (the code store's); NULL, 0: unknown */
	uint32_t line;
};

/* The samples of one function in one code record, or in none. */
struct nw_asm_part {
	const struct nw_code_func *code;  /* NULL: no code record holds them */
	uint32_t module;
	const struct nw_addr_weight *rows; /* by address */
	size_t nrows;
	uint64_t self;
	bool decoded;
	bool no_decoder;           /* stored bytes of a machine without a decoder */
	struct nw_asm_insn *insns; /* nw_annotate_decode(): every stored instruction */
	size_t ninsns;
};

struct nw_asm_func {
	const char *name;          /* the symbol table's */
	const char *decl_file;     /* where it is declared, NULL: unknown */
	uint32_t decl_line;
	uint32_t module;
	uint64_t self, total;
	struct nw_asm_part *parts;
	size_t nparts;
};

/* A function matched only where it was inlined into @into. */
struct nw_asm_inlined {
	const char *func, *into;
};

struct nw_annotation {
	const struct nw_measurement *m;
	uint64_t whole;            /* everything the selected threads weigh */
	struct nw_asm_func *funcs; /* the heaviest first (self, then total) */
	size_t nfuncs;
	struct nw_asm_inlined *inlined;
	size_t ninlined;
	/* private */
	struct nw_addr_weights w;
	struct nw_addr_weight *rows;
	struct nw_disasm *dec[2];
	size_t cap_funcs, cap_inlined;
};

/*
 * The functions matching @func that hold sampled code, in the threads @f
 * selects, weighed by @metric, with their parts (not decoded yet); m->code
 * must be read (format/codefile.h).  0; -ENOENT when no sampled function
 * matches; -ENODATA when the measurement holds no code at all (recorded
 * with --no-code or by an older narwhal-record); -EINVAL for a metric the
 * model lacks; -ENOMEM.  *@ret is the caller's (nw_annotation_free()).
 */
int nw_annotate(const struct nw_measurement *m, const struct nw_filter *f, const regex_t *func,
		unsigned metric, struct nw_annotation **ret);
/*
 * Decodes part @p of @a (once): its stored instructions with their
 * weights, lines, inlined ranges and targets.  Nothing for a part without
 * stored bytes.  -ENOMEM.
 */
int nw_annotate_decode(struct nw_annotation *a, struct nw_asm_part *p);
void nw_annotation_free(struct nw_annotation *a);

struct nw_disasm_opts {
	const regex_t *func;       /* the functions (whole names) to show */
	unsigned metric;
	bool sort;                 /* hottest instructions first (else by address) */
	bool source;               /* the source lines between the instructions, where readable */
	bool full_names;
};

/*
 * Writes the disassembly of each matching function with samples (the
 * heaviest first), as nw_annotate() finds them; functions matched only
 * where they were inlined are named with the functions that hold their
 * code.  Errors as nw_annotate()'s, and -EIO.
 */
int nw_view_disasm(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
		   const struct nw_disasm_opts *o);

#endif
