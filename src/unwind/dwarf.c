/* SPDX-License-Identifier: MIT */
/*
 * CFI unwinding of perf samples with libdwfl.  Each process gets one Dwfl,
 * attached once with callbacks that read the current sample: its user
 * registers as the initial frame, its stack copy as the only readable
 * memory.  The Dwfl's modules are re-reported only when the process's
 * epoch changes; libdwfl keeps a module (and its parsed CFI) that is
 * reported again unchanged, so dlopen costs one report, not one per sample.
 *
 * The fast path does not run libdwfl per sample: for each PC it asks
 * libdw once for the CFI row (dwarf_cfi_addrframe) and compiles it
 * (cfirule.c, as the in-kernel unwinder's tables are) into a small
 * rule -- CFA = SP or FP + offset; return address and FP undefined,
 * unchanged, or saved at CFA + offset -- kept in a cache shared by every
 * process (keyed by module and file offset).  A frame then costs one
 * hash lookup and one or two reads of the stack copy.  A row the rule
 * cannot express (CFA expressions such as the PLT's, signal frames,
 * registers saved in other registers) sends the whole sample to
 * dwfl_getthread_frames, which handles everything libdw knows.
 */
#include "unwind/dwarf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "elf/vdso.h"
#include "unwind/cfirule.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

/*
 * One compiled CFI row, cached by (module, file offset of the PC): the same
 * code in every process and epoch that maps the module shares it, so a
 * fork, an exec of a known program or a dlopen costs no new lookups.
 */
struct rule {
	uint64_t key;    /* module << 40 | file offset, + 1; 0: empty slot */
	/*
	 * NONE: no CFI covers the PC, unwinding stops; OK: followed here;
	 * anything else (COMPLEX, PLT) sends the sample to libdwfl.
	 */
	struct nw_cfi_rule c;
};

/* A module reported to a process's Dwfl, and where. */
struct reported {
	uint32_t module;
	uint64_t bias;
};

struct proc_dwfl {
	uint32_t pid;
	const void *proc;
	Dwfl *dwfl;
	const struct nw_epoch *epoch;   /* the epoch last reported */
	struct reported *reported;
	uint32_t nreported, cap_reported;
	bool attached;
	struct nw_dwarf *d;
	/* The sample being unwound, read by the callbacks. */
	const struct nw_sample *s;
	uint32_t tid;
	uint64_t sp;
};

struct frame_walk {
	struct nw_frame *out;
	size_t n, max;
	int sp_regno;
	bool truncated;
};

struct nw_dwarf {
	const struct nw_arch_ops *arch;
	uint64_t regs_mask;
	int sp_index, ip_index, fp_index;
	struct proc_dwfl **procs;       /* NULL where a process was forgotten */
	size_t nprocs, cap_procs;
	struct nw_index proc_ix;        /* pid -> procs[] */
	struct nw_vdso vdso;
	struct rule *rules;
	uint32_t nrules, cap_rules;
	/* NARWHAL_UNWIND=libdwfl: always the full unwinder; =check: both, compared */
	bool no_fast, check;
	/* An ELF of the host's machine, telling libdwfl the architecture. */
	int self_fd;
	Elf *self_elf;
	struct nw_frame *check_frames;
	/*
	 * Where CFI rows are compiled from: one offline Dwfl with each module
	 * file once, at its ELF addresses, for every process (a process's own
	 * Dwfl is made only for libdwfl's full unwinder).  By module index;
	 * NULL where the file could not be reported.
	 */
	Dwfl *offline;
	struct offline_mod { Dwfl_Module *mod; bool tried; } *mods;
	size_t cap_mods;
};

static char *debuginfo_path;

/* Does @elf have an .eh_frame with contents (lld's SHT_X86_64_UNWIND ones too: libLLVM's)? */
static bool has_eh_frame(Elf *elf)
{
	return nw_cfi_section(elf, ".eh_frame") != NULL;
}

