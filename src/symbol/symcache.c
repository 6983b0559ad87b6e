/* SPDX-License-Identifier: MIT */
/* Symbolization results between runs; see symcache.h. */
#include "symbol/symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

/*
 * The format, and the symbolizer's way of resolving an address: bump it
 * when symbol.c (or dwarfsyms.c, elfsyms.c, cfinames.c) would resolve any
 * address differently, so that no cache file of an earlier version is used.
 */
#define MAGIC "NWSYMC3"
#define NO_STRING UINT32_MAX

/*
 * A file: MAGIC (8 bytes), then records to its end.  A record: u64 addr,
 * u32 nframes, then per frame u32 line, u32 decl_line and three strings
 * (function, file, decl_file), each a u32 length (NO_STRING: none) and its
 * bytes.  Host byte order: the cache is this machine's.
 */

struct rec {
	uint64_t addr;
	uint32_t off; /* in data */
};

struct nw_symcache {
	const struct nw_cache *cache;
	char name[160];
	char *data;              /* the records, the file's then the new ones */
	size_t len, cap;
	size_t loaded;           /* data's bytes that came from the file */
	struct rec *recs;
	size_t nrecs, cap_recs;
	struct nw_index ix;      /* addr -> recs[] */
	uint64_t hits, misses;
};

static uint64_t rec_hash(const void *ctx, uint32_t i)
{
	return nw_hash_u64(((const struct nw_symcache *)ctx)->recs[i].addr);
}

static bool rec_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct nw_symcache *)ctx)->recs[i].addr == *(const uint64_t *)key;
}

/* Hashes what a file at @path is: absent, or its inode, size and time; *@any when present. */
static uint64_t hash_file(uint64_t h, const char *path, bool *any)
{
	struct stat st;

	h = nw_hash_str(h, path);
	if (stat(path, &st) != 0)
		return nw_hash_add(h, 0);
	*any = true;
	h = nw_hash_add(h, (uint64_t)st.st_dev);
	h = nw_hash_add(h, (uint64_t)st.st_ino);
	h = nw_hash_add(h, (uint64_t)st.st_size);
	h = nw_hash_add(h, (uint64_t)st.st_mtim.tv_sec);
	return nw_hash_add(h, (uint64_t)st.st_mtim.tv_nsec);
}

/* The debuglink candidates of one name @link for the file in directory @dir. */
static uint64_t hash_links(uint64_t h, const char *dirs, const char *dir, const char *link,
			   bool *any)
{
	char cand[PATH_MAX * 2 + 64];

	for (const char *p = dirs; p;) {
		const char *end = strchr(p, ':');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if (n && p[0] == '/')
			snprintf(cand, sizeof(cand), "%.*s%s/%s", n, p, dir, link);
		else if (n)
			snprintf(cand, sizeof(cand), "%s/%.*s/%s", dir, n, p, link);
		else
			snprintf(cand, sizeof(cand), "%s/%s", dir, link);
		h = hash_file(h, cand, any);
		p = end ? end + 1 : NULL;
	}
	return h;
}

uint64_t nw_symcache_debug_sources(const char *path, const char *hex, const char *debuglink,
				   const char *debuginfo_path, bool *ret_any)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	char cand[PATH_MAX * 2 + 64], real[PATH_MAX];
	uint64_t h = NW_HASH_SEED;
	bool any = false;

	for (const char *p = debuginfo_path; p && hex[0];) {
		const char *end = strchr(p, ':');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if (n && p[0] == '/') {
			snprintf(cand, sizeof(cand), "%.*s/.build-id/%.2s/%s.debug", n, p, hex, hex + 2);
			h = hash_file(h, cand, &any);
		}
		p = end ? end + 1 : NULL;
	}
	/* By debuglink, in the file's directory and in its real path's. */
	for (int pass = 0; pass < 2; pass++) {
		const char *file = pass ? realpath(path, real) : path, *slash;
		char dir[PATH_MAX], base[NAME_MAX + 8];

		if (!file || (pass && !strcmp(file, path)) || !(slash = strrchr(file, '/')))
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
		if (debuglink) {
			h = hash_links(h, debuginfo_path, dir, debuglink, &any);
		} else {
			/* libdwfl makes up BASENAME.debug, and tries BASENAME too. */
			snprintf(base, sizeof(base), "%.*s.debug", NAME_MAX, slash + 1);
			h = hash_links(h, debuginfo_path, dir, base, &any);
			h = hash_links(h, debuginfo_path, dir, slash + 1, &any);
		}
	}
	if (urls && *urls) {
		const char *cpath = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME");

		any = true; /* the servers may have it */
		h = nw_hash_str(h, urls);
		if (cpath && *cpath)
			snprintf(cand, sizeof(cand), "%s/%s/debuginfo", cpath, hex);
		else
			snprintf(cand, sizeof(cand), "%s/.cache/debuginfod_client/%s/debuginfo",
				 home ? home : "", hex);
		h = hash_file(h, cand, &any);
	}
	if (ret_any)
		*ret_any = any;
	return h;
}

