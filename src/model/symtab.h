/* SPDX-License-Identifier: MIT */
/*
 * The symbol table: every distinct sampled PC resolved once at the end of
 * recording, keyed by module (an index into the measurement's module
 * table) and the PC's ELF virtual address in that module.  Each entry
 * holds the inline chain, innermost frame first; the last frame is the
 * function that holds the code.  With it, a report needs no binaries.
 * format/symbols.c reads and writes it as symbols.json.
 */
#ifndef NW_SYMTAB_H
#define NW_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

struct nw_symframe {
	char *function;     /* demangled name; never NULL */
	char *file;         /* source file of the PC in this frame, NULL when unknown */
	uint32_t line;      /* 0 when unknown */
	uint32_t decl_line; /* the function's first line, 0 when unknown */
	char *decl_file;    /* the function's file, NULL when unknown */
};

struct nw_symentry {
	uint32_t module;    /* index in the measurement's modules */
	uint64_t addr;      /* ELF virtual address looked up (ip, or ip-1 for a return address) */
	uint32_t nframes;   /* 0: nothing known, report as module+0xADDR */
	struct nw_symframe *frames;
};

struct nw_symtab {
	uint32_t nentries, cap_entries;
	struct nw_symentry *entries; /* sorted by (module, addr) once nw_symtab_sort() ran */
};

/* An empty table; NULL on allocation failure. */
struct nw_symtab *nw_symtab_new(void);
void nw_symtab_free(struct nw_symtab *t);
/* Forgets every entry. */
void nw_symtab_clear(struct nw_symtab *t);
/*
 * Appends an entry and takes ownership of @frames (an array of @nframes
 * from malloc, each string from malloc).  -ENOMEM (frames then freed).
 */
int nw_symtab_add(struct nw_symtab *t, uint32_t module, uint64_t addr,
		  struct nw_symframe *frames, uint32_t nframes);
/* Sorts entries for lookup; duplicates keep the first. */
void nw_symtab_sort(struct nw_symtab *t);
/* The entry for (module, addr) in a sorted table, or NULL. */
const struct nw_symentry *nw_symtab_lookup(const struct nw_symtab *t, uint32_t module,
					   uint64_t addr);
/* Frees @n frames and their strings (NULL is a no-op). */
void nw_symframes_free(struct nw_symframe *frames, uint32_t n);

#endif
