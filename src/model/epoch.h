/* SPDX-License-Identifier: MIT */
/*
 * Process address maps and epochs.  An epoch is the set of
 * executable mappings of a process at one point in time; a new one begins
 * lazily, at the first sample after the set changed (dlopen, exec).
 * Epochs are immutable once made, so a sample resolves against its own.
 */
#ifndef NW_EPOCH_H
#define NW_EPOCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/module.h"

/* One executable mapping. */
struct nw_map {
	uint64_t start, end;         /* [start, end) */
	uint64_t pgoff;              /* file offset of start */
	uint64_t vaddr;              /* ELF virtual address of start (pgoff without ELF facts) */
	uint32_t module;             /* index in the module table */
};

struct nw_epoch {
	uint32_t index;              /* 0 = the process's first epoch */
	uint32_t n;
	struct nw_map maps[];        /* sorted by start, disjoint */
};

/* A process's executable mappings now, and the epochs made so far. */
struct nw_addrspace {
	struct nw_map *cur;
	uint32_t n, cap;
	bool changed;                /* cur differs from the newest epoch */
	struct nw_epoch **epochs;    /* oldest first */
	uint32_t nepochs, cap_epochs;
};

void nw_addrspace_init(struct nw_addrspace *as);
void nw_addrspace_fini(struct nw_addrspace *as);
/*
 * Adds an executable mapping of @module (@vaddr: the ELF address of its
 * first byte); older mappings it overlaps are cut.  -ENOMEM.
 */
int nw_addrspace_map(struct nw_addrspace *as, uint64_t start, uint64_t len, uint64_t pgoff,
		     uint64_t vaddr, uint32_t module);
/* Forgets every mapping (exec). */
void nw_addrspace_reset(struct nw_addrspace *as);
/* Copies @src's current mappings into empty @dst (fork).  -ENOMEM. */
int nw_addrspace_copy(struct nw_addrspace *dst, const struct nw_addrspace *src);
/*
 * The epoch samples resolve against now: the newest one, or a new one made
 * from the current mappings when they changed.  NULL on allocation failure.
 */
const struct nw_epoch *nw_addrspace_epoch(struct nw_addrspace *as);
/* A new epoch of @n mappings (copied, then sorted by start) with @index; NULL on ENOMEM. */
struct nw_epoch *nw_epoch_new(const struct nw_map *maps, uint32_t n, uint32_t index);
/* The mapping of @epoch that holds @addr, or NULL. */
const struct nw_map *nw_epoch_find(const struct nw_epoch *epoch, uint64_t addr);

#endif
