/* SPDX-License-Identifier: MIT */
/*
 * The code store (model/codestore.h) and its file, code.nwcode
 * (format/codefile.h): lookups by address, line entries, notes, merging
 * with modules renumbered; a store written and read back equal, modules
 * found again by path and build-id; the reader's checks, each on a file
 * broken in one place (truncated anywhere, wrong magic or version, counts
 * larger than the file, an index out of range, functions out of order or
 * overlapping, more bytes than the function, a bad line entry, an inlined
 * range outside the function, bytes after the end), refused with a
 * message naming the file and the byte; and nw_measurement_read_code() on
 * a directory, on one without code and on a corrupt file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/codefile.h"
#include "format/reader.h"
#include "model/codestore.h"
#include "model/measurement.h"

static const uint8_t ID_A[] = { 0x4e, 0x57, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06 };

/*
 * A store over @mods: module 0 "/bin/app" (a build-id) with two functions,
 * the first cut short with lines and an inlined range; module 1 "[kernel]"
 * with one left out; a note on module 1.
 */
static struct nw_codestore *sample_store(struct nw_module_table *mods)
{
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0x5d, 0xc3, 0xcc };
	struct nw_codestore *cs = nw_codestore_new();
	struct nw_code_line lines[3];
	struct nw_code_inline inl;
	int64_t file, fn;

	assert_non_null(cs);
	assert_int_equal(nw_module_intern(mods, "/bin/app", ID_A, sizeof(ID_A)), 0);
	assert_int_equal(nw_module_intern(mods, "[kernel.kallsyms]", NULL, 0), 1);
	file = nw_codestore_string(cs, "/src/app.c");
	fn = nw_codestore_string(cs, "helper");
	assert_int_equal(file, 0);
	assert_int_equal(fn, 1);
	assert_int_equal(nw_codestore_string(cs, "/src/app.c"), 0);
	lines[0] = (struct nw_code_line){ 0, (uint32_t)file, 10 };
	lines[1] = (struct nw_code_line){ 4, NW_CODE_NONE, 0 };
	lines[2] = (struct nw_code_line){ 5, (uint32_t)file, 9 };
	inl = (struct nw_code_inline){ 1, 4, (uint32_t)fn, 1 };
	cs->func_cap = 4096;
	cs->total_cap = 1 << 20;
	/* Out of order on purpose: nw_codestore_sort() puts them in place. */
	assert_non_null(nw_codestore_add(cs, 0, 62, NW_CODE_STORED, NW_CODE_FILE, 0x2000, 8, code,
					 8, NULL, 0, NULL, 0));
	assert_non_null(nw_codestore_add(cs, 0, 62, NW_CODE_STORED, NW_CODE_FILE, 0x1000, 100, code,
					 8, lines, 3, &inl, 1));
	assert_non_null(nw_codestore_add(cs, 1, 62, NW_CODE_NO_KCORE, NW_CODE_KCORE,
					 0xffffffff81000000ull, 64, NULL, 0, NULL, 0, NULL, 0));
	assert_int_equal(nw_codestore_note(cs, 1, NW_CODE_NO_EXTENT, 2), 0);
	assert_int_equal(nw_codestore_note(cs, 1, NW_CODE_NO_EXTENT, 3), 0);
	nw_codestore_sort(cs);
	return cs;
}

static void test_store(void **state)
{
	struct nw_module_table mods;
	struct nw_codestore *cs;
	const struct nw_code_func *f;
	const struct nw_code_line *l;

	(void)state;
	nw_module_table_init(&mods);
	cs = sample_store(&mods);
	assert_int_equal(cs->nfuncs, 3);
	assert_int_equal(cs->funcs[0].start, 0x1000);
	f = nw_codestore_find(cs, 0, 0x1000 + 99);
	assert_non_null(f);
	assert_int_equal(f->start, 0x1000);
	assert_int_equal(f->nbytes, 8);
	assert_int_equal(f->size, 100);
	assert_null(nw_codestore_find(cs, 0, 0x1000 + 100));
	assert_null(nw_codestore_find(cs, 0, 0xfff));
	assert_null(nw_codestore_find(cs, 2, 0x1000));
	assert_non_null(nw_codestore_find(cs, 1, 0xffffffff81000010ull));
	l = nw_code_line_at(f, 3);
	assert_int_equal(l->line, 10);
	l = nw_code_line_at(f, 4);
	assert_int_equal(l->line, 0);
	l = nw_code_line_at(f, 50);
	assert_int_equal(l->line, 9);
	assert_int_equal(cs->nnotes, 1);
	assert_int_equal(cs->notes[0].count, 5);
	/* More bytes than the function holds: refused. */
	assert_null(nw_codestore_add(cs, 0, 62, NW_CODE_STORED, NW_CODE_FILE, 0x3000, 2,
				     (const uint8_t *)"abc", 3, NULL, 0, NULL, 0));
	nw_codestore_free(cs);
	nw_module_table_fini(&mods);
	nw_codestore_free(NULL);
}

