/* SPDX-License-Identifier: MIT */
/*
 * Symbolization of PCs in ELF files on this machine, through libdwfl:
 * function (from DWARF, else the ELF symbol table), inline chain and
 * file:line.  One Dwfl module per file, reported once and kept.
 */
#ifndef NW_SYMBOL_H
#define NW_SYMBOL_H

#include <stddef.h>
#include <stdint.h>

#include "format/symtab.h"

struct nw_symbolizer;

/* NULL on allocation failure. */
struct nw_symbolizer *nw_symbolizer_new(void);
void nw_symbolizer_free(struct nw_symbolizer *s);

/*
 * The ELF virtual address of file offset @offset in @path (through the
 * PT_LOAD that holds it).  -ENOENT when the file cannot be opened or is no
 * ELF, -ERANGE when no loadable segment holds the offset.
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