/* Room for @n more bytes of data.  -ENOMEM. */
static int reserve(struct nw_symcache *c, size_t n)
{
	return nw_grow(&c->data, &c->cap, c->len + n, 1);
}

static int add_rec(struct nw_symcache *c, uint64_t addr, size_t off)
{
	uint32_t *slot;

	if (off > UINT32_MAX)
		return -ENOMEM;
	slot = nw_index_slot(&c->ix, nw_hash_u64(addr), rec_eq, rec_hash, c, &addr);
	if (!slot || nw_grow(&c->recs, &c->cap_recs, c->nrecs + 1, sizeof(*c->recs)))
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return 0; /* the first one stays */
	c->recs[c->nrecs] = (struct rec){ addr, (uint32_t)off };
	nw_index_fill(&c->ix, slot, (uint32_t)c->nrecs++);
	return 0;
}

/* Reads a u32 at *@o of @c's data, within @end.  false past it. */
static bool get_u32(const struct nw_symcache *c, size_t *o, size_t end, uint32_t *v)
{
	if (end - *o < 4)
		return false;
	memcpy(v, c->data + *o, 4);
	*o += 4;
	return true;
}

/* Skips (or copies into *@ret) a string at *@o.  false when it runs past @end. */
static bool get_str(const struct nw_symcache *c, size_t *o, size_t end, char **ret, bool *nomem)
{
	uint32_t n;

	if (!get_u32(c, o, end, &n))
		return false;
	if (n == NO_STRING) {
		if (ret)
			*ret = NULL;
		return true;
	}
	if (end - *o < n)
		return false;
	if (ret) {
		*ret = strndup(c->data + *o, n);
		*nomem |= !*ret;
	}
	*o += n;
	return true;
}

/*
 * The record at *@o: its frames decoded into *@ret (when not NULL), *@o
 * moved past it.  false when it runs past @end (a corrupt file).
 */
static bool get_rec(const struct nw_symcache *c, size_t *o, size_t end, uint64_t *addr,
		    struct nw_symframe **ret, uint32_t *ret_n, bool *nomem)
{
	struct nw_symframe *fr = NULL;
	uint32_t n;

	if (end - *o < 8)
		return false;
	memcpy(addr, c->data + *o, 8);
	*o += 8;
	if (!get_u32(c, o, end, &n) || n > (end - *o) / 20)
		return false;
	if (ret && n) {
		fr = calloc(n, sizeof(*fr));
		*nomem |= !fr;
	}
	for (uint32_t k = 0; k < n; k++) {
		struct nw_symframe *f = fr ? &fr[k] : NULL;
		uint32_t line, decl;

		if (!get_u32(c, o, end, &line) || !get_u32(c, o, end, &decl) ||
		    !get_str(c, o, end, f ? &f->function : NULL, nomem) ||
		    !get_str(c, o, end, f ? &f->file : NULL, nomem) ||
		    !get_str(c, o, end, f ? &f->decl_file : NULL, nomem) ||
		    (f && !f->function && !*nomem)) {
			nw_symframes_free(fr, n);
			return false;
		}
		if (f) {
			f->line = line;
			f->decl_line = decl;
		}
	}
	if (ret) {
		if (*nomem) {
			nw_symframes_free(fr, n);
			fr = NULL;
			n = 0;
		}
		*ret = fr;
		*ret_n = n;
	}
	return true;
}

