/* SPDX-License-Identifier: MIT */
/*
 * The unwinder (unwind/unwind.h) on a stack this test captures of itself:
 * inside test_dwarf -> level1 -> level2 -> level3 (noinline, frame
 * pointers, no tail calls: see tests/meson.build), level3 stores the user
 * registers perf's REGS_USER would give for the dwarf mask, in the order
 * perf dumps them, and copies the stack from its SP up, as
 * PERF_SAMPLE_STACK_USER would.  The epoch is this process's executable
 * mappings from /proc/self/maps.  The expected frames come from this
 * executable's ELF symbol table (each function's address and size), not
 * from Narwhal.  A second chain ends in a noreturn call, whose return
 * address is the first byte of the next function.
 *
 * x86-64 only (tests/meson.build builds it there): the capture is inline
 * assembly in perf's x86 register order.
 */
#if !defined(__x86_64__)
#error "test-unwind captures x86-64 registers; tests/meson.build builds it on x86-64 only"
#endif

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
#include <unistd.h>

#include <cmocka.h>

#include "arch/arch.h"
#include "elf/facts.h"
#include "model/epoch.h"
#include "perf/record.h"
#include "unwind/unwind.h"
#include "bpf/abi.h"

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
/* After a call: the call is not the function's last act, so no tail call. */
#define BARRIER() __asm__ volatile("" ::: "memory")

/* perf_event_x86_regs: AX BX CX DX SI DI BP SP IP (bits 0-8), R8-R15 (bits 16-23). */
#define X86_DWARF_MASK 0xff01ffull
#define NREGS 17
#define R_BP 6
#define R_SP 7
#define R_IP 8

/* narwhal-record's default copy (NW_DEFAULT_STACK_COPY): enough to reach _start here. */
#define STACK_COPY 16384

/* What capture() took: the registers in perf's order, and the stack above SP. */
static struct {
	uint64_t regs[NREGS];
	uint64_t stack[STACK_COPY / 8];
	uint64_t size;             /* bytes of stack copied */
	uint64_t stack_end;        /* the end of this thread's stack mapping */
} cap;

/*
 * Copies the stack from @sp up, word by word: the other frames' ASan
 * redzones must not be checked, and memcpy() would be (it is intercepted).
 */
__attribute__((no_sanitize_address)) NOINLINE static void copy_stack(uint64_t sp)
{
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;
	uint64_t n = cap.stack_end - sp;

	if (n > STACK_COPY)
		n = STACK_COPY;
	for (uint64_t i = 0; i < n / 8; i++)
		cap.stack[i] = src[i];
	cap.size = n / 8 * 8;
}

/*
 * Stores every register of the dwarf mask, ascending by perf register
 * number, then copies the stack: the sample of the function it is inlined
 * into, at the label "1".
 */
__attribute__((always_inline)) static inline void capture(void)
{
	uint64_t *r = cap.regs;

	__asm__ volatile("movq %%rax, 0(%0)\n\t"
			 "movq %%rbx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rdx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "leaq 1f(%%rip), %%rax\n"
			 "1:\n\t"
			 "movq %%rax, 64(%0)\n\t"
			 "movq %%r8, 72(%0)\n\t"
			 "movq %%r9, 80(%0)\n\t"
			 "movq %%r10, 88(%0)\n\t"
			 "movq %%r11, 96(%0)\n\t"
			 "movq %%r12, 104(%0)\n\t"
			 "movq %%r13, 112(%0)\n\t"
			 "movq %%r14, 120(%0)\n\t"
			 "movq %%r15, 128(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	copy_stack(r[R_SP]);
}

NOINLINE static void level3(void)
{
	capture();
	BARRIER();
}

NOINLINE static void level2(void)
{
	level3();
	BARRIER();
}

NOINLINE static void level1(void)
{
	level2();
	BARRIER();
}

/*
 * A call that is its function's last instruction (a noreturn callee, as
 * abort() or __stack_chk_fail() are): the return address is the first
 * byte past nr_level2, where nr_level1 begins, so only the CFI row of
 * the call (at ip - 1) unwinds it right.
 */
static jmp_buf nr_back;

NOINLINE __attribute__((noreturn)) static void nr_level3(void)
{
	capture();
	longjmp(nr_back, 1);
}

NOINLINE static void nr_level2(void)
{
	nr_level3();
}

NOINLINE static void nr_level1(void)
{
	nr_level2();
	BARRIER();
}

/* ---- the oracle: this executable's symbols ---- */

struct range {
	const char *name;
	uint64_t start, end;   /* run-time addresses */
};

/* st_value and st_size of the function @name in @elf's .symtab; false when absent. */
static bool elf_function(Elf *elf, const char *name, uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				*value = sym.st_value;
				*size = sym.st_size;
				return true;
			}
		}
	}
	return false;
}

