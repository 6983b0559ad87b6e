/* SPDX-License-Identifier: MIT */
/*
 * The ELF facts cache (elf/facts.h) on the fixtures of tests/symtest.h,
 * checked against what libelf reads from them, and the arithmetic of a
 * module's facts (model/module.h): file offset <-> ELF address, build-ids.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf/facts.h"
#include "model/module.h"
#include "symtest.h"

static int setup(void **state)
{
	*state = nw_elf_cache_new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	nw_elf_cache_free(*state);
	return 0;
}

/* The facts of @path, which must be readable. */
static const struct nw_module_facts *facts_of(struct nw_elf_cache *c, const char *path)
{
	const struct nw_module_facts *f = NULL;

	assert_int_equal(nw_elf_facts_get(c, path, &f), 0);
	assert_non_null(f);
	assert_true(f->known);
	return f;
}

/* The build-id of @f in hex. */
static void facts_build_id(const struct nw_module_facts *f, char *buf, size_t len)
{
	nw_build_id_hex(f->build_id, f->build_id_size, buf, len);
}

/* A copy of @src at a new temporary path (in @path) with every @from replaced by @to. */
static void patched_copy(const char *src, char *path, const void *from, const void *to,
			 size_t len, size_t at_least)
{
	unsigned char *bytes;
	size_t hits = 0;
	struct stat st;
	FILE *f;
	int fd;

	f = fopen(src, "rb");
	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	bytes = malloc((size_t)st.st_size);
	assert_non_null(bytes);
	assert_int_equal(fread(bytes, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	for (size_t i = 0; i + len <= (size_t)st.st_size; i++) {
		if (!memcmp(bytes + i, from, len)) {
			memcpy(bytes + i, to, len);
			hits++;
		}
	}
	assert_true(hits >= at_least);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, (size_t)st.st_size), st.st_size);
	close(fd);
	free(bytes);
}

/* ---- offset -> ELF address (was nw_symbol_offset_to_vaddr) ---- */

static void check_offset(struct nw_elf_cache *c, const char *path, const char *sym)
{
	uint64_t vaddr = elf_symbol(path, sym, NULL), got = 0, back = 0;
	uint64_t off = elf_section_offset(path, vaddr);
	const struct nw_module_facts *f = facts_of(c, path);

	assert_int_equal(nw_facts_offset_to_vaddr(f, off, &got), 0);
	assert_int_equal(got, vaddr);
	/* And back. */
	assert_int_equal(nw_facts_vaddr_to_offset(f, vaddr, &back), 0);
	assert_int_equal(back, off);
}

static void test_offset_to_vaddr(void **state)
{
	struct nw_elf_cache *c = *state;
	uint64_t v = 0, text = elf_symbol(SYMTEST_NODEBUG, "symtest_leaf", NULL);
	uint64_t data = elf_symbol(SYMTEST, "symtest_data", NULL);
	struct stat st;

	/* Text of a non-PIE and data of a PIE: both differ from their offsets. */
	assert_int_not_equal(elf_section_offset(SYMTEST_NODEBUG, text), text);
	assert_int_not_equal(elf_section_offset(SYMTEST, data), data);
	check_offset(c, SYMTEST_NODEBUG, "symtest_leaf");
	check_offset(c, SYMTEST_NODEBUG, "symtest_data");
	check_offset(c, SYMTEST, "symtest_leaf");
	check_offset(c, SYMTEST, "symtest_data");
	check_offset(c, SYMTEST, "_ZN2nw7mangledEi");

	assert_int_equal(stat(SYMTEST, &st), 0);
	assert_int_equal(nw_facts_offset_to_vaddr(facts_of(c, SYMTEST), (uint64_t)st.st_size + 4096,
						  &v),
			 -ERANGE);
}

/* ---- build-id (was nw_symbol_build_id) ---- */

