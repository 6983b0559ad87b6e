/* SPDX-License-Identifier: MIT */
/*
 * Tests for the symbolizer on the fixture tests/data/symtest.c, built by
 * tests/meson.build twice: "symtest" (PIE, -O2 -g, a fixed build-id) and
 * "symtest-nodebug" (non-PIE, no DWARF).  Expected addresses come from the
 * fixture's ELF symbol table and section headers, read here with libelf;
 * expected lines come from the "@name" markers in the fixture's source.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
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

#include "symbol/symbol.h"

#define SYMTEST NW_TEST_BUILD "/symtest"
#define SYMTEST_NODEBUG NW_TEST_BUILD "/symtest-nodebug"
#define SYMTEST_SRC NW_TEST_DATA "/symtest.c"
/* The -Wl,--build-id=0x... value given to "symtest" in tests/meson.build. */
#define SYMTEST_BUILD_ID "4e5701020304050607080910111213141516abcd"

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

static Elf *elf_open(const char *path, int *fd)
{
	Elf *elf;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	*fd = open(path, O_RDONLY);
	assert_true(*fd >= 0);
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	return elf;
}

static void elf_close(Elf *elf, int fd)
{
	elf_end(elf);
	close(fd);
}

/* st_value and st_size of symbol @name in @path's .symtab. */
static uint64_t elf_symbol(const char *path, const char *name, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	uint64_t value = 0;
	int fd, found = 0;
	Elf *elf = elf_open(path, &fd);

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		data = elf_getdata(scn, NULL);
		assert_non_null(data);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;

			assert_non_null(gelf_getsym(data, (int)i, &sym));
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && strcmp(s, name) == 0) {
				value = sym.st_value;
				if (size)
					*size = sym.st_size;
				found++;
			}
		}
	}
	elf_close(elf, fd);
	assert_int_equal(found, 1);
	assert_int_not_equal(value, 0);
	return value;
}

/* The file offset of @vaddr, through the section headers (not the segments). */
static uint64_t elf_section_offset(const char *path, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;
	uint64_t off = UINT64_MAX;
	int fd;
	Elf *elf = elf_open(path, &fd);

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_type == SHT_NOBITS)
			continue;
		if (vaddr >= sh.sh_addr && vaddr < sh.sh_addr + sh.sh_size)
			off = sh.sh_offset + (vaddr - sh.sh_addr);
	}
	elf_close(elf, fd);
	assert_int_not_equal(off, UINT64_MAX);
	return off;
}

/*
 * The GNU build-id note of @path in hex, parsed from the note sections;
 * *desc_off gets the file offset of the note's type field.
 */
static void elf_note_build_id(const char *path, char *hex, size_t *type_off)
{
	Elf_Scn *scn = NULL;
	int fd, found = 0;
	Elf *elf = elf_open(path, &fd);

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, next, name_off, desc_off;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		assert_non_null(data);
		while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *d = (const unsigned char *)data->d_buf + desc_off;

			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0) {
				for (size_t i = 0; i < nh.n_descsz; i++)
					sprintf(hex + 2 * i, "%02x", d[i]);
				if (type_off)
					*type_off = sh.sh_offset + off + 8;
				found++;
			}
			off = next;
		}
	}
	elf_close(elf, fd);
	assert_int_equal(found, 1);
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

static int setup(void **state)
{
	/* The fixtures have no separate debug info: never ask the network. */
	unsetenv("DEBUGINFOD_URLS");
	*state = nw_symbolizer_new();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	nw_symbolizer_free(*state);
	return 0;
}

