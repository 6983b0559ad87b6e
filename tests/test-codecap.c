/* SPDX-License-Identifier: MIT */
/*
 * The recorder's code store (record/codecap.h) on models built by hand
 * over real code: the fixture tests/data/symtest.c ("symtest", -O2 -g),
 * whose functions' extents and bytes the test reads itself with libelf;
 * a fake /proc/kcore (an ELF core of one segment) with fake kernel
 * symbols; and JIT code in this very process named by a perf map.
 *
 *  - every sampled function stored whole, its extent its ELF symbol's,
 *    its bytes the file's, its lines and the range inlined into it;
 *  - the per-function cap cuts each function (the store says how long the
 *    whole is); the total cap keeps the hottest first and says why the
 *    others are left out; a store rebuilt only when the selection moves;
 *  - code no symbol covers, a file that cannot be read, kernel code with
 *    and without a readable kcore, JIT code with and without its map.
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elf/facts.h"
#include "model/measurement.h"
#include "record/codecap.h"
#include "symbol/kallsyms.h"
#include "symbol/symbol.h"
#include "symtest.h"

#define BASE 0x10000000ull
#define KBASE 0xffffffff81000000ull

struct fixture {
	struct nw_elf_cache *elf;
	struct nw_symbolizer *sym;
	struct nw_measurement *m;
	struct nw_mthread *th;
	struct nw_cct *cct;
	struct nw_codecap cc;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const struct nw_module_facts *facts;
	struct nw_map map = { .start = BASE, .end = BASE + 0x100000, .module = 0 };
	struct nw_epoch *e;

	unsetenv("DEBUGINFOD_URLS");
	assert_non_null(f);
	f->elf = nw_elf_cache_new();
	f->sym = nw_symbolizer_new(f->elf, NULL);
	f->m = nw_measurement_new();
	assert_non_null(f->sym);
	assert_non_null(f->m);
	assert_int_equal(nw_measurement_add_metric(f->m, "cpu-clock", NW_METRIC_SAMPLES, 1), 0);
	assert_int_equal(nw_module_intern(f->m->modules, SYMTEST, NULL, 0), 0);
	assert_int_equal(nw_elf_facts_get(f->elf, SYMTEST, &facts), 0);
	assert_int_equal(nw_module_facts_copy(&f->m->modules->v[0].facts, facts), 0);
	e = nw_epoch_new(&map, 1, 0);
	assert_non_null(e);
	assert_int_equal(nw_measurement_add_epoch(f->m, e), 0);
	f->th = nw_measurement_add_thread(f->m, getpid(), getpid(), "t", NULL);
	assert_non_null(f->th);
	f->th->nepochs = 1;
	f->cct = nw_cct_new(1);
	assert_non_null(f->cct);
	assert_int_equal(nw_mthread_add_tree(f->th, 0, f->cct), 0);
	assert_int_equal(nw_codecap_init(&f->cc, f->sym), 0);
	f->cc.o.off = false;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	/* The store is the capture's (the recorder's model borrows it). */
	f->m->code = NULL;
	nw_codecap_fini(&f->cc);
	nw_measurement_free(f->m);
	nw_symbolizer_free(f->sym);
	nw_elf_cache_free(f->elf);
	free(f);
	return 0;
}

/* A leaf at PC @pc of the tree with @w samples. */
static void leaf(struct fixture *f, uint64_t pc, uint64_t w)
{
	uint32_t n = nw_cct_child(f->cct, NW_CCT_ROOT, pc, 0);

	assert_int_not_equal(n, NW_CCT_ROOT);
	nw_cct_metrics(f->cct, n)[0] += w;
}

/* A leaf in symtest's function @name, @off bytes in, with @w samples; its start and size. */
static uint64_t leaf_in(struct fixture *f, const char *name, uint64_t off, uint64_t w,
			uint64_t *size)
{
	uint64_t addr = elf_symbol(SYMTEST, name, size);

	leaf(f, BASE + addr + off, w);
	return addr;
}

/* The @n bytes of symtest at ELF address @addr, read through its segments. */
static void file_bytes(struct fixture *f, uint64_t addr, uint8_t *buf, size_t n)
{
	uint64_t off;
	FILE *fp = fopen(SYMTEST, "rb");

	assert_non_null(fp);
	assert_int_equal(nw_facts_vaddr_to_offset(&f->m->modules->v[0].facts, addr, &off), 0);
	assert_int_equal(fseek(fp, (long)off, SEEK_SET), 0);
	assert_int_equal(fread(buf, 1, n, fp), n);
	fclose(fp);
}

