/* SPDX-License-Identifier: MIT */
/*
 * Calling context tree.  Node 0 is the root (ip 0).  A node's children are
 * keyed by ip; one hash table over (parent, ip), hashed by the node's path
 * from the root (so a stack's slots are known before any node is read),
 * finds a child without scanning its siblings.  Each node carries an sp
 * tag (the first non-zero sp seen for it, 0 where unknown) and nmetrics
 * u64 metrics.  Nodes live in one growing array, so memory grows with
 * distinct paths, not with samples.
 */
#ifndef NW_CCT_H
#define NW_CCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NW_CCT_NONE UINT32_MAX
#define NW_CCT_ROOT 0u

/*
 * One frame of a sample: leaf first; callers hold return addresses.  The
 * frame a signal handler interrupted holds the exact PC although frames
 * of its own address space lie below it: NW_IP_EXACT marks it.
 */
struct nw_frame {
	uint64_t ip;
	uint64_t sp; /* CFA / stack pointer of the frame, 0 where unknown */
};

/*
 * Bit 62 of a user-space ip (bit 63 clear; no user address of x86-64 or
 * aarch64 comes near it): the frame holds an exact PC, not a return
 * address, though it has callees of its own space.  Part of the node's
 * key, stripped (nw_ip_pc()) before any address lookup.
 */
#define NW_IP_EXACT (1ull << 62)

/* Kernel addresses have the top bit set on x86-64 and aarch64. */
static inline bool nw_ip_is_kernel(uint64_t ip)
{
	return ip >> 63;
}

/* The PC of a node's or frame's @ip: without NW_IP_EXACT. */
static inline uint64_t nw_ip_pc(uint64_t ip)
{
	return nw_ip_is_kernel(ip) ? ip : ip & ~NW_IP_EXACT;
}

/*
 * 32 bytes, packed: trees of millions of nodes are the bulk of a
 * measurement in memory (x86-64 and aarch64 load the 4-aligned u64s
 * without penalty inside a cache line).
 */
struct __attribute__((packed, aligned(4))) nw_cct_node {
	uint64_t ip;
	uint64_t sp;
	uint32_t parent;       /* NW_CCT_NONE for the root */
	uint32_t first_child;  /* NW_CCT_NONE when a leaf */
	uint32_t next_sibling; /* NW_CCT_NONE when last */
	/*
	 * A hash of the ips from the root down to the node: what the index
	 * is keyed by.  A stack's hashes need no node of the tree, so an
	 * insert fetches the slots of all its levels at once (cct.c).
	 */
	uint32_t hash;
};

struct nw_cct {
	unsigned nmetrics;
	uint32_t n, cap;
	struct nw_cct_node *nodes;
	uint64_t *metrics;     /* n * nmetrics, node-major */
	/*
	 * Where tracked (nw_cct_track_changes()): a bit per node whose metrics
	 * or sp tag changed since the last nw_cct_clear_changes(), set by
	 * whoever changes the metrics (nw_cct_mark_changed()) and by the tree
	 * when a tag goes from unknown to known.  A checkpoint writes those
	 * nodes' tags and metrics and the nodes added, not the whole tree.
	 */
	uint64_t *changed;
	uint32_t *slots;       /* open-addressing index over (parent, ip); NULL: none yet */
	uint32_t nslots;       /* power of two */
	uint32_t *path;        /* nw_cct_insert: the last path's nodes, root's child first */
	uint32_t npath, cap_path;
};

/* A tree holding only the root.  NULL on allocation failure. */
struct nw_cct *nw_cct_new(unsigned nmetrics);
/*
 * The same in room for exactly @cap nodes (1 or more) and without the
 * index: for readers that know the size (nw_cct_append_unlinked()); a
 * thousand small trees then hold no slack.
 */
struct nw_cct *nw_cct_new_sized(unsigned nmetrics, uint32_t cap);
/* Frees @cct; NULL is a no-op. */
void nw_cct_free(struct nw_cct *cct);

/*
 * The child of @parent keyed @ip, created (with sp tag @sp) when missing;
 * a zero sp tag is replaced by a later non-zero @sp.  Returns its index, or
 * NW_CCT_NONE on allocation failure.
 */
uint32_t nw_cct_child(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp);
/*
 * Appends a child of @parent without looking for an equal one (readers of
 * files that list each node once): O(1), no index.  The child goes first
 * among its siblings (nw_cct_reverse_children() restores append order).
 * The (parent, ip) index is dropped and rebuilt by the next nw_cct_child().
 * NW_CCT_NONE on allocation failure.
 */
uint32_t nw_cct_append(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp);
/*
 * For readers that add a whole tree in node order: appends a node below
 * @parent without linking it into its parent's children and without
 * clearing its metrics (the caller writes them), in room reserved before
 * and with the index dropped (nw_cct_drop_index()); NW_CCT_NONE otherwise.
 * nw_cct_link_in_order() links every node afterwards.
 */
