/* SPDX-License-Identifier: MIT */
/* AArch64: perf registers x0..x30 = 0..30, sp 31, pc 32; DWARF x0..x30 = 0..30, sp 31. */
#include "arch/arch.h"

#include <elf.h>

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif

enum { A64_FP = 29, A64_LR = 30, A64_SP = 31, A64_PC = 32 };

static int aarch64_perf_to_dwarf(int r)
{
	if (r >= 0 && r <= A64_SP)
		return r;
	return -1; /* the pc has no DWARF number: dwfl_thread_state_register_pc */
}

const struct nw_arch_ops nw_arch_aarch64 = {
	.name = "aarch64",
	.elf_machine = EM_AARCH64,
	.regs_mask_fp = (1ULL << A64_FP) | (1ULL << A64_LR) | (1ULL << A64_SP) | (1ULL << A64_PC),
	.regs_mask_dwarf = (1ULL << 33) - 1,
	.dwarf_nregs = 32, /* x0..x30, sp; the pc is passed apart */
	.dwarf_sp = 31,
	.dwarf_ra = 30,
	.dwarf_fp = 29,
	.perf_ip = A64_PC,
	.perf_args = { 0, 1, 2, 3 }, /* x0..x3 */
	.perf_ret = 0,               /* x0 */
	.ret_sp_adjust = 0,
	.perf_sp = A64_SP,
	.perf_fp = A64_FP,
	.perf_to_dwarf = aarch64_perf_to_dwarf,
};
