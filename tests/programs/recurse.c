/* SPDX-License-Identifier: MIT */
/*
 * Recursion for --fold-recursion and --stack-health: main -> direct(20) ->
 * direct(19) -> ... -> direct(0) burns 0.3 s at the bottom (21 nested
 * direct frames), then main -> ping(20) -> pong(19) -> ping(18) -> ... ->
 * ping(0) burns 0.3 s (mutual recursion, 11 ping and 10 pong frames).
 * "recurse N" recurses N levels deep in direct instead of 20 (at least 0).
 * Every call's result is used afterwards, so no call becomes a tail call.
 */
#include <stdlib.h>

#include "spin.h"

static volatile unsigned sink;

__attribute__((noinline)) static unsigned direct(int depth)
{
	unsigned r;

	if (depth == 0) {
		NW_SPIN(0.3);
		return 1;
	}
	r = direct(depth - 1);
	sink = r;
	return r * 3 + (unsigned)depth;
}

__attribute__((noinline)) static unsigned pong(int depth);

__attribute__((noinline)) static unsigned ping(int depth)
{
	unsigned r;

	if (depth == 0) {
		NW_SPIN(0.3);
		return 1;
	}
	r = pong(depth - 1);
	sink = r;
	return r * 5 + 1;
}

__attribute__((noinline)) static unsigned pong(int depth)
{
	unsigned r;

	if (depth == 0) {
		NW_SPIN(0.3);
		return 2;
	}
	r = ping(depth - 1);
	sink = r;
	return r * 7 + 2;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 20;
	unsigned r;

	if (depth < 0)
		depth = 0;
	r = direct(depth);
	r += ping(20);
	sink = r;
	return 0;
}