uint32_t nw_cct_append_unlinked(struct nw_cct *cct, uint32_t parent, uint64_t ip, uint64_t sp);
/* Links every node into its parent's children, each list in node index order. */
void nw_cct_link_in_order(struct nw_cct *cct);
/* Room for @n nodes without growing.  -ENOMEM. */
int nw_cct_reserve(struct nw_cct *cct, uint32_t n);
/*
 * A finished tree's room cut to its nodes (not a tree that tracks changes
 * or keeps its index): trees grown by doubling, held side by side.
 */
void nw_cct_trim(struct nw_cct *cct);
/*
 * For trees copied into one side by side: adds @n nodes to @cct, left for
 * nw_cct_copy_below() to fill, and drops the index.  The first new node's
 * number, or NW_CCT_NONE on allocation failure.
 */
uint32_t nw_cct_extend(struct nw_cct *cct, uint32_t n);
/*
 * Copies the nodes of @src but its root, with their first @nm metrics,
 * into the nodes @src node j becomes @base + j - 1 of @dst (added by
 * nw_cct_extend()), below @dst's node @at, which has no children yet and
 * takes the root's metrics: the tree nw_cct_append() would make of them in
 * @src's order.  Copies into ranges of their own, below nodes of their
 * own, may run side by side.
 */
void nw_cct_copy_below(struct nw_cct *dst, uint32_t at, uint32_t base, const struct nw_cct *src,
		       unsigned nm);
/*
 * Drops the nodes from @n on (never the root): for a tree used as a stack
 * of paths, whose nodes past @n are all below the ones kept.  The kept
 * nodes' child lists may then name nodes that are gone.
 */
void nw_cct_truncate(struct nw_cct *cct, uint32_t n);
/* Reverses every sibling list. */
void nw_cct_reverse_children(struct nw_cct *cct);
/* Frees the (parent, ip) index and the insert cache: a finished tree (rebuilt on demand). */
void nw_cct_drop_index(struct nw_cct *cct);
/* The child of @parent keyed @ip, or NW_CCT_NONE. */
uint32_t nw_cct_find(const struct nw_cct *cct, uint32_t parent, uint64_t ip);

/*
 * Whether node @node's ip is a return address, looked up at PC - 1: it
 * has a callee in its own address space (user or kernel) and is not
 * marked NW_IP_EXACT.  A leaf, and the user frame the kernel was entered
 * from (a system call, a fault, an interrupt: only kernel frames below),
 * hold exact PCs.
 */
static inline bool nw_cct_is_return(const struct nw_cct *cct, uint32_t node)
{
	uint64_t ip = cct->nodes[node].ip;
	bool kernel = nw_ip_is_kernel(ip);

	if (!kernel && (ip & NW_IP_EXACT))
		return false;
	for (uint32_t c = cct->nodes[node].first_child; c != NW_CCT_NONE;
	     c = cct->nodes[c].next_sibling)
		if (nw_ip_is_kernel(cct->nodes[c].ip) == kernel)
			return true;
	return false;
}

/*
 * Walks @n frames (leaf first) from the root and returns the leaf's node,
 * or NW_CCT_NONE on allocation failure (the tree stays valid).  The part
 * shared with the previous insert's path is followed without hashing.
 */
uint32_t nw_cct_insert(struct nw_cct *cct, const struct nw_frame *frames, size_t n);

/* Starts tracking which nodes' metrics change, none so far.  -ENOMEM. */
int nw_cct_track_changes(struct nw_cct *cct);
/* No node changed from now on. */
void nw_cct_clear_changes(struct nw_cct *cct);

static inline void nw_cct_mark_changed(struct nw_cct *cct, uint32_t node)
{
	if (cct->changed)
		cct->changed[node >> 6] |= 1ull << (node & 63);
}

static inline bool nw_cct_is_changed(const struct nw_cct *cct, uint32_t node)
{
	return cct->changed && (cct->changed[node >> 6] >> (node & 63) & 1);
}

static inline uint64_t *nw_cct_metrics(const struct nw_cct *cct, uint32_t node)
{
	return cct->metrics + (size_t)node * cct->nmetrics;
}

/*
 * Fills @order (room for cct->n entries) with the node indexes in
 * depth-first preorder, root first, children in sibling order.
 * Returns the count written (cct->n).
 */
uint32_t nw_cct_preorder(const struct nw_cct *cct, uint32_t *order);
/* The same for the subtree of @top (room for its node count), @top first. */
uint32_t nw_cct_subtree_preorder(const struct nw_cct *cct, uint32_t top, uint32_t *order);

/*
 * Adds every node of @src into @dst along the same path, with each ip
 * replaced by map(ip, node, arg) (identity when @map is NULL), summing the
 * first min(dst, src) metrics.  Fails with -ENOMEM (dst then holds part of
 * src).
 */
typedef uint64_t (*nw_cct_map_fn)(const struct nw_cct *src, uint32_t node, void *arg);
int nw_cct_merge(struct nw_cct *dst, const struct nw_cct *src, nw_cct_map_fn map, void *arg);
/* The same with @src's root landing on node @at of @dst (its subtrees below @at). */
int nw_cct_merge_at(struct nw_cct *dst, uint32_t at, const struct nw_cct *src, nw_cct_map_fn map,
		    void *arg);

#endif
