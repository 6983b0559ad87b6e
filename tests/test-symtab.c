/* SPDX-License-Identifier: MIT */
/*
 * The symbol table (model/symtab.h) and symbols.json (format/symbols.h,
 * with the module list of a module table): round trip, lookup, bad files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/symbols.h"
#include "model/module.h"
#include "model/symtab.h"

#define PATH NW_TEST_BUILD "/test-symtab.json"

static char *xstrdup(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	assert_non_null(d);
	return d;
}

/* An inline chain from (function, file, line, decl_file, decl_line) quintuples. */
static struct nw_symframe *frames_of(uint32_t n, const char *const *fn, const char *const *file,
				     const uint32_t *line, const char *const *decl_file,
				     const uint32_t *decl_line)
{
	struct nw_symframe *f = n ? calloc(n, sizeof(*f)) : NULL;

	for (uint32_t i = 0; i < n; i++) {
		f[i].function = xstrdup(fn[i]);
		f[i].file = xstrdup(file[i]);
		f[i].line = line[i];
		f[i].decl_file = xstrdup(decl_file[i]);
		f[i].decl_line = decl_line[i];
	}
	return f;
}

static struct nw_symframe *one_frame(const char *fn, const char *file, uint32_t line)
{
	const char *decl_file = file;
	uint32_t decl_line = line ? line - 1 : 0;

	return frames_of(1, &fn, &file, &line, &decl_file, &decl_line);
}

static const uint8_t app_id[20] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99,
				    0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11, 0x22, 0x33 };
static const uint8_t libc_id[3] = { 0xab, 0xcd, 0xef };

/* Three modules (in @mods, empty), entries added out of order. */
static struct nw_symtab *sample_table(struct nw_module_table *mods)
{
	static const char *const fn[] = { "inner_inline", "middle_inline", "outer(int)" };
	static const char *const file[] = { "/src/a.h", NULL, "/src/a.c" };
	static const uint32_t line[] = { 12, 0, 40 };
	static const char *const decl_file[] = { "/src/a.h", "/src/b.h", NULL };
	static const uint32_t decl_line[] = { 10, 3, 0 };
	struct nw_symtab *t = nw_symtab_new();

	assert_non_null(t);
	nw_module_table_init(mods);
	assert_int_equal(nw_module_intern(mods, "/usr/bin/app", app_id, sizeof(app_id)), 0);
	assert_int_equal(nw_module_intern(mods, "/lib/libc.so.6", (const uint8_t *)"", 0), 1);
	assert_int_equal(nw_module_intern(mods, "/lib/libc.so.6", libc_id, sizeof(libc_id)), 2);
	/* The same (path, build-id) again is the same module. */
	assert_int_equal(nw_module_intern(mods, "/usr/bin/app", app_id, sizeof(app_id)), 0);
	assert_int_equal(nw_module_intern(mods, "/lib/libc.so.6", NULL, 0), 1);

	assert_int_equal(nw_symtab_add(t, 1, 0x29d90, one_frame("__libc_start_call_main", NULL, 0), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x1139, one_frame("main", "/src/main.c", 7), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x1138, frames_of(3, fn, file, line, decl_file, decl_line), 3), 0);
	assert_int_equal(nw_symtab_add(t, 2, UINT64_MAX, one_frame("ns::f<\"q\">()", "/x/y.cc", 1), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0, NULL, 0), 0);
	assert_int_equal(nw_symtab_add(t, 2, 0x1139, one_frame("other_module", NULL, 0), 1), 0);
	/* What JSON escapes (quotes, backslashes, control characters), UTF-8 and bytes that are not. */
	assert_int_equal(nw_symtab_add(t, 2, 0x2000, one_frame("a\"b\\c\n\t\r\x01\x1f/é", "/d\xff/x.c", 2),
				       1), 0);
	return t;
}

