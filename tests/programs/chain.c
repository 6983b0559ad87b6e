/* SPDX-License-Identifier: MIT */
/*
 * Known call chains: main -> chain_outer -> chain_middle -> chain_inner
 * burns 0.3 s, then main -> recurse(3) -> recurse(2) -> recurse(1) ->
 * recurse(0) burns 0.3 s at the deepest level.  Every call's result is
 * used afterwards, so no call becomes a tail call.
 */
#include "spin.h"

__attribute__((noinline)) static int chain_inner(int x)
{
	NW_SPIN(0.3);
	return x + 1;
}

__attribute__((noinline)) static int chain_middle(int x)
{
	return chain_inner(x) * 2;
}

__attribute__((noinline)) static int chain_outer(int x)
{
	return chain_middle(x) + 3;
}

__attribute__((noinline)) static int recurse(int depth)
{
	if (depth == 0) {
		NW_SPIN(0.3);
		return 1;
	}
	return recurse(depth - 1) * 2 + depth;
}

int main(void)
{
	int r = chain_outer(1) + recurse(3);

	return r == 7 + 19 ? 0 : 1;
}