static void test_whole(void **state)
{
	struct fixture *f = *state;
	uint64_t csize, lsize, caller = leaf_in(f, "symtest_caller", 2, 30, &csize);
	uint64_t lf = leaf_in(f, "symtest_leaf", 0, 10, &lsize);
	const struct nw_code_func *fn;
	uint8_t buf[4096];
	bool helper = false;

	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	assert_non_null(f->m->code);
	assert_int_equal(f->m->code->nfuncs, 2);
	assert_int_equal(f->m->code->func_cap, NW_CODE_FUNC_CAP_DEFAULT);
	assert_int_equal(f->m->code->total_cap, NW_CODE_TOTAL_CAP_DEFAULT);
	fn = nw_codestore_find(f->m->code, 0, caller);
	assert_non_null(fn);
	assert_int_equal(fn->start, caller);
	assert_int_equal(fn->size, csize);
	assert_int_equal(fn->nbytes, csize);
	assert_int_equal(fn->status, NW_CODE_STORED);
	assert_int_equal(fn->origin, NW_CODE_FILE);
	assert_int_equal(fn->machine, EM_X86_64);
	assert_true(csize <= sizeof(buf));
	file_bytes(f, caller, buf, csize);
	assert_memory_equal(fn->bytes, buf, csize);
	/* Its lines are symtest.c's, and symtest_helper is inlined into it. */
	assert_true(fn->nlines > 0);
	for (uint32_t i = 0; i < fn->nlines; i++) {
		assert_true(i == 0 || fn->lines[i].offset > fn->lines[i - 1].offset);
		assert_true(fn->lines[i].offset < fn->size);
		if (fn->lines[i].file != NW_CODE_NONE)
			assert_non_null(
			    strstr(f->m->code->strings[fn->lines[i].file], "symtest.c"));
	}
	for (uint32_t i = 0; i < fn->ninlines; i++) {
		assert_true(fn->inlines[i].lo < fn->inlines[i].hi);
		assert_true(fn->inlines[i].hi <= fn->size);
		helper |= !strcmp(f->m->code->strings[fn->inlines[i].name], "symtest_helper");
	}
	assert_true(helper);
	fn = nw_codestore_find(f->m->code, 0, lf);
	assert_non_null(fn);
	assert_int_equal(fn->size, lsize);
	file_bytes(f, lf, buf, lsize);
	assert_memory_equal(fn->bytes, buf, lsize);
	/* Nothing changed: the same store, not a new one. */
	{
		const struct nw_codestore *was = f->m->code;
		uint64_t gen = was->generation;

		assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
		assert_ptr_equal(f->m->code, was);
		assert_int_equal(f->m->code->generation, gen);
	}
}

static void test_func_cap(void **state)
{
	struct fixture *f = *state;
	uint64_t size, caller = leaf_in(f, "symtest_caller", 0, 5, &size);
	const struct nw_code_func *fn;
	uint8_t buf[16];

	f->cc.o.func_cap = 16;
	assert_true(size > 16);
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	fn = nw_codestore_find(f->m->code, 0, caller);
	assert_non_null(fn);
	/* Cut: the store knows the whole function's size and holds its first bytes. */
	assert_int_equal(fn->status, NW_CODE_STORED);
	assert_int_equal(fn->size, size);
	assert_int_equal(fn->nbytes, 16);
	file_bytes(f, caller, buf, 16);
	assert_memory_equal(fn->bytes, buf, 16);
	for (uint32_t i = 0; i < fn->nlines; i++)
		assert_true(fn->lines[i].offset < 16);
	for (uint32_t i = 0; i < fn->ninlines; i++)
		assert_true(fn->inlines[i].lo < 16);
	assert_int_equal(f->m->code->func_cap, 16);
}