static void test_merge(void **state)
{
	struct nw_module_table mods;
	struct nw_codestore *src, *dst = NULL;
	const uint32_t mod[] = { 5, 7 };

	(void)state;
	nw_module_table_init(&mods);
	src = sample_store(&mods);
	assert_int_equal(nw_codestore_merge(&dst, NULL, mod), 0);
	assert_null(dst);
	assert_int_equal(nw_codestore_merge(&dst, src, mod), 0);
	assert_non_null(dst);
	assert_int_equal(dst->nfuncs, 3);
	assert_non_null(nw_codestore_find(dst, 5, 0x1004));
	assert_non_null(nw_codestore_find(dst, 7, 0xffffffff81000000ull));
	assert_string_equal(dst->strings[nw_codestore_find(dst, 5, 0x1000)->inlines[0].name],
			    "helper");
	/* The same functions again: kept once; notes add up. */
	assert_int_equal(nw_codestore_merge(&dst, src, mod), 0);
	assert_int_equal(dst->nfuncs, 3);
	assert_int_equal(dst->notes[0].count, 10);
	nw_codestore_free(src);
	nw_codestore_free(dst);
	nw_module_table_fini(&mods);
}

/* @cs written to memory: *@len bytes, malloc'd. */
static uint8_t *write_mem(const struct nw_codestore *cs, const struct nw_module_table *mods,
			  size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(nw_codefile_write_fp(f, cs, mods), 0);
	assert_int_equal(fclose(f), 0);
	return (uint8_t *)buf;
}

