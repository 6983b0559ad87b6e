/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel unwinder's tables (unwind/cfitable.h), built from real
 * files: this test's own executable and a non-PIE one (every address of
 * their code), libc (addresses sampled across its code) and the vdso.  Each address's row
 * must equal what libdw says for it directly, through the file offset the
 * BPF program computes; the rows of a PLT entry, of _start and of function
 * prologues are checked against what the ABI says they are; the cache must
 * give back what it was given and rebuild a damaged file.
 *
 *   test-cfitable --print-sizes FILE...   rows, bytes, build time per file
 *   test-cfitable --print-rows FILE       the table, a row a line
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "elf/vdso.h"
#include "unwind/cfitable.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

struct file {
	int fd;
	Elf *elf;
};

static void file_open(struct file *f, const char *path, int fd)
{
	elf_version(EV_CURRENT);
	f->fd = fd >= 0 ? fd : open(path, O_RDONLY | O_CLOEXEC);
	assert_true(f->fd >= 0);
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(f->elf);
}

static void file_close(struct file *f)
{
	elf_end(f->elf);
	close(f->fd);
}

/* The file offset of @vaddr, as the BPF program gets it: through its PT_LOAD. */
static int64_t vaddr_to_off(Elf *elf, uint64_t vaddr)
{
	size_t n;

	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz)
			return (int64_t)(vaddr - ph.p_vaddr + ph.p_offset);
	}
	return -1;
}

/* The first executable PT_LOAD. */
static void exec_segment(Elf *elf, uint64_t *lo, uint64_t *hi)
{
	size_t n;

	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			*lo = ph.p_vaddr;
			*hi = ph.p_vaddr + ph.p_filesz;
			return;
		}
	}
	fail_msg("no executable segment");
}

static void check_invariants(const struct nw_cfi_table *t)
{
	assert_true(t->nrows > 1);
	for (uint32_t i = 0; i < t->nrows; i++) {
		const struct nw_cfi_row *r = &t->rows[i];

		assert_true(r->cfa <= NW_CFA_REG);
		assert_true(r->fp <= NW_FP_UNDEF);
		if (i) {
			const struct nw_cfi_row *p = &t->rows[i - 1];

			assert_true(r->off > p->off);
			/* Merged: no two neighbours with the same rule. */
			assert_false(r->cfa == p->cfa && r->cfa_off == p->cfa_off &&
				     r->fp == p->fp && r->fp_off == p->fp_off);
		}
	}
	/* After the last FDE, nothing. */
	assert_int_equal(t->rows[t->nrows - 1].cfa, NW_CFA_GAP);
}

static bool same_rule(const struct nw_cfi_row *a, const struct nw_cfi_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->fp == b->fp &&
	       a->fp_off == b->fp_off;
}

/*
 * The table's row for @vaddr against libdw's own answer.  Returns whether
 * libdw had CFI there.
 */
static bool check_addr(Dwarf_CFI *cfi, Elf *elf, const struct nw_cfi_table *t, uint64_t vaddr)
{
	int64_t off = vaddr_to_off(elf, vaddr);
	Dwarf_Frame *frame = NULL;
	struct nw_cfi_row want;
	int i;

	assert_true(off >= 0);
	i = nw_cfi_table_find(t, (uint32_t)off);
	if (dwarf_cfi_addrframe(cfi, vaddr, &frame) != 0) {
		if (i >= 0 && t->rows[i].cfa != NW_CFA_GAP)
			fail_msg("%#llx: libdw has no CFI, the table row %d says cfa %u",
				 (unsigned long long)vaddr, i, t->rows[i].cfa);
		return false;
	}
	nw_cfi_table_row(frame, &want);
	free(frame);
	if (i < 0 || !same_rule(&t->rows[i], &want))
		fail_msg("%#llx (off %#llx): libdw says cfa %u%+d fp %u%+d, the table %s %u%+d fp "
			 "%u%+d",
			 (unsigned long long)vaddr, (unsigned long long)off, want.cfa, want.cfa_off,
			 want.fp, want.fp_off, i < 0 ? "no row" : "row", i < 0 ? 0 : t->rows[i].cfa,
			 i < 0 ? 0 : t->rows[i].cfa_off, i < 0 ? 0 : t->rows[i].fp,
			 i < 0 ? 0 : t->rows[i].fp_off);
	return true;
}

