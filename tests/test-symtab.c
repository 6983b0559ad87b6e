/* SPDX-License-Identifier: MIT */
/* symbols.json and the symbol table: round trip, lookup, bad files. */
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

/* Three modules, entries added out of order. */
static struct nw_symtab *sample_table(void)
{
	static const char *const fn[] = { "inner_inline", "middle_inline", "outer(int)" };
	static const char *const file[] = { "/src/a.h", NULL, "/src/a.c" };
	static const uint32_t line[] = { 12, 0, 40 };
	static const char *const decl_file[] = { "/src/a.h", "/src/b.h", NULL };
	static const uint32_t decl_line[] = { 10, 3, 0 };
	struct nw_symtab *t = nw_symtab_new();

	assert_non_null(t);
	assert_int_equal(nw_symtab_module(t, "/usr/bin/app", "00112233445566778899aabbccddeeff00112233"), 0);
	assert_int_equal(nw_symtab_module(t, "/lib/libc.so.6", ""), 1);
	assert_int_equal(nw_symtab_module(t, "/lib/libc.so.6", "abcdef"), 2);
	/* The same (path, build-id) again is the same module. */
	assert_int_equal(nw_symtab_module(t, "/usr/bin/app", "00112233445566778899aabbccddeeff00112233"), 0);
	assert_int_equal(nw_symtab_module(t, "/lib/libc.so.6", NULL), 1);

	assert_int_equal(nw_symtab_add(t, 1, 0x29d90, one_frame("__libc_start_call_main", NULL, 0), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x1139, one_frame("main", "/src/main.c", 7), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0x1138, frames_of(3, fn, file, line, decl_file, decl_line), 3), 0);
	assert_int_equal(nw_symtab_add(t, 2, UINT64_MAX, one_frame("ns::f<\"q\">()", "/x/y.cc", 1), 1), 0);
	assert_int_equal(nw_symtab_add(t, 0, 0, NULL, 0), 0);
	assert_int_equal(nw_symtab_add(t, 2, 0x1139, one_frame("other_module", NULL, 0), 1), 0);
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

static void test_round_trip(void **state)
{
	struct nw_symtab *t = sample_table(), *r = NULL;
	const struct nw_symentry *e;
	char err[256], text[8192];
	FILE *f;
	size_t n;

	/* Written unsorted: the reader sorts. */
	assert_int_equal(nw_symtab_write(PATH, t), 0);
	assert_int_equal(nw_symtab_read(PATH, &r, err, sizeof(err)), 0);
	assert_int_equal(r->nmodules, 3);
	for (uint32_t i = 0; i < 3; i++) {
		assert_string_equal(r->modules[i].path, t->modules[i].path);
		assert_string_equal(r->modules[i].build_id, t->modules[i].build_id);
	}
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
	assert_null(strstr(text, "null"));
	nw_symtab_free(r);
	nw_symtab_free(t);
	unlink(PATH);
}

static void test_lookup(void **state)
{
	struct nw_symtab *t = sample_table();
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

	assert_int_equal(nw_symtab_find_module(t, "/lib/libc.so.6"), 1);
	assert_int_equal(nw_symtab_find_module(t, "/usr/bin/app"), 0);
	assert_int_equal(nw_symtab_find_module(t, "/nope"), -ENOENT);

	/* A bad module index is refused, and the frames are freed (valgrind). */
	assert_int_equal(nw_symtab_add(t, 3, 0x10, one_frame("x", NULL, 0), 1), -EINVAL);
	nw_symtab_free(t);

	t = nw_symtab_new();
	assert_non_null(t);
	nw_symtab_sort(t);
	assert_null(nw_symtab_lookup(t, 0, 0));
	assert_int_equal(nw_symtab_find_module(t, "/x"), -ENOENT);
	nw_symtab_free(t);
	nw_symtab_free(NULL);
}

static void test_duplicates_keep_first(void **state)
{
	struct nw_symtab *t = nw_symtab_new();
	const struct nw_symentry *e;

	assert_non_null(t);
	assert_int_equal(nw_symtab_module(t, "/m", ""), 0);
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
	struct nw_symtab *t = nw_symtab_new();
	uint64_t s = 88172645463325252ULL;
	char name[32];

	assert_non_null(t);
	for (int m = 0; m < 5; m++) {
		snprintf(name, sizeof(name), "/lib/m%d.so", m);
		assert_int_equal(nw_symtab_module(t, name, ""), m);
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
	assert_int_equal(nw_symtab_write(PATH, t), 0);
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
	unlink(PATH);
}

static void expect_bad(const char *text, const char *msg_part)
{
	struct nw_symtab *r = NULL;
	char err[256];
	FILE *f = fopen(PATH, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_symtab_read(PATH, &r, err, sizeof(err)), -EBADMSG);
	assert_null(r);
	if (!strstr(err, PATH) || !strstr(err, msg_part))
		fail_msg("message \"%s\" lacks the path or \"%s\"", err, msg_part);
	unlink(PATH);
}

#define MODS "\"modules\":[{\"path\":\"/a\",\"build_id\":\"\"},{\"path\":\"/b\",\"build_id\":\"ff\"}]"
#define FR   "\"frames\":[{\"function\":\"f\",\"line\":1,\"decl_line\":1}]"

static void test_bad_files(void **state)
{
	struct nw_symtab *r = NULL;
	char err[256];

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
	expect_bad("{\"version\":1,\"modules\":[{\"path\":\"/a\",\"build_id\":\"\"},"
		   "{\"path\":\"/a\",\"build_id\":\"\"}],\"entries\":[]}",
		   "\"modules[1]\" repeats module 0");
	expect_bad("{\"version\":1,\"modules\":[{\"path\":\"/a\"}],\"entries\":[]}",
		   "missing key \"modules[0].build_id\"");
	expect_bad("{\"version\":2," MODS ",\"entries\":[]}", "unsupported symbol table version 2");
	expect_bad("{\"version\":1," MODS "}", "missing key \"entries\"");
	expect_bad("{\"version\":1," MODS ",\"entries\":[]", "not JSON");
	expect_bad("symbols", "not JSON");

	assert_int_equal(nw_symtab_read(NW_TEST_BUILD "/no-such-symtab.json", &r, err,
					sizeof(err)),
			 -ENOENT);
	assert_null(r);

	/* Null file fields read as unknown. */
	{
		FILE *f = fopen(PATH, "w");
		const struct nw_symentry *e;

		assert_non_null(f);
		fputs("{\"version\":1," MODS ",\"entries\":[{\"module\":1,\"addr\":\"0xABC\","
		      "\"frames\":[{\"function\":\"g\",\"file\":null,\"line\":0,\"decl_line\":0}]}]}",
		      f);
		assert_int_equal(fclose(f), 0);
		assert_int_equal(nw_symtab_read(PATH, &r, err, sizeof(err)), 0);
		e = nw_symtab_lookup(r, 1, 0xabc);
		assert_non_null(e);
		assert_null(e->frames[0].file);
		assert_string_equal(r->modules[1].build_id, "ff");
		nw_symtab_free(r);
		unlink(PATH);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_duplicates_keep_first),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_bad_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