static void assert_same_frames(const struct nw_symentry *a, const struct nw_symentry *b)
{
	assert_int_equal(a->nframes, b->nframes);
	for (uint32_t i = 0; i < a->nframes; i++) {
		const struct nw_symframe *x = &a->frames[i], *y = &b->frames[i];

		assert_string_equal(x->function, y->function);
		if (x->file)
			assert_string_equal(x->file, y->file);
		else
			assert_null(y->file);
		if (x->decl_file)
			assert_string_equal(x->decl_file, y->decl_file);
		else
			assert_null(y->decl_file);
		assert_int_equal(x->line, y->line);
		assert_int_equal(x->decl_line, y->decl_line);
	}
}

static void assert_same_module(const struct nw_module *a, const struct nw_module *b)
{
	assert_string_equal(a->path, b->path);
	assert_int_equal(a->build_id_size, b->build_id_size);
	assert_memory_equal(a->build_id, b->build_id, a->build_id_size);
}

static void test_round_trip(void **state)
{
	struct nw_module_table mods, rmods;
	struct nw_symtab *t = sample_table(&mods), *r = nw_symtab_new();
	const struct nw_symentry *e;
	char err[256], text[8192];
	FILE *f;
	size_t n;

	assert_non_null(r);
	nw_module_table_init(&rmods);
	/* Written unsorted: the reader sorts. */
	assert_int_equal(nw_symbols_write(PATH, &mods, t), 0);
	assert_int_equal(nw_symbols_read(PATH, &rmods, r, err, sizeof(err)), 0);
	assert_int_equal(rmods.n, 3);
	for (uint32_t i = 0; i < 3; i++)
		assert_same_module(&rmods.v[i], &mods.v[i]);
	assert_int_equal(r->nentries, t->nentries);
	for (uint32_t i = 1; i < r->nentries; i++) {
		const struct nw_symentry *p = &r->entries[i - 1], *q = &r->entries[i];

		assert_true(p->module < q->module || (p->module == q->module && p->addr < q->addr));
	}
	for (uint32_t i = 0; i < t->nentries; i++) {
		e = nw_symtab_lookup(r, t->entries[i].module, t->entries[i].addr);
		assert_non_null(e);
		assert_int_equal(e->module, t->entries[i].module);
		assert_int_equal(e->addr, t->entries[i].addr);
		assert_same_frames(&t->entries[i], e);
	}

	/* Exact hex addresses; unknown file fields are left out, not null. */
	f = fopen(PATH, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	assert_non_null(strstr(text, "\"addr\":\"0xffffffffffffffff\""));
	assert_non_null(strstr(text, "\"addr\":\"0x1139\""));
	assert_non_null(strstr(text, "\"file\":\"/src/main.c\""));
	assert_non_null(strstr(text, "\"build_id\":\"00112233445566778899aabbccddeeff00112233\""));
	assert_non_null(strstr(text, "\"build_id\":\"abcdef\""));
	assert_null(strstr(text, "null"));
	nw_symtab_free(r);
	nw_module_table_fini(&rmods);
	nw_symtab_free(t);
	nw_module_table_fini(&mods);
	unlink(PATH);
}

/*
 * The reader keys entries by the indexes of the module table it is given:
 * modules already there (by path and build-id) keep their index, the
 * others are added.
 */
static void test_read_into_module_table(void **state)
{
	struct nw_module_table mods, rmods;
	struct nw_symtab *t = sample_table(&mods), *r = nw_symtab_new();
	const struct nw_symentry *e;
	char err[256];

	assert_non_null(r);
	assert_int_equal(nw_symbols_write(PATH, &mods, t), 0);
	/* The measurement's table: libc (abcdef) first, then a module symbols.json lacks. */
	nw_module_table_init(&rmods);
	assert_int_equal(nw_module_intern(&rmods, "/lib/libc.so.6", libc_id, sizeof(libc_id)), 0);
	assert_int_equal(nw_module_intern(&rmods, "/other", NULL, 0), 1);
	assert_int_equal(nw_symbols_read(PATH, &rmods, r, err, sizeof(err)), 0);
	/* app and the libc without a build-id are added; libc (abcdef) is the one there. */
	assert_int_equal(rmods.n, 4);
	assert_same_module(&rmods.v[0], &mods.v[2]);
	assert_string_equal(rmods.v[1].path, "/other");
	assert_same_module(&rmods.v[2], &mods.v[0]);
	assert_same_module(&rmods.v[3], &mods.v[1]);
	assert_int_equal(r->nentries, t->nentries);
	e = nw_symtab_lookup(r, 0, 0x1139);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "other_module");
	e = nw_symtab_lookup(r, 2, 0x1139);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "main");
	e = nw_symtab_lookup(r, 3, 0x29d90);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "__libc_start_call_main");
	assert_non_null(nw_symtab_lookup(r, 0, UINT64_MAX));
	assert_null(nw_symtab_lookup(r, 1, 0x1139));
	nw_symtab_free(r);
	nw_module_table_fini(&rmods);
	nw_symtab_free(t);
	nw_module_table_fini(&mods);
	unlink(PATH);
}