/* Addresses from @lo to @hi, @stride apart (from a varying start), checked. */
static void check_range(const char *path, int fd, const struct nw_cfi_table *t, unsigned stride)
{
	struct file f;
	uint64_t lo = 0, hi = 0, covered = 0, n = 0;
	Dwarf_CFI *cfi;

	file_open(&f, path, fd);
	cfi = dwarf_getcfi_elf(f.elf);
	assert_non_null(cfi);
	exec_segment(f.elf, &lo, &hi);
	for (uint64_t a = lo + (stride > 1 ? (uint64_t)rand() % stride : 0); a < hi; a += stride) {
		covered += check_addr(cfi, f.elf, t, a);
		n++;
	}
	print_message("%s: %llu addresses, %llu with CFI, %u rows\n", path, (unsigned long long)n,
		      (unsigned long long)covered, t->nrows);
	/* Much of the code has CFI (a small program's is half crt files' without). */
	assert_true(covered > n / 4);
	dwarf_cfi_end(cfi);
	f.fd = -1;
	elf_end(f.elf);
}

static void build(const char *path, struct nw_cfi_table *t)
{
	int err = nw_cfi_table_build(-1, path, t);

	if (err)
		fail_msg("%s: %s", path, strerror(-err));
	check_invariants(t);
	assert_false(t->from_debug_frame);
	assert_true(t->stats.fdes > 0);
}

static void test_self(void **state)
{
	struct nw_cfi_table t;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	build("/proc/self/exe", &t);
	/* Every address of this executable's code. */
	check_range("/proc/self/exe", fd, &t, 1);
	close(fd);
	nw_cfi_table_free(&t);
}

/* A non-PIE executable: its code at 0x401000, offset 0x1000, so offsets are not addresses. */
static void test_nonpie(void **state)
{
	const char *path = NW_TEST_BUILD "/symtest-nodebug";
	struct nw_cfi_table t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	build(path, &t);
	assert_true(t.rows[0].off < 0x400000);
	check_range(path, fd, &t, 1);
	close(fd);
	nw_cfi_table_free(&t);
}

static void test_libc(void **state)
{
	struct nw_cfi_table t;
	int fd = open(LIBC, O_RDONLY | O_CLOEXEC);

	unsigned signal = 0;

	build(LIBC, &t);
	check_range(LIBC, fd, &t, 5);
	/* __restore_rt, the signal trampoline: its CIE says 'S'. */
	for (uint32_t i = 0; i < t.nrows; i++)
		signal += t.rows[i].cfa == NW_CFA_SIGNAL;
	assert_int_equal(signal, 1);
	close(fd);
	nw_cfi_table_free(&t);

	/*
	 * ld.so's lazy-binding trampolines (_dl_runtime_resolve_*) keep their
	 * CFA in rbx: REG rows, which the in-kernel walk hands to perf's copy
	 * (frame pointers there are the caller's, and would skip a frame).
	 */
	build("/lib64/ld-linux-x86-64.so.2", &t);
	assert_true(t.stats.reg > 0);
	assert_int_equal(t.stats.complex, 0);
	nw_cfi_table_free(&t);
}

/*
 * A library linked by lld, whose .eh_frame is SHT_X86_64_UNWIND: libLLVM
 * (a hundred MB of code, so every 997th address), when installed.
 */
static void test_lld(void **state)
{
	static const char *const paths[] = { "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1",
					      "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1" };
	struct nw_cfi_table t;

	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		build(paths[i], &t);
		check_range(paths[i], fd, &t, 997);
		close(fd);
		nw_cfi_table_free(&t);
		return;
	}
	skip();
}

static void test_vdso(void **state)
{
	struct nw_vdso v;
	struct nw_cfi_table t;
	int fd;

	nw_vdso_init(&v);
	fd = nw_vdso_dup_fd(&v);
	if (fd < 0) {
		nw_vdso_fini(&v);
		skip();
	}
	assert_int_equal(nw_cfi_table_build(fd, "[vdso]", &t), 0);
	check_invariants(&t);
	check_range("[vdso]", fd, &t, 1);
	close(fd);
	nw_cfi_table_free(&t);
	nw_vdso_fini(&v);
}

/* The row at @vaddr of the file @elf's table @t. */
static const struct nw_cfi_row *row_at(Elf *elf, const struct nw_cfi_table *t, uint64_t vaddr)
{
	int64_t off = vaddr_to_off(elf, vaddr);
	int i;

	assert_true(off >= 0);
	i = nw_cfi_table_find(t, (uint32_t)off);
	assert_true(i >= 0);
	return &t->rows[i];
}