static void test_roundtrip(void **state)
{
	struct nw_module_table mods, other;
	struct nw_codestore *cs, *back = NULL;
	char err[256] = "";
	uint8_t *buf;
	size_t len;

	(void)state;
	nw_module_table_init(&mods);
	nw_module_table_init(&other);
	cs = sample_store(&mods);
	buf = write_mem(cs, &mods, &len);
	assert_memory_equal(buf, NW_CODEFILE_MAGIC, 8);
	/* The reader's modules: one already there (index 0), the other added. */
	assert_int_equal(nw_module_intern(&other, "[kernel.kallsyms]", NULL, 0), 0);
	assert_int_equal(nw_codefile_parse(buf, len, "x/code.nwcode", &other, &back, err,
					   sizeof(err)), 0);
	assert_int_equal(other.n, 2);
	assert_string_equal(other.v[1].path, "/bin/app");
	assert_int_equal(other.v[1].build_id_size, sizeof(ID_A));
	assert_int_equal(back->nfuncs, 3);
	assert_int_equal(back->func_cap, 4096);
	assert_int_equal(back->total_cap, 1 << 20);
	for (uint32_t i = 0; i < back->nfuncs; i++) {
		const struct nw_code_func *a = &cs->funcs[i];
		const struct nw_code_func *b = nw_codestore_find(back, a->module ? 0 : 1, a->start);

		assert_non_null(b);
		assert_int_equal(b->start, a->start);
		assert_int_equal(b->size, a->size);
		assert_int_equal(b->status, a->status);
		assert_int_equal(b->origin, a->origin);
		assert_int_equal(b->machine, a->machine);
		assert_int_equal(b->nbytes, a->nbytes);
		if (a->nbytes)
			assert_memory_equal(b->bytes, a->bytes, a->nbytes);
		assert_int_equal(b->nlines, a->nlines);
		for (uint32_t k = 0; k < a->nlines; k++) {
			assert_int_equal(b->lines[k].offset, a->lines[k].offset);
			assert_int_equal(b->lines[k].line, a->lines[k].line);
			assert_int_equal(b->lines[k].file, a->lines[k].file);
		}
		assert_int_equal(b->ninlines, a->ninlines);
		for (uint32_t k = 0; k < a->ninlines; k++)
			assert_memory_equal(&b->inlines[k], &a->inlines[k], sizeof(a->inlines[k]));
	}
	assert_int_equal(back->nnotes, 1);
	assert_int_equal(back->notes[0].module, 0);
	assert_int_equal(back->notes[0].count, 5);
	nw_codestore_free(back);
	/* Every prefix is refused, naming the file and a byte. */
	for (size_t n = 0; n < len; n++) {
		back = NULL;
		err[0] = 0;
		assert_int_equal(nw_codefile_parse(buf, n, "x/code.nwcode", &other, &back, err,
						   sizeof(err)), -EBADMSG);
		assert_null(back);
		assert_non_null(strstr(err, "x/code.nwcode: byte "));
	}
	free(buf);
	nw_codestore_free(cs);
	nw_module_table_fini(&mods);
	nw_module_table_fini(&other);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * A file of one module ("/a", no build-id), no strings, two functions
 * (0x100, 16 bytes, 4 stored; 0x200, 8 bytes, none stored), no note:
 * offsets of its fields into *@at for the test to break.
 */
struct layout {
	size_t version, nfuncs, f0, f0_nbytes, f0_size, f1_start, f1, f0_lines, end;
};

static size_t craft(uint8_t *b, struct layout *at)
{
	size_t p = 0;

	memcpy(b, NW_CODEFILE_MAGIC, 8);
	at->version = 8;
	put32(b + 8, 1);
	put32(b + 12, 1);  /* modules */
	put32(b + 16, 0);  /* strings */
	at->nfuncs = 20;
	put32(b + 20, 2);  /* functions */
	put32(b + 24, 0);  /* notes */
	put32(b + 28, 0);
	put64(b + 32, 65536);
	put64(b + 40, 8 << 20);
	p = 48;
	put32(b + p, 2);
	memcpy(b + p + 4, "/a", 2);
	b[p + 6] = 0;
	p += 7;
	/* Function 0: stored, one line entry of 2 bytes (offset 0 | file changed; file 0; line +3).
	 */
	at->f0 = p;
	put32(b + p, 0);
	b[p + 4] = 62;
	b[p + 5] = 0;
	b[p + 6] = NW_CODE_STORED;
	b[p + 7] = NW_CODE_FILE;
	put64(b + p + 8, 0x100);
	at->f0_size = p + 16;
	put64(b + p + 16, 16);
	at->f0_nbytes = p + 24;
	put32(b + p + 24, 4);
	put32(b + p + 28, 1);  /* lines */
	put32(b + p + 32, 3);  /* their bytes */
	put32(b + p + 36, 0);  /* inlined ranges */
	p += 40;
	memcpy(b + p, "\x90\x90\x90\xc3", 4);
	p += 4;
	at->f0_lines = p;
	b[p] = 1;              /* offset 0, file changed */
	b[p + 1] = 0;          /* file: unknown */
	b[p + 2] = 6;          /* line +3 */
	p += 3;
	/* Function 1: left out for the total cap. */
	at->f1 = p;
	put32(b + p, 0);
	b[p + 4] = 62;
	b[p + 5] = 0;
	b[p + 6] = NW_CODE_CAPPED;
	b[p + 7] = NW_CODE_FILE;
	at->f1_start = p + 8;
	put64(b + p + 8, 0x200);
	put64(b + p + 16, 8);
	put32(b + p + 24, 0);
	put32(b + p + 28, 0);
	put32(b + p + 32, 0);
	put32(b + p + 36, 0);
	p += 40;
	at->end = p;
	return p;
}

/* Parses @b (@len bytes): the result, and the message in @err. */
static int parse(const uint8_t *b, size_t len, char *err, size_t errlen)
{
	struct nw_module_table mods;
	struct nw_codestore *cs = NULL;
	int rc;

	nw_module_table_init(&mods);
	err[0] = 0;
	rc = nw_codefile_parse(b, len, "d/code.nwcode", &mods, &cs, err, errlen);
	if (!rc) {
		assert_int_equal(cs->nfuncs, 2);
		assert_int_equal(cs->funcs[0].nlines, 1);
		assert_int_equal(cs->funcs[0].lines[0].line, 3);
	}
	nw_codestore_free(cs);
	nw_module_table_fini(&mods);
	return rc;
}

/* The byte offset a message names. */
static size_t byte_of(const char *err)
{
	const char *p = strstr(err, ": byte ");

	assert_non_null(p);
	return (size_t)strtoull(p + 7, NULL, 10);
}

static void test_corrupt(void **state)
{
	uint8_t good[512], b[600];
	struct layout at;
	char err[512];
	size_t len;

	(void)state;
	len = craft(good, &at);
	assert_int_equal(parse(good, len, err, sizeof(err)), 0);

	memcpy(b, good, len);
	b[3] = 'X';
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "not a code file"));

	memcpy(b, good, len);
	put32(b + at.version, 2);
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "version 2"));

	memcpy(b, good, len);
	put32(b + at.nfuncs, 0x7fffffff);
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "larger than the file"));

	memcpy(b, good, len);
	put32(b + at.f0, 1);  /* module 1 of 1 */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_int_equal(byte_of(err), at.f0);
	assert_non_null(strstr(err, "module 1 of 1"));

	memcpy(b, good, len);
	put64(b + at.f1_start, 0x100);  /* the same start: not after the one before */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_int_equal(byte_of(err), at.f1);
	assert_non_null(strstr(err, "not after"));

	memcpy(b, good, len);
	put64(b + at.f1_start, 0x10f);  /* inside function 0 */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "overlapping"));

	memcpy(b, good, len);
	put32(b + at.f0_nbytes, 17);  /* more than its 16 bytes */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "17 bytes stored of 16"));

	memcpy(b, good, len);
	b[at.f0_lines] = 0;  /* the first entry names no file */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "does not name its file"));

	memcpy(b, good, len);
	b[at.f0_lines] = 16 << 1 | 1;  /* offset 16 of a 16-byte function */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "line entry 0"));

	memcpy(b, good, len);
	b[at.f0_lines + 1] = 5;  /* file 4 of no strings */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "of 0 strings"));

	memcpy(b, good, len);
	b[at.f0_lines + 2] = 0x80;  /* a varint running on past the entries */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "runs past"));

	memcpy(b, good, len);
	b[at.f0_lines + 2] = 5;  /* line -3 */
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "line -"));

	memcpy(b, good, len);
	b[at.f1 + 6] = NW_CODE_STATUS_MAX;
	assert_int_equal(parse(b, len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "unknown"));

	/* An inlined range past the function's end, in a function that gets one. */
	{
		size_t n;

		memcpy(b, good, at.f1);
		put32(b + at.f0 + 36, 1);
		n = at.f1;
		put32(b + n, 0);
		put32(b + n + 4, 17);
		put32(b + n + 8, 0);
		put32(b + n + 12, 1);
		n += 16;
		memcpy(b + n, good + at.f1, at.end - at.f1);
		n += at.end - at.f1;
		assert_int_equal(parse(b, n, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "inlined range 0"));
	}

	memcpy(b, good, len);
	b[len] = 0;
	assert_int_equal(parse(b, len + 1, err, sizeof(err)), -EBADMSG);
	assert_int_equal(byte_of(err), len);
	assert_non_null(strstr(err, "after the last note"));
}

