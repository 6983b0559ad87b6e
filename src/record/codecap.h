/* SPDX-License-Identifier: MIT */
/*
 * The code store of a recording (model/codestore.h, doc/DISASSEMBLY.md):
 * at the end of a run and at each checkpoint, the machine code of every
 * function with samples, with its source lines and inlined ranges, within
 * two caps: bytes per function (from its start) and bytes in all, the
 * hottest functions (most samples in their own code) kept first.
 *
 *  - Files: from the module's file as the recorder keeps it open (so a
 *    file deleted or replaced since is the one read), the function's
 *    extent from its ELF symbol or FDE, lines and inlined ranges from its
 *    DWARF (symbol/codeinfo.h).
 *  - Kernel: from /proc/kcore where it can be read, the extent from the
 *    kernel's symbols (the next symbol's address ends a function); else
 *    left out, and the store says so.
 *  - JIT code: a session listener reads the perf-map range of each new
 *    sampled PC in anonymous memory from the process (process_vm_readv)
 *    at its first sample, while the process lives; a process gone first
 *    leaves it out, and the store says so.
 */
#ifndef NW_CODECAP_H
#define NW_CODECAP_H

#include <stdbool.h>
#include <stdint.h>

#include "model/codestore.h"
#include "model/measurement.h"
#include "record/session.h"
#include "symbol/kallsyms.h"
#include "symbol/perfmap.h"
#include "symbol/symbol.h"
#include "util/hash.h"

#define NW_CODE_FUNC_CAP_DEFAULT (64u * 1024)
#define NW_CODE_TOTAL_CAP_DEFAULT (8u * 1024 * 1024)

struct nw_codecap_opts {
	bool off;                /* --no-code: store nothing */
	uint64_t func_cap;       /* bytes of one function at most; 0: the default */
	uint64_t total_cap;      /* bytes of all functions at most; 0: the default */
	const char *kcore;       /* the kernel's memory as an ELF core; NULL: /proc/kcore */
};

struct nw_codecap_func;
struct nw_codecap_pc;
struct nw_codecap_jit;
struct nw_codecap_map;

struct nw_codecap {
	struct nw_codecap_opts o;
	struct nw_symbolizer *sym;     /* the recorder's (borrowed) */
	struct nw_codecap_func *funcs; /* every function seen, by first sight */
	size_t nfuncs, cap_funcs;
	struct nw_index func_ix;       /* by (module, start) */
	struct nw_codecap_pc *pcs;     /* every distinct (module, address) seen: its function */
	size_t npcs, cap_pcs;
	struct nw_index pc_ix;
	struct nw_codestore *strings;  /* file and function names, interned once */
	struct nw_codestore *store;    /* what the last build selected (the model's m->code) */
	uint64_t signature;            /* of that selection: a new store only when it moves */
	uint64_t generation;
	/* JIT code read from the processes by the listener. */
	const struct nw_session *session;
	struct nw_session_hooks hooks;
	struct nw_codecap_jit *jit;
	size_t njit, cap_jit;
	uint32_t *jit_order;           /* indices of jit by (pid, start), for lookups per sample */
	size_t cap_order;
	uint64_t jit_bytes;
	struct nw_codecap_map *maps;   /* each process's perf map, read again when it grew */
	size_t nmaps, cap_maps;
	const struct nw_epoch *anon_epoch; /* the epoch last asked about, and whether */
	bool anon_epoch_has;               /* it maps anonymous code */
	/* /proc/kcore: its loadable segments, read once. */
	int kcore_state;               /* 0 not opened yet, 1 open (kcore_fd), -1 not readable */
	int kcore_fd;
	struct { uint64_t vaddr, offset, size; } *kcore;
	size_t nkcore;
};

/* An empty capture reading files through @sym.  -ENOMEM. */
int nw_codecap_init(struct nw_codecap *cc, struct nw_symbolizer *sym);
void nw_codecap_fini(struct nw_codecap *cc);

/*
 * Sets the caps and, unless @o->off, listens to @s for JIT code (read at
 * the first sample of each new PC in anonymous memory).  -ENOSPC when
 * the session has no room for another listener.
 */
int nw_codecap_start(struct nw_codecap *cc, struct nw_session *s,
		     const struct nw_codecap_opts *o);

/*
 * Brings the store up to date with @m (the recorder's model, its symbols
 * done): every function with a PC in a tree found, weighed by its own
 * samples, selected within the caps, read where new; m->code then points
 * at the store (the capture's: it stays valid until the next update or
 * nw_codecap_fini()).  @ksyms: the kernel's symbols (NULL: none read).
 * Nothing when capturing is off.  -ENOMEM.
 */
int nw_codecap_update(struct nw_codecap *cc, struct nw_measurement *m,
		      const struct nw_kallsyms *ksyms);

#endif
