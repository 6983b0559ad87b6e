/* SPDX-License-Identifier: MIT */
/*
 * One CFI row (libdw's Dwarf_Frame) compiled into the few rules a fast
 * unwinder follows: CFA = SP or FP + offset (or the x86-64 PLT expression);
 * return address and FP undefined, unchanged or saved at CFA + offset.
 * Internal to src/unwind: the per-PC rule cache of dwarf.c and the table
 * compiler of cfitable.c both compile through it, so they cannot disagree
 * on what a row means.
 */
#ifndef NW_UNWIND_CFIRULE_H
#define NW_UNWIND_CFIRULE_H

#include <stdint.h>

#include <elfutils/libdw.h>

#include "arch/arch.h"

enum nw_cfi_rule_kind {
	NW_CFI_RULE_NONE,      /* no CFI covers the PC (0: what a zeroed rule says) */
	NW_CFI_RULE_COMPLEX,   /* CFI the rule cannot express */
	NW_CFI_RULE_OK,
	NW_CFI_RULE_PLT,       /* the PLT's CFA expression; plt_min says where it adds 8 */
};

enum nw_cfi_reg {
	NW_CFI_REG_UNDEFINED,  /* caller's value unknown (for the RA: outermost frame) */
	NW_CFI_REG_SAME,       /* unchanged in this frame */
	NW_CFI_REG_AT_CFA,     /* saved at CFA + off */
};

struct nw_cfi_rule {
	uint8_t kind;          /* enum nw_cfi_rule_kind */
	uint8_t cfa_from_fp;
	uint8_t ra, fp;        /* enum nw_cfi_reg */
	uint8_t plt_min;       /* PLT: CFA = SP + 8, + 8 when (pc & 15) >= plt_min */
	int32_t cfa_off, ra_off, fp_off;
};

/*
 * Compiles @frame into *@r: NW_CFI_RULE_OK or _PLT when the CFA, the
 * return address (@arch's column) and FP have rules of the forms above and
 * the row is no signal frame, else NW_CFI_RULE_COMPLEX.  Never fails.
 */
void nw_cfi_rule_compile(const struct nw_arch_ops *arch, Dwarf_Frame *frame,
			 struct nw_cfi_rule *r);

/*
 * The section @name of @elf with contents (.eh_frame, .debug_frame), or
 * NULL.  lld types x86-64 .eh_frame SHT_X86_64_UNWIND (libLLVM's), not
 * SHT_PROGBITS.
 */
Elf_Scn *nw_cfi_section(Elf *elf, const char *name);

#endif