static void test_lookup(void **state)
{
	struct nw_module_table mods;
	struct nw_symtab *t = sample_table(&mods);
	const struct nw_symentry *e;

	nw_symtab_sort(t);
	e = nw_symtab_lookup(t, 0, 0x1139);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "main");
	e = nw_symtab_lookup(t, 0, 0x1138);
	assert_non_null(e);
	assert_int_equal(e->nframes, 3);
	assert_string_equal(e->frames[2].function, "outer(int)");
	e = nw_symtab_lookup(t, 2, 0x1139);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "other_module");
	e = nw_symtab_lookup(t, 0, 0);
	assert_non_null(e);
	assert_int_equal(e->nframes, 0);
	assert_non_null(nw_symtab_lookup(t, 2, UINT64_MAX));

	/* Misses: next to a hit, another module, a module that does not exist. */
	assert_null(nw_symtab_lookup(t, 0, 0x113a));
	assert_null(nw_symtab_lookup(t, 0, 0x1137));
	assert_null(nw_symtab_lookup(t, 1, 0x1139));
	assert_null(nw_symtab_lookup(t, 7, 0x1139));
	assert_null(nw_symtab_lookup(t, 1, UINT64_MAX));

	/* Modules are found in the module table now. */
	assert_int_equal(nw_module_find(&mods, "/lib/libc.so.6"), 1);
	assert_int_equal(nw_module_find(&mods, "/usr/bin/app"), 0);
	assert_int_equal(nw_module_find(&mods, "/nope"), -ENOENT);

	/*
	 * The table has no module list to check an index against (symbols.json's
	 * reader checks its indexes, test_bad_files): any module number is a key.
	 */
	assert_int_equal(nw_symtab_add(t, 3, 0x10, one_frame("x", NULL, 0), 1), 0);
	nw_symtab_sort(t);
	e = nw_symtab_lookup(t, 3, 0x10);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "x");
	nw_symtab_free(t);
	nw_module_table_fini(&mods);

	t = nw_symtab_new();
	assert_non_null(t);
	nw_symtab_sort(t);
	assert_null(nw_symtab_lookup(t, 0, 0));
	nw_module_table_init(&mods);
	assert_int_equal(nw_module_find(&mods, "/x"), -ENOENT);
	nw_module_table_fini(&mods);
	nw_symtab_free(t);
	nw_symtab_free(NULL);
}

/* nw_symtab_clear() forgets every entry; the table is usable again. */
static void test_clear(void **state)
{
	struct nw_module_table mods;
	struct nw_symtab *t = sample_table(&mods);

	assert_int_equal(t->nentries, 7);
	nw_symtab_clear(t);
	assert_int_equal(t->nentries, 0);
	nw_symtab_sort(t);
	assert_null(nw_symtab_lookup(t, 0, 0x1139));
	assert_int_equal(nw_symtab_add(t, 0, 0x1139, one_frame("again", NULL, 0), 1), 0);
	nw_symtab_sort(t);
	assert_string_equal(nw_symtab_lookup(t, 0, 0x1139)->frames[0].function, "again");
	nw_symtab_free(t);
	nw_module_table_fini(&mods);
}

