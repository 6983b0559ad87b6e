/* SPDX-License-Identifier: MIT */
/* Reading a whole (small) file into memory. */
#ifndef NW_FILE_H
#define NW_FILE_H

#include <stddef.h>

/*
 * Reads the whole file at @path into *@ret (malloc'd, NUL-terminated after
 * its *@ret_len bytes; the caller's).  -errno.
 */
int nw_read_file(const char *path, char **ret, size_t *ret_len);

#endif
