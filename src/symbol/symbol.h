/* SPDX-License-Identifier: MIT */
/*
 * Symbolization of PCs in ELF files on this machine, through libdwfl:
 * function (from DWARF, else the ELF symbol table), inline chain and
 * file:line.  One Dwfl module per file, reported once and kept.  The
 * path "[vdso]" stands for the kernel's vdso.  Separate debug info comes
 * from libdwfl's standard search (build-id, .gnu_debuglink, debuginfod
 * when DEBUGINFOD_URLS is set), with the directories of the environment
 * variable NARWHAL_DEBUG_PATH (colon-separated) searched first.
 */
#ifndef NW_SYMBOL_H
#define NW_SYMBOL_H

#include <stddef.h>
#include <stdint.h>

#include "elf/facts.h"
#include "model/symtab.h"
#include "util/cache.h"

struct nw_symbolizer;

/*
 * NULL on allocation failure.  @elf (ELF facts, borrowed) must outlive it;
 * so must @cache (NULL: none), where the results of each file with a
 * build-id are looked up first (symbol/symcache.h): freeing the
 * symbolizer writes what it added there.
 */
struct nw_symbolizer *nw_symbolizer_new(struct nw_elf_cache *elf, const struct nw_cache *cache);

/*
 * The separate debug file the symbolizer reads first for a file with
 * build-id @id (@idlen bytes): DIR/.build-id/xx/rest.debug in a directory
 * of NARWHAL_DEBUG_PATH, else in /usr/lib/debug (where Debian's -dbg
 * packages put theirs).  Its name into @path; false when none is there.
 */
bool nw_debug_file_by_build_id(const uint8_t *id, unsigned idlen, char *path, size_t size);
void nw_symbolizer_free(struct nw_symbolizer *s);

/*
 * Resolves ELF virtual address @vaddr in @path: on success *ret_frames is
 * a malloc'd array of *ret_n frames (innermost first, the caller's; see
 * nw_symtab_add) and 0 is returned.  *ret_n is 0 when nothing is known
 * about the address.  -ENOENT when the file cannot be opened, -ENOMEM.
 */
int nw_symbolize(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
		 struct nw_symframe **ret_frames, uint32_t *ret_n);

/*
 * The libdwfl module of the file @path, opened as nw_symbolize() opens it
 * (and kept by @s), for the readers of its code and DWARF beside the
 * symbolizer (symbol/codeinfo.h).  NULL when the file cannot be used.
 */
struct Dwfl_Module;
struct Dwfl_Module *nw_symbolizer_module(struct nw_symbolizer *s, const char *path);

/*
 * The extent of the sized ELF symbol (the symbol table the symbolizer
 * sorted: .symtab, else .dynsym, the separate debug file's too) that holds
 * @vaddr in @path.  -ENOENT when none does, the file's error, -ENOMEM.
 */
int nw_symbolizer_symbol_extent(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
				uint64_t *ret_start, uint64_t *ret_size);

#endif
