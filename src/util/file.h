/* SPDX-License-Identifier: MIT */
/* Reading a whole (small) file into memory; writing a large one behind the caller. */
#ifndef NW_FILE_H
#define NW_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Reads the whole file at @path into *@ret (malloc'd, NUL-terminated after
 * its *@ret_len bytes; the caller's).  -errno.
 */
int nw_read_file(const char *path, char **ret, size_t *ret_len);

/*
 * A stream whose writes a thread of its own passes to @fd, fully buffered
 * by the megabyte: the caller formats the next megabyte while the kernel
 * copies the last (an export of tens of megabytes spends a third of its
 * time in write()).  A failed write is returned by the next write or by
 * fclose(), which waits for the last one, with errno saying why.  fclose()
 * closes @fd when @own_fd.  NULL with errno set.
 */
FILE *nw_fdopen_behind(int fd, bool own_fd);
/*
 * nw_fdopen_behind() on @path, created or emptied: emptied by the writing
 * thread before its first write (freeing the pages of a big file written
 * before takes the kernel a while), so the old contents stay until then.
 */
FILE *nw_fopen_behind(const char *path);

#endif
