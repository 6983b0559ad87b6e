/* SPDX-License-Identifier: MIT */
#include "arch/arch.h"

#include <elf.h>

const struct nw_arch_ops *nw_arch_by_machine(uint16_t elf_machine)
{
	if (elf_machine == nw_arch_x86_64.elf_machine)
		return &nw_arch_x86_64;
	if (elf_machine == nw_arch_aarch64.elf_machine)
		return &nw_arch_aarch64;
	return NULL;
}

const struct nw_arch_ops *nw_arch_host(void)
{
#if defined(__x86_64__)
	return &nw_arch_x86_64;
#elif defined(__aarch64__)
	return &nw_arch_aarch64;
#else
	return NULL;
#endif
}

int nw_arch_reg_index(uint64_t mask, int perf_reg)
{
	if (perf_reg < 0 || perf_reg >= 64 || !(mask & (1ULL << perf_reg)))
		return -1;
	return __builtin_popcountll(mask & ((1ULL << perf_reg) - 1));
}
