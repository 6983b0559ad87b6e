/* SPDX-License-Identifier: MIT */
/*
 * Tests for the symbolizer on the fixture tests/data/symtest.c, built by
 * tests/meson.build twice: "symtest" (PIE, -O2 -g, a fixed build-id) and
 * "symtest-nodebug" (non-PIE, no DWARF).  Expected addresses come from the
 * fixture's ELF symbol table, read with libelf (tests/symtest.h);
 * expected lines come from the "@name" markers in the fixture's source.
 * The symbolizer reads the files' ELF facts through an ELF cache
 * (elf/facts.h, tested by test-elf.c with the same fixtures).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symbol/symbol.h"
#include "symtest.h"

/* The line of @marker ("@name") in the fixture source. */
static uint32_t marker_line(const char *marker)
{
	char line[512], tag[64];
	uint32_t n = 0, found = 0;
	FILE *f = fopen(SYMTEST_SRC, "r");

	assert_non_null(f);
	snprintf(tag, sizeof(tag), "/* %s */", marker);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, tag)) {
			assert_int_equal(found, 0);
			found = n;
		}
	}
	fclose(f);
	assert_int_not_equal(found, 0);
	return found;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void free_frames(struct nw_symframe *frames, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(frames[i].function);
		free(frames[i].file);
		free(frames[i].decl_file);
	}
	free(frames);
}

/* The symbolizer of a test, and the ELF cache it borrows. */
struct fixture {
	struct nw_elf_cache *elf;
	struct nw_symbolizer *s;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	/* The fixtures have no separate debug info: never ask the network. */
	unsetenv("DEBUGINFOD_URLS");
	if (!fx)
		return -1;
	fx->elf = nw_elf_cache_new();
	fx->s = fx->elf ? nw_symbolizer_new(fx->elf, NULL) : NULL;
	if (!fx->s) {
		nw_elf_cache_free(fx->elf);
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	/* The symbolizer first: it borrows the cache. */
	nw_symbolizer_free(fx->s);
	nw_elf_cache_free(fx->elf);
	free(fx);
	return 0;
}

/* The symbolizer of @state. */
static struct nw_symbolizer *sym_of(void **state)
{
	return ((struct fixture *)*state)->s;
}

static void test_noinline_function(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	uint64_t size, addr = elf_symbol(SYMTEST, "symtest_leaf", &size);
	uint32_t decl = marker_line("@leaf-decl"), end = marker_line("@leaf-end");
	struct nw_symframe *fr;
	uint32_t n;

	assert_true(size > 1);
	for (uint64_t a = addr; a < addr + size; a += size - 1) {
		fr = NULL;
		assert_int_equal(nw_symbolize(s, SYMTEST, a, &fr, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(fr[0].function, "symtest_leaf");
		assert_non_null(fr[0].file);
		assert_true(ends_with(fr[0].file, "/symtest.c"));
		assert_in_range(fr[0].line, decl, end);
		assert_non_null(fr[0].decl_file);
		assert_true(ends_with(fr[0].decl_file, "/symtest.c"));
		assert_int_equal(fr[0].decl_line, decl);
		free_frames(fr, n);
	}
}

static void test_inline_chain(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	uint64_t pc = elf_symbol(SYMTEST, "symtest_inline_pc", NULL);
	struct nw_symframe *fr = NULL;
	uint32_t n = 0;

	assert_int_equal(nw_symbolize(s, SYMTEST, pc, &fr, &n), 0);
	assert_int_equal(n, 2);
	/* Innermost: the inlined helper, at the PC's own line. */
	assert_string_equal(fr[0].function, "symtest_helper");
	assert_non_null(fr[0].file);
	assert_true(ends_with(fr[0].file, "/symtest.c"));
	assert_int_equal(fr[0].line, marker_line("@helper-pc"));
	assert_int_equal(fr[0].decl_line, marker_line("@helper-decl"));
	assert_true(ends_with(fr[0].decl_file, "/symtest.c"));
	/* Then the function it was inlined into, at the call site. */
	assert_string_equal(fr[1].function, "symtest_caller");
	assert_non_null(fr[1].file);
	assert_true(ends_with(fr[1].file, "/symtest.c"));
	assert_int_equal(fr[1].line, marker_line("@caller-call"));
	assert_int_equal(fr[1].decl_line, marker_line("@caller-decl"));
	assert_true(ends_with(fr[1].decl_file, "/symtest.c"));
	free_frames(fr, n);
}

/* Every address of symtest_caller ends its chain in symtest_caller. */
static void test_whole_function(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	uint64_t size, addr = elf_symbol(SYMTEST, "symtest_caller", &size);
	uint32_t inlined = 0;

	assert_true(size > 0);
	for (uint64_t a = addr; a < addr + size; a++) {
		struct nw_symframe *fr = NULL;
		uint32_t n = 0;

		assert_int_equal(nw_symbolize(s, SYMTEST, a, &fr, &n), 0);
		assert_in_range(n, 1, 2);
		assert_string_equal(fr[n - 1].function, "symtest_caller");
		assert_int_equal(fr[n - 1].decl_line, marker_line("@caller-decl"));
		if (n == 2) {
			assert_string_equal(fr[0].function, "symtest_helper");
			assert_int_equal(fr[1].line, marker_line("@caller-call"));
			inlined++;
		}
		free_frames(fr, n);
	}
	assert_true(inlined > 0);
}

static void test_demangle(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	struct nw_symframe *fr = NULL;
	uint64_t addr;
	uint32_t n = 0;

	/* From DWARF: DW_AT_linkage_name, demangled. */
	addr = elf_symbol(SYMTEST, "_ZN2nw7mangledEi", NULL);
	assert_int_equal(nw_symbolize(s, SYMTEST, addr, &fr, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "nw::mangled(int)");
	assert_int_equal(fr[0].decl_line, marker_line("@mangled-decl"));
	free_frames(fr, n);

	/* From the ELF symbol table alone: no file, no lines. */
	addr = elf_symbol(SYMTEST_NODEBUG, "_ZN2nw7mangledEi", NULL);
	fr = NULL;
	assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, addr + 1, &fr, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "nw::mangled(int)");
	assert_null(fr[0].file);
	assert_int_equal(fr[0].line, 0);
	assert_null(fr[0].decl_file);
	assert_int_equal(fr[0].decl_line, 0);
	free_frames(fr, n);

	/* A C name comes back as is. */
	addr = elf_symbol(SYMTEST_NODEBUG, "symtest_leaf", NULL);
	fr = NULL;
	assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, addr, &fr, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "symtest_leaf");
	assert_null(fr[0].file);
	free_frames(fr, n);
}

/* Without DWARF: the sized function around a PC wins over a nearer label; data is no code. */
static void test_elf_symbols(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	uint64_t size, caller = elf_symbol(SYMTEST_NODEBUG, "symtest_caller", &size);
	uint64_t label = elf_symbol(SYMTEST_NODEBUG, "symtest_inline_pc", NULL);
	uint64_t data = elf_symbol(SYMTEST_NODEBUG, "symtest_data", NULL);
	struct nw_symframe *fr = NULL;
	uint32_t n = 0;

	assert_true(label > caller && label < caller + size);
	assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, label, &fr, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].function, "symtest_caller");
	free_frames(fr, n);

