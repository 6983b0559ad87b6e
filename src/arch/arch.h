/* SPDX-License-Identifier: MIT */
/*
 * Architecture specifics behind one ops table: which user registers perf
 * must dump, where IP/SP/FP sit in that dump, and how perf register numbers
 * map to DWARF register numbers.  Every arch is compiled in; the table is
 * chosen at run time by ELF machine, so a measurement recorded on one arch
 * can be read on another.
 */
#ifndef NW_ARCH_H
#define NW_ARCH_H

#include <stdint.h>
#include <stddef.h>

#define NW_ARCH_MAX_REGS 64

struct nw_arch_ops {
	const char *name;           /* "x86_64", "aarch64" */
	uint16_t elf_machine;       /* EM_X86_64, EM_AARCH64 */
	/* PERF_SAMPLE_REGS_USER mask for frame-pointer mode (ip, sp, fp). */
	uint64_t regs_mask_fp;
	/* PERF_SAMPLE_REGS_USER mask with every register CFI may need. */
	uint64_t regs_mask_dwarf;
	/* DWARF registers 0..dwarf_nregs-1 form the initial frame for CFI. */
	unsigned dwarf_nregs;
	/* DWARF numbers of the stack pointer, the frame pointer and the
	 * return address column. */
	int dwarf_sp, dwarf_fp, dwarf_ra;
	/* perf register numbers (bit positions in the masks). */
	int perf_ip, perf_sp, perf_fp;
	/* perf register numbers of the first four integer arguments of a call
	 * (read at a uprobe on a function's entry: the allocation markers). */
	int perf_args[4];
	/* The return value's register, and what a return adds to the stack
	 * pointer of the function's entry (x86-64: the return address popped). */
	int perf_ret;
	int ret_sp_adjust;
	/* perf register number -> DWARF register number, -1 where none. */
	int (*perf_to_dwarf)(int perf_reg);
};

extern const struct nw_arch_ops nw_arch_x86_64;
extern const struct nw_arch_ops nw_arch_aarch64;

/* The ops for an ELF machine, or NULL when Narwhal does not know it. */
const struct nw_arch_ops *nw_arch_by_machine(uint16_t elf_machine);
/* The ops for the machine Narwhal runs on (never NULL on a supported host). */
const struct nw_arch_ops *nw_arch_host(void);

/*
 * Index of perf register @perf_reg inside a REGS_USER dump taken with
 * @mask (registers are dumped in ascending bit order), or -1 when the mask
 * lacks it.
 */
int nw_arch_reg_index(uint64_t mask, int perf_reg);

#endif
