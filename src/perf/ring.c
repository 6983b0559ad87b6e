/* SPDX-License-Identifier: MIT */
#include "perf/ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nw_ring_init(struct nw_ring *ring, void *base, size_t len)
{
	struct perf_event_mmap_page *meta = base;
	uint64_t off = meta->data_offset, size = meta->data_size;

	if (!off || !size) {
		off = (uint64_t)sysconf(_SC_PAGESIZE);
		if (len <= off)
			return -EINVAL;
		size = len - off;
	}
	if (off + size > len || !size || (size & (size - 1)))
		return -EINVAL;
	memset(ring, 0, sizeof(*ring));
	ring->bounce = malloc(size < 65536 ? size : 65536);
	if (!ring->bounce)
		return -ENOMEM;
	ring->meta = meta;
	ring->data = (unsigned char *)base + off;
	ring->size = size;
	return 0;
}

void nw_ring_fini(struct nw_ring *ring)
{
	free(ring->bounce);
	ring->bounce = NULL;
}

uint64_t nw_ring_pending(const struct nw_ring *ring)
{
	uint64_t head = __atomic_load_n(&ring->meta->data_head, __ATOMIC_ACQUIRE);

	return head - ring->meta->data_tail;
}

int nw_ring_peek(struct nw_ring *ring, nw_ring_fn fn, void *arg, uint64_t *tailp)
{
	uint64_t head = __atomic_load_n(&ring->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = ring->meta->data_tail;
	uint64_t mask = ring->size - 1;
	/* A record never exceeds 64 KiB: header.size is a u16. */
	uint64_t bounce_cap = ring->size < 65536 ? ring->size : 65536;
	int n = 0, ret = 0;

	if (head - tail > ring->size) {
		/* The kernel never overwrites unread data; a larger gap is corruption. */
		ring->bad_records++;
		tail = head;
	}
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header hdr;
		uint64_t pos = tail & mask;
		const void *rec;

		if (pos + sizeof(hdr) <= ring->size) {
			memcpy(&hdr, ring->data + pos, sizeof(hdr));
		} else {
			size_t first = ring->size - pos;

			memcpy(&hdr, ring->data + pos, first);
			memcpy((unsigned char *)&hdr + first, ring->data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail || hdr.size > bounce_cap) {
			ring->bad_records++;
			tail = head;
			break;
		}
		if (pos + hdr.size <= ring->size) {
			rec = ring->data + pos;
		} else {
			size_t first = ring->size - pos;

			memcpy(ring->bounce, ring->data + pos, first);
			memcpy(ring->bounce + first, ring->data, hdr.size - first);
			rec = ring->bounce;
		}
		ret = fn(&hdr, rec, hdr.size, arg);
		if (ret < 0)
			break;
		tail += hdr.size;
		n++;
	}
	*tailp = tail;
	return ret < 0 ? ret : n;
}

void nw_ring_release(struct nw_ring *ring, uint64_t tail)
{
	__atomic_store_n(&ring->meta->data_tail, tail, __ATOMIC_RELEASE);
}

int nw_ring_read(struct nw_ring *ring, nw_ring_fn fn, void *arg)
{
	uint64_t tail;
	int ret = nw_ring_peek(ring, fn, arg, &tail);

	nw_ring_release(ring, tail);
	return ret;
}
