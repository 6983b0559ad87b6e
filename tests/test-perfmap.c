/* SPDX-License-Identifier: MIT */
/* Perf map files: parsing, overlaps, bounds, reading, the per-process cache. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbol/perfmap.h"

static struct nw_perfmap *parse(const char *text)
{
	struct nw_perfmap *m = NULL;

	assert_int_equal(nw_perfmap_parse(text, strlen(text), &m), 0);
	assert_non_null(m);
	return m;
}

/* The name @addr resolves to, or NULL. */
static const char *name_at(const struct nw_perfmap *m, uint64_t addr)
{
	const struct nw_perfmap_sym *s = nw_perfmap_find(m, addr);

	return s ? s->name : NULL;
}

static void assert_name(const struct nw_perfmap *m, uint64_t addr, const char *want)
{
	const char *got = name_at(m, addr);

	if (!want) {
		if (got)
			fail_msg("0x%llx resolves to '%s', expected nothing",
				 (unsigned long long)addr, got);
		return;
	}
	if (!got)
		fail_msg("0x%llx resolves to nothing, expected '%s'", (unsigned long long)addr,
			 want);
	assert_string_equal(got, want);
}

static void test_good_lines(void **state)
{
	static const char text[] = "7f0000001000 40 foo\n"
				   "0x7f0000002000 0X10 LazyCompile:*bar /app/x.js:12\n"
				   "  7F0000003000\t\t8\tbaz  \r\n"
				   "7f0000004000 1 last_without_newline";
	struct nw_perfmap *m = parse(text);

	assert_int_equal(m->nentries, 4);
	assert_int_equal(m->nbad, 0);
	assert_int_equal(m->n, 4);
	assert_name(m, 0x7f0000000fff, NULL);
	assert_name(m, 0x7f0000001000, "foo");
	assert_name(m, 0x7f000000103f, "foo");
	assert_name(m, 0x7f0000001040, NULL);
	/* Blanks inside a name stay; trailing blanks and CR go. */
	assert_name(m, 0x7f0000002008, "LazyCompile:*bar /app/x.js:12");
	assert_name(m, 0x7f0000003007, "baz");
	assert_name(m, 0x7f0000003008, NULL);
	assert_name(m, 0x7f0000004000, "last_without_newline");
	assert_name(m, 0x7f0000004001, NULL);
	assert_name(m, 0, NULL);
	assert_name(m, UINT64_MAX, NULL);
	/* The raw bytes are kept as they were. */
	assert_int_equal(m->rawlen, sizeof(text) - 1);
	assert_memory_equal(m->raw, text, sizeof(text) - 1);
	nw_perfmap_free(m);
}

static void test_malformed_lines(void **state)
{
	static const char text[] = "1000 10 ok1\n"
				   "1100 10\n"			/* no name */
				   "1200 10   \n"		/* blank name */
				   "1300\n"			/* no size */
				   "zz00 10 bad_hex\n"		/* start not hex */
				   "1400 1g bad_size\n"		/* size not hex */
				   "0x 10 empty_hex\n"		/* 0x without digits */
				   "10000000000000000 1 long\n" /* 17 digits */
				   "1500 0 zero_size\n"		/* holds no address */
				   "ffffffffffffffff 1 wraps\n" /* end past 2^64-1 */
				   "ffffffffffffff00 101 wraps2\n"
				   "1600 10ok_glued\n" /* no blank after size */
				   "1700,10 comma\n"
				   "just a name\n"
				   "\n"	     /* empty lines are not counted */
				   "  \t \n" /* a blank line is */
				   "1800 10 ok2\n";
	struct nw_perfmap *m = parse(text);

	assert_int_equal(m->nentries, 2);
	assert_int_equal(m->nbad, 14);
	assert_name(m, 0x1000, "ok1");
	assert_name(m, 0x1100, NULL);
	assert_name(m, 0x1500, NULL);
	assert_name(m, 0x1600, NULL);
	assert_name(m, 0x1805, "ok2");
	assert_name(m, UINT64_MAX, NULL);
	nw_perfmap_free(m);
}