int nw_symcache_open(const struct nw_cache *cache, const char *path, uint64_t size,
		     const uint8_t *id, unsigned idlen, const char *debuglink,
		     const char *debuginfo_path, struct nw_symcache **ret)
{
	struct nw_symcache *c;
	char hex[2 * 64 + 1] = "", *buf = NULL;
	size_t blen;
	uint64_t h;

	*ret = NULL;
	if (!nw_cache_on(cache) || idlen > 64)
		return 0;
	for (unsigned i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cache = cache;
	h = nw_hash_add(nw_symcache_debug_sources(path, hex, debuglink, debuginfo_path, NULL), size);
	h = nw_hash_str(h, MAGIC);
	if (idlen) {
		snprintf(c->name, sizeof(c->name), "sym-%s-%016llx", hex, (unsigned long long)h);
	} else {
		/* No build-id (rustup's rustc libraries): the file itself, as make knows it. */
		struct stat st;

		if (stat(path, &st) != 0) {
			free(c);
			return 0;
		}
		h = nw_hash_add(nw_hash_add(h, (uint64_t)st.st_dev), (uint64_t)st.st_ino);
		h = nw_hash_add(nw_hash_add(h, (uint64_t)st.st_mtim.tv_sec),
				(uint64_t)st.st_mtim.tv_nsec);
		snprintf(c->name, sizeof(c->name), "sym-file-%016llx", (unsigned long long)h);
	}
	if (!nw_cache_read(cache, c->name, &buf, &blen) && blen >= 8 && !memcmp(buf, MAGIC, 8)) {
		size_t o = 0, end;
		bool nomem = false;

		/* The records, without the magic. */
		memmove(buf, buf + 8, blen - 8);
		c->data = buf;
		c->len = c->cap = end = blen - 8;
		buf = NULL;
		while (o < end) {
			size_t at = o;
			uint64_t addr;

			if (!get_rec(c, &o, end, &addr, NULL, NULL, &nomem))
				break;
			if (add_rec(c, addr, at)) {
				nw_symcache_close(c);
				return -ENOMEM;
			}
		}
		if (o != end) {
			/* Corrupt: nothing of it is used, and a new file replaces it. */
			c->len = 0;
			c->nrecs = 0;
			nw_index_clear(&c->ix);
		}
		c->loaded = c->len;
	}
	free(buf);
	*ret = c;
	return 0;
}

int nw_symcache_get(struct nw_symcache *c, uint64_t vaddr, struct nw_symframe **ret_frames,
		    uint32_t *ret_n)
{
	uint32_t i = nw_index_find(&c->ix, nw_hash_u64(vaddr), rec_eq, c, &vaddr);
	size_t o;
	bool nomem = false;
	uint64_t addr;

	if (i == NW_INDEX_NONE) {
		c->misses++;
		return 0;
	}
	c->hits++;
	o = c->recs[i].off;
	if (!get_rec(c, &o, c->len, &addr, ret_frames, ret_n, &nomem))
		return 0;
	return nomem ? -ENOMEM : 1;
}

static void put_u32(struct nw_symcache *c, uint32_t v)
{
	memcpy(c->data + c->len, &v, 4);
	c->len += 4;
}

static void put_str(struct nw_symcache *c, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put_u32(c, s ? (uint32_t)n : NO_STRING);
	memcpy(c->data + c->len, s ? s : "", n);
	c->len += n;
}

int nw_symcache_put(struct nw_symcache *c, uint64_t vaddr, const struct nw_symframe *frames,
		    uint32_t n)
{
	size_t need = 12, at = c->len;

	if (nw_index_find(&c->ix, nw_hash_u64(vaddr), rec_eq, c, &vaddr) != NW_INDEX_NONE)
		return 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct nw_symframe *f = &frames[k];

		need += 20 + strlen(f->function) + (f->file ? strlen(f->file) : 0) +
			(f->decl_file ? strlen(f->decl_file) : 0);
	}
	if (reserve(c, need))
		return -ENOMEM;
	memcpy(c->data + c->len, &vaddr, 8);
	c->len += 8;
	put_u32(c, n);
	for (uint32_t k = 0; k < n; k++) {
		put_u32(c, frames[k].line);
		put_u32(c, frames[k].decl_line);
		put_str(c, frames[k].function);
		put_str(c, frames[k].file);
		put_str(c, frames[k].decl_file);
	}
	if (add_rec(c, vaddr, at)) {
		c->len = at;
		return -ENOMEM;
	}
	return 0;
}

void nw_symcache_close(struct nw_symcache *c)
{
	if (!c)
		return;
	nw_debug("symbol cache %s: %llu hits, %llu misses", c->name, (unsigned long long)c->hits,
		 (unsigned long long)c->misses);
	if (c->len > c->loaded) {
		char *buf = malloc(c->len + 8);

		if (buf) {
			memcpy(buf, MAGIC, 8);
			memcpy(buf + 8, c->data, c->len);
			nw_cache_write(c->cache, c->name, buf, c->len + 8);
			free(buf);
		}
	}
	nw_index_fini(&c->ix);
	free(c->recs);
	free(c->data);
	free(c);
}

