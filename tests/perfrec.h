/* SPDX-License-Identifier: MIT */
/*
 * perf_event ring records built byte by byte for the session's and the
 * recorder's tests (test-session.c, test-recorder.c), in the layout of a
 * session's s->fmt: perf_event_header, the fields of s->fmt.sample_type in
 * the kernel's order (include/uapi/linux/perf_event.h), the sample_id
 * trailer of non-sample records.  Each is fed to nw_session_process() and
 * must decode.  Header-only, for cmocka tests.
 */
#ifndef NW_TEST_PERFREC_H
#define NW_TEST_PERFREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record/session.h"

/* The sample id written into the trailer of non-sample records (they are not looked up). */
#define PERFREC_TRAILER_ID 0x1001

struct rec {
	unsigned char b[2048];
	size_t n;
};

static inline void put(struct rec *r, const void *p, size_t n)
{
	assert_true(r->n + n <= sizeof(r->b));
	memcpy(r->b + r->n, p, n);
	r->n += n;
}

static inline void p64(struct rec *r, uint64_t v)
{
	put(r, &v, 8);
}

static inline void p32(struct rec *r, uint32_t v)
{
	put(r, &v, 4);
}

static inline void begin(struct rec *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc };

	r->n = 0;
	put(r, &h, sizeof(h));
}

/* Patches the header's size: the record is complete. */
static inline void end(struct rec *r)
{
	uint16_t size = (uint16_t)r->n;

	assert_int_equal(r->n % 8, 0);
	memcpy(r->b + offsetof(struct perf_event_header, size), &size, 2);
}

/* A NUL-terminated string padded to 8 bytes, as the kernel writes it. */
static inline void pstr(struct rec *r, const char *s)
{
	size_t n = strlen(s) + 1, pad = (8 - n % 8) % 8;
	static const char zeros[8];

	put(r, s, n);
	put(r, zeros, pad);
}

/* The sample_id trailer in the order of include/uapi/linux/perf_event.h. */
static inline void trailer(const struct nw_session *s, struct rec *r, uint32_t pid,
			   uint32_t tid, uint64_t time)
{
	uint64_t t = s->fmt.sample_type;

	assert_true(s->fmt.sample_id_all);
	if (t & PERF_SAMPLE_TID) {
		p32(r, pid);
		p32(r, tid);
	}
	if (t & PERF_SAMPLE_TIME)
		p64(r, time);
	if (t & PERF_SAMPLE_ID)
		p64(r, PERFREC_TRAILER_ID);
	if (t & PERF_SAMPLE_STREAM_ID)
		p64(r, PERFREC_TRAILER_ID);
	if (t & PERF_SAMPLE_CPU)
		p64(r, 0);
	if (t & PERF_SAMPLE_IDENTIFIER)
		p64(r, PERFREC_TRAILER_ID);
}

static inline void feed(struct nw_session *s, const struct rec *r)
{
	assert_int_equal(nw_session_process(s, r->b, r->n), 0);
}

static inline void comm(struct nw_session *s, uint32_t pid, uint32_t tid, const char *name,
			bool exec, uint64_t time)
{
	struct rec r;

	begin(&r, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	p32(&r, pid);
	p32(&r, tid);
	pstr(&r, name);
	trailer(s, &r, pid, tid, time);
	end(&r);
	feed(s, &r);
}

/* A PERF_RECORD_MMAP2 with maj/min/ino (@build_id NULL) or a build-id. */
static inline void mmap2(struct nw_session *s, uint32_t pid, uint64_t addr, uint64_t len,
			 uint64_t pgoff, uint32_t prot, const char *path, const uint8_t *build_id)
{
	struct rec r;

	begin(&r, PERF_RECORD_MMAP2,
	      PERF_RECORD_MISC_USER | (build_id ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	p32(&r, pid);
	p32(&r, pid);
	p64(&r, addr);
	p64(&r, len);
	p64(&r, pgoff);
	if (build_id) {
		unsigned char u[24] = { 20 };

		memcpy(u + 4, build_id, 20);
		put(&r, u, sizeof(u));
	} else {
		p32(&r, 8);      /* maj */
		p32(&r, 1);      /* min */
		p64(&r, 123456); /* ino */
		p64(&r, 0);      /* ino_generation */
	}
	p32(&r, prot);
	p32(&r, MAP_PRIVATE);
	pstr(&r, path);
	trailer(s, &r, pid, pid, 1);
	end(&r);
	feed(s, &r);
}

static inline void task(struct nw_session *s, uint32_t type, uint32_t pid, uint32_t ppid,
			uint32_t tid, uint32_t ptid, uint64_t time)
{
	struct rec r;

	begin(&r, type, 0);
	p32(&r, pid);
	p32(&r, ppid);
	p32(&r, tid);
	p32(&r, ptid);
	p64(&r, time);
	trailer(s, &r, pid, tid, time);
	end(&r);
	feed(s, &r);
}

/* Builds a PERF_RECORD_SAMPLE in @r: leaf first @ips, the registers of s->fmt.regs_mask. */
static inline void make_sample(const struct nw_session *s, struct rec *r, uint32_t pid,
			       uint32_t tid, uint64_t time, uint64_t id, uint64_t period,
			       const uint64_t *ips, size_t n, uint64_t sp)
{
	uint64_t t = s->fmt.sample_type;

	/* The fields written below; a session that asks for more fails here. */
	assert_int_equal(t & ~(uint64_t)(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
					 PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
					 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER),
			 0);
	assert_true(t & PERF_SAMPLE_CALLCHAIN);
	begin(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	if (t & PERF_SAMPLE_IDENTIFIER)
		p64(r, id);
	if (t & PERF_SAMPLE_IP)
		p64(r, n ? ips[0] : 0);
	if (t & PERF_SAMPLE_TID) {
		p32(r, pid);
		p32(r, tid);
	}
	if (t & PERF_SAMPLE_TIME)
		p64(r, time);
	if (t & PERF_SAMPLE_PERIOD)
		p64(r, period);
	/* The kernel's callchain: a context marker, then the user ips. */
	p64(r, n + 1);
	p64(r, (uint64_t)PERF_CONTEXT_USER);
	for (size_t i = 0; i < n; i++)
		p64(r, ips[i]);
	if (t & PERF_SAMPLE_REGS_USER) {
		p64(r, PERF_SAMPLE_REGS_ABI_64);
		for (int b = 0; b < 64; b++) {
			if (!(s->fmt.regs_mask & (1ull << b)))
				continue;
			p64(r, b == s->arch->perf_ip ? (n ? ips[0] : 0)
			       : b == s->arch->perf_sp ? sp
			       : b == s->arch->perf_fp ? sp + 0x40
						       : 0);
		}
	}
	end(r);
}

static inline void sample(struct nw_session *s, uint32_t pid, uint32_t tid, uint64_t time,
			  uint64_t id, uint64_t period, const uint64_t *ips, size_t n)
{
	struct rec r;

	make_sample(s, &r, pid, tid, time, id, period, ips, n, 0x7ffd0000 + tid);
	feed(s, &r);
}

#endif
