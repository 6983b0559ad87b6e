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

#include "model/symtab.h"

struct nw_symbolizer;

/* NULL on allocation failure. */
struct nw_symbolizer *nw_symbolizer_new(void);
void nw_symbolizer_free(struct nw_symbolizer *s);

/*
 * The ELF virtual address of file offset @offset in @path (through the
 * PT_LOAD that holds it).  Meant for the offsets of executable mappings:
 * a segment is mapped from its offset rounded down to a page, and where
 * that page is shared with another segment (lld's layout), the PF_X
 * segment wins.  -ENOENT when the file cannot be opened or is no ELF,
 * -ERANGE when no loadable segment holds the offset.
 */
int nw_symbol_offset_to_vaddr(struct nw_symbolizer *s, const char *path, uint64_t offset,
			      uint64_t *ret_vaddr);

/*
 * Resolves ELF virtual address @vaddr in @path: on success *ret_frames is
 * a malloc'd array of *ret_n frames (innermost first, the caller's; see
 * nw_symtab_add) and 0 is returned.  *ret_n is 0 when nothing is known
 * about the address.  -ENOENT when the file cannot be opened, -ENOMEM.
 */
int nw_symbolize(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
		 struct nw_symframe **ret_frames, uint32_t *ret_n);

/* Lowercase hex build-id of @path's ELF note into @buf (2*20+1), "" when none. */
int nw_symbol_build_id(const char *path, char *buf, size_t len);

#endif