/* ---- uncompressed copies of debug files ---- */

/* Does @elf have compressed sections (SHF_COMPRESSED)? */
static bool has_compressed(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			return true;
	}
	return false;
}

/*
 * Fills @out with the file *@arg (an fd) with every compressed section
 * inflated: a copy of the bytes, then libelf inflates and lays it out
 * again in place.  0 or -errno.
 */
static int inflated_copy(void *arg, int out)
{
	int fd = *(const int *)arg, err = 0;
	Elf_Scn *scn = NULL;
	Elf *elf = NULL;
	struct stat st;
	off_t off = 0;

	if (fstat(fd, &st) != 0)
		return -errno;
	while (off < st.st_size && !err) {
		ssize_t n = copy_file_range(fd, &off, out, NULL, (size_t)(st.st_size - off), 0);

		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
	}
	if (!err)
		elf = elf_begin(out, ELF_C_RDWR, NULL);
	if (!err && !elf)
		err = -EINVAL;
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    elf_compress(scn, 0, 0) < 0)
			err = -EINVAL;
	}
	if (!err && elf_update(elf, ELF_C_WRITE) < 0)
		err = -EIO;
	if (elf)
		elf_end(elf);
	return err;
}

/*
 * Writes the file @fd with every compressed section inflated to cache
 * file @name.  0 or -errno (nothing left behind).
 */
static int make_copy(const struct nw_cache *cache, int fd, const char *name)
{
	return nw_replace_file(cache->dir, name, inflated_copy, &fd);
}

/*
 * Is @copy the uncompressed copy of a file with build-id @id (@idlen
 * bytes): ELF, that build-id, nothing compressed?  A cache file may be
 * anything.
 */
static bool copy_ok(int copy, const void *id, ssize_t idlen)
{
	Elf *elf = elf_begin(copy, ELF_C_READ_MMAP, NULL);
	const void *cid;
	bool ok;

	if (!elf)
		return false;
	ok = elf_kind(elf) == ELF_K_ELF && !has_compressed(elf) &&
	     dwelf_elf_gnu_build_id(elf, &cid) == idlen && !memcmp(cid, id, (size_t)idlen);
	elf_end(elf);
	return ok;
}

int nw_symcache_debug_fd(const struct nw_cache *cache, int fd)
{
	char name[96], path[PATH_MAX + 256];
	unsigned char id[64];
	struct stat st;
	ssize_t idlen = 0;
	bool compressed;
	const void *p;
	Elf *elf;
	int copy;

	if (!nw_cache_on(cache) || fd < 0 || fstat(fd, &st) != 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	compressed = elf && has_compressed(elf);
	if (compressed) {
		idlen = dwelf_elf_gnu_build_id(elf, &p);
		if (idlen > 0 && idlen <= (ssize_t)sizeof(id))
			memcpy(id, p, (size_t)idlen);
		else
			compressed = false; /* nothing to tell a copy by */
	}
	if (elf)
		elf_end(elf);
	if (!compressed)
		return fd;
	snprintf(name, sizeof(name), "dbg-%016llx",
		 (unsigned long long)nw_hash_add(
			 nw_hash_add(nw_hash_add(nw_hash_u64((uint64_t)st.st_dev), (uint64_t)st.st_ino),
				     (uint64_t)st.st_size),
			 nw_hash_add((uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec)));
	snprintf(path, sizeof(path), "%s/%s", cache->dir, name);
	copy = open(path, O_RDONLY | O_CLOEXEC);
	if (copy >= 0 && !copy_ok(copy, id, idlen)) {
		close(copy);
		copy = -1;
	}
	if (copy < 0 && !make_copy(cache, fd, name)) {
		copy = open(path, O_RDONLY | O_CLOEXEC);
		nw_cache_prune(cache);
		if (copy >= 0 && !copy_ok(copy, id, idlen)) {
			close(copy);
			copy = -1;
		}
	}
	if (copy < 0)
		return fd;
	/* Used now: the last to go when the cache prunes. */
	futimens(copy, NULL);
	nw_debug("debug info from %s/%s, its sections inflated", cache->dir, name);
	close(fd);
	return copy;
}