static void test_duplicates_keep_first(void **state)
{
	struct nw_symtab *t = nw_symtab_new();
	const struct nw_symentry *e;

	assert_non_null(t);
	assert_int_equal(nw_symtab_add(t, 0, 0x20, one_frame("first", NULL, 0), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x10, one_frame("low", NULL, 0), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x20, one_frame("second", NULL, 0), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x20, one_frame("third", NULL, 0), 1), 0);
	nw_symtab_sort(t);
	assert_int_equal(t->nentries, 2);
	e = nw_symtab_lookup(t, 0, 0x20);
	assert_non_null(e);
	assert_string_equal(e->frames[0].function, "first");
	nw_symtab_free(t);
}

static void test_many_entries(void **state)
{
	struct nw_module_table mods;
	struct nw_symtab *t = nw_symtab_new();
	uint64_t s = 88172645463325252ULL;
	char name[32];

	assert_non_null(t);
	nw_module_table_init(&mods);
	for (int m = 0; m < 5; m++) {
		snprintf(name, sizeof(name), "/lib/m%d.so", m);
		assert_int_equal(nw_module_intern(&mods, name, NULL, 0), m);
	}
	/* Distinct keys: the address encodes the entry number. */
	for (uint32_t i = 0; i < 5000; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		snprintf(name, sizeof(name), "f%u", i);
		assert_int_equal(nw_symtab_add(t, (uint32_t)(s % 5), (s & ~0xffffULL) | i,
					       one_frame(name, NULL, 0), 1),
				 0);
	}
	assert_int_equal(nw_symbols_write(PATH, &mods, t), 0);
	nw_symtab_sort(t);
	assert_int_equal(t->nentries, 5000);
	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i];

		assert_ptr_equal(nw_symtab_lookup(t, e->module, e->addr), e);
		assert_null(nw_symtab_lookup(t, e->module, e->addr ^ 0x10000));
		snprintf(name, sizeof(name), "f%u", (unsigned)(e->addr & 0xffff));
		assert_string_equal(e->frames[0].function, name);
	}
	nw_symtab_free(t);
	nw_module_table_fini(&mods);
	unlink(PATH);
}

static void expect_bad(const char *text, const char *msg_part)
{
	struct nw_module_table mods;
	struct nw_symtab *r = nw_symtab_new();
	char err[256];
	FILE *f = fopen(PATH, "w");

	assert_non_null(f);
	assert_non_null(r);
	nw_module_table_init(&mods);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_symbols_read(PATH, &mods, r, err, sizeof(err)), -EBADMSG);
	/* The table is left empty. */
	assert_int_equal(r->nentries, 0);
	nw_symtab_free(r);
	nw_module_table_fini(&mods);
	if (!strstr(err, PATH) || !strstr(err, msg_part))
		fail_msg("message \"%s\" lacks the path or \"%s\"", err, msg_part);
	unlink(PATH);
}

#define MODS "\"modules\":[{\"path\":\"/a\",\"build_id\":\"\"},{\"path\":\"/b\",\"build_id\":\"ff\"}]"
#define FR   "\"frames\":[{\"function\":\"f\",\"line\":1,\"decl_line\":1}]"

