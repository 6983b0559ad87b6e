/* SPDX-License-Identifier: MIT */
/*
 * What the HPC_CSPROF codecs share (DESIGN.md, "HPC_CSPROF file format"):
 *
 *   csprof.c       the writer of whole files
 *   csprofread.c   the reader, bounds-checked
 *   csprofdelta.c  a checkpoint's deltas: written, and applied to a file read
 *
 * The format's constants and the byte cursors: every integer is encoded
 * and decoded byte by byte, little-endian, so the host's byte order and
 * alignment never matter; the input cursor treats its buffer as
 * untrusted, each field checked against the bytes left before it is read.
 * Internal to src/format/.
 */
#ifndef NW_CSPROFIO_H
#define NW_CSPROFIO_H

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/csprof.h"

#define CSPROF_MAGIC	   "HPC_CSPROF"
#define CSPROF_VERSION	   "01.01"
#define CSTREE_MAGIC	   "HPC_CSTREE"
#define CSTREE_VERSION	   "01.00"
#define MAGIC_LEN	   10
#define VERSION_LEN	   5
#define CSPROF_HEADER_SIZE 24 /* magic, version, endian, u64 num_chunks */
#define CSPROF_NUM_CHUNKS  3
#define CSTREE_HEADER_SIZE 36 /* magic, version, endian, u32, u32, u64, u32 */
#define NODE_FIXED_SIZE	   32 /* id, parent, ip, sp */

/* hpcfile tags: (data_tag << 4) | format, format 0 string, 1 number. */
#define TAG_TARGET	0x00
#define TAG_EVENT_NAME	0x30
#define TAG_PERIOD	0x41
#define TAG_FLAGS	0x51

/* ---- output ---- */

struct csprof_out {
	FILE *f;
	bool failed;
	int err;           /* the errno of the first failed write (ENOSPC...), 0: unknown */
};

static inline void out_bytes(struct csprof_out *o, const void *p, size_t n)
{
	if (!o->failed && n && fwrite(p, 1, n, o->f) != n) {
		o->failed = true;
		o->err = errno;
	}
}

static inline void put_u32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_u64(uint8_t *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b + 4, (uint32_t)(v >> 32));
}

/* Flushes @o's stream: 0, or -errno of the first write that failed. */
static inline int out_end(struct csprof_out *o)
{
	if (!o->failed && fflush(o->f) != 0) {
		o->failed = true;
		o->err = errno;
	}
	if (o->failed || ferror(o->f))
		return o->err ? -o->err : -EIO;
	return 0;
}

static inline void out_u32(struct csprof_out *o, uint32_t v)
{
	uint8_t b[4];

	put_u32(b, v);
	out_bytes(o, b, sizeof(b));
}

static inline void out_u64(struct csprof_out *o, uint64_t v)
{
	uint8_t b[8];

	put_u64(b, v);
	out_bytes(o, b, sizeof(b));
}

/* Checks what the writer cannot encode before writing anything: -EINVAL. */
int nw_csprof_check(const struct nw_csprof *p);

/* ---- input ---- */

struct csprof_in {
	const uint8_t *buf;
	size_t size;
	size_t pos;
	struct nw_csprof_error *err;
	bool mapped;       /* buf is a private mapping of the file: release what was read */
	size_t released;   /* bytes of buf given back so far */
};

__attribute__((format(printf, 3, 4))) static inline int in_fail(struct csprof_in *in,
								 size_t offset, const char *fmt, ...)
{
	va_list ap;

	if (in->err) {
		in->err->offset = offset;
		va_start(ap, fmt);
		vsnprintf(in->err->msg, sizeof(in->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static inline size_t in_left(const struct csprof_in *in)
{
	return in->size - in->pos;
}

/* Fails unless @n bytes are left for @what. */
static inline int in_need(struct csprof_in *in, uint64_t n, const char *what)
{
	if (n > in_left(in))
		return in_fail(in, in->pos, "truncated: %s needs %llu bytes, %zu left", what,
			       (unsigned long long)n, in_left(in));
	return 0;
}

/* Little-endian loads: one unaligned load each where the host is little-endian. */
static inline uint32_t peek_u32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return le32toh(v);
}

static inline uint64_t peek_u64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return le64toh(v);
}

static inline int in_u32(struct csprof_in *in, uint32_t *v, const char *what)
{
	int err = in_need(in, 4, what);

	if (err)
		return err;
	*v = peek_u32(in->buf + in->pos);
	in->pos += 4;
	return 0;
}

static inline int in_u64(struct csprof_in *in, uint64_t *v, const char *what)
{
	int err = in_need(in, 8, what);

	if (err)
		return err;
	*v = peek_u64(in->buf + in->pos);
	in->pos += 8;
	return 0;
}

/* Checks @len bytes equal @expect (a magic, version or endian byte). */
static inline int in_expect(struct csprof_in *in, const char *expect, size_t len, const char *what)
{
	int err = in_need(in, len, what);

	if (err)
		return err;
	if (memcmp(in->buf + in->pos, expect, len) != 0)
		return in_fail(in, in->pos, "bad %s: expected \"%.*s\"", what, (int)len, expect);
	in->pos += len;
	return 0;
}


#endif