	n = 7;
	assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, data + 1, &fr, &n), 0);
	assert_int_equal(n, 0);
}

/* Two files at overlapping addresses, used in turns, each keep their own answers. */
static void test_interleaved_files(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	uint64_t dbg = elf_symbol(SYMTEST, "symtest_inline_pc", NULL);
	uint64_t nodbg = elf_symbol(SYMTEST_NODEBUG, "symtest_leaf", NULL);

	for (int i = 0; i < 200; i++) {
		struct nw_symframe *fr = NULL;
		uint32_t n = 0;

		assert_int_equal(nw_symbolize(s, SYMTEST, dbg, &fr, &n), 0);
		assert_int_equal(n, 2);
		assert_string_equal(fr[1].function, "symtest_caller");
		free_frames(fr, n);
		fr = NULL;
		assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, nodbg, &fr, &n), 0);
		assert_int_equal(n, 1);
		assert_string_equal(fr[0].function, "symtest_leaf");
		free_frames(fr, n);
	}
}

static void test_unknown(void **state)
{
	struct nw_symbolizer *s = sym_of(state);
	struct nw_symframe *fr = NULL;
	uint32_t n = 7;

	/* Far from every segment, in both kinds of file. */
	assert_int_equal(nw_symbolize(s, SYMTEST, 0x7fff00000000ull, &fr, &n), 0);
	assert_int_equal(n, 0);
	n = 7;
	assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, 0x7fff00000000ull, &fr, &n), 0);
	assert_int_equal(n, 0);
	/* Below the first segment of a non-PIE. */
	n = 7;
	assert_int_equal(nw_symbolize(s, SYMTEST_NODEBUG, 0x1000, &fr, &n), 0);
	assert_int_equal(n, 0);

	/* Missing and non-ELF files, twice each (the second answer comes from the cache). */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(nw_symbolize(s, NW_TEST_BUILD "/no-such-file", 0x1000, &fr, &n),
				 -ENOENT);
		assert_int_equal(nw_symbolize(s, SYMTEST_SRC, 0x10, &fr, &n), -ENOENT);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_noinline_function, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_inline_chain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_whole_function, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_demangle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_elf_symbols, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_interleaved_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