static void test_bad_files(void **state)
{
	struct nw_module_table mods;
	struct nw_symtab *r = nw_symtab_new();
	char err[256];

	assert_non_null(r);
	nw_module_table_init(&mods);

	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":2,\"addr\":\"0x10\"," FR "}]}",
		   "\"entries[0].module\" is 2, but there are 2 modules");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":-1,\"addr\":\"0x10\"," FR "}]}",
		   "\"entries[0].module\" must be an integer");
	expect_bad("{\"version\":1,\"modules\":[],\"entries\":[{\"module\":0,\"addr\":\"0x10\"," FR
		   "}]}",
		   "\"entries[0].module\" is 0, but there are 0 modules");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"1139\"," FR "}]}",
		   "\"entries[0].addr\" must be a hex string");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0x\"," FR "}]}",
		   "\"entries[0].addr\"");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0x12g\"," FR "}]}",
		   "\"entries[0].addr\"");
	expect_bad("{\"version\":1," MODS
		   ",\"entries\":[{\"module\":1,\"addr\":\"0x10000000000000000\"," FR "}]}",
		   "\"entries[0].addr\"");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":4409," FR "}]}",
		   "\"entries[0].addr\" must be a string");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0x1\","
		   "\"frames\":[{\"line\":1,\"decl_line\":1}]}]}",
		   "missing key \"entries[0].frames[0].function\"");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0x1\","
		   "\"frames\":[{\"function\":\"f\",\"file\":7,\"line\":1,\"decl_line\":1}]}]}",
		   "\"entries[0].frames[0].file\" must be a string");
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0x1\","
		   "\"frames\":{}}]}",
		   "\"entries[0].frames\" must be an array");
	expect_bad("{\"version\":1,\"modules\":[{\"path\":\"/a\",\"build_id\":\"xy\"}],"
		   "\"entries\":[]}",
		   "\"modules[0].build_id\" is not a hex build-id: \"xy\"");
	expect_bad("{\"version\":1,\"modules\":[{\"path\":\"/a\",\"build_id\":\"abc\"}],"
		   "\"entries\":[]}",
		   "\"modules[0].build_id\" is not a hex build-id");
	expect_bad("{\"version\":1,\"modules\":[{\"build_id\":\"\"}],\"entries\":[]}",
		   "missing key \"modules[0].path\"");
	/* An entry that fails after good ones: none is kept. */
	expect_bad("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0x10\"," FR
		   "},{\"module\":0,\"addr\":\"0x20\"," FR "},{\"module\":0}]}",
		   "missing key \"entries[2].addr\"");
	expect_bad("{\"version\":1,\"modules\":[{\"path\":\"/a\"}],\"entries\":[]}",
		   "missing key \"modules[0].build_id\"");
	expect_bad("{\"version\":2," MODS ",\"entries\":[]}", "unsupported symbol table version 2");
	expect_bad("{\"version\":1," MODS "}", "missing key \"entries\"");
	expect_bad("{\"version\":1," MODS ",\"entries\":[]", "not JSON");
	expect_bad("symbols", "not JSON");

	assert_int_equal(nw_symbols_read(NW_TEST_BUILD "/no-such-symtab.json", &mods, r, err,
					 sizeof(err)),
			 -ENOENT);
	assert_int_equal(r->nentries, 0);
	assert_int_equal(mods.n, 0);

	/* Null file fields read as unknown. */
	{
		FILE *f = fopen(PATH, "w");
		const struct nw_symentry *e;

		assert_non_null(f);
		fputs("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0xABC\","
		      "\"frames\":[{\"function\":\"g\",\"file\":null,\"line\":0,\"decl_line\":0}]}]}",
		      f);
		assert_int_equal(fclose(f), 0);
		assert_int_equal(nw_symbols_read(PATH, &mods, r, err, sizeof(err)), 0);
		e = nw_symtab_lookup(r, 1, 0xabc);
		assert_non_null(e);
		assert_null(e->frames[0].file);
		assert_int_equal(mods.v[1].build_id_size, 1);
		assert_int_equal(mods.v[1].build_id[0], 0xff);
		nw_symtab_free(r);
		nw_module_table_fini(&mods);
		unlink(PATH);
	}
}

/*
 * A module listed twice (same path and build-id) is one module of the
 * table: both indexes of the file key its entries.
 */
static void test_repeated_module(void **state)
{
	struct nw_module_table mods;
	struct nw_symtab *r = nw_symtab_new();
	char err[256];
	FILE *f = fopen(PATH, "w");

	assert_non_null(f);
	assert_non_null(r);
	nw_module_table_init(&mods);
	fputs("{\"version\":1,\"modules\":[{\"path\":\"/a\",\"build_id\":\"\"},"
	      "{\"path\":\"/a\",\"build_id\":\"\"}],\"entries\":["
	      "{\"module\":0,\"addr\":\"0x10\"," FR "},{\"module\":1,\"addr\":\"0x20\"," FR "}]}",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_symbols_read(PATH, &mods, r, err, sizeof(err)), 0);
	assert_int_equal(mods.n, 1);
	assert_non_null(nw_symtab_lookup(r, 0, 0x10));
	assert_non_null(nw_symtab_lookup(r, 0, 0x20));
	nw_symtab_free(r);
	nw_module_table_fini(&mods);
	unlink(PATH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_read_into_module_table),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_clear),
		cmocka_unit_test(test_duplicates_keep_first),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_repeated_module),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
