/* SPDX-License-Identifier: MIT */
/*
 * The helpers of src/util: the hash index (util/hash.h) over an array the
 * test owns, with a good hash, a constant one (every key collides) and
 * growth; the hash helpers; the string buffer, nw_strdup_printf,
 * nw_basename, hex digits, nw_grow and nw_grow_fill (util/strbuf.h); the
 * binary search (util/bsearch.h); files read whole, written whole, made
 * whole or not at all, and written behind, gzipped or not (util/file.h);
 * results made side by side and taken in order (util/parallel.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <zlib.h>

#include "util/bsearch.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/parallel.h"
#include "util/strbuf.h"

/* ---- the index, over an array of strings ---- */

struct names {
	char **v;
	size_t n, cap;
	struct nw_index ix;
	bool collide;         /* every key hashes alike */
	unsigned rehashes;    /* calls of the rehash callback */
};

static uint64_t key_hash(const struct names *t, const char *key)
{
	return t->collide ? 42 : nw_hash_str(NW_HASH_SEED, key);
}

static bool name_eq(const void *ctx, uint32_t entry, const void *key)
{
	const struct names *t = ctx;

	return strcmp(t->v[entry], key) == 0;
}

static uint64_t name_hash(const void *ctx, uint32_t entry)
{
	struct names *t = (struct names *)ctx;

	t->rehashes++;
	return key_hash(t, t->v[entry]);
}

/* The entry of @key, added when new. */
static uint32_t intern(struct names *t, const char *key)
{
	uint32_t *slot = nw_index_slot(&t->ix, key_hash(t, key), name_eq, name_hash, t, key);

	assert_non_null(slot);
	if (*slot != NW_INDEX_NONE)
		return *slot;
	assert_int_equal(nw_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v)), 0);
	t->v[t->n] = strdup(key);
	assert_non_null(t->v[t->n]);
	nw_index_fill(&t->ix, slot, (uint32_t)t->n);
	return (uint32_t)t->n++;
}

static uint32_t find(const struct names *t, const char *key)
{
	return nw_index_find(&t->ix, key_hash(t, key), name_eq, t, key);
}

static void names_fini(struct names *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	nw_index_fini(&t->ix);
	assert_null(t->ix.slots);
	assert_int_equal(t->ix.nslots, 0);
	assert_int_equal(t->ix.n, 0);
}

static void check_many(bool collide, uint32_t count)
{
	struct names t = { .collide = collide };
	char key[32];

	/* Empty: nothing found, and looking does not allocate. */
	assert_int_equal(find(&t, "x"), NW_INDEX_NONE);
	assert_null(t.ix.slots);
	for (uint32_t i = 0; i < count; i++) {
		snprintf(key, sizeof(key), "key-%u", i);
		assert_int_equal(intern(&t, key), i);
		/* At most half full, a power of two. */
		assert_true((uint64_t)t.ix.n * 2 <= t.ix.nslots);
		assert_int_equal(t.ix.nslots & (t.ix.nslots - 1), 0);
	}
	assert_int_equal(t.ix.n, count);
	assert_true(t.rehashes > 0);
	/* Every key is found, and interning it again adds nothing. */
	for (uint32_t i = 0; i < count; i++) {
		snprintf(key, sizeof(key), "key-%u", i);
		assert_int_equal(find(&t, key), i);
		assert_int_equal(intern(&t, key), i);
	}
	assert_int_equal(t.n, count);
	assert_int_equal(t.ix.n, count);
	assert_int_equal(find(&t, "key-"), NW_INDEX_NONE);
	snprintf(key, sizeof(key), "key-%u", count);
	assert_int_equal(find(&t, key), NW_INDEX_NONE);
	names_fini(&t);
}

static void test_index(void **state)
{
	check_many(false, 20000);
}

/* Every key in one probe chain: still exact. */
static void test_index_collisions(void **state)
{
	check_many(true, 500);
}

