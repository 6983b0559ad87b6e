/* SPDX-License-Identifier: MIT */
/*
 * The one reader of ELF headers: the facts a measurement keeps about each
 * module (model/module.h: loadable segments, build-id, entry point, CFI
 * present), read once per file and cached by path.  The recorder, the
 * unwinder and the symbolizer share a cache.  The path "[vdso]" stands for
 * this process's vdso image (elf/vdso.h), which every process of this
 * kernel and ABI maps.
 */
#ifndef NW_ELF_FACTS_H
#define NW_ELF_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/module.h"

struct nw_elf_cache;

/* An empty cache; NULL on ENOMEM. */
struct nw_elf_cache *nw_elf_cache_new(void);
void nw_elf_cache_free(struct nw_elf_cache *c);

/*
 * The facts of the file at @path, read at the first call and kept until
 * the cache is freed (a file that cannot be read is remembered too, so it
 * is tried once).  -ENOENT when it cannot be opened or is not ELF, -ENOMEM.
 */
int nw_elf_facts_get(struct nw_elf_cache *c, const char *path,
		     const struct nw_module_facts **ret);

/*
 * The facts of @path for a module mapped with build-id @build_id (@size
 * bytes, 0: unknown): into @dst (a copy the caller owns) when the file is
 * there and is that build; dst->known stays false otherwise.  -ENOMEM.
 */
int nw_elf_facts_for(struct nw_elf_cache *c, const char *path, const uint8_t *build_id,
		     size_t size, struct nw_module_facts *dst);

/*
 * The file offset of the code of function @name, a dynamic symbol of the
 * ELF file @path (where a uprobe on its entry goes).  -ENOENT when the
 * file is not ELF or does not define it, -errno when it cannot be opened.
 */
int nw_elf_symbol_offset(const char *path, const char *name, uint64_t *ret_off);

/*
 * What the ELF file @path needs to run: @fn is called with its
 * interpreter's path (PT_INTERP) and then each DT_NEEDED name, as written
 * (valid during the call).  0, -ENOENT when it cannot be opened or is not
 * ELF.
 */
int nw_elf_needs(const char *path, void (*fn)(void *arg, const char *name, bool interp),
		 void *arg);

/* A defined symbol of an ELF file, as nw_elf_symbols() hands it over. */
struct nw_elf_symbol {
	const char *name;       /* valid during the call */
	uint64_t value, size;   /* ELF address and size */
	int type;               /* STT_FUNC, STT_OBJECT, ... */
	bool dynamic;           /* from .dynsym, else .symtab */
};

/* Called per symbol: nonzero stops the walk and is returned. */
typedef int (*nw_elf_symbol_fn)(void *arg, const struct nw_elf_symbol *sym);

/*
 * Calls @fn for each defined symbol of the ELF file @path, those of
 * .symtab first, then those of .dynsym.  0, @fn's nonzero return,
 * -ENOENT when the file is not ELF, -errno when it cannot be opened.
 */
int nw_elf_symbols(const char *path, nw_elf_symbol_fn fn, void *arg);

#endif
