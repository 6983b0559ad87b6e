/* SPDX-License-Identifier: MIT */
/* x86-64: perf register numbers from asm/perf_regs.h, DWARF numbers from the psABI. */
#include "arch/arch.h"

#include <elf.h>

enum {
	X86_AX, X86_BX, X86_CX, X86_DX, X86_SI, X86_DI, X86_BP, X86_SP, X86_IP,
	X86_FLAGS, X86_CS, X86_SS, X86_DS, X86_ES, X86_FS, X86_GS,
	X86_R8, X86_R9, X86_R10, X86_R11, X86_R12, X86_R13, X86_R14, X86_R15,
};

static int x86_64_perf_to_dwarf(int r)
{
	/* DWARF: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, rip 16 */
	switch (r) {
	case X86_AX: return 0;
	case X86_DX: return 1;
	case X86_CX: return 2;
	case X86_BX: return 3;
	case X86_SI: return 4;
	case X86_DI: return 5;
	case X86_BP: return 6;
	case X86_SP: return 7;
	case X86_IP: return 16;
	default:
		if (r >= X86_R8 && r <= X86_R15)
			return 8 + (r - X86_R8);
		return -1;
	}
}

#define B(r) (1ULL << (r))

const struct nw_arch_ops nw_arch_x86_64 = {
	.name = "x86_64",
	.elf_machine = EM_X86_64,
	.regs_mask_fp = B(X86_IP) | B(X86_SP) | B(X86_BP),
	.regs_mask_dwarf = B(X86_AX) | B(X86_BX) | B(X86_CX) | B(X86_DX) | B(X86_SI) |
			   B(X86_DI) | B(X86_BP) | B(X86_SP) | B(X86_IP) | B(X86_R8) |
			   B(X86_R9) | B(X86_R10) | B(X86_R11) | B(X86_R12) | B(X86_R13) |
			   B(X86_R14) | B(X86_R15),
	.dwarf_nregs = 17, /* rax..r15, rip as the return address column */
	.dwarf_sp = 7,
	.dwarf_ra = 16,
	.dwarf_fp = 6,
	.perf_ip = X86_IP,
	.perf_sp = X86_SP,
	.perf_fp = X86_BP,
	.perf_args = { X86_DI, X86_SI, X86_DX, X86_CX },
	.perf_ret = X86_AX,
	.ret_sp_adjust = 8,
	.perf_to_dwarf = x86_64_perf_to_dwarf,
};
