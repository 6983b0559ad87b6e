/* SPDX-License-Identifier: MIT */
/*
 * The run cache: its directory (util/cache.h: atomic files, the bound on
 * its size, least recently used first out), the kernel's symbols kept
 * there (symbol/kallsyms.h: from a kallsyms and a notes file the test
 * writes) and symbolization results (symbol/symcache.h).  What comes out
 * of the cache equals what went in; a corrupt file is not used.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbol/kallsyms.h"
#include "symbol/symcache.h"
#include "util/cache.h"

struct dirs {
	char root[64];   /* the test's directory */
	char cache[128]; /* the cache, inside it */
};

static int setup(void **state)
{
	struct dirs *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->root, sizeof(d->root), "/tmp/nw-test-cache.XXXXXX");
	if (!mkdtemp(d->root))
		return -1;
	snprintf(d->cache, sizeof(d->cache), "%s/c/narwhal", d->root);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dirs *d = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->root);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Sets @name's modification time to @t seconds. */
static void age(const struct nw_cache *c, const char *name, time_t t)
{
	char path[PATH_MAX + 256];
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void test_files(void **state)
{
	struct dirs *d = *state;
	struct nw_cache c;
	char buf[400], *got;
	size_t len;
	void *map;

	/* Off: no directory, nothing read or written. */
	assert_int_equal(nw_cache_open(&c, d->cache, true), 0);
	assert_false(nw_cache_on(&c));
	assert_int_equal(nw_cache_write(&c, "a", "x", 1), -ENOENT);
	/* On: the directory is made (parents too, 0700). */
	assert_int_equal(nw_cache_open(&c, d->cache, false), 0);
	assert_true(nw_cache_on(&c));
	assert_int_equal(nw_cache_read(&c, "a", &got, &len), -ENOENT);
	assert_false(nw_cache_has(&c, "a"));
	assert_int_equal(nw_cache_write(&c, "a", "hello", 5), 0);
	assert_true(nw_cache_has(&c, "a"));
	assert_int_equal(nw_cache_read(&c, "a", &got, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(got, "hello");
	free(got);
	assert_int_equal(nw_cache_map(&c, "a", &map, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(map, "hello", 5);
	munmap(map, len);
	/* Written again: replaced whole. */
	assert_int_equal(nw_cache_write(&c, "a", "hi", 2), 0);
	assert_int_equal(nw_cache_read(&c, "a", &got, &len), 0);
	assert_int_equal(len, 2);
	free(got);

	/* The bound: past it, the least recently used go until 3/4 of it is left. */
	c.max_bytes = 1000;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(nw_cache_write(&c, "old", buf, sizeof(buf)), 0);
	age(&c, "old", 1000);
	assert_int_equal(nw_cache_write(&c, "mid", buf, sizeof(buf)), 0);
	age(&c, "mid", 2000);
	age(&c, "a", 500);
	/* Reading "a" marks it used: now the newest of the three. */
	assert_int_equal(nw_cache_read(&c, "a", &got, &len), 0);
	free(got);
	assert_int_equal(nw_cache_write(&c, "new", buf, sizeof(buf)), 0);
	/* Nothing goes until the writer prunes, once. */
	assert_true(nw_cache_has(&c, "old"));
	nw_cache_prune(&c);
	assert_false(nw_cache_has(&c, "old"));
	assert_false(nw_cache_has(&c, "mid"));
	assert_true(nw_cache_has(&c, "a"));
	assert_true(nw_cache_has(&c, "new"));
}

/* ---- kernel symbols ---- */

static const char kallsyms_text[] =
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000100 t helper\n"
	"ffffffff81000200 T do_work\n"
	"ffffffff81000300 D some_data\n"
	"ffffffff81000400 T last_fn\n"
	"ffffffff81000500 T _etext\n"
	"ffffffffc0001000 t ext4_fill_super\t[ext4]\n"
	"ffffffffc0002000 t ext4_read\t[ext4]\n";

/* A notes file with a GNU build-id note, as /sys/kernel/notes holds. */
static void write_notes(const char *path, unsigned char seed)
{
	unsigned char n[12 + 4 + 20];
	uint32_t namesz = 4, descsz = 20, type = 3;

	memcpy(n, &namesz, 4);
	memcpy(n + 4, &descsz, 4);
	memcpy(n + 8, &type, 4);
	memcpy(n + 12, "GNU", 4);
	for (int i = 0; i < 20; i++)
		n[16 + i] = (unsigned char)(seed + i);
	write_file(path, n, sizeof(n));
}

/* What @ks says of @pc, as "name[module]" or "-". */
static void ksym_text(const struct nw_kallsyms *ks, uint64_t pc, char *buf, size_t len)
{
	struct nw_ksym k;

	if (nw_kallsyms_find(ks, pc, &k))
		snprintf(buf, len, "%s[%s]@%llx", k.name, k.module ? k.module : "",
			 (unsigned long long)k.addr);
	else
		snprintf(buf, len, "-");
}

static void test_kallsyms(void **state)
{
	struct dirs *d = *state;
	char ks_path[128], notes[128], name[256], name2[256], a[128], b[128];
	/* In the image: before it, at a symbol, between, in data, past _etext. */
	static const uint64_t image_pcs[] = { 0xffffffff80ffffff, 0xffffffff81000000,
					      0xffffffff81000150, 0xffffffff81000250,
					      0xffffffff81000310, 0xffffffff810004ff };
	struct nw_kallsyms full, cold, warm;
	struct nw_cache c;

	snprintf(ks_path, sizeof(ks_path), "%s/kallsyms", d->root);
	snprintf(notes, sizeof(notes), "%s/notes", d->root);
	write_file(ks_path, kallsyms_text, strlen(kallsyms_text));
	write_notes(notes, 1);
	assert_int_equal(nw_cache_open(&c, d->cache, false), 0);
	assert_int_equal(nw_kallsyms_cache_name(ks_path, notes, name, sizeof(name)), 0);
	assert_non_null(strstr(name, "kallsyms-0102030405060708090a0b0c0d0e0f1011121314-"));
	/* Another build, or the image elsewhere (KASLR): another name. */
	write_notes(notes, 2);
	assert_int_equal(nw_kallsyms_cache_name(ks_path, notes, name2, sizeof(name2)), 0);
	assert_string_not_equal(name, name2);
	write_notes(notes, 1);

	assert_int_equal(nw_kallsyms_load(&full, ks_path), 0);
	assert_int_equal(nw_kallsyms_load_cached(&cold, &c, name, ks_path), 0);
	assert_null(cold.map); /* read, and saved */
	assert_true(nw_cache_has(&c, name));
	assert_int_equal(nw_kallsyms_load_cached(&warm, &c, name, ks_path), 0);
	assert_non_null(warm.map); /* from the cache */
	for (size_t i = 0; i < sizeof(image_pcs) / sizeof(image_pcs[0]); i++) {
		ksym_text(&full, image_pcs[i], a, sizeof(a));
		ksym_text(&warm, image_pcs[i], b, sizeof(b));
		assert_string_equal(a, b);
		assert_true(nw_kallsyms_covers(&warm, image_pcs[i]) ||
			    image_pcs[i] < 0xffffffff81000000);
	}
	ksym_text(&warm, 0xffffffff81000150, a, sizeof(a));
	assert_string_equal(a, "helper[]@ffffffff81000100");
	/* A module's PC: the cache holds the image only, and says so. */
	assert_false(nw_kallsyms_covers(&warm, 0xffffffffc0001010));
	assert_true(nw_kallsyms_covers(&full, 0xffffffffc0001010));
	ksym_text(&full, 0xffffffffc0001010, a, sizeof(a));
	assert_string_equal(a, "ext4_fill_super[ext4]@ffffffffc0001000");
	nw_kallsyms_fini(&warm);

	/* A corrupt cache file is read around, and replaced. */
	assert_int_equal(nw_cache_write(&c, name, "NWKSYM2\0garbage", 15), 0);
	assert_int_equal(nw_kallsyms_load_cached(&warm, &c, name, ks_path), 0);
	assert_null(warm.map);
	ksym_text(&warm, 0xffffffff81000250, a, sizeof(a));
	assert_string_equal(a, "do_work[]@ffffffff81000200");
	nw_kallsyms_fini(&warm);
	assert_int_equal(nw_kallsyms_load_cached(&warm, &c, name, ks_path), 0);
	assert_non_null(warm.map);
	nw_kallsyms_fini(&warm);
	nw_kallsyms_fini(&cold);
	nw_kallsyms_fini(&full);
}

/* ---- symbolization results ---- */

static void test_symcache(void **state)
{
	struct dirs *d = *state;
	static const uint8_t id[] = { 0xab, 0xcd, 0xef, 0x01 };
	struct nw_symframe in[2] = {
		{ .function = "inlined", .file = "/src/a.h", .line = 7, .decl_line = 3,
		  .decl_file = "/src/a.h" },
		{ .function = "outer", .file = "/src/a.c", .line = 42 },
	};
	struct nw_symframe *out;
	struct nw_symcache *sc;
	char file[128], path[PATH_MAX + 256];
	struct nw_cache c;
	uint32_t n;

	snprintf(file, sizeof(file), "%s/libx.so", d->root);
	write_file(file, "ELF?", 4);
	assert_int_equal(nw_cache_open(&c, d->cache, false), 0);
	/* No cache: nothing to keep. */
	assert_int_equal(nw_symcache_open(NULL, file, 4, id, 4, NULL, "/usr/lib/debug", &sc), 0);
	assert_null(sc);
	/* No build-id: the file as make knows it (inode, size, time). */
	assert_int_equal(nw_symcache_open(&c, file, 4, id, 0, NULL, "/usr/lib/debug", &sc), 0);
	assert_non_null(sc);
	assert_int_equal(nw_symcache_put(sc, 0x1000, in, 1), 0);
	nw_symcache_close(sc);
	assert_int_equal(nw_symcache_open(&c, file, 4, id, 0, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x1000, &out, &n), 1);
	nw_symframes_free(out, n);
	nw_symcache_close(sc);
	{
		struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };

		assert_int_equal(utimensat(AT_FDCWD, file, ts, 0), 0);
	}
	assert_int_equal(nw_symcache_open(&c, file, 4, id, 0, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x1000, &out, &n), 0);
	nw_symcache_close(sc);

	assert_int_equal(nw_symcache_open(&c, file, 4, id, 4, NULL, "/usr/lib/debug", &sc), 0);
	assert_non_null(sc);
	assert_int_equal(nw_symcache_get(sc, 0x1000, &out, &n), 0);
	assert_int_equal(nw_symcache_put(sc, 0x1000, in, 2), 0);
	assert_int_equal(nw_symcache_put(sc, 0x2000, NULL, 0), 0); /* nothing known there */
	nw_symcache_close(sc);

	/* Another run: the same frames, field by field. */
	assert_int_equal(nw_symcache_open(&c, file, 4, id, 4, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x1000, &out, &n), 1);
	assert_int_equal(n, 2);
	for (uint32_t k = 0; k < 2; k++) {
		assert_string_equal(out[k].function, in[k].function);
		assert_string_equal(out[k].file, in[k].file);
		assert_int_equal(out[k].line, in[k].line);
		assert_int_equal(out[k].decl_line, in[k].decl_line);
		if (in[k].decl_file)
			assert_string_equal(out[k].decl_file, in[k].decl_file);
		else
			assert_null(out[k].decl_file);
	}
	nw_symframes_free(out, n);
	assert_int_equal(nw_symcache_get(sc, 0x2000, &out, &n), 1);
	assert_int_equal(n, 0);
	assert_int_equal(nw_symcache_get(sc, 0x3000, &out, &n), 0);
	nw_symcache_close(sc);

	/* A debug file appearing where libdwfl would look: another cache file. */
	snprintf(path, sizeof(path), "%s/libx.so.debug", d->root);
	write_file(path, "DBG", 3);
	assert_int_equal(nw_symcache_open(&c, file, 4, id, 4, NULL, "", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x1000, &out, &n), 0);
	nw_symcache_close(sc);
	/* The file's size: another build of it stripped, say. */
	assert_int_equal(nw_symcache_open(&c, file, 5, id, 4, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x1000, &out, &n), 0);
	nw_symcache_close(sc);
}

/* A cache file cut short or overwritten is not used; the next run writes it anew. */
static void test_symcache_corrupt(void **state)
{
	struct dirs *d = *state;
	static const uint8_t id[] = { 0x12, 0x34 };
	struct nw_symframe in = { .function = "f", .line = 1 };
	struct nw_symframe *out;
	struct nw_symcache *sc;
	char file[128], path[PATH_MAX + 256];
	struct nw_cache c;
	struct dirent *de;
	uint32_t n;
	DIR *dir;

	snprintf(file, sizeof(file), "%s/liby.so", d->root);
	write_file(file, "ELF", 3);
	assert_int_equal(nw_cache_open(&c, d->cache, false), 0);
	assert_int_equal(nw_symcache_open(&c, file, 3, id, 2, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_put(sc, 0x10, &in, 1), 0);
	assert_int_equal(nw_symcache_put(sc, 0x20, &in, 1), 0);
	nw_symcache_close(sc);
	/* Cut the file in the middle of its last record. */
	dir = opendir(c.dir);
	assert_non_null(dir);
	path[0] = 0;
	while ((de = readdir(dir)))
		if (!strncmp(de->d_name, "sym-1234-", 9))
			snprintf(path, sizeof(path), "%s/%s", c.dir, de->d_name);
	closedir(dir);
	assert_true(path[0]);
	assert_int_equal(truncate(path, 8 + 20 + 10), 0);
	assert_int_equal(nw_symcache_open(&c, file, 3, id, 2, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x10, &out, &n), 0);
	assert_int_equal(nw_symcache_put(sc, 0x30, &in, 1), 0);
	nw_symcache_close(sc);
	/* Written anew: its one record. */
	assert_int_equal(nw_symcache_open(&c, file, 3, id, 2, NULL, "/usr/lib/debug", &sc), 0);
	assert_int_equal(nw_symcache_get(sc, 0x30, &out, &n), 1);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].function, "f");
	nw_symframes_free(out, n);
	nw_symcache_close(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kallsyms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symcache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symcache_corrupt, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