static void test_nul_and_long_names(void **state)
{
	static const char with_nul[] = "1000 10 a\0b\n2000 10 fine\n";
	size_t long_len = NW_PERFMAP_MAX_NAME + 1;
	char *text = malloc(long_len + 64);
	struct nw_perfmap *m = NULL;
	int n;

	assert_int_equal(nw_perfmap_parse(with_nul, sizeof(with_nul) - 1, &m), 0);
	assert_int_equal(m->nentries, 1);
	assert_int_equal(m->nbad, 1);
	assert_name(m, 0x1000, NULL);
	assert_name(m, 0x2000, "fine");
	nw_perfmap_free(m);

	/* A name of NW_PERFMAP_MAX_NAME bytes is fine, one more is not. */
	assert_non_null(text);
	for (size_t extra = 0; extra < 2; extra++) {
		n = sprintf(text, "3000 10 ");
		memset(text + n, 'x', NW_PERFMAP_MAX_NAME + extra);
		strcpy(text + n + NW_PERFMAP_MAX_NAME + extra, "\n4000 10 next\n");
		m = parse(text);
		assert_int_equal(m->nentries, extra ? 1 : 2);
		assert_int_equal(m->nbad, extra);
		if (!extra)
			assert_int_equal(strlen(name_at(m, 0x3000)), NW_PERFMAP_MAX_NAME);
		else
			assert_name(m, 0x3000, NULL);
		assert_name(m, 0x4000, "next");
		nw_perfmap_free(m);
	}
	free(text);
}

static void test_overlapping_later_wins(void **state)
{
	struct nw_perfmap *m = parse("1000 1000 old_big\n"	/* [0x1000, 0x2000) */
				     "1400 400 new_inner\n"	/* [0x1400, 0x1800) */
				     "3000 100 old_small\n"	/* [0x3000, 0x3100) */
				     "2f00 1100 new_covering\n" /* [0x2f00, 0x4000) */
				     "5000 100 first\n"
				     "5000 100 second\n"     /* same range again */
				     "5080 100 straddle\n"); /* [0x5080, 0x5180) */

	assert_name(m, 0x1000, "old_big");
	assert_name(m, 0x13ff, "old_big");
	assert_name(m, 0x1400, "new_inner");
	assert_name(m, 0x17ff, "new_inner");
	assert_name(m, 0x1800, "old_big");
	assert_name(m, 0x1fff, "old_big");
	assert_name(m, 0x2000, NULL);
	assert_name(m, 0x2eff, NULL);
	assert_name(m, 0x2f00, "new_covering");
	assert_name(m, 0x3050, "new_covering");
	assert_name(m, 0x3fff, "new_covering");
	assert_name(m, 0x4000, NULL);
	assert_name(m, 0x5000, "second");
	assert_name(m, 0x507f, "second");
	assert_name(m, 0x5080, "straddle");
	assert_name(m, 0x517f, "straddle");
	assert_name(m, 0x5180, NULL);
	/* The flattened ranges are sorted and disjoint. */
	for (size_t i = 1; i < m->n; i++)
		assert_true(m->v[i - 1].end <= m->v[i].start);
	nw_perfmap_free(m);
}

static void test_huge_sizes(void **state)
{
	struct nw_perfmap *m = parse("0 ffffffffffffffff everything\n" /* [0, 2^64-1) */
				     "5000 10 later_small\n"
				     "fffffffffffffffe 1 top_byte\n"
				     "fffffffffffffff0 10 one_too_far\n"
				     "8000000000000000 8000000000000000 also_too_far\n");

	assert_int_equal(m->nentries, 3);
	assert_int_equal(m->nbad, 2);
	assert_name(m, 0, "everything");
	assert_name(m, 0x4fff, "everything");
	assert_name(m, 0x5000, "later_small");
	assert_name(m, 0x5010, "everything");
	assert_name(m, 0x8000000000000000ull, "everything");
	assert_name(m, 0xfffffffffffffffdull, "everything");
	assert_name(m, 0xfffffffffffffffeull, "top_byte");
	assert_name(m, UINT64_MAX, NULL);
	assert_int_equal(m->n, 4);
	nw_perfmap_free(m);
}