static void test_dwarf(void **state);

/* Where the functions @names lie in this process. */
static void function_ranges(const char *const *names, int n, struct range *r)
{
	uint64_t value, size, bias;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	Elf *elf;

	assert_true(fd >= 0);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	/* The load bias, from a function whose run-time address is known. */
	assert_true(elf_function(elf, "test_dwarf", &value, &size));
	bias = (uint64_t)(uintptr_t)test_dwarf - value;
	for (int i = 0; i < n; i++) {
		if (!elf_function(elf, names[i], &value, &size))
			fail_msg("no function %s in /proc/self/exe's symbol table", names[i]);
		assert_true(size > 0);
		r[i] = (struct range){ names[i], value + bias, value + bias + size };
	}
	elf_end(elf);
	close(fd);
}

/* A caller frame's ip is a return address: the call instruction ends there. */
static void assert_return_into(const struct nw_frame *f, const struct range *r)
{
	if (f->ip <= r->start || f->ip > r->end)
		fail_msg("return address %#llx not inside %s [%#llx, %#llx]",
			 (unsigned long long)f->ip, r->name, (unsigned long long)r->start,
			 (unsigned long long)r->end);
}

/* ---- the process's epoch, from /proc/self/maps ---- */

struct self {
	struct nw_elf_cache *elf;
	struct nw_module_table modules;
	struct nw_addrspace as;
	const struct nw_epoch *epoch;
	struct nw_unwind_ctx ctx;
};

/* Executable mappings as src/record/procfs.c's synthesize_map() takes them. */
static void self_epoch(struct self *me)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	me->elf = nw_elf_cache_new();
	assert_non_null(me->elf);
	nw_module_table_init(&me->modules);
	nw_addrspace_init(&me->as);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[5], *path;
		int n = 0, mod;
		struct nw_module *m;
		uint64_t vaddr;

		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &start, &end, perms, &off,
			   &n) < 4 || !n || perms[2] != 'x')
			continue;
		path = line + n;
		path[strcspn(path, "\n")] = 0;
		mod = nw_module_intern(&me->modules, *path ? path : "//anon", NULL, 0);
		assert_true(mod >= 0);
		/* A module's ELF facts are read when it is first seen, as map_module() does. */
		m = &me->modules.v[mod];
		if (!m->facts.known)
			assert_int_equal(nw_elf_facts_for(me->elf, m->path, NULL, 0, &m->facts), 0);
		if (!m->facts.known || nw_facts_offset_to_vaddr(&m->facts, off, &vaddr))
			vaddr = off;
		assert_int_equal(nw_addrspace_map(&me->as, start, end - start, off, vaddr,
						  (uint32_t)mod),
				 0);
	}
	fclose(f);
	me->epoch = nw_addrspace_epoch(&me->as);
	assert_non_null(me->epoch);
	assert_non_null(nw_epoch_find(me->epoch, (uint64_t)(uintptr_t)level3));
	me->ctx = (struct nw_unwind_ctx){ .pid = (uint32_t)getpid(), .proc = &me->as,
					  .epoch = me->epoch, .modules = &me->modules };
}

static void self_fini(struct self *me)
{
	nw_addrspace_fini(&me->as);
	nw_module_table_fini(&me->modules);
	nw_elf_cache_free(me->elf);
}

/* ---- the capture ---- */

/* The end of the stack mapping that holds @addr. */
static uint64_t stack_end_of(uint64_t addr)
{
	char line[4096];
	uint64_t end = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;

		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && s <= addr && addr < e)
			end = e;
	}
	fclose(f);
	assert_int_not_equal(end, 0);
	return end;
}

