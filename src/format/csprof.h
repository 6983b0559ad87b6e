/* SPDX-License-Identifier: MIT */
/*
 * HPC_CSPROF files: one per thread, holding the thread's process epochs and
 * one calling context tree per (thread, epoch).  The layout follows
 * DESIGN.md ("HPC_CSPROF file format"): little-endian, version 01.01,
 * num_chunks 3, epoch 0 newest, trees in "HPC_CSTREE" 01.00 with nodes in
 * depth-first preorder, nothing after the last tree.
 */
#ifndef NW_CSPROF_H
#define NW_CSPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/cct.h"

#define NW_CSPROF_FLAG_ASYNC (1u << 1)
#define NW_CSPROF_FLAG_REAL  (1u << 2)

struct nw_csprof_metric {
	char *name;        /* "cpu-clock:samples", "cpu-clock:period" */
	uint64_t flags;    /* NW_CSPROF_FLAG_* */
	uint64_t period;   /* sample period (0 in frequency mode) */
};

struct nw_csprof_module {
	char *name;        /* module path */
	uint64_t vaddr;    /* ELF virtual address the mapping's first byte has */
	uint64_t mapped;   /* where that byte was mapped */
};

struct nw_csprof_epoch {
	uint32_t nmodules;
	struct nw_csprof_module *modules;
};

struct nw_csprof_tree {
	uint32_t epoch;        /* index into epochs (0 = newest) */
	struct nw_cct *cct;    /* cct->nmetrics == nmetrics */
};

struct nw_csprof {
	char *target;
	uint32_t nmetrics;
	struct nw_csprof_metric *metrics;
	uint32_t nepochs;
	struct nw_csprof_epoch *epochs;
	uint32_t ntrees;
	struct nw_csprof_tree *trees;
	uint64_t *totals;      /* read: each metric summed over every node of every tree */
	/*
	 * Writing: nodes in the order of the tree's array (ids are node
	 * indexes, parents still before children), not depth-first preorder.
	 * For checkpoints, whose traces then keep the recorder's node ids.
	 */
	bool index_order;
};

/* Where a read failed: the file offset and what was wrong there. */
struct nw_csprof_error {
	uint64_t offset;
	char msg[160];
};

/*
 * Writes @p to @f.  Node ids are assigned in preorder of each CCT.
 * Fails with -EINVAL when a tree's nmetrics or epoch index is wrong,
 * -EIO on a write error.
 */
int nw_csprof_write(FILE *f, const struct nw_csprof *p);
/*
 * A checkpoint's delta of a file written before (doc/DURABILITY.md,
 * "The journal"): for each tree of @p (as nw_csprof_write() takes
 * it, with index_order), the nodes from @base[t] on, and the metrics of
 * the nodes before @base[t] that changed (cct->changed, which every tree
 * must track).  The file it extends had the same trees in the same order
 * with @base[t] nodes each.  -EINVAL for an untracked tree or a base
 * beyond a tree, -EIO.
 */
int nw_csprof_write_delta(FILE *f, const struct nw_csprof *p, const uint32_t *base);
/* Writes @p to @path (created or truncated). */
int nw_csprof_write_file(const char *path, const struct nw_csprof *p);

/*
 * Applies a delta of nw_csprof_write_delta() to @p, as read from the file
 * (or the delta) it extends: the nodes added, the metrics changed (the
 * metrics' periods stay those of the whole file), @p->totals kept with
 * them.  Checked against @p before use: -EBADMSG with @err,
 * -ENOMEM (@p may then hold part of the delta).
 */
int nw_csprof_apply_delta(struct nw_csprof *p, const void *buf, size_t size,
			  struct nw_csprof_error *err);

/*
 * Parses @size bytes at @buf.  Every count and offset is checked against
 * the size before use: -EBADMSG with @err filled (offset, message) for a
 * truncated or corrupt file, -ENOMEM.  On success *ret is the caller's, to
 * free with nw_csprof_free().
 */
int nw_csprof_read(const void *buf, size_t size, struct nw_csprof **ret,
		   struct nw_csprof_error *err);
/* Reads the file at @path; I/O errors give -errno with err->offset 0. */
int nw_csprof_read_file(const char *path, struct nw_csprof **ret, struct nw_csprof_error *err);

/* Frees @p and everything it owns (trees included); NULL is a no-op. */
void nw_csprof_free(struct nw_csprof *p);

#endif
