/* SPDX-License-Identifier: MIT */
/* Kernel symbols from /proc/kallsyms; see kallsyms.h. */
#include "symbol/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/bsearch.h"
#include "util/cache.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/strbuf.h"

static int cmp_ksym(const void *a, const void *b)
{
	const struct nw_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Names at one address in one order, whatever qsort does. */
	return strcmp(x->name, y->name);
}

int nw_kallsyms_load(struct nw_kallsyms *ks, const char *path)
{
	size_t len, nzero = 0;
	char *p, *line;
	int rc;

	memset(ks, 0, sizeof(*ks));
	rc = nw_read_file(path ? path : "/proc/kallsyms", &ks->pool, &len);
	if (rc)
		return rc;
	/* "ffffffff81000000 T _stext" or "ffffffffc0a01000 t ext4_fill_super\t[ext4]" */
	for (line = ks->pool; line && *line; line = p) {
		char *type, *name, *mod, *end;
		unsigned long long addr;

		p = strchr(line, '\n');
		if (p)
			*p++ = 0;
		addr = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		type = end + 1;
		if (!*type || type[1] != ' ')
			continue;
		name = type + 2;
		mod = strchr(name, '\t');
		if (mod) {
			*mod++ = 0;
			if (*mod == '[') {
				mod++;
				mod[strcspn(mod, "]")] = 0;
			} else {
				mod = NULL;
			}
		}
		if (!mod && !strcmp(name, "_etext"))
			ks->text_end = addr;
		if (!strchr("tTwW", *type))
			continue;
		if (!addr) {
			nzero++;
			continue;
		}
		if (nw_grow(&ks->v, &ks->cap, ks->n + 1, sizeof(*ks->v))) {
			nw_kallsyms_fini(ks);
			return -ENOMEM;
		}
		ks->v[ks->n++] = (struct nw_ksym){ addr, name, mod };
	}
	ks->hidden = !ks->n && nzero > 0;
	/* The kernel lists its image in order: sorting is for modules and the rest. */
	for (size_t i = 1; i < ks->n; i++) {
		if (ks->v[i].addr < ks->v[i - 1].addr) {
			qsort(ks->v, ks->n, sizeof(*ks->v), cmp_ksym);
			break;
		}
	}
	return 0;
}

/* ---- the cache ---- */

#define CACHE_MAGIC "NWKSYM2"

/* A cache file: this header, n records (sorted), then the names (NUL-terminated). */
struct cache_head {
	char magic[8];
	uint64_t text_end, n, names_len;
};

