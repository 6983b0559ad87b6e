/* SPDX-License-Identifier: MIT */
/*
 * The ELF fixtures of test-symbol and test-elf: tests/data/symtest.c built
 * by tests/meson.build twice, "symtest" (PIE, -O2 -g, a fixed build-id)
 * and "symtest-nodebug" (non-PIE, no DWARF), and what their symbol tables,
 * section headers and notes say, read with libelf.  Header-only: each test
 * includes it once.
 */
#ifndef NW_TEST_SYMTEST_H
#define NW_TEST_SYMTEST_H

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SYMTEST NW_TEST_BUILD "/symtest"
#define SYMTEST_NODEBUG NW_TEST_BUILD "/symtest-nodebug"
#define SYMTEST_SRC NW_TEST_DATA "/symtest.c"
/* The -Wl,--build-id=0x... value given to "symtest" in tests/meson.build. */
#define SYMTEST_BUILD_ID "4e5701020304050607080910111213141516abcd"

static inline Elf *elf_open(const char *path, int *fd)
{
	Elf *elf;

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	*fd = open(path, O_RDONLY);
	assert_true(*fd >= 0);
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	return elf;
}

static inline void elf_close(Elf *elf, int fd)
{
	elf_end(elf);
	close(fd);
}

/* st_value and st_size of symbol @name in @path's .symtab. */
static inline uint64_t elf_symbol(const char *path, const char *name, uint64_t *size)
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
static inline uint64_t elf_section_offset(const char *path, uint64_t vaddr)
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
static inline void elf_note_build_id(const char *path, char *hex, size_t *type_off)
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

#endif
