/* SPDX-License-Identifier: MIT */
/*
 * What the recorder keeps of a sampled function beside its code
 * (model/codestore.h, doc/DISASSEMBLY.md), from the ELF file and its
 * DWARF as the symbolizer opened them (the same libdwfl module, separate
 * debug files included): where the function lies, its bytes, the source
 * line of each address range and the ranges of code inlined into it.
 */
#ifndef NW_CODEINFO_H
#define NW_CODEINFO_H

#include <stdint.h>

#include "model/codestore.h"
#include "symbol/symbol.h"

/* At most this many line entries and inlined ranges per function (the rest are dropped). */
#define NW_CODEINFO_MAX_LINES 65536
#define NW_CODEINFO_MAX_INLINES 4096

/*
 * The extent of the function that holds ELF address @vaddr in @path: its
 * ELF symbol's (the separate debug file's symbol table too), else its
 * call frame information's (an FDE covers one function).  -ENOENT when
 * neither says, -errno when the file cannot be used.
 */
int nw_code_extent(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
		   uint64_t *ret_start, uint64_t *ret_size);

/*
 * Copies the @n bytes of @path at ELF address @vaddr into @buf, from the
 * file's loadable segments as they lie in the file.  -ENOENT when the file
 * cannot be used, -ERANGE when a segment does not hold them all.
 */
int nw_code_read(struct nw_symbolizer *s, const char *path, uint64_t vaddr, void *buf,
		 uint32_t n);

/*
 * The source lines of [@start, @start + @size) in @path (its line table:
 * each entry from its offset to the next) and the ranges of code inlined
 * there (DW_TAG_inlined_subroutine under the function's DIE, clipped),
 * with file names and function names interned in @cs.  *@ret_lines and
 * *@ret_inl are malloc'd (the caller's), NULL with counts 0 where the file
 * has no DWARF.  0, -ENOMEM.
 */
int nw_code_describe(struct nw_symbolizer *s, const char *path, uint64_t start, uint64_t size,
		     struct nw_codestore *cs, struct nw_code_line **ret_lines, uint32_t *ret_nlines,
		     struct nw_code_inline **ret_inl, uint32_t *ret_ninl);

#endif
