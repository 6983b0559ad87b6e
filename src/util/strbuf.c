/* SPDX-License-Identifier: MIT */
#include "util/strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* x86-64 and aarch64 with 4 KiB pages: a page, and a transparent huge page. */
#define SMALL_PAGE ((uintptr_t)4096)
#define HUGE_PAGE ((uintptr_t)2 << 20)

static bool reserve(struct nw_strbuf *b, size_t extra)
{
	size_t need, cap;
	char *s;

	if (b->failed)
		return false;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 64;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			b->failed = true;
			return false;
		}
		cap *= 2;
	}
	s = realloc(b->s, cap);
	if (!s) {
		b->failed = true;
		return false;
	}
	b->s = s;
	b->cap = cap;
	return true;
}

void nw_sb_printf(struct nw_strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n)) {
		b->failed = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void nw_sb_puts(struct nw_strbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (!reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

void nw_sb_putc(struct nw_strbuf *b, char c)
{
	if (!reserve(b, 1))
		return;
	b->s[b->len++] = c;
	b->s[b->len] = '\0';
}

const char *nw_sb_str(const struct nw_strbuf *b)
{
	return b->s ? b->s : "";
}

char *nw_sb_take(struct nw_strbuf *b)
{
	char *s = b->s;

	if (b->failed) {
		nw_sb_fini(b);
		return NULL;
	}
	if (!s)
		s = strdup("");
	memset(b, 0, sizeof(*b));
	return s;
}

void nw_sb_reset(struct nw_strbuf *b)
{
	b->len = 0;
	b->failed = false;
	if (b->s)
		b->s[0] = '\0';
}

char *nw_sb_room(struct nw_strbuf *b, size_t n)
{
	if (b->failed || nw_grow(&b->s, &b->cap, b->len + n + 1, 1)) {
		b->failed = true;
		return NULL;
	}
	return b->s + b->len;
}

void nw_sb_end(struct nw_strbuf *b, const char *end)
{
	b->len = (size_t)(end - b->s);
	b->s[b->len] = '\0';
}

void nw_sb_truncate(struct nw_strbuf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->s[len] = '\0';
	}
}

void nw_sb_fini(struct nw_strbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

char *nw_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

const char *nw_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

int nw_grow_slow(void *pv, size_t *cap, size_t need, size_t size)
{
	void **p = pv;
	size_t c = *cap ? *cap : 16;
	void *v;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return -ENOMEM;
		c *= 2;
	}
	v = realloc(*p, c * size);
	if (!v)
		return -ENOMEM;
	*p = v;
	*cap = c;
	nw_advise_huge(v, c * size);
	return 0;
}

int nw_grow_fill_slow(void *pv, size_t *n, size_t *cap, size_t i, size_t size, int fill)
{
	if (nw_grow(pv, cap, i + 1, size))
		return -ENOMEM;
	memset((char *)*(void **)pv + *n * size, fill, (i + 1 - *n) * size);
	*n = i + 1;
	return 0;
}

const char nw_digit_pairs[200] = "00010203040506070809101112131415161718192021222324"
				  "25262728293031323334353637383940414243444546474849"
				  "50515253545556575859606162636465666768697071727374"
				  "75767778798081828384858687888990919293949596979899";

char *nw_put_fixed2(char *p, double v)
{
	uint64_t h;

	if (v < 0) {
		*p++ = '-';
		v = -v;
	}
	h = (uint64_t)(v * 100 + 0.5);
	p = nw_put_u64(p, h / 100);
	*p++ = '.';
	*p++ = (char)('0' + h / 10 % 10);
	*p++ = (char)('0' + h % 10);
	return p;
}

void nw_advise_huge(void *p, size_t size)
{
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)(SMALL_PAGE - 1);
	uintptr_t end = ((uintptr_t)p + size + SMALL_PAGE - 1) & ~(uintptr_t)(SMALL_PAGE - 1);

	/*
	 * Worth a system call only for arrays of many huge pages, which glibc
	 * maps on their own.  The whole mapping, not its 2 MiB-aligned middle:
	 * a split mapping cannot grow in place, and realloc would copy it.
	 */
	if (size >= 4 * HUGE_PAGE)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
}

const char *nw_join(const char *const *v, size_t n, const char *sep, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? sep : "", v[i]);
	return buf;
}
