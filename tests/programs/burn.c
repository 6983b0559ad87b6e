/* SPDX-License-Identifier: MIT */
/* burn alpha|beta: burns 0.3 s of CPU in burn_alpha or burn_beta. */
#include <stdio.h>
#include <string.h>

#include "spin.h"

__attribute__((noinline)) static void burn_alpha(void)
{
	NW_SPIN(0.3);
}

__attribute__((noinline)) static void burn_beta(void)
{
	NW_SPIN(0.3);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "alpha"))
		burn_alpha();
	else if (argc == 2 && !strcmp(argv[1], "beta"))
		burn_beta();
	else {
		fprintf(stderr, "usage: burn alpha|beta\n");
		return 2;
	}
	return 0;
}