/*
 * Separate debug info only for a module without .eh_frame, whose
 * .debug_frame may be there.  libdwfl's unwinder asks for .debug_frame
 * wherever .eh_frame stops, at every outermost frame: in a process with
 * libc6-dbg installed that loaded (and inflated: 50 ms) libc's whole
 * debug file once per process, only to learn that the stack ends there.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	if (elf && has_eh_frame(elf)) {
		errno = ENOENT;
		return -1;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					    debuglink_file, debuglink_crc, debuginfo_file_name);
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct nw_dwarf *nw_dwarf_new(const struct nw_arch_ops *arch, uint64_t regs_mask)
{
	struct nw_dwarf *d = calloc(1, sizeof(*d));
	const char *mode;

	if (!d)
		return NULL;
	d->arch = arch;
	d->regs_mask = regs_mask;
	d->sp_index = nw_arch_reg_index(regs_mask, arch->perf_sp);
	d->ip_index = nw_arch_reg_index(regs_mask, arch->perf_ip);
	d->fp_index = nw_arch_reg_index(regs_mask, arch->perf_fp);
	mode = getenv("NARWHAL_UNWIND");
	d->no_fast = mode && !strcmp(mode, "libdwfl");
	d->check = mode && !strcmp(mode, "check");
	d->self_fd = -1;
	nw_vdso_init(&d->vdso);
	elf_version(EV_CURRENT);
	d->self_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	d->self_elf = d->self_fd >= 0 ? elf_begin(d->self_fd, ELF_C_READ_MMAP, NULL) : NULL;
	if (d->sp_index < 0 || d->ip_index < 0) {
		nw_dwarf_free(d);
		return NULL;
	}
	return d;
}

static void proc_free(struct proc_dwfl *p)
{
	if (p && p->dwfl)
		dwfl_end(p->dwfl);
	if (p)
		free(p->reported);
	free(p);
}

void nw_dwarf_free(struct nw_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nprocs; i++)
		proc_free(d->procs[i]);
	free(d->procs);
	nw_index_fini(&d->proc_ix);
	nw_vdso_fini(&d->vdso);
	free(d->check_frames);
	free(d->rules);
	if (d->offline)
		dwfl_end(d->offline);
	free(d->mods);
	if (d->self_elf)
		elf_end(d->self_elf);
	if (d->self_fd >= 0)
		close(d->self_fd);
	free(d);
}

static uint64_t proc_hash(const void *ctx, uint32_t i)
{
	return nw_hash_u64(((const struct nw_dwarf *)ctx)->procs[i]->pid);
}

static bool proc_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct nw_dwarf *)ctx)->procs[i]->pid == *(const uint32_t *)key;
}

void nw_dwarf_forget(struct nw_dwarf *d, uint32_t pid)
{
	uint32_t i = nw_index_remove(&d->proc_ix, nw_hash_u64(pid), proc_eq, proc_hash, d, &pid);

	if (i == NW_INDEX_NONE)
		return;
	proc_free(d->procs[i]);
	d->procs[i] = NULL;
}

static uint64_t reg(const struct nw_sample *s, int index)
{
	return nw_rd64(s->regs, (size_t)index);
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct proc_dwfl *p = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return (pid_t)p->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

/* Only the stack copy is readable: a read elsewhere ends the unwind cleanly. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct proc_dwfl *p = arg;
	uint64_t avail = p->s->dyn_size;

	if (addr < p->sp || addr - p->sp > avail || avail - (addr - p->sp) < sizeof(*result))
		return false;
	memcpy(result, p->s->stack + (addr - p->sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct proc_dwfl *p = arg;
	const struct nw_arch_ops *arch = p->d->arch;
	Dwarf_Word regs[NW_ARCH_MAX_REGS] = { 0 };
	uint64_t mask = p->d->regs_mask;
	unsigned k = 0;

	for (int r = 0; r < 64; r++) {
		int dw;

		if (!(mask & (1ULL << r)))
			continue;
		dw = arch->perf_to_dwarf(r);
		if (dw >= 0 && (unsigned)dw < arch->dwarf_nregs)
			regs[dw] = reg(p->s, k);
		k++;
	}
	if (!dwfl_thread_state_registers(thread, 0, arch->dwarf_nregs, regs))
		return false;
	dwfl_thread_state_register_pc(thread, reg(p->s, p->d->ip_index));
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* Reports one mapping's file (or the vdso).  False when libdwfl refused it. */
static bool report_map(struct nw_dwarf *d, struct proc_dwfl *p, const struct nw_unwind_ctx *ctx,
		       const struct nw_map *m)
{
	const struct nw_module *mod = &ctx->modules->v[m->module];
	const char *path = nw_module_source(mod);
	uint64_t bias;
	int fd = -1;

	if (!strcmp(path, "[vdso]")) {
		fd = nw_vdso_dup_fd(&d->vdso);
		if (fd < 0)
			return true;
		/* The vdso's first PT_LOAD sits at vaddr 0 and offset 0. */
		bias = m->start - m->pgoff;
	} else {
		/* The mapping's ELF address comes from the module's facts (elf/facts.h). */
		if (path[0] != '/' || !mod->facts.known)
			return true; /* anonymous or unreadable: nothing to unwind with */
		bias = m->start - m->vaddr; /* where the file's vaddr 0 went */
	}
	for (uint32_t i = 0; i < p->nreported; i++) {
		if (p->reported[i].module == m->module && p->reported[i].bias == bias) {
			if (fd >= 0)
				close(fd);
			return true; /* another segment of a reported module */
		}
	}
	if (!dwfl_report_elf(p->dwfl, path, path, fd, bias, true)) {
		nw_debug("unwind: cannot report %s at %#llx: %s", path, (unsigned long long)bias,
			 dwfl_errmsg(-1));
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (p->nreported == p->cap_reported) {
		uint32_t cap = p->cap_reported ? p->cap_reported * 2 : 32;
		struct reported *v = realloc(p->reported, cap * sizeof(*v));

		if (!v)
			return true; /* reported, just not remembered: a later add may fail */
		p->reported = v;
		p->cap_reported = cap;
	}
	p->reported[p->nreported++] = (struct reported){ .module = m->module, .bias = bias };
	return true;
}

/*
 * Brings @p's Dwfl to @ctx's epoch.  New modules are added to the ones
 * already there, which keeps libdwfl's parsed CFI.  Modules of an old
 * epoch stay (an address of a dlclose'd library resolves to nothing in
 * the new epoch's map anyway); when a new module collides with one of
 * them, the Dwfl is made anew from the epoch alone.
 */
static void report_epoch(struct nw_dwarf *d, struct proc_dwfl *p, const struct nw_unwind_ctx *ctx)
{
	const struct nw_epoch *e = ctx->epoch;
	bool ok = true;

	for (int attempt = 0; attempt < 2; attempt++) {
		if (attempt) {
			dwfl_end(p->dwfl);
			p->dwfl = dwfl_begin(&dwfl_callbacks);
			p->attached = false;
			p->nreported = 0;
			if (!p->dwfl)
				break;
		}
		dwfl_report_begin_add(p->dwfl);
		ok = true;
		for (uint32_t i = 0; i < e->n && ok; i++)
			ok = report_map(d, p, ctx, &e->maps[i]);
		dwfl_report_end(p->dwfl, NULL, NULL);
		if (ok)
			break;
	}
	p->epoch = e;
	if (p->dwfl && !p->attached)
		p->attached = dwfl_attach_state(p->dwfl, d->self_elf, (pid_t)p->pid,
						&thread_callbacks, p);
}

static struct proc_dwfl *proc_get(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx)
{
	uint32_t pid = ctx->pid, *slot;
	uint32_t i = nw_index_find(&d->proc_ix, nw_hash_u64(pid), proc_eq, d, &pid);
	struct proc_dwfl *p = i == NW_INDEX_NONE ? NULL : d->procs[i];

	if (p && p->proc == ctx->proc)
		return p;
	if (p)
		/* A new process with a reused pid. */
		nw_dwarf_forget(d, pid);
	slot = nw_index_slot(&d->proc_ix, nw_hash_u64(pid), proc_eq, proc_hash, d, &pid);
	if (!slot || nw_grow(&d->procs, &d->cap_procs, d->nprocs + 1, sizeof(*d->procs)))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->proc = ctx->proc;
	p->d = d;
	p->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!p->dwfl) {
		free(p);
		return NULL;
	}
	d->procs[d->nprocs] = p;
	nw_index_fill(&d->proc_ix, slot, (uint32_t)d->nprocs++);
	return p;
}