int nw_kallsyms_cache_name(const char *kallsyms, const char *notes_path, char *name, size_t len)
{
	unsigned char notes[4096], head[4096];
	ssize_t n, h;
	size_t o = 0;
	uint64_t hash = NW_HASH_SEED;
	int fd, w;

	fd = open(notes_path ? notes_path : "/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, notes, sizeof(notes));
	close(fd);
	fd = open(kallsyms ? kallsyms : "/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	h = read(fd, head, sizeof(head));
	close(fd);
	if (n <= 0 || h <= 0)
		return -ENOENT;
	for (ssize_t i = 0; i < h; i++)
		hash = (hash ^ head[i]) * 0x100000001b3ULL;
	/* Notes: namesz, descsz, type, name and desc padded to 4; GNU build-id is type 3. */
	while (o + 12 <= (size_t)n) {
		uint32_t namesz, descsz, type;
		size_t desc;

		memcpy(&namesz, notes + o, 4);
		memcpy(&descsz, notes + o + 4, 4);
		memcpy(&type, notes + o + 8, 4);
		desc = o + 12 + ((namesz + 3u) & ~3u);
		if (namesz > sizeof(notes) || descsz > sizeof(notes) || desc + descsz > (size_t)n)
			break;
		if (type == 3 && namesz == 4 && !memcmp(notes + o + 12, "GNU", 4) && descsz &&
		    descsz <= 64) {
			w = snprintf(name, len, "kallsyms-");
			for (uint32_t i = 0; i < descsz && w > 0 && (size_t)w < len; i++)
				w += snprintf(name + w, len - (size_t)w, "%02x", notes[desc + i]);
			if (w > 0 && (size_t)w < len)
				w += snprintf(name + w, len - (size_t)w, "-%016llx",
					      (unsigned long long)nw_hash_u64(hash));
			return w > 0 && (size_t)w < len ? 0 : -ENAMETOOLONG;
		}
		o = desc + ((descsz + 3u) & ~3u);
	}
	return -ENOENT;
}

/* A cache file mapped at @map (@len bytes, taken) as @ks.  -EINVAL when it is corrupt. */
static int cache_use(struct nw_kallsyms *ks, void *map, size_t len)
{
	const struct nw_kallsyms_rec *recs = (const void *)((const char *)map + sizeof(struct cache_head));
	struct cache_head hd;
	const char *names;

	if (len < sizeof(hd))
		goto bad;
	memcpy(&hd, map, sizeof(hd));
	if (memcmp(hd.magic, CACHE_MAGIC, sizeof(hd.magic)) || !hd.n || !hd.text_end ||
	    hd.n > (len - sizeof(hd)) / sizeof(*recs) || !hd.names_len ||
	    hd.names_len != len - sizeof(hd) - hd.n * sizeof(*recs))
		goto bad;
	names = (const char *)(recs + hd.n);
	if (names[hd.names_len - 1])
		goto bad;
	for (uint64_t i = 0; i < hd.n; i++)
		if (recs[i].name >= hd.names_len || (i && recs[i].addr < recs[i - 1].addr))
			goto bad;
	memset(ks, 0, sizeof(*ks));
	ks->map = map;
	ks->maplen = len;
	ks->recs = recs;
	ks->names = names;
	ks->n = hd.n;
	ks->text_end = hd.text_end;
	return 0;
bad:
	munmap(map, len);
	return -EINVAL;
}

/* Writes the image's symbols of @ks (sorted) as cache file @name. */
static void cache_save(const struct nw_kallsyms *ks, const struct nw_cache *cache,
		       const char *name)
{
	struct cache_head hd = { .magic = CACHE_MAGIC, .text_end = ks->text_end };
	struct nw_kallsyms_rec *recs = malloc((ks->n ? ks->n : 1) * sizeof(*recs));
	struct nw_strbuf names = { 0 };
	char *buf = NULL;
	size_t len;

	if (!recs)
		return;
	for (size_t i = 0; i < ks->n; i++) {
		if (ks->v[i].module)
			continue;
		recs[hd.n++] = (struct nw_kallsyms_rec){ ks->v[i].addr, names.len };
		nw_sb_puts(&names, ks->v[i].name);
		nw_sb_putc(&names, 0);
	}
	hd.names_len = names.len;
	len = sizeof(hd) + hd.n * sizeof(*recs) + names.len;
	buf = hd.n && !names.failed ? malloc(len) : NULL;
	if (buf) {
		memcpy(buf, &hd, sizeof(hd));
		memcpy(buf + sizeof(hd), recs, hd.n * sizeof(*recs));
		memcpy(buf + sizeof(hd) + hd.n * sizeof(*recs), names.s, names.len);
		if (!nw_cache_write(cache, name, buf, len))
			nw_cache_prune(cache);
	}
	free(buf);
	free(recs);
	nw_sb_fini(&names);
}

int nw_kallsyms_load_cached(struct nw_kallsyms *ks, const struct nw_cache *cache,
			    const char *name, const char *kallsyms)
{
	void *map;
	size_t len;
	int ret;

	if (!nw_cache_on(cache) || !name)
		return nw_kallsyms_load(ks, kallsyms);
	memset(ks, 0, sizeof(*ks));
	if (!nw_cache_map(cache, name, &map, &len) && !cache_use(ks, map, len))
		return 0;
	ret = nw_kallsyms_load(ks, kallsyms);
	/* Hidden addresses, or no _etext to say where the image ends: nothing to keep. */
	if (!ret && ks->n && ks->text_end)
		cache_save(ks, cache, name);
	return ret;
}

void nw_kallsyms_fini(struct nw_kallsyms *ks)
{
	free(ks->v);
	free(ks->pool);
	if (ks->map)
		munmap(ks->map, ks->maplen);
	memset(ks, 0, sizeof(*ks));
}

static uint64_t rec_addr(const void *recs, size_t i)
{
	return ((const struct nw_kallsyms_rec *)recs)[i].addr;
}

static uint64_t ksym_addr(const void *v, size_t i)
{
	return ((const struct nw_ksym *)v)[i].addr;
}

bool nw_kallsyms_find(const struct nw_kallsyms *ks, uint64_t pc, struct nw_ksym *ret)
{
	size_t lo;

	if (!ks->n)
		return false;
	/* The last symbol at or below pc: there is one, the first is. */
	if (ks->map) {
		if (pc < ks->recs[0].addr || pc >= ks->text_end)
			return false;
		lo = nw_bsearch_le(ks->recs, ks->n, pc, rec_addr) - 1;
		*ret = (struct nw_ksym){ ks->recs[lo].addr, ks->names + ks->recs[lo].name, NULL };
		return true;
	}
	if (pc < ks->v[0].addr)
		return false;
	lo = nw_bsearch_le(ks->v, ks->n, pc, ksym_addr) - 1;
	/* Past the end of the image's text, in the gap after its last function: nothing. */
	if (!ks->v[lo].module && ks->text_end && ks->v[lo].addr < ks->text_end && pc >= ks->text_end)
		return false;
	*ret = ks->v[lo];
	return true;
}
