/* SPDX-License-Identifier: MIT */
/* Burns CPU in forever_loop until a signal kills it. */
#include "spin.h"

__attribute__((noreturn, noinline)) static void forever_loop(void)
{
	for (;;)
		NW_SPIN(1.0);
}

int main(void)
{
	forever_loop();
}
