/* SPDX-License-Identifier: MIT */
/*
 * CFI unwinding of perf samples with libdwfl.  Each process gets one Dwfl,
 * attached once with callbacks that read the current sample: its user
 * registers as the initial frame, its stack copy as the only readable
 * memory.  The Dwfl's modules are re-reported only when the process's
 * epoch changes; libdwfl keeps a module (and its parsed CFI) that is
 * reported again unchanged, so dlopen costs one report, not one per sample.
 */
#include "unwind/dwarf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "symbol/symbol.h"
#include "symbol/vdso.h"
#include "util/log.h"

struct proc_dwfl {
	uint32_t pid;
	const void *proc;
	Dwfl *dwfl;
	const struct nw_epoch *epoch;   /* the modules reported now */
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
	int sp_index, ip_index;
	struct proc_dwfl **procs;       /* open addressing by pid */
	uint32_t nslots, nprocs;
	struct nw_symbolizer *elf;      /* PT_LOAD tables, for load biases */
	struct nw_vdso vdso;
};

static char *debuginfo_path;

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct nw_dwarf *nw_dwarf_new(const struct nw_arch_ops *arch, uint64_t regs_mask)
{
	struct nw_dwarf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->arch = arch;
	d->regs_mask = regs_mask;
	d->sp_index = nw_arch_reg_index(regs_mask, arch->perf_sp);
	d->ip_index = nw_arch_reg_index(regs_mask, arch->perf_ip);
	d->nslots = 64;
	d->procs = calloc(d->nslots, sizeof(*d->procs));
	d->elf = nw_symbolizer_new();
	nw_vdso_init(&d->vdso);
	if (!d->procs || !d->elf || d->sp_index < 0 || d->ip_index < 0) {
		nw_dwarf_free(d);
		return NULL;
	}
	return d;
}

static void proc_free(struct proc_dwfl *p)
{
	if (p && p->dwfl)
		dwfl_end(p->dwfl);
	free(p);
}

void nw_dwarf_free(struct nw_dwarf *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; d->procs && i < d->nslots; i++)
		proc_free(d->procs[i]);
	free(d->procs);
	nw_symbolizer_free(d->elf);
	nw_vdso_fini(&d->vdso);
	free(d);
}

static uint32_t slot_of(const struct nw_dwarf *d, uint32_t pid)
{
	uint32_t mask = d->nslots - 1, h = (pid * 2654435761u) & mask;

	while (d->procs[h] && d->procs[h]->pid != pid)
		h = (h + 1) & mask;
	return h;
}

static int grow(struct nw_dwarf *d)
{
	uint32_t old = d->nslots;
	struct proc_dwfl **v = d->procs;

	d->nslots *= 2;
	d->procs = calloc(d->nslots, sizeof(*d->procs));
	if (!d->procs) {
		d->procs = v;
		d->nslots = old;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < old; i++)
		if (v[i])
			d->procs[slot_of(d, v[i]->pid)] = v[i];
	free(v);
	return 0;
}

void nw_dwarf_forget(struct nw_dwarf *d, uint32_t pid)
{
	uint32_t h = slot_of(d, pid), mask = d->nslots - 1;

	if (!d->procs[h])
		return;
	proc_free(d->procs[h]);
	d->procs[h] = NULL;
	d->nprocs--;
	/* Re-place the rest of the probe run so lookups still find them. */
	for (h = (h + 1) & mask; d->procs[h]; h = (h + 1) & mask) {
		struct proc_dwfl *p = d->procs[h];

		d->procs[h] = NULL;
		d->procs[slot_of(d, p->pid)] = p;
	}
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

/* Reports the modules of @epoch (files and the vdso) to @p's Dwfl. */
static void report_epoch(struct nw_dwarf *d, struct proc_dwfl *p, const struct nw_unwind_ctx *ctx)
{
	const struct nw_epoch *e = ctx->epoch;

	dwfl_report_begin(p->dwfl);
	for (uint32_t i = 0; i < e->n; i++) {
		const struct nw_map *m = &e->maps[i];
		const char *path = ctx->modules->v[m->module].path;
		uint64_t vaddr;

		if (!strcmp(path, "[vdso]")) {
			int fd = nw_vdso_dup_fd(&d->vdso);

			if (fd < 0)
				continue;
			/* The vdso's first PT_LOAD sits at vaddr 0 and offset 0. */
			if (!dwfl_report_elf(p->dwfl, "[vdso]", "[vdso]", fd, m->start - m->pgoff,
					     true))
				close(fd);
			continue;
		}
		if (path[0] != '/' || nw_symbol_offset_to_vaddr(d->elf, path, m->pgoff, &vaddr))
			continue;
		/* bias = where the file's vaddr 0 went; a module reported twice
		 * (several executable segments) is refused as a duplicate. */
		dwfl_report_elf(p->dwfl, path, path, -1, m->start - vaddr, true);
	}
	dwfl_report_end(p->dwfl, NULL, NULL);
	p->epoch = e;
	if (!p->attached)
		p->attached = dwfl_attach_state(p->dwfl, NULL, (pid_t)p->pid, &thread_callbacks, p);
}

static struct proc_dwfl *proc_get(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx)
{
	uint32_t h = slot_of(d, ctx->pid);
	struct proc_dwfl *p = d->procs[h];

	if (p && p->proc != ctx->proc) {
		/* A new process with a reused pid. */
		nw_dwarf_forget(d, ctx->pid);
		h = slot_of(d, ctx->pid);
		p = NULL;
	}
	if (!p) {
		if ((d->nprocs + 1) * 2 > d->nslots) {
			if (grow(d))
				return NULL;
			h = slot_of(d, ctx->pid);
		}
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->pid = ctx->pid;
		p->proc = ctx->proc;
		p->d = d;
		p->dwfl = dwfl_begin(&dwfl_callbacks);
		if (!p->dwfl) {
			free(p);
			return NULL;
		}
		d->procs[h] = p;
		d->nprocs++;
	}
	return p;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct frame_walk *w = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp = 0;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (w->n == w->max) {
		w->truncated = true;
		return DWARF_CB_ABORT;
	}
	if (dwfl_frame_reg(state, (unsigned)w->sp_regno, &sp) != 0)
		sp = 0;
	w->out[w->n].ip = pc;
	w->out[w->n].sp = sp;
	w->n++;
	return DWARF_CB_OK;
}

size_t nw_dwarf_unwind(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx,
		       const struct nw_sample *s, struct nw_frame *out, size_t max,
		       struct nw_unwind_stats *stats)
{
	struct frame_walk w = { .out = out, .max = max, .sp_regno = d->arch->dwarf_sp };
	struct proc_dwfl *p;
	int ret;

	if (!s->regs || s->nregs <= (unsigned)d->sp_index || !max)
		return 0;
	p = proc_get(d, ctx);
	if (p && p->epoch != ctx->epoch)
		report_epoch(d, p, ctx);
	if (p && p->attached && s->stack && s->dyn_size) {
		p->s = s;
		p->tid = s->sid.tid;
		p->sp = reg(s, d->sp_index);
		ret = dwfl_getthread_frames(p->dwfl, (pid_t)p->tid, frame_cb, &w);
		p->s = NULL;
		if (ret != 0 && !w.truncated)
			stats->cfi_failures++;
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
