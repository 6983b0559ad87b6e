/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols from /proc/kallsyms: the text symbols (t, T, w, W) sorted
 * by address, so that a kernel PC resolves to the function whose start is
 * the greatest at or below it.  Symbols of loadable modules carry their
 * module's name ("[ext4]").  Where kernel.kptr_restrict hides the
 * addresses (they read as 0), the table says so and resolves nothing.
 */
#ifndef NW_KALLSYMS_H
#define NW_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nw_ksym {
	uint64_t addr;
	const char *name;      /* in the table's string pool */
	const char *module;    /* "ext4" for "[ext4]"; NULL: the kernel image */
};

/* A symbol of a cache file: its address and its name's offset. */
struct nw_kallsyms_rec {
	uint64_t addr;
	uint64_t name;
};

struct nw_kallsyms {
	struct nw_ksym *v;
	size_t n, cap;
	char *pool;            /* the file's text, names cut out in place */
	bool hidden;           /* the file lists symbols, all at address 0 */
	uint64_t text_end;     /* _etext, 0 unknown: PCs past the last symbol of the image */
	/*
	 * From the cache instead (v unused): the kernel image's symbols only
	 * (no module, BPF program or trampoline), looked up where the file
	 * is mapped; nw_kallsyms_covers() says where they hold.
	 */
	const struct nw_kallsyms_rec *recs;
	const char *names;
	void *map;
	size_t maplen;
};

struct nw_cache;

/*
 * Reads @path (NULL: /proc/kallsyms) into @ks.  0, -errno when it cannot
 * be read, -ENOMEM.  A table of hidden addresses reads fine (ks->hidden).
 */
int nw_kallsyms_load(struct nw_kallsyms *ks, const char *path);

/*
 * The name of the running kernel's symbols in @cache, into @name (@len
 * bytes): the kernel's build-id (@notes, NULL: /sys/kernel/notes) and a
 * hash of the first 4 KiB of @kallsyms (NULL: /proc/kallsyms), whose
 * addresses move with KASLR and read 0 where they are hidden.  -ENOENT
 * without a build-id, -errno.
 */
int nw_kallsyms_cache_name(const char *kallsyms, const char *notes, char *name, size_t len);

/*
 * The kernel's symbols from @cache's file @name when it is there (the
 * image's only, mapped), else read from @kallsyms (NULL: /proc/kallsyms)
 * and the image's part saved as @name.  @cache NULL or off, or @name
 * NULL: read, nothing saved.  Errors as nw_kallsyms_load().
 */
int nw_kallsyms_load_cached(struct nw_kallsyms *ks, const struct nw_cache *cache,
			    const char *name, const char *kallsyms);
void nw_kallsyms_fini(struct nw_kallsyms *ks);

/* The symbol of kernel PC @pc into *@ret (names in @ks), or false. */
bool nw_kallsyms_find(const struct nw_kallsyms *ks, uint64_t pc, struct nw_ksym *ret);

/* Whether @ks knows what kernel PC @pc is (a table from the cache: inside the image). */
static inline bool nw_kallsyms_covers(const struct nw_kallsyms *ks, uint64_t pc)
{
	return !ks->map || (ks->n && pc >= ks->recs[0].addr && pc < ks->text_end);
}

#endif
