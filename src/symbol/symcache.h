/* SPDX-License-Identifier: MIT */
/*
 * Symbolization results kept between runs (util/cache.h), one cache file
 * per ELF file: the frames of each address symbolized before, so that a
 * run needs no DWARF (whose sections libdw decompresses whole: 50 ms for
 * libc6-dbg's) for addresses an earlier run resolved.  The file's name
 * holds everything the results depend on: the ELF file's build-id and
 * size, and every place its separate debug info could come from (each
 * candidate's path, inode, size and time, present or not, and the
 * debuginfod settings); when any of it changes, it is another file.
 */
#ifndef NW_SYMCACHE_H
#define NW_SYMCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/symtab.h"
#include "util/cache.h"

struct nw_symcache;

/*
 * The cache of ELF file @path (read here as @source: a container's path,
 * "[vdso]"'s copy), of @size bytes, with build-id @id (@idlen bytes) and
 * .gnu_debuglink @debuglink (NULL: none), its debug info searched in
 * @debuginfo_path (libdwfl's syntax: colon-separated, "" and relative
 * entries beside the file): loaded from @cache when there.  A file
 * without a build-id (@idlen 0) is known by its device, inode, size and
 * time instead.  *ret NULL (and 0) when there is no cache, or the file
 * is not there.  -ENOMEM.
 */
int nw_symcache_open(const struct nw_cache *cache, const char *path, uint64_t size,
		     const uint8_t *id, unsigned idlen, const char *debuglink,
		     const char *debuginfo_path, struct nw_symcache **ret);

/*
 * The frames of @vaddr, as an earlier run symbolized them: 1 with a copy
 * in *ret_frames (malloc'd, *ret_n of them, possibly none: the caller's,
 * as nw_symbolize() gives them), 0 when the cache has none, -ENOMEM.
 */
int nw_symcache_get(struct nw_symcache *c, uint64_t vaddr, struct nw_symframe **ret_frames,
		    uint32_t *ret_n);

/* Keeps @n frames of @vaddr (copied).  -ENOMEM. */
int nw_symcache_put(struct nw_symcache *c, uint64_t vaddr, const struct nw_symframe *frames,
		    uint32_t n);

/*
 * A hash of every place libdwfl's standard search (libdwfl/find-debuginfo.c)
 * could take @path's separate debug info from, present or not: for each
 * absolute directory D of @debuginfo_path D/.build-id/xx/rest.debug (@hex:
 * the build-id in hex, "" without); the debuglink (without one,
 * BASENAME.debug and BASENAME) beside the file, below each relative
 * directory of the path there, and below each absolute D plus the file's
 * directory, for @path and its real path; with DEBUGINFOD_URLS, the
 * servers and debuginfod's cache.  *@ret_any (when not NULL): whether
 * any of them may hold something (a file exists, or servers are set).
 */
uint64_t nw_symcache_debug_sources(const char *path, const char *hex, const char *debuglink,
				   const char *debuginfo_path, bool *ret_any);

/* Writes the cache file when something was added, and frees @c (NULL: nothing). */
void nw_symcache_close(struct nw_symcache *c);

/*
 * For a separate debug file open as @fd whose DWARF sections are
 * compressed (Debian's -dbg packages): an fd of an uncompressed copy in
 * @cache, made now when there is none, and @fd closed; else @fd itself.
 * libdw inflates every section of a file when it opens it (50 ms for
 * libc6-dbg's), a copy never.  The copy's name holds the file's inode,
 * size and time.
 */
int nw_symcache_debug_fd(const struct nw_cache *cache, int fd);

#endif
