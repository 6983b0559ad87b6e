/* SPDX-License-Identifier: MIT */
/* Burns 0.2 s in exit_work, then exits with status 3. */
#include <stdlib.h>

#include "spin.h"

__attribute__((noinline)) static void exit_work(void)
{
	NW_SPIN(0.2);
}

int main(void)
{
	exit_work();
	exit(3);
}
