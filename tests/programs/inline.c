/* SPDX-License-Identifier: MIT */
/*
 * inline: burns 0.3 s of CPU in inline_burn, a static function forced
 * inline into the noinline inline_caller (built -O2 -g), so every sample
 * of the burn is an inline chain inline_burn <- inline_caller <- main.
 */
#include "spin.h"

static inline __attribute__((always_inline)) void inline_burn(double seconds)
{
	NW_SPIN(seconds);
}

__attribute__((noinline, noclone)) static void inline_caller(double seconds)
{
	inline_burn(seconds);
	/* Not a tail position: main's frame stays on the stack. */
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	inline_caller(0.3);
	return 0;
}
