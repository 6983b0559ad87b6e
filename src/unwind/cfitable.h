/* SPDX-License-Identifier: MIT */
/*
 * A module's unwind table for the in-kernel unwinder (bpf/abi.h): every
 * row of its CFI compiled (cfirule.h) into a struct nw_cfi_row, keyed by
 * file offset, sorted, with NW_CFA_GAP rows where no CFI covers the code.
 * Built from the file's .eh_frame, or from its .debug_frame when it has no
 * .eh_frame; cached by build-id (util/cache.h), since libLLVM's takes a
 * second to build.  x86-64 only: the rows assume the return address at
 * CFA - 8.
 */
#ifndef NW_UNWIND_CFITABLE_H
#define NW_UNWIND_CFITABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "bpf/abi.h"
#include "util/cache.h"

struct nw_cfi_table_stats {
	uint32_t fdes;          /* FDEs compiled */
	uint32_t fdes_skipped;  /* FDEs whose address could not be decoded or mapped */
	/* Rows of the table by kind (after merging). */
	uint32_t complex, gap, plt, end;
	uint32_t reg;           /* CFA = another register + offset */
	/* PLT rows whose expression adds 8 from another offset than 11: COMPLEX. */
	uint32_t plt_other;
	uint64_t complex_bytes; /* bytes of code COMPLEX rows cover */
};

/* In GAP, END, COMPLEX and REG rows only off and cfa mean anything; the rest is 0. */
struct nw_cfi_table {
	struct nw_cfi_row *rows;  /* malloc'd, or in @map; strictly increasing off */
	void *map;                /* the cache file mapped, when loaded from it: rows point in it */
	size_t map_len;
	uint32_t nrows;
	bool from_debug_frame;    /* the file had no .eh_frame */
	bool from_cache;          /* nw_cfi_table_get loaded it */
	struct nw_cfi_table_stats stats;
};

/*
 * Compiles the CFI of the ELF file @fd (or, when @fd < 0, opened from
 * @path; @path only names it otherwise) into *@t.  A file without CFI
 * gives a table without rows.  -errno (-EINVAL: not an ELF file of this
 * machine; -EFBIG: offsets past 4 GiB; -ENOMEM), *@t untouched.  The
 * caller keeps @fd.
 */
int nw_cfi_table_build(int fd, const char *path, struct nw_cfi_table *t);

/*
 * nw_cfi_table_build() through @cache: the table of the file with build-id
 * @build_id (@idlen bytes; 0: keyed by the file's device, inode and
 * mtime), loaded when a valid copy is cached, else built and stored.  A
 * missing or off cache only costs the build.  -errno as the build.
 */
int nw_cfi_table_get(const struct nw_cache *cache, int fd, const char *path,
		     const uint8_t *build_id, unsigned idlen, struct nw_cfi_table *t);

/* The index of the row covering file offset @off, or -1 when none does. */
int nw_cfi_table_find(const struct nw_cfi_table *t, uint32_t off);

/*
 * The table row for one CFI row (@frame; NULL: no CFI), as the table
 * compiler makes it (off left 0): what a test compares the table with.
 */
void nw_cfi_table_row(Dwarf_Frame *frame, struct nw_cfi_row *row);

void nw_cfi_table_free(struct nw_cfi_table *t);

#endif