static void test_total_cap(void **state)
{
	struct fixture *f = *state;
	uint64_t size, hot = leaf_in(f, "symtest_caller", 0, 50, &size);
	uint64_t warm = leaf_in(f, "symtest_leaf", 0, 20, &size);
	uint64_t cold = leaf_in(f, "_ZN2nw7mangledEi", 0, 1, &size);
	uint64_t hot_cost, gen;
	struct nw_codecap probe;

	/* What the hottest costs, measured with room for all. */
	assert_int_equal(nw_codecap_init(&probe, f->sym), 0);
	probe.o = (struct nw_codecap_opts){ .func_cap = 24 };
	assert_int_equal(nw_codecap_update(&probe, f->m, NULL), 0);
	hot_cost = nw_code_func_cost(nw_codestore_find(f->m->code, 0, hot));
	/* Room for the hottest alone: the others are kept, without their bytes, saying why. */
	f->cc.o.func_cap = 24;
	f->cc.o.total_cap = hot_cost + 39;
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	nw_codecap_fini(&probe);
	assert_int_equal(f->m->code->nfuncs, 3);
	assert_int_equal(nw_codestore_find(f->m->code, 0, hot)->status, NW_CODE_STORED);
	assert_int_equal(nw_codestore_find(f->m->code, 0, hot)->nbytes, 24);
	assert_int_equal(nw_codestore_find(f->m->code, 0, warm)->status, NW_CODE_CAPPED);
	assert_int_equal(nw_codestore_find(f->m->code, 0, warm)->nbytes, 0);
	assert_int_equal(nw_codestore_find(f->m->code, 0, cold)->status, NW_CODE_CAPPED);
	assert_non_null(strstr(nw_code_status_name(NW_CODE_CAPPED), "total cap"));
	/* The cold one grows hottest: it takes the room, and the store is new. */
	gen = f->m->code->generation;
	leaf_in(f, "_ZN2nw7mangledEi", 0, 100, &size);
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	assert_true(f->m->code->generation > gen);
	assert_int_equal(nw_codestore_find(f->m->code, 0, cold)->status, NW_CODE_STORED);
	assert_int_equal(nw_codestore_find(f->m->code, 0, hot)->status, NW_CODE_CAPPED);
}

/* A second module, mapped above the first: its index. */
static uint32_t add_module(struct fixture *f, const char *path, uint64_t start, uint64_t vaddr)
{
	struct nw_map maps[2] = {
		{ .start = BASE, .end = BASE + 0x100000, .module = 0 },
		{ .start = start, .end = start + 0x100000, .vaddr = vaddr, .pgoff = vaddr },
	};
	int mod = nw_module_intern(f->m->modules, path, NULL, 0);
	struct nw_epoch *e;

	assert_true(mod > 0);
	maps[1].module = (uint32_t)mod;
	e = nw_epoch_new(maps, 2, 0);
	assert_non_null(e);
	free((void *)f->m->epochs[0]);
	f->m->epochs[0] = e;
	return (uint32_t)mod;
}

static void test_no_extent(void **state)
{
	struct fixture *f = *state;
	uint32_t gone = add_module(f, "/no/such/file", 0x20000000, 0);

	leaf(f, 0x20000010, 3);
	leaf(f, 0x20000020, 3);
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	assert_int_equal(f->m->code->nfuncs, 0);
	assert_int_equal(f->m->code->nnotes, 1);
	assert_int_equal(f->m->code->notes[0].module, gone);
	assert_int_equal(f->m->code->notes[0].reason, NW_CODE_NO_EXTENT);
	assert_int_equal(f->m->code->notes[0].count, 2);
}

/* Writes @n bytes of @text to a new temporary file; its path (malloc'd). */
static char *temp_file(const void *text, size_t n)
{
	char *path = strdup("/tmp/nw-codecap-XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	return path;
}

/* An ELF core like /proc/kcore: one PT_LOAD of @code at KBASE. */
static char *fake_kcore(const uint8_t *code, size_t n)
{
	uint8_t buf[sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) + 256];
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph = { 0 };

	assert_true(n <= 256);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_CORE;
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	ph.p_type = PT_LOAD;
	ph.p_offset = sizeof(eh) + sizeof(ph);
	ph.p_vaddr = KBASE;
	ph.p_filesz = ph.p_memsz = n;
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + sizeof(eh), &ph, sizeof(ph));
	memcpy(buf + sizeof(eh) + sizeof(ph), code, n);
	return temp_file(buf, sizeof(eh) + sizeof(ph) + n);
}

