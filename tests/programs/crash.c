/* SPDX-License-Identifier: MIT */
/* Burns 0.3 s in crash_work, then dies of SIGSEGV (a store through NULL). */
#include <stddef.h>

#include "spin.h"

/* volatile: the compiler cannot see the NULL and turn the store into a trap. */
static int *volatile nowhere = NULL;

__attribute__((noinline)) static void crash_work(void)
{
	NW_SPIN(0.3);
}

int main(void)
{
	crash_work();
	*nowhere = 1;
	return 0;
}