static void test_index_clear(void **state)
{
	struct names t = { 0 };
	uint32_t nslots;

	for (int i = 0; i < 100; i++) {
		char key[16];

		snprintf(key, sizeof(key), "%d", i);
		intern(&t, key);
	}
	nslots = t.ix.nslots;
	nw_index_clear(&t.ix);
	/* Empty, with the memory kept. */
	assert_int_equal(t.ix.n, 0);
	assert_int_equal(t.ix.nslots, nslots);
	assert_int_equal(find(&t, "7"), NW_INDEX_NONE);
	/* The entries are the caller's: start them again. */
	for (size_t i = 0; i < t.n; i++)
		free(t.v[i]);
	t.n = 0;
	assert_int_equal(intern(&t, "7"), 0);
	assert_int_equal(intern(&t, "8"), 1);
	assert_int_equal(find(&t, "7"), 0);
	assert_int_equal(t.ix.nslots, nslots);
	names_fini(&t);
	/* Clearing and finishing an index never used. */
	nw_index_clear(&t.ix);
	nw_index_fini(&t.ix);
}

static void test_hash_helpers(void **state)
{
	uint64_t seen[1000];

	/* NULL hashes apart from "". */
	assert_int_not_equal(nw_hash_str(NW_HASH_SEED, NULL), nw_hash_str(NW_HASH_SEED, ""));
	assert_int_equal(nw_hash_str(NW_HASH_SEED, "abc"), nw_hash_str(NW_HASH_SEED, "abc"));
	assert_int_not_equal(nw_hash_str(NW_HASH_SEED, "abc"), nw_hash_str(NW_HASH_SEED, "abd"));
	/* Chained strings: ("ab", "c") is not ("a", "bc"). */
	assert_int_not_equal(nw_hash_str(nw_hash_str(NW_HASH_SEED, "ab"), "c"),
			     nw_hash_str(nw_hash_str(NW_HASH_SEED, "a"), "bc"));
	/* Combining is ordered. */
	assert_int_not_equal(nw_hash_add(nw_hash_add(0, 1), 2), nw_hash_add(nw_hash_add(0, 2), 1));
	/* The finalizer spreads small keys: no two of 0..999 alike, low bits included. */
	for (uint64_t i = 0; i < 1000; i++) {
		seen[i] = nw_hash_u64(i);
		for (uint64_t k = 0; k < i; k++)
			assert_int_not_equal(seen[k], seen[i]);
	}
	{
		unsigned low[64] = { 0 };

		for (uint64_t i = 0; i < 1000; i++)
			low[nw_hash_u64(i) & 63]++;
		for (int b = 0; b < 64; b++)
			assert_in_range(low[b], 1, 40);
	}
}

/* ---- strings ---- */

static void test_strbuf(void **state)
{
	struct nw_strbuf b = { 0 };
	char *s;

	assert_string_equal(nw_sb_str(&b), "");
	nw_sb_printf(&b, "%s-%d", "a", 1);
	nw_sb_puts(&b, "/b");
	nw_sb_putc(&b, ';');
	nw_sb_printf(&b, "%s", "");
	assert_string_equal(nw_sb_str(&b), "a-1/b;");
	assert_int_equal(b.len, 6);
	assert_false(b.failed);

	/* Long appends grow the buffer. */
	for (int i = 0; i < 10000; i++)
		nw_sb_printf(&b, "%04d", i % 10000);
	assert_int_equal(b.len, 6 + 40000);
	assert_int_equal(strlen(nw_sb_str(&b)), b.len);
	assert_memory_equal(nw_sb_str(&b) + 6 + 4 * 9999, "9999", 5);

	/* Reset keeps the memory. */
	s = b.s;
	nw_sb_reset(&b);
	assert_string_equal(nw_sb_str(&b), "");
	assert_int_equal(b.len, 0);
	assert_ptr_equal(b.s, s);
	nw_sb_puts(&b, "x");

	/* Take hands the string over and empties the buffer. */
	s = nw_sb_take(&b);
	assert_string_equal(s, "x");
	free(s);
	assert_null(b.s);
	assert_int_equal(b.len, 0);
	assert_string_equal(nw_sb_str(&b), "");
	/* Even when nothing was added: "", the caller's. */
	s = nw_sb_take(&b);
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);

	/* A buffer that failed ignores appends and takes NULL. */
	nw_sb_puts(&b, "kept");
	b.failed = true;
	nw_sb_puts(&b, "lost");
	nw_sb_putc(&b, 'z');
	nw_sb_printf(&b, "%d", 5);
	assert_string_equal(nw_sb_str(&b), "kept");
	assert_null(nw_sb_take(&b));
	assert_null(b.s);
	assert_false(b.failed);
	/* Reset starts a failed buffer over. */
	nw_sb_puts(&b, "a");
	b.failed = true;
	nw_sb_reset(&b);
	assert_false(b.failed);
	nw_sb_puts(&b, "b");
	assert_string_equal(nw_sb_str(&b), "b");
	/* Numbers written in place, in the room asked for, then the contents ended there. */
	{
		char *q = nw_sb_room(&b, 64);

		assert_non_null(q);
		q = nw_put_u64(q, 12345);
		*q++ = ' ';
		q = nw_put_fixed2(q, 2.5);
		nw_sb_end(&b, q);
		nw_sb_puts(&b, "!");
		assert_string_equal(nw_sb_str(&b), "b12345 2.50!");
		assert_int_equal(b.len, strlen("b12345 2.50!"));
		b.failed = true;
		assert_null(nw_sb_room(&b, 8));
	}
	nw_sb_fini(&b);
	nw_sb_fini(&b);
}