/* The section @name's address and size. */
static bool section(Elf *elf, const char *name, uint64_t *addr, uint64_t *size)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			return true;
		}
	}
	return false;
}

/* A function with a frame pointer: push %rbp; mov %rsp,%rbp; ... */
static __attribute__((noinline, optimize("no-omit-frame-pointer"))) int cfitable_framed(int x)
{
	volatile int a[8];

	for (int i = 0; i < 8; i++)
		a[i] = x + i;
	return a[x & 7];
}

/* What the ABI says of known places: a PLT entry, _start, prologues. */
static void test_known_rows(void **state)
{
	struct nw_cfi_table t, self;
	struct file f, s;
	uint64_t plt = 0, plt_size = 0, entry_vaddr;
	const struct nw_cfi_row *r;
	Dl_info info;
	GElf_Ehdr eh;
	bool framed = false;

	build(LIBC, &t);
	file_open(&f, LIBC, -1);
	/* PLT entry 1 (entry 0 pushes the GOT): every byte of it, one PLT row. */
	assert_true(section(f.elf, ".plt", &plt, &plt_size));
	assert_true(plt_size >= 32);
	for (uint64_t a = plt + 16; a < plt + 32; a++)
		assert_int_equal(row_at(f.elf, &t, a)->cfa, NW_CFA_PLT);
	/* A libc function's entry: CFA = rsp + 8, rbp untouched. */
	assert_true(dladdr((void *)getpid, &info) && info.dli_saddr);
	r = row_at(f.elf, &t, (uint64_t)((char *)info.dli_saddr - (char *)info.dli_fbase));
	assert_int_equal(r->cfa, NW_CFA_SP);
	assert_int_equal(r->cfa_off, 8);
	assert_int_equal(r->fp, NW_FP_SAME);
	file_close(&f);
	nw_cfi_table_free(&t);

	build("/proc/self/exe", &self);
	file_open(&s, "/proc/self/exe", -1);
	assert_non_null(gelf_getehdr(s.elf, &eh));
	/* _start: the return address is undefined. */
	assert_int_equal(row_at(s.elf, &self, eh.e_entry)->cfa, NW_CFA_END);
	/* The framed function: entry, then (after push, mov) CFA = rbp + 16, rbp at CFA - 16. */
	/* Not exported: its vaddr from where dlopen put the executable. */
	assert_true(dladdr((void *)cfitable_framed, &info));
	entry_vaddr = (uint64_t)((char *)cfitable_framed - (char *)info.dli_fbase);
	r = row_at(s.elf, &self, entry_vaddr);
	assert_int_equal(r->cfa, NW_CFA_SP);
	assert_int_equal(r->cfa_off, 8);
	for (uint64_t a = entry_vaddr; a < entry_vaddr + 16; a++) {
		r = row_at(s.elf, &self, a);
		framed |= r->cfa == NW_CFA_FP && r->cfa_off == 16 && r->fp == NW_FP_AT_CFA &&
			  r->fp_off == -16;
	}
	assert_true(framed);
	assert_int_equal(cfitable_framed(3), 6);
	file_close(&s);
	nw_cfi_table_free(&self);
}

static bool tables_equal(const struct nw_cfi_table *a, const struct nw_cfi_table *b)
{
	return a->nrows == b->nrows && !memcmp(a->rows, b->rows, a->nrows * sizeof(*a->rows));
}

/* The one cfi-* file of the cache directory. */
static void cache_file(const char *dir, char *path, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "cfi-", 4)) {
			snprintf(path, size, "%s/%s", dir, e->d_name);
			n++;
		}
	}
	closedir(d);
	assert_int_equal(n, 1);
}

