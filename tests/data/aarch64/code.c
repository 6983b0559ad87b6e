/* SPDX-License-Identifier: MIT */
/*
 * aarch64 code for tests/integration/disasm.sh: compiled by make.sh with
 * Debian's cross compiler (gcc-aarch64-linux-gnu) into code.elf, whose
 * bytes the test decodes from a measurement's code store and compares
 * with code.objdump (aarch64-linux-gnu-objdump -d).  Both are committed,
 * so the test needs neither tool.
 */
#include <stdint.h>

uint64_t aarch64_step(uint64_t x);

/* A loop around a dependent division, a call, and a conditional branch. */
uint64_t aarch64_div_chain(uint64_t x, uint64_t d, long n)
{
	for (long i = 0; i < n; i++) {
		x = x / d + 0x9e3779b97f4a7c15ull;
		if (x & 1)
			x = aarch64_step(x);
	}
	return x;
}