/* Numbers of every length, and around every power of ten, as printf writes them. */
static void test_put_u64(void **state)
{
	uint64_t v[] = { 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 4096, 65535, 123456789,
			 UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX - 1, UINT64_MAX };
	char want[32], got[32];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v[i]);
		*nw_put_u64(got, v[i]) = '\0';
		assert_string_equal(got, want);
	}
	for (uint64_t p = 1, k = 0; k < 20; k++, p *= 10) {
		for (uint64_t d = p > 1 ? p - 1 : p; d <= p + 1; d++) {
			snprintf(want, sizeof(want), "%llu", (unsigned long long)d);
			*nw_put_u64(got, d) = '\0';
			assert_string_equal(got, want);
			assert_int_equal(nw_u64_digits(d), strlen(want));
		}
	}
}

/* A file written behind: all of it, in order, over a longer one written before, whole. */
static void test_write_behind(void **state)
{
	char path[] = "/tmp/nw-test-behind-XXXXXX", *got;
	size_t len, big = 3 << 20;
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	/* More than a chunk, so that the thread writes several. */
	f = nw_fopen_behind(path);
	assert_non_null(f);
	for (size_t i = 0; i < big; i++)
		fputc('a' + (int)(i % 26), f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_read_file(path, &got, &len), 0);
	assert_int_equal(len, big);
	for (size_t i = 0; i < big; i++)
		if (got[i] != 'a' + (int)(i % 26))
			fail_msg("byte %zu is %c", i, got[i]);
	free(got);
	/* Written again, shorter: emptied first, nothing of the old left. */
	f = nw_fopen_behind(path);
	assert_non_null(f);
	fputs("short", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_read_file(path, &got, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(got, "short");
	free(got);
	/* Opened and closed with nothing written: empty. */
	f = nw_fopen_behind(path);
	assert_non_null(f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_read_file(path, &got, &len), 0);
	assert_int_equal(len, 0);
	free(got);
	unlink(path);
	/* A device is written, not emptied; a full one says so at the close. */
	f = nw_fopen_behind("/dev/null");
	assert_non_null(f);
	fputs("x", f);
	assert_int_equal(fclose(f), 0);
	f = nw_fopen_behind("/dev/full");
	assert_non_null(f);
	fputs("x", f);
	assert_int_equal(fclose(f), EOF);
	assert_int_equal(errno, ENOSPC);
	/* A directory does not open. */
	assert_null(nw_fopen_behind("/tmp"));
	assert_int_equal(errno, EISDIR);
}

/* A sink that keeps what it is handed; fails with -ENOSPC past @limit bytes. */
struct sink_buf {
	unsigned char *v;
	size_t n, cap, limit;
	unsigned calls;
};

static int sink_keep(void *arg, const void *buf, size_t len)
{
	struct sink_buf *sb = arg;

	sb->calls++;
	if (sb->limit && sb->n + len > sb->limit)
		return -ENOSPC;
	if (nw_grow(&sb->v, &sb->cap, sb->n + len, 1))
		return -ENOMEM;
	memcpy(sb->v + sb->n, buf, len);
	sb->n += len;
	return 0;
}

/* Inflates the gzip stream @gz (@len bytes) and checks it is @want (@nwant bytes). */
static void assert_gunzips_to(const unsigned char *gz, size_t len, const char *want, size_t nwant)
{
	unsigned char *out = malloc(nwant + 1);
	z_stream z = { 0 };

	assert_non_null(out);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)nwant + 1;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	assert_int_equal(z.total_out, nwant);
	assert_int_equal(z.avail_in, 0);
	assert_memory_equal(out, want, nwant);
	inflateEnd(&z);
	free(out);
}

/*
 * Written behind, gzipped: to a file, all of it, what gzip reads back; to a
 * sink, the same bytes deflated at any level; a sink's error at the close,
 * with its errno; nothing written, an empty gzip stream.
 */
static void test_write_behind_gz(void **state)
{
	char path[] = "/tmp/nw-test-behind-gz-XXXXXX", *want, *got;
	size_t big = 3 << 20, len;
	struct sink_buf sb = { 0 };
	struct nw_behind_opts o = { .fd = -1, .sink = sink_keep, .sink_arg = &sb };
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	want = malloc(big);
	assert_non_null(want);
	/* Compressible, but not to nothing: more than a chunk of deflate's output too. */
	for (size_t i = 0; i < big; i++)
		want[i] = (char)('a' + (int)((i * 2654435761u) >> 13) % 26);
	f = nw_fopen_behind_gz(path, 1);
	assert_non_null(f);
	for (size_t i = 0; i < big; i += 1000)
		fwrite(want + i, 1, big - i < 1000 ? big - i : 1000, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_read_file(path, &got, &len), 0);
	assert_gunzips_to((unsigned char *)got, len, want, big);
	free(got);
	unlink(path);

	o.gzip = 4;
	f = nw_open_behind(&o);
	assert_non_null(f);
	assert_int_equal(fwrite(want, 1, big, f), big);
	assert_int_equal(fclose(f), 0);
	assert_true(sb.calls > 1);
	assert_gunzips_to(sb.v, sb.n, want, big);

	/* Nothing written: a gzip stream of nothing. */
	sb.n = 0;
	f = nw_open_behind(&o);
	assert_non_null(f);
	assert_int_equal(fclose(f), 0);
	assert_gunzips_to(sb.v, sb.n, "", 0);

	/* Not gzipped: the bytes as they are. */
	sb.n = 0;
	o.gzip = 0;
	f = nw_open_behind(&o);
	assert_non_null(f);
	fputs("plain", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(sb.n, 5);
	assert_memory_equal(sb.v, "plain", 5);

	/* A sink that fails: the close says how. */
	sb.n = 0;
	sb.limit = 1000;
	o.gzip = 1;
	f = nw_open_behind(&o);
	assert_non_null(f);
	fwrite(want, 1, big, f);
	assert_int_equal(fclose(f), EOF);
	assert_int_equal(errno, ENOSPC);
	/* A level deflate does not have. */
	o.gzip = 10;
	assert_null(nw_open_behind(&o));
	assert_int_equal(errno, EINVAL);
	/* A full device: ENOSPC at the close. */
	f = nw_fopen_behind_gz("/dev/full", 1);
	assert_non_null(f);
	fputs("x", f);
	assert_int_equal(fclose(f), EOF);
	assert_int_equal(errno, ENOSPC);
	free(sb.v);
	free(want);
}

/* ---- results made side by side, taken in order ---- */

#define NJOBS 200

struct ordered_run {
	uint32_t nworkers, stop_at;
	uint64_t result[NJOBS];
	uint32_t taken[NJOBS];  /* the order done() saw */
	uint32_t ntaken;
	atomic_uint jobs;
};

static void ordered_job(void *arg, uint32_t i)
{
	struct ordered_run *r = arg;
	uint64_t x = i;

	/* Jobs of unequal length, so that they finish out of order. */
	for (uint32_t k = 0; k < (i % 7) * 20000; k++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	r->result[i] = (uint64_t)i * i + 1 + (x & 0);
	atomic_fetch_add(&r->jobs, 1);
}

static int ordered_done(void *arg, uint32_t i)
{
	struct ordered_run *r = arg;

	/* Its job is done when it is taken; none runs 2 * workers ahead of it. */
	if (r->result[i] != (uint64_t)i * i + 1)
		return -EBADMSG;
	for (uint32_t k = i + 2 * r->nworkers; k < NJOBS; k++)
		if (r->result[k])
			return -E2BIG;
	r->taken[r->ntaken++] = i;
	return i == r->stop_at ? -ECANCELED : 0;
}

static void test_parallel_ordered(void **state)
{
	static struct ordered_run r;

	(void)state;
	for (uint32_t nw = 1; nw <= 8; nw++) {
		memset(&r, 0, sizeof(r));
		r.nworkers = nw;
		r.stop_at = UINT32_MAX;
		assert_int_equal(nw_parallel_ordered(NJOBS, nw, ordered_job, ordered_done, &r), 0);
		assert_int_equal(r.ntaken, NJOBS);
		for (uint32_t i = 0; i < NJOBS; i++)
			assert_int_equal(r.taken[i], i);
		assert_int_equal(atomic_load(&r.jobs), NJOBS);

		/* done() says stop: nothing taken after it, no job started after it. */
		memset(&r, 0, sizeof(r));
		r.nworkers = nw;
		r.stop_at = 30;
		assert_int_equal(nw_parallel_ordered(NJOBS, nw, ordered_job, ordered_done, &r),
				 -ECANCELED);
		assert_int_equal(r.ntaken, 31);
		assert_true(atomic_load(&r.jobs) >= 31);
		assert_true(atomic_load(&r.jobs) <= 31 + 2 * nw);
	}
	/* No jobs: nothing called. */
	memset(&r, 0, sizeof(r));
	r.nworkers = 2;
	assert_int_equal(nw_parallel_ordered(0, 2, ordered_job, ordered_done, &r), 0);
	assert_int_equal(r.ntaken, 0);
}

static void test_strings(void **state)
{
	char *s = nw_strdup_printf("%s+0x%llx", "libc.so", 0x1234ull);

	assert_string_equal(s, "libc.so+0x1234");
	free(s);
	s = nw_strdup_printf("%s", "");
	assert_string_equal(s, "");
	free(s);

	assert_string_equal(nw_basename("a/b/c"), "c");
	assert_string_equal(nw_basename("/usr/lib/libc.so.6"), "libc.so.6");
	assert_string_equal(nw_basename("c"), "c");
	assert_string_equal(nw_basename("a/"), "a/");
	assert_string_equal(nw_basename("/"), "/");
	assert_string_equal(nw_basename(""), "");
	assert_string_equal(nw_basename("[vdso]"), "[vdso]");
}

static void test_grow(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	/* From 16, doubling until it fits. */
	assert_int_equal(nw_grow(&v, &cap, 1, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	v[15] = 1;
	assert_int_equal(nw_grow(&v, &cap, 16, sizeof(*v)), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(nw_grow(&v, &cap, 17, sizeof(*v)), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(v[15], 1);
	assert_int_equal(nw_grow(&v, &cap, 1000, sizeof(*v)), 0);
	assert_int_equal(cap, 1024);
	v[999] = 2;
	/* No room for that many: -ENOMEM, the array untouched. */
	{
		uint64_t *old = v;

		assert_int_equal(nw_grow(&v, &cap, SIZE_MAX / 4, sizeof(*v)), -ENOMEM);
		assert_ptr_equal(v, old);
		assert_int_equal(cap, 1024);
		assert_int_equal(v[999], 2);
	}
	/* Nothing needed: nothing allocated. */
	free(v);
	v = NULL;
	cap = 0;
	assert_int_equal(nw_grow(&v, &cap, 0, sizeof(*v)), 0);
	assert_null(v);
	assert_int_equal(cap, 0);
}

/* nw_grow_fill(): entries up to the id asked for, new ones filled, none past it. */
static void test_grow_fill(void **state)
{
	uint32_t *v = NULL;
	size_t n = 0, cap = 0;

	assert_int_equal(nw_grow_fill(&v, &n, &cap, 3, sizeof(*v), 0xff), 0);
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i], UINT32_MAX);
	v[2] = 7;
	/* Within what is set: nothing changes. */
	assert_int_equal(nw_grow_fill(&v, &n, &cap, 1, sizeof(*v), 0xff), 0);
	assert_int_equal(n, 4);
	assert_int_equal(nw_grow_fill(&v, &n, &cap, 40, sizeof(*v), 0), 0);
	assert_int_equal(n, 41);
	assert_true(cap >= 41);
	assert_int_equal(v[2], 7);
	assert_int_equal(v[3], UINT32_MAX);
	assert_int_equal(v[4], 0);
	assert_int_equal(v[40], 0);
	free(v);
}

static uint64_t key_at(const void *arr, size_t i)
{
	return ((const uint64_t *)arr)[i];
}

/* nw_bsearch_le(): how many keys are at or below a value, duplicates and ends included. */
static void test_bsearch(void **state)
{
	const uint64_t keys[] = { 10, 20, 20, 30, UINT64_MAX };

	assert_int_equal(nw_bsearch_le(keys, 0, 100, key_at), 0);
	assert_int_equal(nw_bsearch_le(keys, 5, 0, key_at), 0);
	assert_int_equal(nw_bsearch_le(keys, 5, 9, key_at), 0);
	assert_int_equal(nw_bsearch_le(keys, 5, 10, key_at), 1);
	assert_int_equal(nw_bsearch_le(keys, 5, 19, key_at), 1);
	assert_int_equal(nw_bsearch_le(keys, 5, 20, key_at), 3);
	assert_int_equal(nw_bsearch_le(keys, 5, 29, key_at), 3);
	assert_int_equal(nw_bsearch_le(keys, 5, 30, key_at), 4);
	assert_int_equal(nw_bsearch_le(keys, 5, UINT64_MAX - 1, key_at), 4);
	assert_int_equal(nw_bsearch_le(keys, 5, UINT64_MAX, key_at), 5);
	assert_int_equal(nw_bsearch_le(keys, 4, UINT64_MAX, key_at), 4);
}

static void test_hex_digit(void **state)
{
	const char *digits = "0123456789abcdef";

	for (int i = 0; i < 16; i++) {
		assert_int_equal(nw_hex_digit(digits[i]), i);
		if (i >= 10)
			assert_int_equal(nw_hex_digit((char)(digits[i] - 'a' + 'A')), i);
	}
	assert_int_equal(nw_hex_digit('g'), -1);
	assert_int_equal(nw_hex_digit('G'), -1);
	assert_int_equal(nw_hex_digit('x'), -1);
	assert_int_equal(nw_hex_digit('/'), -1);
	assert_int_equal(nw_hex_digit(':'), -1);
	assert_int_equal(nw_hex_digit('\0'), -1);
}

static int fill_text(void *arg, int fd)
{
	return nw_write_all(fd, arg, strlen(arg));
}

static int fill_fails(void *arg, int fd)
{
	(void)nw_write_all(fd, "half", 4);
	return -ENOSPC;
}

/*
 * nw_write_all() writes every byte; nw_replace_file() makes a file whole
 * or leaves what was there, with no temporary file behind either way.
 */
static void test_replace_file(void **state)
{
	char dir[] = "/tmp/nw-test-replace-XXXXXX", path[64], *text;
	size_t len;
	struct dirent *de;
	DIR *d;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	assert_int_equal(nw_replace_file(dir, "f", fill_text, "first"), 0);
	assert_int_equal(nw_read_file(path, &text, &len), 0);
	assert_string_equal(text, "first");
	free(text);
	assert_int_equal(nw_replace_file(dir, "f", fill_fails, NULL), -ENOSPC);
	assert_int_equal(nw_read_file(path, &text, &len), 0);
	assert_string_equal(text, "first");
	free(text);
	assert_int_equal(nw_replace_file(dir, "f", fill_text, "second, longer"), 0);
	assert_int_equal(nw_read_file(path, &text, &len), 0);
	assert_string_equal(text, "second, longer");
	free(text);
	/* A directory that is not there: its error, nothing made. */
	assert_int_equal(nw_replace_file("/nonexistent-nw-dir", "f", fill_text, "x"), -ENOENT);
	/* Only "f": no ".f.XXXXXX" left. */
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)))
		assert_true(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
			    !strcmp(de->d_name, "f"));
	closedir(d);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_index_collisions),
		cmocka_unit_test(test_index_clear),
		cmocka_unit_test(test_hash_helpers),
		cmocka_unit_test(test_strbuf),
		cmocka_unit_test(test_put_u64),
		cmocka_unit_test(test_parallel_ordered),
		cmocka_unit_test(test_write_behind),
		cmocka_unit_test(test_write_behind_gz),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_grow_fill),
		cmocka_unit_test(test_bsearch),
		cmocka_unit_test(test_hex_digit),
		cmocka_unit_test(test_replace_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
