/* SPDX-License-Identifier: MIT */
/*
 * Code without unwind tables (-g bpf, issue 26): built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables and frame pointers,
 * so this executable has no .eh_frame for its functions; main -> outer ->
 * middle -> inner burns 0.5 s in inner.  The in-kernel unwinder walks
 * these frames by frame pointers and counts them.
 */
#include "spin.h"

static volatile unsigned sink;

__attribute__((noinline)) static void inner(void)
{
	NW_SPIN(0.5);
	sink++;
}

__attribute__((noinline)) static void middle(void)
{
	inner();
	sink++;
}

__attribute__((noinline)) static void outer(void)
{
	middle();
	sink++;
}

int main(void)
{
	outer();
	return 0;
}
