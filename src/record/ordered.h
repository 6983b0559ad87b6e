/* SPDX-License-Identifier: MIT */
/*
 * Reading a set of mmap rings (one per CPU) in time order: one read round
 * takes every record the rings hold, sorts them by time across the rings
 * and hands them out, then gives the rings back to the kernel.  A round in
 * which one ring alone holds records hands them out where they lie; else
 * each ring is peeked and its records stay in it until the round ends (only
 * a record that wraps the end of a ring is copied).  Times come from
 * perf/record.c (nw_record_time()), which owns the records' layout.
 */
#ifndef NW_ORDERED_H
#define NW_ORDERED_H

#include <stddef.h>
#include <stdint.h>

#include "perf/record.h"
#include "perf/ring.h"

/* Where one record of a read round is, and when it happened. */
struct nw_ordered_ref {
	uint64_t time;
	uint64_t seq;              /* arrival order: keeps a ring's own order on equal times */
	const unsigned char *rec;  /* in its ring, held until the round ends; NULL: copied */
	size_t off;                /* where in the copies, when copied */
	uint32_t size;
};

/* The reader's buffers, reused from round to round. */
struct nw_ordered {
	unsigned char *copies;     /* records that wrapped their ring's end */
	size_t len, cap;
	struct nw_ordered_ref *refs;
	size_t nrefs, cap_refs;
	uint64_t *held;            /* per ring: its read position, released after the round */
	size_t cap_held;
};

/*
 * Records from beside the rings (the in-kernel unwinder's ring buffer):
 * collect() adds each with nw_ordered_copy() at the start of a round.
 */
struct nw_ordered_extra {
	int (*collect)(void *arg, struct nw_ordered *o);
	void *arg;
};

/* Adds a copy of the record @rec of @size bytes to the round.  -ENOMEM. */
int nw_ordered_copy(struct nw_ordered *o, const struct nw_sample_format *fmt, const void *rec,
		    size_t size);

/* Called once per record, in time order, with all of its bytes. */
typedef void (*nw_ordered_fn)(void *arg, const void *rec, size_t size);

void nw_ordered_init(struct nw_ordered *o);
void nw_ordered_fini(struct nw_ordered *o);

/*
 * One read round over @rings[0..@n) (a ring whose meta is NULL is not
 * mapped and skipped) and @extra (NULL: none), records laid out as @fmt
 * says, each handed to @fn.
 * Returns the records handed out, or -ENOMEM (then nothing was released:
 * the records are read again next round).
 */
int nw_ordered_read(struct nw_ordered *o, struct nw_ring *rings, size_t n,
		    const struct nw_sample_format *fmt, const struct nw_ordered_extra *extra,
		    nw_ordered_fn fn, void *arg);

#endif