/* The process's Dwfl, brought to @ctx's epoch.  NULL when it cannot be made. */
static struct proc_dwfl *proc_ready(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx)
{
	struct proc_dwfl *p = proc_get(d, ctx);

	if (p && p->epoch != ctx->epoch)
		report_epoch(d, p, ctx);
	return p && p->dwfl ? p : NULL;
}

/*
 * Module @index of @ctx (mapped as @m) in the offline Dwfl, reported at
 * its first use.  NULL when it cannot be: anonymous memory, a file gone.
 */
static Dwfl_Module *offline_module(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx,
				   const struct nw_map *m)
{
	const struct nw_module *mod = &ctx->modules->v[m->module];
	const char *path = nw_module_source(mod);
	struct offline_mod *om;
	int fd = -1;

	if (m->module >= d->cap_mods) {
		size_t had = d->cap_mods;

		if (nw_grow(&d->mods, &d->cap_mods, (size_t)m->module + 1, sizeof(*d->mods)))
			return NULL;
		memset(d->mods + had, 0, (d->cap_mods - had) * sizeof(*d->mods));
	}
	om = &d->mods[m->module];
	if (om->tried)
		return om->mod;
	om->tried = true;
	if (!d->offline && !(d->offline = dwfl_begin(&dwfl_callbacks)))
		return NULL;
	if (!strcmp(path, "[vdso]")) {
		fd = nw_vdso_dup_fd(&d->vdso);
		if (fd < 0)
			return NULL;
	} else if (path[0] != '/' || !mod->facts.known) {
		return NULL; /* anonymous or unreadable: nothing to unwind with */
	}
	dwfl_report_begin_add(d->offline);
	/* Base 0 with add_p_vaddr: the module's addresses are its ELF addresses. */
	om->mod = dwfl_report_elf(d->offline, path, path, fd, 0, true);
	dwfl_report_end(d->offline, NULL, NULL);
	if (!om->mod) {
		nw_debug("unwind: cannot report %s: %s", path, dwfl_errmsg(-1));
		if (fd >= 0)
			close(fd);
	}
	return om->mod;
}

