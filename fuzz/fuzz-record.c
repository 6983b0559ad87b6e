/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the perf_event record decoder and the ring reader.
 *
 * Input: byte 0 picks a sample format (the ones narwhal-record opens
 * events with, and others the decoder must refuse or handle), byte 1 the
 * size of a fake ring and byte 2 where in it the reader's tail starts; the
 * rest is (1) decoded as one record, as it is and with its header's size
 * set to its length, and (2) written into the fake ring, as
 * the kernel would, and read back with nw_ring_read(), each record handed
 * out decoded in turn.  Every pointer the decoder hands back must lie
 * inside the record it decoded: the ring's data area is one allocation,
 * so the sanitizer alone would miss a read past a record into the next.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf/record.h"
#include "perf/ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SAMPLE_ID_BITS                                                                             \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define SESSION_BITS                                                                               \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER)

/* Formats chosen by the first input byte. */
static const struct nw_sample_format formats[] = {
    /* narwhal-record --call-graph fp (x86-64: ip, sp, bp) */
    {SESSION_BITS, (1u << 8) | (1u << 7) | (1u << 6), true},
    /* --call-graph dwarf (x86-64: the 17 registers of the unwinder) */
    {SESSION_BITS | PERF_SAMPLE_STACK_USER, 0x1ff | (0xffull << 16), true},
    /* Everything the decoder knows, every register. */
    {SAMPLE_ID_BITS | PERF_SAMPLE_IP | PERF_SAMPLE_ADDR | PERF_SAMPLE_PERIOD |
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
     UINT64_MAX, true},
    /* No sample_id trailer on the other records. */
    {SESSION_BITS, 0x7, false},
    /* Layouts the decoder does not decode: must be refused. */
    {PERF_SAMPLE_IP | PERF_SAMPLE_READ, 0, true},
    {PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK, 0, false},
    /* Nothing at all. */
    {0, 0, true},
    {0, 0, false},
};

/* Aborts unless [p, p + n) lies inside [base, base + size). */
static void inside(const void *base, size_t size, const void *p, uint64_t n)
{
	const unsigned char *b = base, *q = p;

	if (q < b || q > b + size || n > (uint64_t)(b + size - q))
		abort();
}

/* A C string inside the record: its NUL must be there too. */
static void inside_str(const void *base, size_t size, const char *s)
{
	const unsigned char *b = base;

	inside(base, size, s, 1);
	if (!memchr(s, 0, size - (size_t)((const unsigned char *)s - b)))
		abort();
}

/* Decodes one record and checks what the decoder hands back against its bytes. */
static int decode(const struct nw_sample_format *fmt, const void *buf, size_t size)
{
	struct nw_record r;
	volatile uint64_t sink = 0;
	uint64_t time = nw_record_time(fmt, buf, size);
	int ret;

	ret = nw_record_decode(fmt, buf, size, &r);
	if (ret) {
		if (ret != -EBADMSG)
			abort();
		return ret;
	}
	/* The time read for the rings' ordering is the one the record decodes to. */
	if (time != r.sid.time)
		abort();
	switch (r.type) {
	case PERF_RECORD_SAMPLE: {
		const struct nw_sample *s = &r.sample;

		if (s->nr) {
			inside(buf, size, s->ips, s->nr * 8);
			sink += nw_rd64(s->ips, s->nr - 1);
		}
		if (s->regs_abi && s->nregs) {
			inside(buf, size, s->regs, (uint64_t)s->nregs * 8);
			sink += nw_rd64(s->regs, s->nregs - 1);
		}
		if (s->stack_size) {
			inside(buf, size, s->stack, s->stack_size);
			if (s->dyn_size > s->stack_size)
				abort();
			sink += s->stack[s->stack_size - 1];
		}
		break;
	}
	case PERF_RECORD_MMAP2:
		inside_str(buf, size, r.mmap2.filename);
		if (r.mmap2.build_id_size > sizeof(r.mmap2.build_id))
			abort();
		break;
	case PERF_RECORD_COMM:
		inside_str(buf, size, r.comm.comm);
		break;
	default:
		break;
	}
	(void)sink;
	return 0;
}

struct ring_arg {
	const struct nw_sample_format *fmt;
	const struct nw_ring *ring;
	uint64_t bytes;
};

static int on_record(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	struct ring_arg *a = arg;
	const unsigned char *p = rec;

	/* Whole records only, inside the ring or its bounce buffer. */
	if (size < sizeof(*hdr) || size != hdr->size)
		abort();
	if (p != a->ring->bounce)
		inside(a->ring->data, a->ring->size, rec, size);
	else if (size > a->ring->size)
		abort();
	a->bytes += size;
	decode(a->fmt, rec, size);
	return 0;
}

/*
 * Writes @data into a ring of 64 << (@size_sel % 6) bytes from @start on,
 * wrapping, and reads it: the kernel's side of the ring, then ours.
 */
static void ring_read(const struct nw_sample_format *fmt, uint8_t size_sel, uint8_t start,
		      const uint8_t *data, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t ring_size = 64u << (size_sel % 6);
	struct perf_event_mmap_page *meta;
	struct ring_arg a = {.fmt = fmt};
	struct nw_ring ring;
	unsigned char *base;
	uint64_t tail, written;
	int n;

	base = calloc(1, (size_t)page + ring_size);
	if (!base)
		abort();
	meta = (struct perf_event_mmap_page *)base;
	meta->data_offset = (uint64_t)page;
	meta->data_size = ring_size;
	if (nw_ring_init(&ring, base, (size_t)page + ring_size) != 0)
		abort();
	a.ring = &ring;
	/* A tail far along (the counters never wrap to 0 in practice, but may be large). */
	tail = (uint64_t)start * 8 + (size_sel & 0x80 ? UINT64_MAX - 255 : 0);
	meta->data_tail = tail;
	written = size < ring_size ? size : ring_size;
	for (uint64_t i = 0; i < written; i++)
		ring.data[(tail + i) & (ring_size - 1)] = data[i];
	/* size_sel bit 6: claim more than the ring holds (corrupt head). */
	meta->data_head = tail + written + (size_sel & 0x40 ? ring_size : 0);
	n = nw_ring_read(&ring, on_record, &a);
	if (n < 0)
		abort(); /* on_record never fails */
	if (a.bytes > written)
		abort();
	/* Everything was consumed or skipped but a partial header. */
	if (meta->data_head - meta->data_tail >= sizeof(struct perf_event_header))
		abort();
	nw_ring_fini(&ring);
	free(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct nw_sample_format *fmt;

	if (size < 3)
		return 0;
	fmt = &formats[data[0] % (sizeof(formats) / sizeof(formats[0]))];
	decode(fmt, data + 3, size - 3);
	if (size - 3 >= sizeof(struct perf_event_header) && size - 3 <= UINT16_MAX) {
		/* An exact-size copy, so that the sanitizer sees any read past it. */
		unsigned char *rec = malloc(size - 3);
		uint16_t len = (uint16_t)(size - 3);

		if (!rec)
			abort();
		memcpy(rec, data + 3, size - 3);
		memcpy(rec + offsetof(struct perf_event_header, size), &len, sizeof(len));
		decode(fmt, rec, size - 3);
		free(rec);
	}
	ring_read(fmt, data[1], data[2], data + 3, size - 3);
	return 0;
}
