/* SPDX-License-Identifier: MIT */
/*
 * divchain [SECONDS]: burns SECONDS (default 1) of CPU in div_chain, a
 * loop around a chain of dependent 64-bit divisions: each waits for the
 * one before, tens of cycles apiece, between a few one-cycle instructions.
 * Nearly all the time is spent in the division, so a sampler that reports
 * the instruction it interrupted shows it, or (a timer's interrupt is
 * taken once the division retires) the instruction right after it:
 * narwhal-report --disasm div_chain and perf annotate div_chain are
 * compared on it (doc/DISASSEMBLY.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spin.h"

/* Divides @n times, each quotient the next dividend; @d is unknown to the compiler. */
__attribute__((noinline)) static uint64_t div_chain(uint64_t x, uint64_t d, long n)
{
	for (long i = 0; i < n; i++)
		x = x / d + 0x9e3779b97f4a7c15ull;
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double end = nw_thread_cpu_seconds() + seconds;
	volatile uint64_t d = 3;
	uint64_t x = 1;

	while (nw_thread_cpu_seconds() < end)
		x = div_chain(x, d, 200000);
	printf("divchain %llu\n", (unsigned long long)(x & 1));
	return 0;
}