/* A sample of the capture: the registers, and @dyn_size bytes of the copy. */
static struct nw_sample capture_sample(uint64_t dyn_size)
{
	return (struct nw_sample){
		.sid = { .pid = (uint32_t)getpid(), .tid = (uint32_t)gettid() },
		.ip = cap.regs[R_IP],
		.period = 1,
		.regs_abi = PERF_SAMPLE_REGS_ABI_64,
		.nregs = NREGS,
		.regs = (const unsigned char *)cap.regs,
		.stack_size = cap.size,
		.stack = (const unsigned char *)cap.stack,
		.dyn_size = dyn_size,
	};
}

/* The word of the copy at stack address @addr. */
static uint64_t stack_at(uint64_t addr)
{
	uint64_t off = addr - cap.regs[R_SP];

	assert_true(addr >= cap.regs[R_SP] && off + 8 <= cap.size && off % 8 == 0);
	return cap.stack[off / 8];
}

/*
 * The kernel's user callchain for the capture, walked along the frame
 * pointers as perf_callchain_user() does: the ip, then [fp + 8] while the
 * chain stays inside the copy and goes up.  Returns entries in @chain
 * (PERF_CONTEXT markers included), at most @max.
 */
static size_t fp_callchain(uint64_t *chain, size_t max)
{
	uint64_t fp = cap.regs[R_BP], sp = cap.regs[R_SP];
	size_t n = 0;

	chain[n++] = (uint64_t)PERF_CONTEXT_KERNEL;  /* a kernel part, to be skipped */
	chain[n++] = 0xffffffff81000000ull;
	chain[n++] = (uint64_t)PERF_CONTEXT_USER;
	chain[n++] = cap.regs[R_IP];
	while (n < max && fp >= sp && fp - sp + 16 <= cap.size && fp % 8 == 0) {
		uint64_t next = stack_at(fp), ra = stack_at(fp + 8);

		if (!ra)
			break;
		chain[n++] = ra;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* level3, level2, level1, test_dwarf, main, _start */
static const char *const fn_names[6] = { "level3", "level2", "level1", "test_dwarf", "main",
					 "_start" };
static struct range fn[6];
static struct nw_frame full[64];
static size_t nfull;

static void unwind(enum nw_callgraph mode, uint64_t mask, const struct nw_sample *smp,
		   struct self *me, struct nw_frame *out, size_t max, size_t *ret_n,
		   struct nw_unwind_stats *ret_stats)
{
	struct nw_unwinder u;

	assert_int_equal(nw_unwinder_init(&u, mode, nw_arch_host(), mask), 0);
	*ret_n = nw_unwind(&u, &me->ctx, smp, out, max);
	if (ret_stats)
		*ret_stats = u.stats;
	nw_unwinder_fini(&u);
}

/* The first four frames: level3, then return addresses into level2, level1, test_dwarf. */
static void assert_chain(const struct nw_frame *f, size_t n)
{
	assert_true(n >= 4);
	assert_int_equal(f[0].ip, cap.regs[R_IP]);
	assert_true(f[0].ip > fn[0].start && f[0].ip < fn[0].end);
	for (int i = 1; i < 4; i++)
		assert_return_into(&f[i], &fn[i]);
}

static void test_dwarf(void **state)
{
	const struct nw_arch_ops *arch = nw_arch_host();
	struct nw_unwind_stats st;
	struct nw_sample smp;
	struct self me;
	bool main_seen = false;

	(void)state;
	assert_string_equal(arch->name, "x86_64");
	assert_int_equal(arch->regs_mask_dwarf, X86_DWARF_MASK);
	assert_int_equal(__builtin_popcountll(arch->regs_mask_dwarf), NREGS);
	assert_int_equal(nw_arch_reg_index(arch->regs_mask_dwarf, arch->perf_sp), R_SP);
	assert_int_equal(nw_arch_reg_index(arch->regs_mask_dwarf, arch->perf_ip), R_IP);

	/* The frame address is on the thread's stack (a local may be on ASan's fake stack). */
	cap.stack_end = stack_end_of((uint64_t)(uintptr_t)__builtin_frame_address(0));
	level1();
	BARRIER();
	/* Enough of the stack to reach this function's caller. */
	assert_true(cap.size >= 1024);
	function_ranges(fn_names, 6, fn);
	assert_int_equal(fn[0].start, (uint64_t)(uintptr_t)level3);
	assert_int_equal(fn[2].start, (uint64_t)(uintptr_t)level1);
	self_epoch(&me);

	smp = capture_sample(cap.size);
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, full, 64, &nfull, &st);
	assert_chain(full, nfull);
	/* sp tags: the interrupted SP at the leaf, then each callee's CFA, growing outwards. */
	assert_int_equal(full[0].sp, cap.regs[R_SP]);
	for (size_t i = 1; i < nfull; i++)
		assert_true(full[i].sp > full[i - 1].sp);
	/* With frame pointers level3's CFA is its frame pointer + 16. */
	assert_int_equal(full[1].sp, cap.regs[R_BP] + 16);
	assert_int_equal(st.leaf_only, 0);
	assert_int_equal(st.fast + st.fallback, 1);
	/*
	 * On through code without frame pointers (libcmocka, libc) by its CFI,
	 * up to the outermost frame: main's return address into
	 * __libc_start_call_main, then _start's call of __libc_start_main.
	 */
	assert_true(nfull >= 6);
	assert_return_into(&full[nfull - 1], &fn[5]);
	for (size_t i = 4; i < nfull - 1; i++)
		if (full[i].ip > fn[4].start && full[i].ip <= fn[4].end)
			main_seen = true;
	assert_true(main_seen);

	/* libdwfl's own unwinder (NARWHAL_UNWIND=libdwfl) agrees on the frames. */
	{
		struct nw_frame f[64];
		size_t n;

		assert_int_equal(setenv("NARWHAL_UNWIND", "libdwfl", 1), 0);
		unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, &st);
		unsetenv("NARWHAL_UNWIND");
		assert_int_equal(st.fallback, 1);
		assert_chain(f, n);
		for (size_t i = 0; i < 4; i++)
			assert_int_equal(f[i].ip, full[i].ip);
	}
	self_fini(&me);
}

