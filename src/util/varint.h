/* SPDX-License-Identifier: MIT */
/*
 * LEB128 varints (7 bits a byte, low first, the high bit set on all but the
 * last) and zigzag for signed ones: what the traces, the sections' logs and
 * the checkpoints' deltas encode their numbers with.  Header only: the
 * runtime (libnarwhal), which links nothing of the profiler, uses it too.
 */
#ifndef NW_VARINT_H
#define NW_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes a varint of 64 bits takes. */
#define NW_VARINT_MAX 10

static inline uint64_t nw_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t nw_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes @v at @p (room for NW_VARINT_MAX bytes); returns the byte after it. */
static inline uint8_t *nw_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/*
 * Reads the varint at @buf[*pos] into @ret, moving *pos past it: 0, or -1
 * when it runs past @end or holds more than 64 bits (*pos then undefined).
 */
static inline int nw_get_varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*pos >= end)
			return -1;
		b = buf[(*pos)++];
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -1;
}

#endif
