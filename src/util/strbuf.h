/* SPDX-License-Identifier: MIT */
/*
 * Small string and array helpers shared by every layer: a growing string
 * buffer with printf-style appends that remembers an allocation failure
 * (so a writer checks once, at the end), a formatted strdup, and the one
 * "make room in a growing array" helper.
 */
#ifndef NW_STRBUF_H
#define NW_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nw_strbuf {
	char *s;       /* NUL-terminated once anything was added; NULL before */
	size_t len, cap;
	bool failed;   /* an append ran out of memory: the contents are cut */
};

__attribute__((format(printf, 2, 3))) void nw_sb_printf(struct nw_strbuf *b, const char *fmt,
							 ...);
void nw_sb_puts(struct nw_strbuf *b, const char *s);
void nw_sb_putc(struct nw_strbuf *b, char c);
/* The contents, "" when empty; never NULL (a failed buffer gives what it holds). */
const char *nw_sb_str(const struct nw_strbuf *b);
/* Hands the string over (the caller frees it); NULL when an append failed.  Resets @b. */
char *nw_sb_take(struct nw_strbuf *b);
void nw_sb_reset(struct nw_strbuf *b);
/*
 * Room for @n more bytes at the end of @b, for numbers written in place
 * (nw_put_u64() and the like): where to write them; NULL when out of
 * memory (b->failed).  nw_sb_end() then ends the contents where they stop.
 */
char *nw_sb_room(struct nw_strbuf *b, size_t n);
void nw_sb_end(struct nw_strbuf *b, const char *end);
/* Cuts the contents to their first @len bytes (no-op when shorter). */
void nw_sb_truncate(struct nw_strbuf *b, size_t len);
void nw_sb_fini(struct nw_strbuf *b);

/* A malloc'd formatted string, NULL on ENOMEM. */
__attribute__((format(printf, 1, 2))) char *nw_strdup_printf(const char *fmt, ...);

/* The value of hex digit @c (either case), or -1. */
static inline int nw_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "00" to "99": two digits per division. */
extern const char nw_digit_pairs[200];

/* The number of decimal digits of @v (1 for 0). */
static inline unsigned nw_u64_digits(uint64_t v)
{
	unsigned n = 1;

	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/*
 * Appends the decimal digits of @v at @p (20 bytes at most); returns the
 * end.  Inline, from the last digit pair back: exports write numbers by
 * the tens of millions, and a digit at a time was a third of some.
 */
static inline char *nw_put_u64(char *p, uint64_t v)
{
	char *end = p + nw_u64_digits(v), *q = end;

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		q -= 2;
		q[0] = nw_digit_pairs[d];
		q[1] = nw_digit_pairs[d + 1];
	}
	if (v >= 10) {
		q -= 2;
		q[0] = nw_digit_pairs[v * 2];
		q[1] = nw_digit_pairs[v * 2 + 1];
	} else {
		*--q = (char)('0' + v);
	}
	return end;
}
/*
 * Appends @v rounded to hundredths ("12.50", "-0.25") at @p (24 bytes at
 * most for |v| < 1e18); returns the end.  For coordinates written by the
 * million, where printf's "%.2f" is most of an export's time; ties may
 * round the other way from printf's.
 */
char *nw_put_fixed2(char *p, double v);

/* The last path component of @path ("a/b/c" -> "c"; "a/" -> "a/"). */
const char *nw_basename(const char *path);

/*
 * Makes room for @need elements of @size bytes in the array at *@pv, which
 * has room for *@cap: doubles the capacity (from 16) until it fits.  0 or
 * -ENOMEM (the array is unchanged).
 */
int nw_grow_slow(void *pv, size_t *cap, size_t need, size_t size);
static inline int nw_grow(void *pv, size_t *cap, size_t need, size_t size)
{
	/* Inline: the hot loops call it for every element they append. */
	return need <= *cap ? 0 : nw_grow_slow(pv, cap, need, size);
}

/*
 * For an array indexed by dense ids (places, frames) of which *@n entries
 * are set: room for entry @i, the entries from *@n to @i filled with bytes
 * @fill (the caller's "none"), *@n then past @i.  Entries past @i are not
 * touched, so memory follows the ids used, not the capacity.  0 or
 * -ENOMEM (the array is unchanged).
 */
int nw_grow_fill_slow(void *pv, size_t *n, size_t *cap, size_t i, size_t size, int fill);
static inline int nw_grow_fill(void *pv, size_t *n, size_t *cap, size_t i, size_t size, int fill)
{
	return i < *n ? 0 : nw_grow_fill_slow(pv, n, cap, i, size, fill);
}

/*
 * Asks for transparent huge pages under the big array @p of @size bytes
 * (where the system leaves them to madvise): a tree of millions of nodes
 * then costs hundreds of page faults, not hundreds of thousands.  Nothing
 * for small arrays; advice only, so failure changes nothing.
 */
void nw_advise_huge(void *p, size_t size);

/* The @n strings of @v joined by @sep into @buf (@len bytes, cut to fit): @buf. */
const char *nw_join(const char *const *v, size_t n, const char *sep, char *buf, size_t len);

#endif