static void test_empty(void **state)
{
	struct nw_perfmap *m = parse("");

	assert_int_equal(m->n, 0);
	assert_int_equal(m->nentries, 0);
	assert_int_equal(m->nbad, 0);
	assert_name(m, 0, NULL);
	assert_name(m, 0x1000, NULL);
	nw_perfmap_free(m);
	nw_perfmap_free(NULL);
}

/* xorshift64: a fixed sequence, so a failure repeats. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The flattened lookup agrees with "the last line that covers the address". */
static void test_random_against_brute_force(void **state)
{
	enum { N = 300, PROBES = 5000 };
	uint64_t seed = 0x9e3779b97f4a7c15ull, start[N], size[N];
	char *text = malloc(N * 48), *p = text, want[16];
	struct nw_perfmap *m;

	assert_non_null(text);
	for (int i = 0; i < N; i++) {
		start[i] = 0x10000 + rnd(&seed) % 0x4000;
		size[i] = 1 + rnd(&seed) % (i % 10 == 0 ? 0x2000 : 0x80);
		p += sprintf(p, "%llx %llx f%d\n", (unsigned long long)start[i],
			     (unsigned long long)size[i], i);
	}
	m = parse(text);
	assert_int_equal(m->nentries, N);
	assert_true(m->n <= 2 * N);
	for (int k = 0; k < PROBES; k++) {
		uint64_t a = 0xff00 + rnd(&seed) % 0x6400;
		int best = -1;

		for (int i = 0; i < N; i++) {
			if (a >= start[i] && a - start[i] < size[i])
				best = i;
		}
		if (best < 0) {
			assert_name(m, a, NULL);
		} else {
			snprintf(want, sizeof(want), "f%d", best);
			assert_name(m, a, want);
		}
	}
	nw_perfmap_free(m);
	free(text);
}

static void test_symbolize(void **state)
{
	struct nw_perfmap *m = parse("1000 10 jit_fn\n");
	struct nw_symframe *fr = NULL;
	uint32_t n = 7;

	assert_int_equal(nw_perfmap_symbolize(m, 0x1008, &fr, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "jit_fn");
	assert_null(fr[0].file);
	assert_int_equal(fr[0].line, 0);
	free(fr[0].function);
	free(fr);
	fr = NULL;
	assert_int_equal(nw_perfmap_symbolize(m, 0x1010, &fr, &n), 0);
	assert_int_equal(n, 0);
	assert_null(fr);
	nw_perfmap_free(m);
}

static void test_module_is_anon(void **state)
{
	assert_true(nw_perfmap_module_is_anon("//anon"));
	assert_true(nw_perfmap_module_is_anon(""));
	assert_true(nw_perfmap_module_is_anon("[anon:v8 code]"));
	assert_true(nw_perfmap_module_is_anon("[heap]"));
	assert_true(nw_perfmap_module_is_anon("/memfd:doublemapper (deleted)"));
	assert_false(nw_perfmap_module_is_anon("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	assert_false(nw_perfmap_module_is_anon("[vdso]"));
	assert_false(nw_perfmap_module_is_anon("[stack]"));
}

struct dir {
	char path[64];
};

static int dir_setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	strcpy(d->path, "/tmp/nw-test-perfmap.XXXXXX");
	assert_non_null(mkdtemp(d->path));
	*state = d;
	return 0;
}

static int dir_teardown(void **state)
{
	struct dir *d = *state;
	static const char *const names[] = {"perf-4242.map", "link.map",  "fifo.map",
					    "big.map",	     "other.map", "copy.map"};
	char path[128];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", d->path, names[i]);
		unlink(path);
	}
	rmdir(d->path);
	free(d);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_read_and_save(void **state)
{
	struct dir *d = *state;
	static const char text[] = "1000 10 a\nbad line\n2000 20 b\n";
	char path[128], copy[128], buf[64];
	struct nw_perfmap *m = NULL, *m2 = NULL;
	int fd;
	ssize_t r;

	snprintf(path, sizeof(path), "%s/perf-4242.map", d->path);
	write_file(path, text);
	assert_int_equal(nw_perfmap_read(path, &m), 0);
	assert_int_equal(m->nentries, 2);
	assert_int_equal(m->nbad, 1);
	assert_name(m, 0x2010, "b");

	/* The copy holds the bytes read, malformed lines included. */
	snprintf(copy, sizeof(copy), "%s/copy.map", d->path);
	assert_int_equal(nw_perfmap_save(m, copy), 0);
	fd = open(copy, O_RDONLY);
	assert_true(fd >= 0);
	r = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(r, sizeof(text) - 1);
	assert_memory_equal(buf, text, sizeof(text) - 1);
	assert_int_equal(nw_perfmap_read(copy, &m2), 0);
	assert_name(m2, 0x1000, "a");
	nw_perfmap_free(m2);
	nw_perfmap_free(m);

	snprintf(path, sizeof(path), "%s/missing.map", d->path);
	m = NULL;
	assert_int_equal(nw_perfmap_read(path, &m), -ENOENT);
	assert_null(m);
}

static void test_read_refuses(void **state)
{
	struct dir *d = *state;
	char path[128], target[128];
	struct nw_perfmap *m = NULL;
	int fd;

	snprintf(target, sizeof(target), "%s/perf-4242.map", d->path);
	write_file(target, "1000 10 a\n");

	/* A symlink planted under the name is not followed. */
	snprintf(path, sizeof(path), "%s/link.map", d->path);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(nw_perfmap_read(path, &m), -EPERM);

	/* A FIFO neither hangs the open nor is read. */
	snprintf(path, sizeof(path), "%s/fifo.map", d->path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(nw_perfmap_read(path, &m), -EPERM);

	/* Over the size limit: refused before anything is read. */
	snprintf(path, sizeof(path), "%s/big.map", d->path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)NW_PERFMAP_MAX_SIZE + 1), 0);
	close(fd);
	assert_int_equal(nw_perfmap_read(path, &m), -EFBIG);

	/* Owned by another user (only root can make one). */
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/other.map", d->path);
		write_file(path, "1000 10 a\n");
		assert_int_equal(chown(path, 4242, 4242), 0);
		assert_int_equal(nw_perfmap_read(path, &m), -EPERM);
	}
	assert_null(m);
}