static void test_noinline_function(void **state)
{
	struct nw_symbolizer *s = *state;
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
	struct nw_symbolizer *s = *state;
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
	struct nw_symbolizer *s = *state;
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
	struct nw_symbolizer *s = *state;
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
	struct nw_symbolizer *s = *state;
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
	struct nw_symbolizer *s = *state;
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

static void check_offset(struct nw_symbolizer *s, const char *path, const char *sym)
{
	uint64_t vaddr = elf_symbol(path, sym, NULL), got = 0;
	uint64_t off = elf_section_offset(path, vaddr);

	assert_int_equal(nw_symbol_offset_to_vaddr(s, path, off, &got), 0);
	assert_int_equal(got, vaddr);
}

static void test_offset_to_vaddr(void **state)
{
	struct nw_symbolizer *s = *state;
	uint64_t v = 0, text = elf_symbol(SYMTEST_NODEBUG, "symtest_leaf", NULL);
	uint64_t data = elf_symbol(SYMTEST, "symtest_data", NULL);
	struct stat st;

	/* Text of a non-PIE and data of a PIE: both differ from their offsets. */
	assert_int_not_equal(elf_section_offset(SYMTEST_NODEBUG, text), text);
	assert_int_not_equal(elf_section_offset(SYMTEST, data), data);
	check_offset(s, SYMTEST_NODEBUG, "symtest_leaf");
	check_offset(s, SYMTEST_NODEBUG, "symtest_data");
	check_offset(s, SYMTEST, "symtest_leaf");
	check_offset(s, SYMTEST, "symtest_data");
	check_offset(s, SYMTEST, "_ZN2nw7mangledEi");

	assert_int_equal(stat(SYMTEST, &st), 0);
	assert_int_equal(nw_symbol_offset_to_vaddr(s, SYMTEST, (uint64_t)st.st_size + 4096, &v),
			 -ERANGE);
}

static void test_build_id(void **state)
{
	char buf[41], note[41] = "", path[] = "/tmp/nw-test-symbol-XXXXXX";
	size_t type_off = 0;
	unsigned char *bytes;
	uint32_t type = 0x4e570000;
	struct stat st;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(nw_symbol_build_id(SYMTEST, buf, sizeof(buf)), 0);
	assert_string_equal(buf, SYMTEST_BUILD_ID);
	elf_note_build_id(SYMTEST, note, NULL);
	assert_string_equal(buf, note);

	/* The default (linker-computed) build-id of the other copy. */
	elf_note_build_id(SYMTEST_NODEBUG, note, &type_off);
	assert_int_equal(strlen(note), 40);
	assert_int_equal(nw_symbol_build_id(SYMTEST_NODEBUG, buf, sizeof(buf)), 0);
	assert_string_equal(buf, note);
	assert_int_equal(nw_symbol_build_id(SYMTEST_NODEBUG, buf, 40), -ERANGE);

	/* A copy whose note has another type has no build-id. */
	f = fopen(SYMTEST_NODEBUG, "rb");
	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	bytes = malloc((size_t)st.st_size);
	assert_non_null(bytes);
	assert_int_equal(fread(bytes, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	fclose(f);
	assert_true(type_off + 4 <= (size_t)st.st_size);
	memcpy(bytes + type_off, &type, sizeof(type));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, (size_t)st.st_size), st.st_size);
	close(fd);
	free(bytes);
	strcpy(buf, "x");
	assert_int_equal(nw_symbol_build_id(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	unlink(path);

	assert_int_equal(nw_symbol_build_id(NW_TEST_BUILD "/no-such-file", buf, sizeof(buf)),
			 -ENOENT);
	assert_int_equal(nw_symbol_build_id(SYMTEST_SRC, buf, sizeof(buf)), -ENOENT);
}

static void test_unknown(void **state)
{
	struct nw_symbolizer *s = *state;
	struct nw_symframe *fr = NULL;
	uint64_t v = 0;
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
		assert_int_equal(nw_symbol_offset_to_vaddr(s, NW_TEST_BUILD "/no-such-file", 0, &v),
				 -ENOENT);
		assert_int_equal(nw_symbolize(s, SYMTEST_SRC, 0x10, &fr, &n), -ENOENT);
		assert_int_equal(nw_symbol_offset_to_vaddr(s, SYMTEST_SRC, 0, &v), -ENOENT);
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
	    cmocka_unit_test_setup_teardown(test_offset_to_vaddr, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_build_id, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