static void test_build_id(void **state)
{
	struct nw_elf_cache *c = *state;
	char buf[41], note[41] = "", path[] = "/tmp/nw-test-elf-XXXXXX";
	const struct nw_module_facts *f = NULL;
	size_t type_off = 0;
	unsigned char *bytes;
	uint32_t type = 0x4e570000;
	struct stat st;
	FILE *fp;
	int fd;

	facts_build_id(facts_of(c, SYMTEST), buf, sizeof(buf));
	assert_string_equal(buf, SYMTEST_BUILD_ID);
	elf_note_build_id(SYMTEST, note, NULL);
	assert_string_equal(buf, note);

	/* The default (linker-computed) build-id of the other copy. */
	elf_note_build_id(SYMTEST_NODEBUG, note, &type_off);
	assert_int_equal(strlen(note), 40);
	facts_build_id(facts_of(c, SYMTEST_NODEBUG), buf, sizeof(buf));
	assert_string_equal(buf, note);
	/* A buffer too small for it takes the bytes that fit, whole. */
	facts_build_id(facts_of(c, SYMTEST_NODEBUG), buf, 40);
	assert_int_equal(strlen(buf), 38);
	assert_memory_equal(buf, note, 38);

	/* A copy whose note has another type has no build-id. */
	fp = fopen(SYMTEST_NODEBUG, "rb");
	assert_non_null(fp);
	assert_int_equal(fstat(fileno(fp), &st), 0);
	bytes = malloc((size_t)st.st_size);
	assert_non_null(bytes);
	assert_int_equal(fread(bytes, 1, (size_t)st.st_size, fp), (size_t)st.st_size);
	fclose(fp);
	assert_true(type_off + 4 <= (size_t)st.st_size);
	memcpy(bytes + type_off, &type, sizeof(type));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, (size_t)st.st_size), st.st_size);
	close(fd);
	free(bytes);
	strcpy(buf, "x");
	f = facts_of(c, path);
	assert_int_equal(f->build_id_size, 0);
	facts_build_id(f, buf, sizeof(buf));
	assert_string_equal(buf, "");
	unlink(path);

	f = NULL;
	assert_int_equal(nw_elf_facts_get(c, NW_TEST_BUILD "/no-such-file", &f), -ENOENT);
	assert_int_equal(nw_elf_facts_get(c, SYMTEST_SRC, &f), -ENOENT);
	assert_null(f);
}

/* ---- the facts themselves, against libelf ---- */

static void check_against_libelf(struct nw_elf_cache *c, const char *path, bool dyn)
{
	const struct nw_module_facts *f = facts_of(c, path);
	size_t phnum = 0;
	uint32_t n = 0, nexec = 0;
	GElf_Ehdr eh;
	int fd;
	Elf *elf = elf_open(path, &fd);

	assert_non_null(gelf_getehdr(elf, &eh));
	assert_int_equal(f->machine, eh.e_machine);
	assert_int_equal(f->entry, eh.e_entry);
	assert_int_equal(f->dyn, dyn);
	assert_int_equal(eh.e_type, dyn ? ET_DYN : ET_EXEC);
	assert_int_equal(elf_getphdrnum(elf, &phnum), 0);
	/* Every PT_LOAD, in file order; nothing else. */
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type != PT_LOAD)
			continue;
		assert_true(n < f->nsegs);
		assert_int_equal(f->segs[n].vaddr, ph.p_vaddr);
		assert_int_equal(f->segs[n].memsz, ph.p_memsz);
		assert_int_equal(f->segs[n].offset, ph.p_offset);
		assert_int_equal(f->segs[n].filesz, ph.p_filesz);
		assert_int_equal(f->segs[n].exec, (ph.p_flags & PF_X) != 0);
		nexec += f->segs[n].exec;
		n++;
	}
	assert_int_equal(n, f->nsegs);
	assert_true(nexec >= 1);
	/* gcc's output has .eh_frame. */
	assert_true(f->has_cfi);
	elf_close(elf, fd);
}

static void test_facts(void **state)
{
	check_against_libelf(*state, SYMTEST, true);
	check_against_libelf(*state, SYMTEST_NODEBUG, false);
}

/* A file without .eh_frame or .debug_frame has no CFI. */
static void test_no_cfi(void **state)
{
	char path[] = "/tmp/nw-test-elf-XXXXXX";
	const struct nw_module_facts *f;

	/* Section names only: ".eh_frame" (and ".eh_frame_hdr") become ".xh_frame". */
	patched_copy(SYMTEST_NODEBUG, path, ".eh_frame", ".xh_frame", 9, 1);
	f = facts_of(*state, path);
	assert_false(f->has_cfi);
	assert_true(f->nsegs > 0);
	unlink(path);
}

/* ---- the cache ---- */

