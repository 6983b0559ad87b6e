/* SPDX-License-Identifier: MIT */
/*
 * Reading a whole (small) file into memory; writing all of a buffer, or a
 * file whole or not at all; writing a large one behind the caller, gzipped
 * or not.
 */
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
 * nw_read_file() of the open @fd, from where it stands to its end (@fd
 * stays open).  @hint: the size expected (0: unknown), for which room is
 * made at once, so a file of that size is read without a copy.
 */
int nw_read_fd(int fd, size_t hint, char **ret, size_t *ret_len);

/*
 * Writes the @len bytes at @buf to @fd, again where a signal or a short
 * write left some.  -errno (-EIO where write() wrote nothing).
 */
int nw_write_all(int fd, const void *buf, size_t len);

/*
 * Makes file @name of directory @dir whole or not at all: @fill(@arg, fd)
 * writes it under a temporary name beside it (".NAME.XXXXXX": readers of
 * the directory that pass over dot-files never see it half written),
 * which then replaces @name by rename(); on failure the temporary file is
 * removed.  0, -errno, or what @fill returned (< 0).
 */
int nw_replace_file(const char *dir, const char *name, int (*fill)(void *arg, int fd),
		    void *arg);

/*
 * Where a stream written behind sends its bytes: to @fd, or, when @sink
 * is set, to @sink (called on the writing thread; 0 or -errno).
 */
typedef int (*nw_behind_sink_fn)(void *arg, const void *buf, size_t len);

struct nw_behind_opts {
	int fd;
	bool own_fd;            /* fclose() closes @fd */
	bool truncate;          /* @fd is emptied first, by the writing thread */
	int gzip;               /* 1..9: a gzip stream deflated at that level; 0: as written */
	nw_behind_sink_fn sink; /* instead of @fd */
	void *sink_arg;
};

/*
 * A stream whose writes a thread of its own deflates (@o->gzip) and passes
 * on, fully buffered by the megabyte: the caller formats the next
 * megabyte while the thread compresses or the kernel copies the last (an
 * export of tens of megabytes spends a third of its time in write(), a
 * pprof export a quarter in deflate).  A failed write is returned by the
 * next write or by fclose(), which waits for the last one (and ends the
 * gzip stream), with errno saying why.  Where no thread can be started the
 * caller's own writes do that work.  NULL with errno set.
 */
FILE *nw_open_behind(const struct nw_behind_opts *o);
/* nw_open_behind() of @fd as it is, closed by fclose() when @own_fd. */
FILE *nw_fdopen_behind(int fd, bool own_fd);
/*
 * nw_fdopen_behind() on @path, created or emptied: emptied by the writing
 * thread before its first write (freeing the pages of a big file written
 * before takes the kernel a while), so the old contents stay until then.
 */
FILE *nw_fopen_behind(const char *path);
/* nw_fopen_behind() of a gzip file at deflate level @level (1..9). */
FILE *nw_fopen_behind_gz(const char *path, int level);

#endif