static void test_cache(void **state)
{
	char dir[] = "/tmp/nw-cfitable-XXXXXX", path[PATH_MAX];
	struct nw_cfi_table built, got;
	struct nw_cache cache;
	const void *id;
	ssize_t idlen;
	struct file f;
	struct stat st;
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(nw_cache_open(&cache, dir, false), 0);
	assert_true(nw_cache_on(&cache));
	file_open(&f, LIBC, -1);
	idlen = dwelf_elf_gnu_build_id(f.elf, &id);
	assert_true(idlen > 0);
	build(LIBC, &built);

	/* Built and stored, then loaded. */
	assert_int_equal(nw_cfi_table_get(&cache, f.fd, LIBC, id, (unsigned)idlen, &got), 0);
	assert_false(got.from_cache);
	assert_true(tables_equal(&built, &got));
	nw_cfi_table_free(&got);
	assert_int_equal(nw_cfi_table_get(&cache, f.fd, LIBC, id, (unsigned)idlen, &got), 0);
	assert_true(got.from_cache);
	assert_true(tables_equal(&built, &got));
	assert_int_equal(got.stats.fdes, built.stats.fdes);
	assert_int_equal(got.stats.complex, built.stats.complex);
	nw_cfi_table_free(&got);

	/* A truncated file: not used, rebuilt and stored whole again. */
	cache_file(dir, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - 5), 0);
	assert_int_equal(nw_cfi_table_get(&cache, f.fd, LIBC, id, (unsigned)idlen, &got), 0);
	assert_false(got.from_cache);
	assert_true(tables_equal(&built, &got));
	nw_cfi_table_free(&got);
	{
		struct stat st2;

		assert_int_equal(stat(path, &st2), 0);
		assert_int_equal(st2.st_size, st.st_size);
	}
	/* Rows out of order: not used either. */
	fp = fopen(path, "r+b");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, st.st_size - 2 * (long)sizeof(struct nw_cfi_row), SEEK_SET), 0);
	assert_int_equal(fwrite("\0\0\0\0", 4, 1, fp), 1);
	fclose(fp);
	assert_int_equal(nw_cfi_table_get(&cache, f.fd, LIBC, id, (unsigned)idlen, &got), 0);
	assert_false(got.from_cache);
	assert_true(tables_equal(&built, &got));
	nw_cfi_table_free(&got);

	/* Another build-id: another file. */
	assert_int_equal(nw_cfi_table_get(&cache, f.fd, LIBC, (const uint8_t *)"x", 1, &got), 0);
	assert_false(got.from_cache);
	nw_cfi_table_free(&got);

	nw_cfi_table_free(&built);
	file_close(&f);
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

/* --print-sizes: what a table costs, per file. */
static int print_sizes(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		struct nw_cfi_table t;
		struct timespec a, b;
		int err;

		clock_gettime(CLOCK_MONOTONIC, &a);
		err = nw_cfi_table_build(-1, argv[i], &t);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (err) {
			printf("%s: %s\n", argv[i], strerror(-err));
			continue;
		}
		printf("%s: %u rows, %zu bytes, %.1f ms; %u FDEs (%u skipped)%s; rows: %u complex "
		       "(%llu bytes of code), %u gap, %u plt (%u other plt), %u end, %u reg\n",
		       argv[i], t.nrows, (size_t)t.nrows * sizeof(*t.rows),
		       (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6,
		       t.stats.fdes, t.stats.fdes_skipped,
		       t.from_debug_frame ? ", from .debug_frame" : "", t.stats.complex,
		       (unsigned long long)t.stats.complex_bytes, t.stats.gap, t.stats.plt,
		       t.stats.plt_other, t.stats.end, t.stats.reg);
		nw_cfi_table_free(&t);
	}
	return 0;
}

/* --print-rows: a file's table, a row a line. */
static int print_rows(const char *path)
{
	static const char *const cfa[] = { "sp", "fp", "plt", "end", "gap", "complex" };
	static const char *const fp[] = { "same", "at-cfa", "undef" };
	struct nw_cfi_table t;
	int err = nw_cfi_table_build(-1, path, &t);

	if (err) {
		printf("%s: %s\n", path, strerror(-err));
		return 1;
	}
	for (uint32_t i = 0; i < t.nrows; i++) {
		const struct nw_cfi_row *r = &t.rows[i];

		printf("%#x %s%+d fp %s%+d\n", r->off, cfa[r->cfa], r->cfa_off, fp[r->fp],
		       r->fp_off);
	}
	nw_cfi_table_free(&t);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_nonpie),
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_lld),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_known_rows),
		cmocka_unit_test(test_cache),
	};

	if (argc > 1 && !strcmp(argv[1], "--print-sizes"))
		return print_sizes(argc - 2, argv + 2);
	if (argc > 2 && !strcmp(argv[1], "--print-rows"))
		return print_rows(argv[2]);
	unsigned seed = (unsigned)time(NULL);

	/* Sampled addresses start somewhere else each run; the seed repeats a run. */
	if (getenv("NW_TEST_SEED"))
		seed = (unsigned)atoi(getenv("NW_TEST_SEED"));
	printf("seed %u\n", seed);
	srand(seed);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