static void test_truncated(void **state)
{
	const struct nw_arch_ops *arch = nw_arch_host();
	uint64_t cfa3 = cap.regs[R_BP] + 16, saved[STACK_COPY / 8];
	struct nw_unwind_stats st;
	struct nw_frame f[64];
	struct nw_sample smp;
	struct self me;
	size_t n;

	(void)state;
	assert_true(nfull >= 4); /* test_dwarf ran first */
	self_epoch(&me);

	/* No stack at all: the leaf alone. */
	smp = capture_sample(0);
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, &st);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].ip, cap.regs[R_IP]);
	assert_int_equal(f[0].sp, cap.regs[R_SP]);
	assert_int_equal(st.leaf_only, 1);

	/* The copy ends at level3's CFA: its return address is in, level2's is not. */
	smp = capture_sample(cfa3 - cap.regs[R_SP]);
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, NULL);
	assert_int_equal(n, 2);
	assert_memory_equal(f, full, 2 * sizeof(*f));

	/* Eight bytes short of that: the leaf alone. */
	smp = capture_sample(cfa3 - cap.regs[R_SP] - 8);
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, NULL);
	assert_int_equal(n, 1);

	/* A depth limit: as many frames as allowed, counted as truncated. */
	smp = capture_sample(cap.size);
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 3, &n, &st);
	assert_int_equal(n, 3);
	assert_memory_equal(f, full, 3 * sizeof(*f));
	assert_int_equal(st.truncated, 1);

	/* A stack overwritten with garbage: it stops somewhere, without crashing. */
	memcpy(saved, cap.stack, sizeof(saved));
	memset(cap.stack, 0x41, sizeof(cap.stack));
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, NULL);
	assert_true(n >= 1 && n <= 2);
	assert_int_equal(f[0].ip, cap.regs[R_IP]);
	memcpy(cap.stack, saved, sizeof(saved));
	self_fini(&me);
}

