/* SPDX-License-Identifier: MIT */
/* A plug-in that dlopener loads at run time: plug_work burns 0.3 s of CPU. */
#include "spin.h"

int plug_work(void);

__attribute__((noinline)) int plug_work(void)
{
	NW_SPIN(0.3);
	return 42;
}
