/* SPDX-License-Identifier: MIT */
/*
 * box SECONDS [FLAG]: burns SECONDS of CPU in one function whose name is
 * chosen at build time (BOX_WORK), so that two builds of this file are two
 * programs with other symbols at the same path: box-inside, static, runs
 * in a chroot (tests/integration/container.sh); box-host stands at the same
 * path on the host.  With FLAG, first waits until the file FLAG is gone
 * (the test deletes the binary meanwhile).
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "spin.h"

#ifndef BOX_WORK
#define BOX_WORK box_work
#endif

__attribute__((noinline)) static void BOX_WORK(double seconds)
{
	NW_SPIN(seconds);
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	if (argc < 2)
		return 2;
	for (int i = 0; argc > 2 && access(argv[2], F_OK) == 0 && i < 1000; i++)
		nanosleep(&tick, NULL);
	BOX_WORK(atof(argv[1]));
	return 0;
}
