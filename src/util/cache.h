/* SPDX-License-Identifier: MIT */
/*
 * A directory of files that only make a run cheaper: kernel symbols per
 * kernel build, symbolization results per module build-id.  A cache never
 * changes what a run records: each file's name carries everything its
 * contents depend on, and a file that is missing, unreadable or corrupt is
 * simply not used.
 *
 * Where: $NARWHAL_CACHE_DIR, else $XDG_CACHE_HOME/narwhal, else
 * $HOME/.cache/narwhal (made 0700).  Files are written whole under a
 * temporary name and renamed into place, so concurrent runs never see
 * half a file (the last writer wins).  Past NW_CACHE_MAX_BYTES in all,
 * the files least recently used go.
 */
#ifndef NW_CACHE_H
#define NW_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NW_CACHE_MAX_BYTES ((uint64_t)256 << 20)

struct nw_cache {
	char dir[PATH_MAX];     /* empty: no cache (off, or no directory could be made) */
	uint64_t max_bytes;
};

/*
 * Sets @c up in the directory above (@dir: another one), creating it; an
 * empty c->dir when @off or when it cannot be made (a run without a cache
 * is only slower).  0 or -errno for why there is none.
 */
int nw_cache_open(struct nw_cache *c, const char *dir, bool off);

static inline bool nw_cache_on(const struct nw_cache *c)
{
	return c && c->dir[0];
}

/*
 * Reads file @name of the cache into *@ret (malloc'd, NUL after its
 * *@ret_len bytes) and marks it used.  -ENOENT when there is none, -errno.
 */
int nw_cache_read(const struct nw_cache *c, const char *name, char **ret, size_t *ret_len);

/*
 * Maps file @name of the cache read-only into *@ret (*@ret_len bytes, at
 * least one; munmap() it) and marks it used.  -ENOENT when there is none,
 * -errno.
 */
int nw_cache_map(const struct nw_cache *c, const char *name, void **ret, size_t *ret_len);

/* Whether file @name is in the cache. */
bool nw_cache_has(const struct nw_cache *c, const char *name);

/*
 * Writes @len bytes as file @name, atomically.  -errno (the cache is then
 * as it was).  The writer calls nw_cache_prune() once it wrote what it had.
 */
int nw_cache_write(const struct nw_cache *c, const char *name, const void *buf, size_t len);

/*
 * Removes the least recently used files while the cache holds more than
 * c->max_bytes (down to 3/4 of it): once after a run's writes, since it
 * reads the whole directory.
 */
void nw_cache_prune(const struct nw_cache *c);

#endif
