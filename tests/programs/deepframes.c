/* SPDX-License-Identifier: MIT */
/*
 * Deep recursion through large frames without frame pointers (-g bpf,
 * issue 26): main -> deep(300) -> deep(299) -> ... -> deep(0), each frame
 * holding 512 bytes of locals, burns 0.5 s at the bottom.  The 300 deep
 * frames take about 160 KiB of stack: no stack copy holds them, so only an
 * unwinder that reads the stack where it is finds main.  "deepframes N"
 * recurses N levels instead.
 */
#include <stdlib.h>
#include <string.h>

#include "spin.h"

static volatile unsigned sink;

__attribute__((noinline)) static unsigned deep(int depth)
{
	volatile unsigned char pad[512];
	unsigned r;

	memset((void *)pad, depth, sizeof(pad));
	if (depth == 0) {
		NW_SPIN(0.5);
		return pad[7];
	}
	r = deep(depth - 1);
	sink = r + pad[depth % 512];
	return r * 3 + (unsigned)depth;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 300;

	sink = deep(depth < 0 ? 0 : depth);
	return 0;
}