/* Looks up the CFI row for ELF address @addr of @mod in .eh_frame, then .debug_frame, and compiles it. */
static void compile_rule(struct nw_dwarf *d, Dwfl_Module *mod, uint64_t addr,
			 struct nw_cfi_rule *r)
{
	uint64_t pc = addr;
	Dwarf_Frame *frame = NULL;

	r->kind = NW_CFI_RULE_NONE;
	if (!mod)
		return;
	/*
	 * .debug_frame only for a module without .eh_frame: a module that has
	 * one has its CFI there (a PC it does not cover, like the instruction
	 * after clone3's system call in a new thread, is covered by neither),
	 * and asking for .debug_frame loads the module's whole separate debug
	 * file: a second's stall of the sampling loop for libc6-dbg's, during
	 * which the rings overflow.
	 */
	for (int pass = 0; pass < 2 && !frame; pass++) {
		Dwarf_Addr bias;
		Dwarf_CFI *cfi = pass ? dwfl_module_dwarf_cfi(mod, &bias)
				      : dwfl_module_eh_cfi(mod, &bias);

		if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
			frame = NULL;
		if (!pass && cfi)
			break;
	}
	if (!frame)
		return;
	nw_cfi_rule_compile(d->arch, frame, r);
	free(frame);
}

/*
 * The rule for @pc, which the process maps through @map.  The process's
 * Dwfl is made (or brought to @ctx's epoch) only on a cache miss.
 */