static void test_cache(void **state)
{
	struct nw_elf_cache *c = *state;
	const struct nw_module_facts *a = NULL, *b = NULL, *f = NULL;

	/* One read per path: the same facts again. */
	assert_int_equal(nw_elf_facts_get(c, SYMTEST, &a), 0);
	assert_int_equal(nw_elf_facts_get(c, SYMTEST, &b), 0);
	assert_ptr_equal(a, b);
	/* Missing, non-ELF and relative paths, twice each (the second from the cache). */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(nw_elf_facts_get(c, NW_TEST_BUILD "/no-such-file", &f), -ENOENT);
		assert_int_equal(nw_elf_facts_get(c, SYMTEST_SRC, &f), -ENOENT);
		assert_int_equal(nw_elf_facts_get(c, "symtest", &f), -ENOENT);
		assert_int_equal(nw_elf_facts_get(c, "//anon", &f), -ENOENT);
		assert_int_equal(nw_elf_facts_get(c, "", &f), -ENOENT);
	}
	assert_null(f);
	nw_elf_cache_free(NULL);
}

/* The path "[vdso]" stands for this process's vdso image. */
static void test_vdso(void **state)
{
	const struct nw_module_facts *f = NULL;
	bool exec = false;
	int rc;

	if (!getauxval(AT_SYSINFO_EHDR)) {
		assert_int_equal(nw_elf_facts_get(*state, "[vdso]", &f), -ENOENT);
		return;
	}
	rc = nw_elf_facts_get(*state, "[vdso]", &f);
	assert_int_equal(rc, 0);
	assert_true(f->known);
	assert_true(f->dyn);
	for (uint32_t i = 0; i < f->nsegs; i++)
		exec |= f->segs[i].exec;
	assert_true(exec);
}

/* The facts of a module as mapped: only when the file is the build that was mapped. */
static void test_facts_for(void **state)
{
	struct nw_elf_cache *c = *state;
	const struct nw_module_facts *f = facts_of(c, SYMTEST);
	struct nw_module_facts d;
	uint8_t other[20];

	/* The same build: a copy the caller owns. */
	assert_int_equal(nw_elf_facts_for(c, SYMTEST, f->build_id, f->build_id_size, &d), 0);
	assert_true(d.known);
	assert_int_equal(d.nsegs, f->nsegs);
	assert_ptr_not_equal(d.segs, f->segs);
	assert_memory_equal(d.segs, f->segs, f->nsegs * sizeof(*f->segs));
	assert_int_equal(d.entry, f->entry);
	nw_module_facts_fini(&d);
	assert_false(d.known);
	assert_null(d.segs);
	/* The cache's copy is untouched. */
	assert_true(facts_of(c, SYMTEST)->nsegs > 0);

	/* No build-id known for the mapping: the file on disk is taken. */
	assert_int_equal(nw_elf_facts_for(c, SYMTEST, NULL, 0, &d), 0);
	assert_true(d.known);
	nw_module_facts_fini(&d);

	/* Another build (the file was rebuilt since): nothing known. */
	memcpy(other, f->build_id, sizeof(other));
	other[19] ^= 1;
	assert_int_equal(nw_elf_facts_for(c, SYMTEST, other, 20, &d), 0);
	assert_false(d.known);
	assert_null(d.segs);
	/* A shorter id that is a prefix of the file's is another build too. */
	assert_int_equal(nw_elf_facts_for(c, SYMTEST, f->build_id, 4, &d), 0);
	assert_false(d.known);
	/* A file that is not there. */
	assert_int_equal(nw_elf_facts_for(c, NW_TEST_BUILD "/no-such-file", NULL, 0, &d), 0);
	assert_false(d.known);
	nw_module_facts_fini(&d);
}

/* ---- the arithmetic of facts made by hand ---- */

/*
 * lld's layout: the executable segment starts in the page the read-only
 * one ends in, so the mapping of the text begins inside the other
 * segment's file range.  The PF_X segment wins.
 */