static void test_fp_and_hybrid(void **state)
{
	const struct nw_arch_ops *arch = nw_arch_host();
	uint64_t chain[64], fp_regs[3];
	struct nw_unwind_stats st;
	struct nw_frame f[64];
	struct nw_sample smp;
	struct self me;
	size_t nchain, n;

	(void)state;
	assert_true(nfull >= 4);
	self_epoch(&me);
	nchain = fp_callchain(chain, 64);
	assert_true(nchain >= 3 + 4);

	/* fp: the kernel's user callchain as it is; the leaf's sp from the registers. */
	assert_int_equal(arch->regs_mask_fp, (1ull << R_BP) | (1ull << R_SP) | (1ull << R_IP));
	fp_regs[0] = cap.regs[R_BP];
	fp_regs[1] = cap.regs[R_SP];
	fp_regs[2] = cap.regs[R_IP];
	smp = (struct nw_sample){ .ip = cap.regs[R_IP], .nr = nchain,
				  .ips = (const unsigned char *)chain,
				  .regs_abi = PERF_SAMPLE_REGS_ABI_64, .nregs = 3,
				  .regs = (const unsigned char *)fp_regs };
	unwind(NW_CALLGRAPH_FP, arch->regs_mask_fp, &smp, &me, f, 64, &n, NULL);
	assert_int_equal(n, nchain - 3);
	assert_chain(f, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(f[i].ip, chain[3 + i]);
	assert_int_equal(f[0].sp, cap.regs[R_SP]);
	assert_int_equal(f[1].sp, 0);
	/* Both ways agree where both reach. */
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(f[i].ip, full[i].ip);

	/*
	 * hybrid: CFI over a copy that ends at level3's CFA gives two frames;
	 * the kernel's chain continues from level2's return address on.
	 */
	smp = capture_sample(cap.regs[R_BP] + 16 - cap.regs[R_SP]);
	smp.nr = nchain;
	smp.ips = (const unsigned char *)chain;
	unwind(NW_CALLGRAPH_HYBRID, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, &st);
	assert_int_equal(st.spliced, 1);
	assert_int_equal(n, nchain - 3);
	assert_chain(f, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(f[i].ip, chain[3 + i]);
	assert_int_equal(f[0].sp, cap.regs[R_SP]);
	assert_int_equal(f[1].sp, cap.regs[R_BP] + 16); /* from CFI */
	assert_int_equal(f[2].sp, 0);                   /* from the kernel's chain */
	self_fini(&me);
}

/*
 * -g bpf's samples: the frames the in-kernel program writes after
 * NW_BPF_CONTEXT (a PC and an SP step a word, or a PC, then its SP), here
 * dwarf mode's frames of the capture, come out as they are, the walk's end
 * and frame-pointer frames counted.  With NARWHAL_UNWIND=check the copy of
 * the same sample (in either order) is unwound and compared, not folded:
 * agreeing frames agree; a wrong return address differs; a walk that
 * stopped at a table not loaded is set apart.
 */
static size_t bpf_at[64];  /* the word of each frame's PC */

static size_t bpf_sample(uint64_t *chain, size_t n, uint64_t status, struct nw_sample *smp)
{
	size_t k = 0;

	chain[k++] = NW_BPF_CONTEXT;
	chain[k++] = status;
	for (size_t i = 0; i < n; i++) {
		uint64_t step = i ? full[i].sp - full[i - 1].sp : 0;

		bpf_at[i] = k;
		/* Both forms: every third frame's SP in a word of its own. */
		if (i && i % 3 && !(step & 7) && step / 8 < NW_BPF_SP_STEP_MAX) {
			chain[k++] = full[i].ip | step / 8 << NW_BPF_SP_SHIFT;
		} else {
			chain[k++] = full[i].ip | NW_BPF_SP_FOLLOWS;
			chain[k++] = full[i].sp;
		}
	}
	*smp = (struct nw_sample){ .sid = { .pid = (uint32_t)getpid(), .tid = (uint32_t)gettid() },
				   .ip = full[0].ip, .period = 1, .nr = k,
				   .ips = (const unsigned char *)chain };
	return k;
}

static void test_bpf(void **state)
{
	const struct nw_arch_ops *arch = nw_arch_host();
	uint64_t chain[2 + 2 * 64];
	struct nw_sample bpf, copy = capture_sample(cap.size);
	struct nw_unwinder u;
	struct nw_frame f[64];
	struct self me;
	size_t n;

	(void)state;
	self_epoch(&me);
	/* Some frames a word, some two. */
	assert_in_range(bpf_sample(chain, nfull, NW_BPF_STATUS(NW_BPF_END_ENTRY, 2), &bpf),
			2 + nfull + 1, 2 + 2 * nfull - 1);
	assert_int_equal(nw_unwinder_init(&u, NW_CALLGRAPH_BPF, arch, arch->regs_mask_dwarf), 0);
	assert_null(u.bpf_check);
	n = nw_unwind(&u, &me.ctx, &bpf, f, 64);
	assert_int_equal(n, nfull);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(f[i].ip, full[i].ip);
		assert_int_equal(f[i].sp, full[i].sp);
	}
	assert_int_equal(u.stats.bpf_ends[NW_BPF_END_ENTRY], 1);
	assert_int_equal(u.stats.bpf_fp_frames, 2);
	/* A sample handed back to perf: its copy, unwound as in dwarf mode. */
	n = nw_unwind(&u, &me.ctx, &copy, f, 64);
	assert_int_equal(n, nfull);
	assert_int_equal(u.stats.bpf_copies, 1);
	nw_unwinder_fini(&u);

	assert_int_equal(setenv("NARWHAL_UNWIND", "check", 1), 0);
	assert_int_equal(nw_unwinder_init(&u, NW_CALLGRAPH_BPF, arch, arch->regs_mask_dwarf), 0);
	unsetenv("NARWHAL_UNWIND");
	assert_non_null(u.bpf_check);
	bpf_sample(chain, nfull, NW_BPF_STATUS(NW_BPF_END_ENTRY, 0) | NW_BPF_TWIN, &bpf);
	assert_int_equal(nw_unwind(&u, &me.ctx, &bpf, f, 64), nfull);
	assert_int_equal(nw_unwind(&u, &me.ctx, &copy, f, 64), 0); /* compared, not folded */
	assert_true(u.twin);
	/* The copy first, then the program's, one return address wrong. */
	assert_int_equal(nw_unwind(&u, &me.ctx, &copy, f, 64), 0);
	bpf_sample(chain, nfull, NW_BPF_STATUS(NW_BPF_END_ENTRY, 0) | NW_BPF_TWIN, &bpf);
	chain[bpf_at[2]] += 4;
	assert_int_equal(nw_unwind(&u, &me.ctx, &bpf, f, 64), nfull);
	/* A walk that met a table not loaded yet: not comparable. */
	bpf_sample(chain, 2, NW_BPF_STATUS(NW_BPF_END_NO_TABLE, 0) | NW_BPF_TWIN, &bpf);
	assert_int_equal(nw_unwind(&u, &me.ctx, &bpf, f, 64), 2);
	assert_int_equal(nw_unwind(&u, &me.ctx, &copy, f, 64), 0);
	assert_int_equal(u.stats.bpf_checked, 3);
	assert_int_equal(u.stats.bpf_agree, 1);
	assert_int_equal(u.stats.bpf_mismatch, 1);
	assert_int_equal(u.stats.bpf_unknown, 1);
	assert_int_equal(u.stats.bpf_copies, 0);
	nw_unwinder_fini(&u);
	self_fini(&me);
}

static void test_noreturn_call(void **state)
{
	static const char *const names[4] = { "nr_level3", "nr_level2", "nr_level1",
					       "test_noreturn_call" };
	const struct nw_arch_ops *arch = nw_arch_host();
	struct range r[4];
	struct nw_frame f[64];
	struct nw_sample smp;
	struct self me;
	size_t n;

	(void)state;
	cap.stack_end = stack_end_of((uint64_t)(uintptr_t)__builtin_frame_address(0));
	if (!setjmp(nr_back))
		nr_level1();
	function_ranges(names, 4, r);
	self_epoch(&me);
	smp = capture_sample(cap.size);
	unwind(NW_CALLGRAPH_DWARF, arch->regs_mask_dwarf, &smp, &me, f, 64, &n, NULL);
	assert_true(n >= 4);
	assert_true(f[0].ip > r[0].start && f[0].ip < r[0].end);
	/* The case this test is about: the call ends nr_level2, nr_level1 starts there. */
	assert_int_equal(f[1].ip, r[1].end);
	assert_int_equal(r[2].start, r[1].end);
	for (int i = 1; i < 4; i++)
		assert_return_into(&f[i], &r[i]);
	for (size_t i = 1; i < n; i++)
		assert_true(f[i].sp > f[i - 1].sp);
	self_fini(&me);
}

int main(void)
{
	/* The fast path unless a test asks for libdwfl (nw_dwarf_new() reads it). */
	unsetenv("NARWHAL_UNWIND");
	/* In this order: test_dwarf captures the stack the others reuse. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_fp_and_hybrid),
		cmocka_unit_test(test_bpf),
		/* Last: it captures a stack of its own. */
		cmocka_unit_test(test_noreturn_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