static const struct nw_cfi_rule *rule_get(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx,
				   const struct nw_map *map, uint64_t pc)
{
	uint64_t key = (((uint64_t)map->module << 40) | (pc - map->start + map->pgoff)) + 1;
	Dwfl_Module *mod;
	uint32_t mask, h;

	if ((d->nrules + 1) * 2 > d->cap_rules) {
		uint32_t cap = d->cap_rules ? d->cap_rules * 2 : 4096;
		struct rule *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (uint32_t i = 0; i < d->cap_rules; i++) {
			if (!d->rules[i].key)
				continue;
			h = (uint32_t)((d->rules[i].key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
			while (v[h].key)
				h = (h + 1) & (cap - 1);
			v[h] = d->rules[i];
		}
		free(d->rules);
		d->rules = v;
		d->cap_rules = cap;
	}
	mask = d->cap_rules - 1;
	h = (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
	while (d->rules[h].key && d->rules[h].key != key)
		h = (h + 1) & mask;
	if (d->rules[h].key)
		return &d->rules[h].c;
	/* The vdso's first PT_LOAD sits at vaddr 0 and offset 0. */
	mod = offline_module(d, ctx, map);
	if (mod)
		compile_rule(d, mod,
			     pc - map->start +
				     (!strcmp(ctx->modules->v[map->module].path, "[vdso]") ? map->pgoff
											   : map->vaddr),
			     &d->rules[h].c);
	else
		d->rules[h].c.kind = NW_CFI_RULE_NONE;
	d->rules[h].key = key;
	d->nrules++;
	return &d->rules[h].c;
}

static bool stack_word(const struct nw_sample *s, uint64_t sp0, uint64_t addr, uint64_t *ret)
{
	uint64_t avail = s->dyn_size;

	if (addr < sp0 || addr - sp0 > avail || avail - (addr - sp0) < 8)
		return false;
	memcpy(ret, s->stack + (addr - sp0), 8);
	return true;
}

enum fast_result { FAST_DONE, FAST_FALLBACK };

/*
 * Unwinds with cached rules.  Returns FAST_FALLBACK (and no frames) when a
 * row needs libdwfl; else the frames found, ending at the outermost frame,
 * at the first PC without CFI, or where the stack copy ends.
 */
static enum fast_result unwind_fast(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx,
				    const struct nw_sample *s, struct frame_walk *w,
				    bool *ended_cleanly)
{
	uint64_t sp0 = reg(s, d->sp_index);
	uint64_t pc = reg(s, d->ip_index), sp = sp0, fp = 0;
	bool fp_ok = d->fp_index >= 0;

	if (fp_ok)
		fp = reg(s, d->fp_index);
	*ended_cleanly = false;
	for (;;) {
		const struct nw_cfi_rule *r = NULL;
		const struct nw_map *map;
		uint64_t cfa, ra, nfp = 0, lookup;

		if (w->n == w->max) {
			w->truncated = true;
			return FAST_DONE;
		}
		w->out[w->n].ip = pc;
		w->out[w->n].sp = sp;
		w->n++;
		/* A caller's PC is a return address: its call is at pc - 1. */
		lookup = w->n == 1 ? pc : pc - 1;
		map = nw_epoch_find(ctx->epoch, lookup);
		if (map) {
			r = rule_get(d, ctx, map, lookup);
			if (!r)
				return FAST_DONE;
		}
		if (!r || r->kind == NW_CFI_RULE_NONE) {
			/*
			 * No CFI here (hand-written or generated code): try the frame
			 * pointer chain, laid out alike on x86-64 and aarch64 --
			 * [fp] the caller's fp, [fp + 8] the return address.
			 */
			if (!fp_ok || fp < sp || !stack_word(s, sp0, fp + 8, &ra) ||
			    !stack_word(s, sp0, fp, &nfp) || !ra)
				return FAST_DONE;
			pc = ra;
			sp = fp + 16;
			fp = nfp;
			continue;
		}
		if (r->kind != NW_CFI_RULE_OK) {
			w->n = 0;
			return FAST_FALLBACK;
		}
		if (r->cfa_from_fp && !fp_ok)
			return FAST_DONE;
		cfa = (r->cfa_from_fp ? fp : sp) + (int64_t)r->cfa_off;
		if (r->ra == NW_CFI_REG_UNDEFINED) {
			*ended_cleanly = true; /* the ABI's mark of the outermost frame */
			return FAST_DONE;
		}
		if (r->ra != NW_CFI_REG_AT_CFA || !stack_word(s, sp0, cfa + (int64_t)r->ra_off, &ra))
			return FAST_DONE;
		if (r->fp == NW_CFI_REG_AT_CFA)
			fp_ok = stack_word(s, sp0, cfa + (int64_t)r->fp_off, &nfp);
		else if (r->fp == NW_CFI_REG_SAME)
			nfp = fp;
		else
			fp_ok = false;
		/* The stack grows down: a caller's frame lies above. */
		if (!ra || cfa <= sp)
			return FAST_DONE;
		pc = ra;
		sp = cfa;
		fp = nfp;
	}
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct frame_walk *w = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp = 0;
	bool exact;

	if (!dwfl_frame_pc(state, &pc, &exact))
		return DWARF_CB_ABORT;
	if (w->n == w->max) {
		w->truncated = true;
		return DWARF_CB_ABORT;
	}
	if (dwfl_frame_reg(state, (unsigned)w->sp_regno, &sp) != 0)
		sp = 0;
	/* Above a signal frame libdwfl gives the interrupted PC itself. */
	w->out[w->n].ip = w->n && exact && !nw_ip_is_kernel(pc) ? pc | NW_IP_EXACT : pc;
	w->out[w->n].sp = sp;
	w->n++;
	return DWARF_CB_OK;
}

/*
 * NARWHAL_UNWIND=check: unwinds the same sample with libdwfl and counts the
 * samples where the two disagree on any frame's PC.
 */
static const char *module_of(const struct nw_unwind_ctx *ctx, uint64_t pc)
{
	const struct nw_map *m = nw_epoch_find(ctx->epoch, pc);

	return m ? ctx->modules->v[m->module].path : "?";
}

static void check_against_libdwfl(struct nw_dwarf *d, struct proc_dwfl *p,
				  const struct nw_unwind_ctx *ctx, const struct frame_walk *fast,
				  struct nw_unwind_stats *stats)
{
	struct frame_walk w = { .max = fast->max, .sp_regno = d->arch->dwarf_sp };

	if (!d->check_frames)
		d->check_frames = calloc(NW_UNWIND_MAX_FRAMES, sizeof(*d->check_frames));
	if (!d->check_frames)
		return;
	w.out = d->check_frames;
	if (w.max > NW_UNWIND_MAX_FRAMES)
		w.max = NW_UNWIND_MAX_FRAMES;
	if (dwfl_getthread_frames(p->dwfl, (pid_t)p->tid, frame_cb, &w) != 0)
		nw_debug("unwind check: libdwfl: %s", dwfl_errmsg(-1));
	stats->checked++;
	if (w.n != fast->n) {
		stats->mismatches++;
		uint64_t last = w.n ? w.out[w.n - 1].ip : 0;

		uint64_t next = w.n < fast->n ? fast->out[w.n].ip : 0;

		nw_debug("unwind check: %zu frames fast, %zu by libdwfl (leaf %#llx %s, last %#llx "
			 "%s, fast next %#llx %s)",
			 fast->n, w.n, (unsigned long long)fast->out[0].ip,
			 module_of(ctx, fast->out[0].ip), (unsigned long long)last,
			 module_of(ctx, last), (unsigned long long)next, module_of(ctx, next));
		return;
	}
	for (size_t i = 0; i < w.n; i++) {
		if (w.out[i].ip != fast->out[i].ip) {
			stats->mismatches++;
			nw_debug("unwind check: frame %zu: %#llx fast, %#llx by libdwfl", i,
				 (unsigned long long)fast->out[i].ip,
				 (unsigned long long)w.out[i].ip);
			return;
		}
	}
}

size_t nw_dwarf_unwind(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx,
		       const struct nw_sample *s, struct nw_frame *out, size_t max,
		       struct nw_unwind_stats *stats, bool *complete)
{
	struct frame_walk w = { .out = out, .max = max, .sp_regno = d->arch->dwarf_sp };
	struct proc_dwfl *p;
	int ret;

	*complete = false;
	if (!s->regs || s->nregs <= (unsigned)d->sp_index || !max)
		return 0;
	if (s->stack && s->dyn_size) {
		bool clean;

		if (!d->no_fast && unwind_fast(d, ctx, s, &w, &clean) == FAST_DONE) {
			stats->fast++;
			*complete = clean;
			p = d->check ? proc_ready(d, ctx) : NULL;
			if (p && p->attached) {
				p->s = s;
				p->tid = s->sid.tid;
				p->sp = reg(s, d->sp_index);
				check_against_libdwfl(d, p, ctx, &w, stats);
				p->s = NULL;
			}
		} else if ((p = proc_ready(d, ctx)) && p->attached) {
			stats->fallback++;
			p->s = s;
			p->tid = s->sid.tid;
			p->sp = reg(s, d->sp_index);
			ret = dwfl_getthread_frames(p->dwfl, (pid_t)p->tid, frame_cb, &w);
			if (ret != 0 && !w.truncated)
				stats->cfi_failures++;
			/* libdwfl reports the end of the stack as an error on some
			 * systems: only a chain it walked to its end counts. */
			*complete = !w.truncated && w.n > 1 && (ret == 0 || dwfl_errno() == 0);
			p->s = NULL;
		}
	}
	if (w.truncated)
		stats->truncated++;
	if (w.n == 0) {
		/* Nothing unwound: keep the leaf. */
		out[0].ip = reg(s, d->ip_index);
		out[0].sp = reg(s, d->sp_index);
		w.n = 1;
	}
	if (w.n == 1)
		stats->leaf_only++;
	return w.n;
}
