/* SPDX-License-Identifier: MIT */
/*
 * execbig: touches 400 MiB, then execs /bin/true, so that execve spends
 * tens of milliseconds unmapping the old program after the new one's maps
 * are in place (begin_new_exec -> exit_mmap).  Samples taken there have
 * the old program's registers and the new program's maps: stack health
 * names them "in execve", not as stops (issue 24).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	size_t size = 400u << 20;
	char *p = malloc(size);

	if (!p)
		return 1;
	memset(p, 1, size);
	execl("/bin/true", "true", (char *)NULL);
	perror("execbig: /bin/true");
	return 1;
}
