/* SPDX-License-Identifier: MIT */
/*
 * The code store: the machine code of the functions with samples, kept in
 * the measurement so that a disassembly needs no binary
 * (doc/DISASSEMBLY.md).  Per function: its module (an index into the
 * measurement's modules, which hold the build-id), ELF start address and
 * size, the bytes stored (from its start; fewer than its size where a cap
 * cut them), and what the recorder knew of it then: the source line of
 * each address range and the ranges of code inlined into it, named.  A
 * function the recorder could not store, or left out for the total cap,
 * is kept without bytes and says why.  format/codefile.c reads and writes
 * it as code.nwcode; record/codecap.c fills it.
 */
#ifndef NW_CODESTORE_H
#define NW_CODESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"

/* Why a function holds fewer bytes than its size (nw_code_func.status). */
enum nw_code_status {
	NW_CODE_STORED,        /* its bytes, up to the per-function cap */
	NW_CODE_CAPPED,        /* left out: the total cap was reached by hotter functions */
	NW_CODE_NO_KCORE,      /* kernel code: /proc/kcore could not be read */
	NW_CODE_JIT_GONE,      /* JIT code: the process's memory could not be read */
	NW_CODE_UNREADABLE,    /* the module's file could not be read */
	NW_CODE_STATUS_MAX,
};

/* Where the bytes came from (nw_code_func.origin). */
enum nw_code_origin {
	NW_CODE_FILE,          /* the module's file, as mapped while recording */
	NW_CODE_KCORE,         /* /proc/kcore: the running kernel's text */
	NW_CODE_PROCESS,       /* the process's memory (JIT code of a perf map) */
	NW_CODE_ORIGIN_MAX,
};

/* Notes about sampled code the store holds nothing of (nw_code_note.reason). */
enum nw_code_reason {
	NW_CODE_NO_EXTENT,     /* no symbol or unwind entry says where its function starts */
	NW_CODE_NO_PERFMAP,    /* JIT code no perf-map entry names */
	NW_CODE_REASON_MAX,
};

/* Source line from @offset (bytes from the start) up to the next entry's offset. */
struct nw_code_line {
	uint32_t offset;
	uint32_t file;         /* index in strings; NW_CODE_NONE: unknown */
	uint32_t line;         /* 0: unknown */
};

/* A range of code inlined into the function, [lo, hi) in bytes from its start. */
struct nw_code_inline {
	uint32_t lo, hi;
	uint32_t name;         /* index in strings: the inlined function */
	uint32_t depth;        /* 1: inlined into the function itself, 2: into that one, ... */
};

#define NW_CODE_NONE UINT32_MAX

struct nw_code_func {
	uint32_t module;       /* index in the measurement's modules */
	uint16_t machine;      /* ELF e_machine of the code */
	uint8_t status;        /* enum nw_code_status */
	uint8_t origin;        /* enum nw_code_origin */
	uint64_t start;        /* ELF address of its first byte (kernel, JIT: the address) */
	uint64_t size;         /* the whole function's bytes */
	uint32_t nbytes;       /* bytes stored, from start: <= size */
	uint8_t *bytes;
	uint32_t nlines;       /* by offset, ascending */
	struct nw_code_line *lines;
	uint32_t ninlines;     /* by lo, outer ranges before the ranges nested in them */
	struct nw_code_inline *inlines;
};

struct nw_code_note {
	uint32_t module;
	uint32_t reason;       /* enum nw_code_reason */
	uint64_t count;        /* sampled addresses it applies to */
};

struct nw_codestore {
	uint64_t func_cap, total_cap;  /* the recording's caps, bytes (0: unknown) */
	uint32_t nfuncs;
	struct nw_code_func *funcs;    /* by (module, start) once nw_codestore_sort() ran */
	uint32_t nstrings;
	char **strings;                /* file names and inlined functions' names */
	uint32_t nnotes;
	struct nw_code_note *notes;
	size_t cap_funcs, cap_strings, cap_notes;
	struct nw_index ix;            /* the strings, by text */
	/*
	 * The recorder's: a new value whenever what the store holds changed,
	 * so that a checkpoint's journal writes it again only then.
	 */
	uint64_t generation;
};

/* An empty store; NULL on ENOMEM. */
struct nw_codestore *nw_codestore_new(void);
/* NULL is a no-op. */
void nw_codestore_free(struct nw_codestore *cs);

/* The index of string @s, added when new; -ENOMEM. */
int64_t nw_codestore_string(struct nw_codestore *cs, const char *s);

/*
 * Appends function (@module, @start, @size) with a copy of @nbytes bytes
 * (nbytes <= size; NULL and 0 for none), and a copy of its lines and
 * inlined ranges (NULL and 0 for none).  The new entry, or NULL on ENOMEM.
 */
struct nw_code_func *nw_codestore_add(struct nw_codestore *cs, uint32_t module, uint16_t machine,
				      enum nw_code_status status, enum nw_code_origin origin,
				      uint64_t start, uint64_t size, const uint8_t *bytes,
				      uint32_t nbytes, const struct nw_code_line *lines,
				      uint32_t nlines, const struct nw_code_inline *inlines,
				      uint32_t ninlines);

/* Adds @count to the note (@module, @reason).  -ENOMEM. */
int nw_codestore_note(struct nw_codestore *cs, uint32_t module, enum nw_code_reason reason,
		      uint64_t count);

/* Sorts the functions by (module, start) for nw_codestore_find(). */
void nw_codestore_sort(struct nw_codestore *cs);

/*
 * The function of module @module that holds ELF address @addr (its start
 * at or below it, within its size), in a sorted store; NULL when none.
 */
const struct nw_code_func *nw_codestore_find(const struct nw_codestore *cs, uint32_t module,
					     uint64_t addr);

/* The source line entry of @fn that holds byte @offset, or NULL. */
const struct nw_code_line *nw_code_line_at(const struct nw_code_func *fn, uint64_t offset);

/* The bytes @fn takes on disk, about: the total cap counts these. */
uint64_t nw_code_func_cost(const struct nw_code_func *fn);

/*
 * Adds @src's functions and notes to *@dst (made when NULL), module i of
 * @src becoming module @mod[i] of @dst; a function @dst holds already (the
 * same module and start) stays as it is.  Sorted after.  @src NULL: no-op.
 * -ENOMEM.
 */
int nw_codestore_merge(struct nw_codestore **dst, const struct nw_codestore *src,
		       const uint32_t *mod);

/* "stored", "left out for the total cap", ... (for the report). */
const char *nw_code_status_name(enum nw_code_status s);
const char *nw_code_reason_name(enum nw_code_reason r);

#endif