static void test_offset_rules(void **state)
{
	struct nw_segment segs[] = {
		{ .vaddr = 0x0, .memsz = 0x5f8, .offset = 0x0, .filesz = 0x5f8, .exec = false },
		{ .vaddr = 0x1600, .memsz = 0x200, .offset = 0x600, .filesz = 0x200, .exec = true },
		{ .vaddr = 0x2800, .memsz = 0x1000, .offset = 0x800, .filesz = 0x10, .exec = false },
	};
	struct nw_module_facts f = { .known = true, .nsegs = 3, .segs = segs };
	uint64_t v = 0, off = 0;

	/* The text's mapping starts at offset 0 (0x600 rounded down): ELF address 0x1000. */
	assert_int_equal(nw_facts_offset_to_vaddr(&f, 0x0, &v), 0);
	assert_int_equal(v, 0x1000);
	assert_int_equal(nw_facts_offset_to_vaddr(&f, 0x600, &v), 0);
	assert_int_equal(v, 0x1600);
	assert_int_equal(nw_facts_offset_to_vaddr(&f, 0x7ff, &v), 0);
	assert_int_equal(v, 0x17ff);
	/* Offset 0x800 begins the third segment (the second ends there). */
	assert_int_equal(nw_facts_offset_to_vaddr(&f, 0x800, &v), 0);
	assert_int_equal(v, 0x2800);
	/* Past every segment's file range. */
	v = 7;
	assert_int_equal(nw_facts_offset_to_vaddr(&f, 0x1000, &v), -ERANGE);
	assert_int_equal(v, 7);

	/* ELF address -> segment, and file offset (bss has an address, no file bytes). */
	assert_int_equal(nw_facts_segment_of(&f, 0x0), 0);
	assert_int_equal(nw_facts_segment_of(&f, 0x5f7), 0);
	assert_int_equal(nw_facts_segment_of(&f, 0x5f8), -1);
	assert_int_equal(nw_facts_segment_of(&f, 0x17ff), 1);
	assert_int_equal(nw_facts_segment_of(&f, 0x1800), -1);
	assert_int_equal(nw_facts_segment_of(&f, 0x37ff), 2);
	assert_int_equal(nw_facts_segment_of(&f, 0x3800), -1);
	assert_int_equal(nw_facts_vaddr_to_offset(&f, 0x1650, &off), 0);
	assert_int_equal(off, 0x650);
	off = 7;
	assert_int_equal(nw_facts_vaddr_to_offset(&f, 0x1000, &off), -ERANGE);
	assert_int_equal(off, 7);
	assert_int_equal(nw_facts_vaddr_to_offset(&f, UINT64_MAX, &off), -ERANGE);

	/* No segments: nothing maps. */
	f.nsegs = 0;
	assert_int_equal(nw_facts_offset_to_vaddr(&f, 0, &v), -ERANGE);
	assert_int_equal(nw_facts_segment_of(&f, 0), -1);
}

static void test_build_id_hex_parse(void **state)
{
	const uint8_t id[3] = { 0x0a, 0xbc, 0xff };
	uint8_t out[NW_BUILD_ID_MAX], size = 99;
	char buf[2 * NW_BUILD_ID_MAX + 1];

	nw_build_id_hex(id, 3, buf, sizeof(buf));
	assert_string_equal(buf, "0abcff");
	nw_build_id_hex(NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	/* Cut to whole bytes, always terminated; no room at all writes nothing. */
	nw_build_id_hex(id, 3, buf, 4);
	assert_string_equal(buf, "0a");
	buf[0] = 'x';
	nw_build_id_hex(id, 3, buf, 0);
	assert_int_equal(buf[0], 'x');

	assert_int_equal(nw_build_id_parse("0abcff", out, &size), 0);
	assert_int_equal(size, 3);
	assert_memory_equal(out, id, 3);
	assert_int_equal(nw_build_id_parse("0ABCFF", out, &size), 0);
	assert_memory_equal(out, id, 3);
	assert_int_equal(nw_build_id_parse("", out, &size), 0);
	assert_int_equal(size, 0);
	assert_int_equal(nw_build_id_parse(SYMTEST_BUILD_ID, out, &size), 0);
	assert_int_equal(size, 20);
	nw_build_id_hex(out, size, buf, sizeof(buf));
	assert_string_equal(buf, SYMTEST_BUILD_ID);
	/* Odd length, not hex, longer than NW_BUILD_ID_MAX: refused, size untouched. */
	size = 99;
	assert_int_equal(nw_build_id_parse("abc", out, &size), -EINVAL);
	assert_int_equal(nw_build_id_parse("0x12", out, &size), -EINVAL);
	assert_int_equal(nw_build_id_parse("zz", out, &size), -EINVAL);
	assert_int_equal(nw_build_id_parse(SYMTEST_BUILD_ID "00", out, &size), -EINVAL);
	assert_int_equal(size, 99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_offset_to_vaddr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_facts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_cfi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vdso, setup, teardown),
		cmocka_unit_test_setup_teardown(test_facts_for, setup, teardown),
		cmocka_unit_test(test_offset_rules),
		cmocka_unit_test(test_build_id_hex_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