static void test_cache(void **state)
{
	struct dir *d = *state;
	const struct nw_perfmap *map = NULL, *again = NULL;
	struct nw_perfmaps c;
	char path[128];

	snprintf(path, sizeof(path), "%s/perf-4242.map", d->path);
	write_file(path, "1000 10 cached\n");
	nw_perfmaps_init(&c, d->path);
	assert_int_equal(nw_perfmaps_get(&c, 4242, &map), 1);
	assert_non_null(map);
	assert_name(map, 0x1000, "cached");
	/* Read once: a later change of the file is not seen. */
	write_file(path, "1000 10 changed\n");
	assert_int_equal(nw_perfmaps_get(&c, 4242, &again), 0);
	assert_ptr_equal(map, again);
	assert_name(again, 0x1000, "cached");
	/* A process without a map is remembered as such. */
	assert_int_equal(nw_perfmaps_get(&c, 4243, &map), 1);
	assert_null(map);
	assert_int_equal(nw_perfmaps_get(&c, 4243, &map), 0);
	assert_null(map);
	/* Many processes. */
	for (uint32_t pid = 100; pid < 140; pid++)
		assert_int_equal(nw_perfmaps_get(&c, pid, &map), 1);
	assert_int_equal(nw_perfmaps_get(&c, 4242, &map), 0);
	assert_name(map, 0x1000, "cached");
	nw_perfmaps_fini(&c);
	nw_perfmaps_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_good_lines),
	    cmocka_unit_test(test_malformed_lines),
	    cmocka_unit_test(test_nul_and_long_names),
	    cmocka_unit_test(test_overlapping_later_wins),
	    cmocka_unit_test(test_huge_sizes),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_random_against_brute_force),
	    cmocka_unit_test(test_symbolize),
	    cmocka_unit_test(test_module_is_anon),
	    cmocka_unit_test_setup_teardown(test_read_and_save, dir_setup, dir_teardown),
	    cmocka_unit_test_setup_teardown(test_read_refuses, dir_setup, dir_teardown),
	    cmocka_unit_test_setup_teardown(test_cache, dir_setup, dir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
