/* SPDX-License-Identifier: MIT */
/* Compiling a CFI row into fast-unwinder rules; see cfirule.h. */
#include "unwind/cfirule.h"

#include <stdbool.h>
#include <stddef.h>

#include <string.h>

#include <dwarf.h>
#include <elf.h>
#include <gelf.h>

/* The CFA rule: a single DW_OP_bregx (or DW_OP_bregN) on SP or FP. */
static bool compile_cfa(const struct nw_arch_ops *arch, const Dwarf_Op *ops, size_t nops,
			struct nw_cfi_rule *r)
{
	int reg;

	if (nops != 1)
		return false;
	if (ops[0].atom == DW_OP_bregx)
		reg = (int)ops[0].number;
	else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31)
		reg = ops[0].atom - DW_OP_breg0;
	else
		return false;
	if (reg != arch->dwarf_sp && reg != arch->dwarf_fp)
		return false;
	r->cfa_from_fp = reg == arch->dwarf_fp;
	r->cfa_off = (int32_t)(ops[0].atom == DW_OP_bregx ? ops[0].number2 : ops[0].number);
	return true;
}

/*
 * The CFA expression GNU ld writes for x86-64 PLT entries: rsp + 8, + 8
 * more once the entry has pushed its relocation index, i.e. when the PC's
 * offset in its 16-byte entry is at least the literal compared with:
 *   breg7 8; breg16 0; lit15; and; lit<N>; ge; lit3; shl; plus
 * N is 11 for the classic PLT; other N (binutils' other PLT layouts) are
 * returned as they are, for the caller to judge.
 */
static bool compile_plt(const struct nw_arch_ops *arch, const Dwarf_Op *ops, size_t nops,
			struct nw_cfi_rule *r)
{
	if (arch->elf_machine != EM_X86_64 || nops != 9)
		return false;
	if (ops[0].atom != DW_OP_breg7 || ops[0].number != 8 || ops[1].atom != DW_OP_breg16 ||
	    ops[1].number != 0 || ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and ||
	    ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 || ops[5].atom != DW_OP_ge ||
	    ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
		return false;
	r->cfa_from_fp = 0;
	r->cfa_off = 8;
	r->plt_min = (uint8_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

/* A register rule: undefined, same value, or saved at CFA + constant. */
static bool compile_reg(Dwarf_Frame *frame, int regno, uint8_t *kind, int32_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	if (dwarf_frame_register(frame, regno, mem, &ops, &nops) != 0)
		return false;
	if (nops == 0) {
		*kind = ops ? NW_CFI_REG_UNDEFINED : NW_CFI_REG_SAME;
		*off = 0;
		return true;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*kind = NW_CFI_REG_AT_CFA;
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*kind = NW_CFI_REG_AT_CFA;
		*off = (int32_t)ops[1].number;
		return true;
	}
	if (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
		*kind = NW_CFI_REG_AT_CFA;
		*off = (int32_t)(int64_t)ops[1].number;
		return true;
	}
	return false;
}

void nw_cfi_rule_compile(const struct nw_arch_ops *arch, Dwarf_Frame *frame,
			 struct nw_cfi_rule *r)
{
	Dwarf_Op *ops;
	size_t nops;
	bool signal = false;
	uint8_t kind;

	r->kind = NW_CFI_RULE_COMPLEX;
	r->plt_min = 0;
	if (dwarf_frame_info(frame, NULL, NULL, &signal) != arch->dwarf_ra || signal ||
	    dwarf_frame_cfa(frame, &ops, &nops) != 0)
		return;
	if (compile_cfa(arch, ops, nops, r))
		kind = NW_CFI_RULE_OK;
	else if (compile_plt(arch, ops, nops, r))
		kind = NW_CFI_RULE_PLT;
	else
		return;
	if (compile_reg(frame, arch->dwarf_ra, &r->ra, &r->ra_off) &&
	    compile_reg(frame, arch->dwarf_fp, &r->fp, &r->fp_off))
		r->kind = kind;
}

Elf_Scn *nw_cfi_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && sh.sh_size &&
		    (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND) &&
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(n, name))
			return scn;
	}
	return NULL;
}