/* A measurement directory with a manifest and, when @code, a code file of @code_len bytes. */
static void make_dir(const char *dir, const uint8_t *code, size_t code_len)
{
	char path[700];
	FILE *f;

	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, NW_CODEFILE_NAME);
	if (code) {
		f = fopen(path, "w");
		assert_non_null(f);
		assert_int_equal(fwrite(code, 1, code_len, f), code_len);
		assert_int_equal(fclose(f), 0);
	}
}

static void rm_dir(const char *dir)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", dir, NW_CODEFILE_NAME);
	unlink(path);
	rmdir(dir);
}

static void test_read_code(void **state)
{
	char tmpl[] = "/tmp/nw-codestore-XXXXXX", dir[600], err[512];
	struct nw_measurement *m = nw_measurement_new();
	struct layout at;
	uint8_t good[512];
	size_t len = craft(good, &at);

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(m);
	/* None: 0, nothing read. */
	snprintf(dir, sizeof(dir), "%s/none", tmpl);
	make_dir(dir, NULL, 0);
	assert_int_equal(nw_measurement_read_code(m, dir, err, sizeof(err)), 0);
	assert_null(m->code);
	rm_dir(dir);
	/* A good one. */
	snprintf(dir, sizeof(dir), "%s/good", tmpl);
	make_dir(dir, good, len);
	assert_int_equal(nw_measurement_read_code(m, dir, err, sizeof(err)), 1);
	assert_non_null(m->code);
	assert_int_equal(m->code->nfuncs, 2);
	assert_int_equal(m->modules->n, 1);
	assert_string_equal(m->modules->v[0].path, "/a");
	rm_dir(dir);
	nw_measurement_free(m);
	/* A corrupt one: refused, the message naming it. */
	m = nw_measurement_new();
	snprintf(dir, sizeof(dir), "%s/bad", tmpl);
	make_dir(dir, good, len - 1);
	assert_int_equal(nw_measurement_read_code(m, dir, err, sizeof(err)), -EBADMSG);
	assert_null(m->code);
	assert_non_null(strstr(err, "/bad/code.nwcode: byte "));
	rm_dir(dir);
	nw_measurement_free(m);
	rmdir(tmpl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_read_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