static void test_kernel(void **state)
{
	static const char syms[] = "ffffffff81000000 T kfunc_a\nffffffff81000040 T kfunc_b\n"
				   "ffffffff81000080 T _etext\n";
	uint8_t code[0x80];
	struct fixture *f = *state;
	struct nw_kallsyms ks = { 0 };
	char *kallsyms = temp_file(syms, sizeof(syms) - 1), *kcore;
	const struct nw_code_func *fn;
	uint32_t kmod = add_module(f, NW_KERNEL_MODULE, KBASE, KBASE);

	for (size_t i = 0; i < sizeof(code); i++)
		code[i] = (uint8_t)i;
	kcore = fake_kcore(code, sizeof(code));
	assert_int_equal(nw_kallsyms_load(&ks, kallsyms), 0);
	leaf(f, KBASE + 0x48, 7);
	/* No kcore: the function known, its code left out, saying why. */
	f->cc.o.kcore = "/no/such/kcore";
	assert_int_equal(nw_codecap_update(&f->cc, f->m, &ks), 0);
	fn = nw_codestore_find(f->m->code, kmod, KBASE + 0x48);
	assert_non_null(fn);
	assert_int_equal(fn->start, KBASE + 0x40);
	assert_int_equal(fn->size, 0x40);
	assert_int_equal(fn->status, NW_CODE_NO_KCORE);
	assert_int_equal(fn->origin, NW_CODE_KCORE);
	assert_int_equal(fn->nbytes, 0);
	/* A readable one (a new capture: kcore is opened once). */
	nw_codecap_fini(&f->cc);
	assert_int_equal(nw_codecap_init(&f->cc, f->sym), 0);
	f->cc.o.off = false;
	f->cc.o.kcore = kcore;
	assert_int_equal(nw_codecap_update(&f->cc, f->m, &ks), 0);
	fn = nw_codestore_find(f->m->code, kmod, KBASE + 0x48);
	assert_non_null(fn);
	assert_int_equal(fn->status, NW_CODE_STORED);
	assert_int_equal(fn->nbytes, 0x40);
	assert_memory_equal(fn->bytes, code + 0x40, 0x40);
	/* Without the kernel's symbols: a note. */
	nw_codecap_fini(&f->cc);
	assert_int_equal(nw_codecap_init(&f->cc, f->sym), 0);
	f->cc.o.off = false;
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	assert_null(nw_codestore_find(f->m->code, kmod, KBASE + 0x48));
	assert_int_equal(f->m->code->notes[0].reason, NW_CODE_NO_EXTENT);
	nw_kallsyms_fini(&ks);
	unlink(kallsyms);
	unlink(kcore);
	free(kallsyms);
	free(kcore);
}

/* "JIT code" of this process: bytes the test names in a perf map. */
static uint8_t jit_code[64] = { 0x48, 0x89, 0xf8, 0x48, 0x83, 0xe8, 0x01, 0x75, 0xfa, 0xc3 };

static void test_jit(void **state)
{
	struct fixture *f = *state;
	uint64_t at = (uint64_t)(uintptr_t)jit_code;
	const struct nw_code_func *fn;
	char path[64];
	FILE *mp;
	/* Anonymous memory: its ELF address is the address itself. */
	uint32_t anon = add_module(f, "//anon", at & ~0xfffull, at & ~0xfffull);

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	mp = fopen(path, "w");
	assert_non_null(mp);
	fprintf(mp, "%llx 10 jit_loop\n", (unsigned long long)at);
	fclose(mp);
	leaf(f, at + 3, 9);
	leaf(f, at + 32, 1); /* no entry names it */
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	unlink(path);
	fn = nw_codestore_find(f->m->code, anon, at + 3);
	assert_non_null(fn);
	assert_int_equal(fn->start, at);
	assert_int_equal(fn->size, 16);
	assert_int_equal(fn->status, NW_CODE_STORED);
	assert_int_equal(fn->origin, NW_CODE_PROCESS);
	assert_int_equal(fn->nbytes, 16);
	assert_memory_equal(fn->bytes, jit_code, 16);
	assert_int_equal(f->m->code->nnotes, 1);
	assert_int_equal(f->m->code->notes[0].reason, NW_CODE_NO_PERFMAP);
}

static void test_off(void **state)
{
	struct fixture *f = *state;
	uint64_t size;

	leaf_in(f, "symtest_leaf", 0, 1, &size);
	f->cc.o.off = true;
	assert_int_equal(nw_codecap_update(&f->cc, f->m, NULL), 0);
	assert_null(f->m->code);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_func_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_total_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_extent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
