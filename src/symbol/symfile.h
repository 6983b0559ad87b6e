/* SPDX-License-Identifier: MIT */
/*
 * A file being symbolized, and the ways of naming its code that the
 * symbolizer (symbol.c) tries in turn, each in a file of its own:
 *
 *   dwarfsyms.c  DWARF: the function, its inline chain, file:line
 *   elfsyms.c    the ELF symbol tables (.symtab, .dynsym, MiniDebugInfo),
 *                where DWARF knows nothing
 *   cfinames.c   code no symbol names, named after the start of the
 *                function its .eh_frame covers
 *
 * Each nw_symbolize_*() gives *ret_n frames (innermost first, the
 * caller's) or *ret_n 0 where it knows nothing of @vaddr, and 0; -ENOMEM.
 * Internal to src/symbol/.
 */
#ifndef NW_SYMFILE_H
#define NW_SYMFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "elf/facts.h"
#include "model/symtab.h"
#include "symbol/symcache.h"

/* A function symbol of the ELF symbol table (the fallback without DWARF). */
struct nw_elfsym {
	uint64_t addr, size; /* size 0: extent unknown */
	uint64_t maxend;     /* the largest addr + size of this and all earlier entries */
	const char *name;    /* in the module's string table */
};

/* One address range of a function of a CU. */
struct nw_funcrange {
	Dwarf_Addr low, high; /* [low, high), in the DWARF file's addresses */
	Dwarf_Addr maxhigh;   /* the largest high of this and all earlier entries */
	Dwarf_Die die;	      /* the DW_TAG_subprogram */
};

/* The functions of one CU sorted by address, built at its first lookup. */
struct nw_cufuncs {
	const void *key; /* the CU DIE's data */
	struct nw_funcrange *v;
	size_t n;
};

struct nw_symfile {
	char *path;
	int err; /* < 0: the file is unusable, returned as is */
	Dwfl_Module *mod;
	const struct nw_module_facts *facts; /* the file's loadable segments, from the cache */
	bool syms_done;		/* syms built (possibly empty) */
	struct nw_elfsym *syms; /* sorted by addr, one per address */
	size_t nsyms;
	struct nw_cufuncs *cus; /* sorted by key */
	size_t ncus, cap_cus;
	bool cache_tried;
	struct nw_symcache *cache; /* NULL: not cached */
};

/* The index of the PT_LOAD holding @vaddr, or -1. */
static inline int symfile_load_of(const struct nw_symfile *f, uint64_t vaddr)
{
	return nw_facts_segment_of(f->facts, vaddr);
}

/* A malloc'd demangled copy of @name (C names come back unchanged), NULL on ENOMEM. */
char *nw_demangle(const char *name);
/* The PC's own file and line (from the line table) into @fr.  -ENOMEM. */
int nw_symframe_pc_line(struct nw_symframe *fr, Dwfl_Module *mod, uint64_t vaddr);

int nw_symbolize_dwarf(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
		       uint32_t *ret_n);
/*
 * The extent of the ELF symbol holding @vaddr (for the code store):
 * -ENOENT where none does, or it has no size.
 */
int nw_elfsyms_extent(struct nw_symfile *f, uint64_t vaddr, uint64_t *ret_start,
		      uint64_t *ret_size);
int nw_symbolize_elf(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
		     uint32_t *ret_n);
int nw_symbolize_cfi(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
		     uint32_t *ret_n);

#endif
