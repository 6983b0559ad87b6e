/* SPDX-License-Identifier: MIT */
/*
 * For the fuzz targets whose readers take a path (manifest.json,
 * symbols.json): an in-memory file (memfd) named /proc/self/fd/N, so that
 * each input reaches the reader unchanged and nothing touches the disk.
 * Header-only, for the fuzz targets alone.
 */
#ifndef NW_FUZZ_MEMFILE_H
#define NW_FUZZ_MEMFILE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct memfile {
	int fd;
	char path[32];
};

/* Opens @mf, empty; aborts when memfd_create() fails (nothing to fuzz then). */
static inline void memfile_open(struct memfile *mf)
{
	mf->fd = memfd_create("nw-fuzz", MFD_CLOEXEC);
	if (mf->fd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(mf->path, sizeof(mf->path), "/proc/self/fd/%d", mf->fd);
}

/* Replaces the contents of @mf with @size bytes at @data. */
static inline void memfile_set(struct memfile *mf, const void *data, size_t size)
{
	const char *p = data;

	if (ftruncate(mf->fd, 0) != 0)
		abort();
	for (size_t off = 0; off < size;) {
		ssize_t n = pwrite(mf->fd, p + off, size - off, (off_t)off);

		if (n <= 0)
			abort();
		off += (size_t)n;
	}
}

/* The contents of @mf, NUL-terminated, in a buffer the caller frees; *len bytes. */
static inline char *memfile_get(const struct memfile *mf, size_t *len)
{
	off_t size = lseek(mf->fd, 0, SEEK_END);
	char *buf;

	if (size < 0)
		abort();
	buf = malloc((size_t)size + 1);
	if (!buf)
		abort();
	for (size_t off = 0; off < (size_t)size;) {
		ssize_t n = pread(mf->fd, buf + off, (size_t)size - off, (off_t)off);

		if (n <= 0)
			abort();
		off += (size_t)n;
	}
	buf[size] = '\0';
	*len = (size_t)size;
	return buf;
}

#endif
