/* SPDX-License-Identifier: MIT */
/*
 * Reader for one perf_event mmap ring: a metadata page followed by a
 * power-of-two data area.  data_head is loaded with acquire, records are
 * handed out in order, and data_tail is stored with release once they are
 * consumed.  A record that wraps the end of the data area is copied into a
 * bounce buffer so callers always see contiguous bytes.
 */
#ifndef NW_RING_H
#define NW_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct nw_ring {
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;        /* bytes in the data area, a power of two */
	unsigned char *bounce; /* holds a record that wraps the end */
	uint64_t bad_records; /* headers with an impossible size: ring resynced */
};

/*
 * Called once per record with its header and all of its bytes (size >=
 * sizeof(header), size == header->size).  A negative return stops the read
 * and is passed back; the record is then not consumed.
 */
typedef int (*nw_ring_fn)(const struct perf_event_header *hdr, const void *rec, size_t size,
			  void *arg);

/*
 * Sets up @ring over a mapping of @len bytes at @base (the metadata page,
 * then the data area).  The data area's offset and size come from the
 * metadata page when the kernel fills them in, else one page and len - page.
 * Fails with -EINVAL for a data area that is not a power of two, -ENOMEM.
 */
int nw_ring_init(struct nw_ring *ring, void *base, size_t len);
void nw_ring_fini(struct nw_ring *ring);

/*
 * Hands every complete record now in the ring to @fn, then releases them to
 * the kernel.  Returns the number of records handed out, or @fn's negative
 * return.  A record whose header claims a size below 8 or beyond the unread
 * bytes means the reader lost track: the ring is skipped to data_head and
 * counted in bad_records.
 */
int nw_ring_read(struct nw_ring *ring, nw_ring_fn fn, void *arg);

/*
 * nw_ring_read() without the release: the records stay in the ring, so the
 * bytes handed to @fn stay valid (the kernel does not write over them) until
 * nw_ring_release(@ring, *@tail), except a record that wraps the end of the
 * data area, which @fn gets in ring->bounce, valid only during the call.
 * *@tail is where the walk stopped (after the last record handed out when
 * @fn never failed).  Returns as nw_ring_read().
 */
int nw_ring_peek(struct nw_ring *ring, nw_ring_fn fn, void *arg, uint64_t *tail);
/* Gives the kernel back everything before @tail (from nw_ring_peek()). */
void nw_ring_release(struct nw_ring *ring, uint64_t tail);

/* Bytes written by the kernel and not yet consumed. */
uint64_t nw_ring_pending(const struct nw_ring *ring);

#endif
