/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel unwinder (narwhal-record -g bpf; doc/UNWINDING.md): a
 * BPF_PROG_TYPE_PERF_EVENT program on every sampling event.  At each
 * sample it walks the user stack of the interrupted task where the stack
 * really is (no copy: a stack switch is followed like any other frame),
 * with the unwind tables the recorder compiled from each module's CFI
 * (bpf/abi.h), and frame pointers where a module has none (JIT code, a
 * gap in the CFI, a row the tables cannot express).  It writes the sample
 * to a ring buffer in the layout of a PERF_RECORD_SAMPLE and tells perf
 * not to write its own; a sample that reaches a module whose table is not
 * loaded yet goes back to perf, which writes it with a stack copy for the
 * recorder's own unwinder.
 *
 * The walk is a bounded loop over global functions (5.6+), so the
 * verifier checks one frame's code, whatever the depth.  The mapping of
 * each PC comes from a per-process list that the recorder fills from the
 * MMAP2 and FORK records it reads, and bpf_find_vma() (5.17+) where the
 * walk meets one not told yet; a table is found by the file's (device,
 * inode).  Nothing newer than 5.15 is needed
 * (bpf_task_pt_regs(), attach cookies); bpf_find_vma() is called only
 * when the kernel has it (find_vmas), and the verifier drops its code
 * otherwise.
 */
#include "bpf/kernel.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <linux/perf_event.h>

#include "bpf/abi.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define BUF_WORDS 4096          /* the record being built: 32 KiB per CPU */
#define BUF_MASK (BUF_WORDS - 1)
#define MAX_KERNEL 127          /* perf_event_max_stack's default */
#define MAX_USER 1024
#define WALK_BATCH 32
#define BISECT_STEPS 24         /* 16 Mi rows per module at most */
#define PAGE_SHIFT 12

/* Set by the recorder before loading. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
const volatile __u32 max_user = 512;
const volatile bool want_kernel = false;
const volatile __u32 ring_bytes = 1;
const volatile __u64 sample_id = 0;     /* NW_BPF_ID() of the event this copy serves */
const volatile bool check = false;      /* perf writes every sample too (NARWHAL_UNWIND=check) */
const volatile __u64 regs_mask = 0;     /* the session's sample_regs_user (a probe writes them) */
const volatile bool have_probes = false; /* a source's uprobes run the walk too (nw_unwind_probe) */
const volatile bool find_vmas = true;   /* bpf_find_vma() (5.17+) where not told */

struct record {
	__u64 w[BUF_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct nw_bpf_module_key);
	__type(value, struct nw_bpf_module);
} modules SEC(".maps");

/*
 * Every module's rows, one after the other, in chunks (bpf/abi.h): array
 * maps the recorder makes as the rows need them and writes through a
 * mapping of each (a map update per row would take 0.3 s for rustc's 2.9
 * million rows).
 */
struct row_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NW_BPF_CHUNK_ROWS);
	__type(key, __u32);
	__type(value, struct nw_cfi_row);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, NW_BPF_MAX_CHUNKS);
	__type(key, __u32);
	__array(values, struct row_chunk);
} rows SEC(".maps");

/* Row @r of all modules' rows. */
static __always_inline struct nw_cfi_row *row_at(__u32 r)
{
	__u32 chunk = r >> NW_BPF_CHUNK_SHIFT, idx = r & (NW_BPF_CHUNK_ROWS - 1);
	void *m = bpf_map_lookup_elem(&rows, &chunk);

	return m ? bpf_map_lookup_elem(m, &idx) : NULL;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct record);
} bufs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NW_BPF_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += n;
}

#define VM_EXEC 0x4             /* include/linux/mm.h */
#define ENOENT 2                /* bpf_find_vma(): no mapping there */
#define NW_IP_EXACT (1ull << 62) /* model/cct.h: a PC that is not a return address */


/*
 * The mappings of code each process was seen running, in two levels:
 * every one it was seen running (up to PROC_WAYS, by process), and in
 * front of that, by 2 MiB of address space, the few that bucket holds.
 * They are learned from bpf_find_vma(), which works once per run of the
 * program (in interrupt context it leaves the mmap lock to an irq_work
 * that has not run yet): a sample can learn one mapping not met before,
 * and the second level makes that once per mapping, not once per 2 MiB
 * of a large library.  An entry is valid for its mm only (an exec makes
 * another).  When a process maps something new, the recorder clears the
 * process's entries it overlaps and bumps its generation, which is part
 * of the first level's key (nw_bpf_forget()).
 */
#define VMA_BUCKET_SHIFT 21
#define VMA_WAYS 4

struct vma_key {
	__u32 tgid;
	__u32 bucket;
	__u32 gen;
};

struct vma_slot {
	struct nw_bpf_vma v[VMA_WAYS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct vma_key);
	__type(value, struct vma_slot);
} vmas SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct nw_bpf_proc_vmas);
} procs SEC(".maps");

/* A slot or a process's list being rewritten (too large for the BPF stack). */
struct scratch {
	struct vma_slot slot;
	struct nw_bpf_proc_vmas proc;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct walk {
	__u64 pc, sp, fp;
	__u64 mm;
	__u32 tgid;
	__u32 base;             /* word of the first frame */
	__u32 n;                /* frames written */
	__u32 words;            /* the words they took */
	__u64 last_sp;          /* the SP of the last frame written */
	__u32 fp_frames;
	__u32 end;              /* enum nw_bpf_end */
	__u32 handback;
	__u32 found;            /* bpf_find_vma() was called */
	__u32 in_task;          /* a probe's, in task context: bpf_find_vma() at will */
	__u32 exact;            /* w->pc was interrupted (by a signal), not a return address */
	__u32 gen;              /* the process's generation of mappings */
	struct nw_bpf_vma vma;    /* the mapping of the last PC */
	struct nw_bpf_vma learned; /* bpf_find_vma()'s (kind NONE: not code) */
	__u32 first, nrows;     /* its module's table; nrows 0 and kind FILE: no table */
	__u32 has_table;
	__u64 tramp;            /* the uretprobe trampoline's address, 0: no uretprobe pending */
	__u64 ri;               /* the next pending struct return_instance (a kernel pointer) */
	__u32 retprobes;        /* return addresses taken from them */
	__u32 xol;              /* the first PC was moved out of a uprobe's slot */
};

/*
 * The walk's state lives in a map, not on the stack: the verifier then
 * knows none of its values, so one frame's code is verified for all
 * frames instead of once per depth.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} walks SEC(".maps");

static __always_inline struct walk *walk_state(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&walks, &zero);
}

/*
 * bpf_find_vma()'s callback: the mapping into w->learned, whose mm is set.
 * (Into the map, not the caller's stack: the verifier would carry each
 * kind it can write as a state of its own through the rest of the walk.)
 */
static long vma_found(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct walk *w = walk_state();
	struct nw_bpf_vma *v;
	struct file *file = BPF_CORE_READ(vma, vm_file);

	if (!w)
		return 0;
	v = &w->learned;
	/* A return address in memory that is not code: the walk went astray. */
	if (!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC))
		return 0;
	v->start = BPF_CORE_READ(vma, vm_start);
	v->end = BPF_CORE_READ(vma, vm_end);
	v->bias = (BPF_CORE_READ(vma, vm_pgoff) << PAGE_SHIFT) - v->start;
	v->kind = NW_VMA_FILE;
	if (file) {
		v->key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
		v->key.ino = BPF_CORE_READ(file, f_inode, i_ino);
	} else if ((__u64)BPF_CORE_READ(task, mm, context.vdso) == v->start) {
		v->key.dev = NW_BPF_VDSO_DEV;
		v->key.ino = NW_BPF_VDSO_INO;
		v->bias = -v->start;
	} else {
		v->kind = NW_VMA_ANON;  /* JIT code, or code written at run time */
	}
	return 0;
}

enum vma_found { NW_VMA_UNKNOWN, NW_VMA_IS_CODE, NW_VMA_NOT_CODE };

/* w->vma's module's table. */
static __always_inline enum vma_found found_table(struct walk *w)
{
	struct nw_bpf_module *mod;

	w->has_table = 0;
	if (w->vma.kind == NW_VMA_FILE) {
		mod = bpf_map_lookup_elem(&modules, &w->vma.key);
		if (mod) {
			w->first = mod->first;
			w->nrows = mod->nrows;
			w->has_table = 1;
		}
	}
	return NW_VMA_IS_CODE;
}

static __always_inline bool vma_holds(const struct nw_bpf_vma *v, __u64 mm, __u64 pc)
{
	return v->mm == mm && v->kind != NW_VMA_NONE && pc >= v->start && pc < v->end;
}

/*
 * The functions below that are not static are global BPF functions: the
 * verifier checks each once, on its own, and its caller sees one unknown
 * result.  A loop with an exit per round (a scan of ways, a bisection)
 * would otherwise multiply its caller's states by its exits, and the walk
 * over frames would be checked once per frame.  (bpf_loop() callbacks do
 * the same from 5.17; global functions and bounded loops from 5.6.)
 */

/*
 * Into w->vma, the mapping of @pc in the process's list, learned or told.
 * Whether it is there.  The first sample of a process whose entry the
 * recorder made (or unbound at an exec) binds it to its address space:
 * the ways the recorder tells hold for that one only.
 */
__noinline int proc_vma(__u64 pc)
{
	struct walk *w = walk_state();
	struct nw_bpf_proc_vmas *pv;
	bool told;

	if (!w)
		return 0;
	pv = bpf_map_lookup_elem(&procs, &w->tgid);
	if (!pv)
		return 0;
	if (!pv->mm)
		pv->mm = w->mm;
	told = pv->mm == w->mm;
	for (int i = 0; i < NW_BPF_PROC_WAYS; i++) {
		struct nw_bpf_vma *v = &pv->v[i];

		if (v->kind != NW_VMA_NONE && pc >= v->start && pc < v->end &&
		    (v->mm == w->mm || (!v->mm && told))) {
			w->vma = *v;
			w->vma.mm = w->mm;
			return 1;
		}
	}
	return 0;
}

/* The first way of the list being rewritten (scratch's) that is free or stale, or -1. */
__noinline int proc_free_way(void)
{
	struct walk *w = walk_state();
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);

	/* Stale: learned in another mm, or told for another (the entry's). */
	for (int i = 0; w && sc && i < NW_BPF_PROC_WAYS; i++)
		if (sc->proc.v[i].kind == NW_VMA_NONE ||
		    (sc->proc.v[i].mm ? sc->proc.v[i].mm : sc->proc.mm) != w->mm)
			return i;
	return -1;
}

/*
 * The mapping of @pc into w->vma, and its module's table: from the cache,
 * else (once per sample in interrupt context) from bpf_find_vma(), then
 * cached.  VMA_UNKNOWN when it cannot be known now, VMA_NOT_CODE when @pc
 * is in no mapping of code.
 */
__noinline int find_vma(__u64 pc)
{
	struct walk *w = walk_state();
	struct vma_key key = { .bucket = (__u32)(pc >> VMA_BUCKET_SHIFT) };
	struct vma_slot *slot;
	struct scratch *sc;
	__u32 zero = 0;
	int way;

	if (!w)
		return NW_VMA_UNKNOWN;
	key.tgid = w->tgid;
	key.gen = w->gen;
	slot = bpf_map_lookup_elem(&vmas, &key);
	for (int i = 0; slot && i < VMA_WAYS; i++) {
		struct nw_bpf_vma *v = &slot->v[i];

		if (vma_holds(v, w->mm, pc)) {
			w->vma = *v;
			return found_table(w);
		}
	}
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return NW_VMA_UNKNOWN;
	if (!proc_vma(pc)) {
		struct nw_bpf_proc_vmas *pv;
		long err;

		/* Told by the recorder only: not yet. */
		if (!find_vmas || (w->found && !w->in_task))
			return NW_VMA_UNKNOWN;
		w->found = 1;
		__builtin_memset(&w->learned, 0, sizeof(w->learned));
		w->learned.mm = w->mm;
		err = bpf_find_vma(bpf_get_current_task_btf(), pc, vma_found, NULL, 0);
		if (err == -ENOENT || (!err && w->learned.kind == NW_VMA_NONE))
			return NW_VMA_NOT_CODE;
		if (err)
			return NW_VMA_UNKNOWN;
		w->vma = w->learned;
		/* Into the process's list: a free or stale way, else the next in turn. */
		/* (Too large for the copies clang writes inline.) */
		pv = bpf_map_lookup_elem(&procs, &w->tgid);
		if (!pv || bpf_probe_read_kernel(&sc->proc, sizeof(sc->proc), pv)) {
			for (int i = 0; i < NW_BPF_PROC_WAYS; i++)
				sc->proc.v[i].kind = NW_VMA_NONE;
			sc->proc.next = 0;
			sc->proc.gen = w->gen;
			sc->proc.mm = w->mm;
		}
		way = proc_free_way();
		if (way < 0)
			way = sc->proc.next++;
		sc->proc.v[way & (NW_BPF_PROC_WAYS - 1)] = w->vma;
		bpf_map_update_elem(&procs, &w->tgid, &sc->proc, BPF_ANY);
	}
	/* Into the bucket's slot: a free or stale way, else the one the PC picks. */
	if (slot)
		sc->slot = *slot;
	else
		__builtin_memset(&sc->slot, 0, sizeof(sc->slot));
	way = (pc >> 12) % VMA_WAYS;
	for (int i = 0; i < VMA_WAYS; i++)
		if (sc->slot.v[i].kind == NW_VMA_NONE || sc->slot.v[i].mm != w->mm) {
			way = i;
			break;
		}
	sc->slot.v[way & (VMA_WAYS - 1)] = w->vma;
	bpf_map_update_elem(&vmas, &key, &sc->slot, BPF_ANY);
	return found_table(w);
}

/*
 * The rows last found, per CPU, by (module's first row, file offset): a
 * direct-mapped cache in front of the bisection (hot code repeats).
 */
#define ROW_CACHE 4096

struct row_hit {
	__u32 first, off;
	struct nw_cfi_row row;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ROW_CACHE);
	__type(key, __u32);
	__type(value, struct row_hit);
} row_cache SEC(".maps");

/* The number of the @nrows rows from @first whose offsets are at or below @off, or -1. */
__noinline int rows_below(__u32 first, __u32 nrows, __u32 off)
{
	__u32 lo = 0, hi = nrows;

	for (int i = 0; i < BISECT_STEPS && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;
		struct nw_cfi_row *r = row_at(first + mid);

		if (!r)
			return -1;
		if (r->off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < hi ? -1 : (int)lo;
}

/* The row of file offset @off among @nrows rows from @first: the last at or below it. */
static __always_inline int find_row(__u32 first, __u32 nrows, __u32 off, struct nw_cfi_row *out)
{
	__u32 slot = ((off ^ first * 0x9e3779b1u) * 0x85ebca6bu) >> 20;
	struct row_hit *hit = bpf_map_lookup_elem(&row_cache, &slot);
	struct nw_cfi_row *r;
	int below;

	if (hit && hit->first == first && hit->off == off && nrows) {
		*out = hit->row;
		return 0;
	}
	below = rows_below(first, nrows, off);
	if (below <= 0)
		return -1;
	r = row_at(first + (__u32)below - 1);
	if (!r)
		return -1;
	*out = *r;
	if (hit) {
		hit->first = first;
		hit->off = off;
		hit->row = *r;
	}
	return 0;
}

static __always_inline long stop(struct walk *w, __u32 end)
{
	w->end = end;
	return 1;
}

/*
 * The pending uretprobes of the current task, innermost first: each
 * replaced its function's return address on the stack with the
 * trampoline's, and keeps the real one.  0: none (or no uprobes here).
 */
static __always_inline void pending_retprobes(struct walk *w, struct task_struct *task)
{
	struct uprobe_task *ut;
	__u64 slot;

	w->tramp = 0;
	w->ri = 0;
	if (!bpf_core_field_exists(task->utask))
		return;
	ut = BPF_CORE_READ(task, utask);
	if (!ut)
		return;
	w->ri = (__u64)BPF_CORE_READ(ut, return_instances);
	if (w->ri)
		w->tramp = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
	/*
	 * Interrupted while stepping a probed instruction's copy out of line
	 * (an instruction of at most 16 bytes, in its slot of the uprobes
	 * page): the PC it stands for is the probed instruction's.
	 */
	slot = BPF_CORE_READ(ut, xol_vaddr);
	if (slot && w->pc >= slot && w->pc <= slot + 16) {
		w->pc = BPF_CORE_READ(ut, vaddr) + (w->pc - slot);
		w->xol = 1;
	}
}

/*
 * The return address the trampoline's at stack slot @slot stands for:
 * the pending uretprobe's that took that slot.  Those below it have
 * returned (one is being handled: a uretprobe's own sample).  0: none.
 */
__noinline __u64 retprobe_return(__u64 slot)
{
	struct walk *w = walk_state();

	for (int i = 0; w && w->ri && i < 16; i++) {
		struct return_instance *ri = (struct return_instance *)w->ri;
		__u64 stack = BPF_CORE_READ(ri, stack);

		if (stack > slot)
			return 0;
		w->ri = (__u64)BPF_CORE_READ(ri, next);
		if (stack == slot) {
			w->retprobes++;
			return BPF_CORE_READ(ri, orig_ret_vaddr);
		}
	}
	return 0;
}

/* One frame: writes (PC, SP), then finds the caller's PC, SP and FP.  1: the walk ends. */
__noinline int walk_step(void)
{
	struct walk *w = walk_state();
	__u32 zero = 0, k;
	struct record *rec = bpf_map_lookup_elem(&bufs, &zero);
	struct nw_cfi_row row = { .cfa = NW_CFA_GAP };
	__u64 pc, cfa, ra, fp, step, word;

	if (!w)
		return 1;
	k = w->base + w->words;
	if (!rec || k + 4 >= BUF_WORDS)
		return stop(w, NW_BPF_END_DEPTH);
	/* The PC, and the SP as a step up from the last frame's, or in a word of its own. */
	step = w->sp - w->last_sp;
	word = w->pc | (w->n && w->exact ? NW_IP_EXACT : 0);
	if (w->n && w->sp >= w->last_sp && !(step & 7) && step / 8 < NW_BPF_SP_STEP_MAX &&
	    w->pc <= NW_BPF_PC_MASK) {
		rec->w[k & BUF_MASK] = word | step / 8 << NW_BPF_SP_SHIFT;
		w->words++;
	} else {
		rec->w[k & BUF_MASK] = word | NW_BPF_SP_FOLLOWS;
		rec->w[(k + 1) & BUF_MASK] = w->sp;
		w->words += 2;
	}
	w->last_sp = w->sp;
	w->n++;
	if (w->n >= max_user)
		return stop(w, NW_BPF_END_DEPTH);
	/* A return address: the call is the instruction before it. */
	pc = w->n == 1 || w->exact ? w->pc : w->pc - 1;
	w->exact = 0;
	if (pc < w->vma.start || pc >= w->vma.end) {
		int f = find_vma(pc);

		if (f == NW_VMA_NOT_CODE)
			return stop(w, NW_BPF_END_NO_VMA);
		/* A mapping it cannot know in this sample: perf's copy, or where it ends. */
		if (f == NW_VMA_UNKNOWN) {
			if (!check) {
				w->handback = 1;
				return 1;
			}
			return stop(w, NW_BPF_END_UNSEEN);
		}
	}
	if (w->vma.kind == NW_VMA_FILE && !w->has_table) {
		/* Checking, perf writes every sample anyway: ours says where it stopped. */
		if (check)
			return stop(w, NW_BPF_END_NO_TABLE);
		w->handback = 1;
		return 1;
	}
	if (w->vma.kind == NW_VMA_FILE &&
	    find_row(w->first, w->nrows, (__u32)(pc + w->vma.bias), &row))
		row.cfa = NW_CFA_GAP;
	switch (row.cfa) {
	case NW_CFA_END:
		return stop(w, NW_BPF_END_ENTRY);
	case NW_CFA_SP:
		cfa = w->sp + (__s64)row.cfa_off;
		break;
	case NW_CFA_FP:
		cfa = w->fp + (__s64)row.cfa_off;
		break;
	case NW_CFA_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= 11 ? 8 : 0);
		break;
	case NW_CFA_REG:
		/* Only perf's copy can follow this frame (bpf/abi.h). */
		if (check)
			return stop(w, NW_BPF_END_NO_TABLE);
		w->handback = 1;
		return 1;
	case NW_CFA_SIGNAL: {
		/* The interrupted frame: its registers, saved by the kernel. */
		__u64 regs[(NW_SIGFRAME_RIP - NW_SIGFRAME_RBP) / 8 + 1];

		if (bpf_probe_read_user(regs, sizeof(regs), (void *)(w->sp + NW_SIGFRAME_RBP)))
			return stop(w, NW_BPF_END_READ);
		w->fp = regs[0];
		w->sp = regs[(NW_SIGFRAME_RSP - NW_SIGFRAME_RBP) / 8];
		w->pc = regs[(NW_SIGFRAME_RIP - NW_SIGFRAME_RBP) / 8];
		w->exact = 1;
		return w->pc ? 0 : stop(w, NW_BPF_END_ENTRY);
	}
	default:
		/*
		 * No usable CFI here: the frame-pointer chain, counted.  A caller's
		 * frame lies above; an FP below the SP is a register used for
		 * data (glibc's clone3 ends its CFI before the syscall).
		 */
		if (!w->fp || w->fp < w->sp)
			return stop(w, NW_BPF_END_FP);
		cfa = w->fp + 16;
		row.fp = NW_FP_AT_CFA;
		row.fp_off = -16;
		w->fp_frames++;
		break;
	}
	fp = w->fp;
	if (row.fp == NW_FP_AT_CFA && row.fp_off == -16) {
		/* The usual frame: the caller's FP right below the return address, one read. */
		__u64 pair[2];

		if (bpf_probe_read_user(pair, sizeof(pair), (void *)(cfa - 16)))
			return stop(w, NW_BPF_END_READ);
		fp = pair[0];
		ra = pair[1];
	} else {
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
			return stop(w, NW_BPF_END_READ);
		if (row.fp == NW_FP_AT_CFA &&
		    bpf_probe_read_user(&fp, sizeof(fp), (void *)(cfa + (__s64)row.fp_off)))
			return stop(w, NW_BPF_END_READ);
		if (row.fp == NW_FP_UNDEF)
			fp = 0;
	}
	if (ra && ra == w->tramp) {
		__u64 orig = retprobe_return(cfa - 8);

		if (orig)
			ra = orig;
	}
	if (!ra)
		return stop(w, NW_BPF_END_ENTRY);
	w->pc = ra;
	w->sp = cfa;
	w->fp = fp;
	return 0;
}

/*
 * WALK_BATCH frames (a loop of loops: the verifier checks each round of a
 * bounded loop apart, so the frames are WALK_BATCH rounds here and as many
 * batches in the caller).  1: the walk ends.
 */
__noinline int walk_steps(void)
{
	for (int i = 0; i < WALK_BATCH; i++)
		if (walk_step())
			return 1;
	return 0;
}

/*
 * Whether a probe's walk is under way on this CPU.  A probe runs in the
 * task, preemptible and interruptible: a sample's program in the timer
 * interrupt, or another task's probe, would write the per-CPU state the
 * walk is using.  Those hand their sample back to perf instead.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} busy SEC(".maps");

/*
 * A sample that finds the state in use goes back to perf; in check mode,
 * where perf's copies are the twins of the program's samples, a copy
 * without a twin would pair with the next one: it is dropped, counted lost.
 */
static __always_inline int busy_back(void)
{
	count(check ? NW_BPF_LOST : NW_BPF_HANDED_BACK, 1);
	return !check;
}

static __always_inline bool probe_running(void)
{
	__u32 zero = 0, *b = bpf_map_lookup_elem(&busy, &zero);

	return !b || *b;
}

/*
 * perf's x86-64 register numbers (uapi asm/perf_regs.h) as words of struct
 * pt_regs, five bits each, in two constants (a static array would land in
 * .rodata beside the recorder's settings, which clang-14's BTF gets wrong).
 */
#define W5(a, b, c, d, e, f, g, h, i, j, k, l) \
	((__u64)(a) | (__u64)(b) << 5 | (__u64)(c) << 10 | (__u64)(d) << 15 | \
	 (__u64)(e) << 20 | (__u64)(f) << 25 | (__u64)(g) << 30 | (__u64)(h) << 35 | \
	 (__u64)(i) << 40 | (__u64)(j) << 45 | (__u64)(k) << 50 | (__u64)(l) << 55)
/* ax bx cx dx si di bp sp ip flags cs ss */
#define PERF_REGS_LO W5(10, 5, 11, 12, 13, 14, 4, 19, 16, 18, 17, 20)
/* ds es fs gs (0 in 64-bit mode, not read), r8 ... r15 */
#define PERF_REGS_HI W5(0, 0, 0, 0, 9, 8, 7, 6, 3, 2, 1, 0)

/* A probe's user registers, as REGS_USER writes them: the ABI, then one word per bit of the mask. */
static __always_inline __u32 put_regs(struct record *rec, __u32 k, const struct nw_user_regs *r)
{
	const __u64 *words = (const __u64 *)r;

	rec->w[k & BUF_MASK] = PERF_SAMPLE_REGS_ABI_64;
	k++;
	for (int i = 0; i < 24; i++) {
		if (!(regs_mask & (1ull << i)))
			continue;
		__u32 word = ((i < 12 ? PERF_REGS_LO : PERF_REGS_HI) >> (5 * (i % 12))) & 31;

		if (word > 20)
			word = 20;
		rec->w[k & BUF_MASK] = i >= 12 && i < 16 ? 0 : words[word];
		k++;
	}
	return k;
}

/*
 * The sample of the interrupted task whose user registers are @uregs (a
 * probe's: in task context, its registers written too), with the kernel
 * frames of @ctx when asked for.  Returns the program's return value: 1
 * hands the sample back to perf.
 */
static __always_inline int unwind(void *ctx, const struct nw_user_regs *uregs, __u64 ip,
				  __u64 period, bool kernel, bool probe)
{
	__u32 zero = 0, k = 7, size;
	struct record *rec = bpf_map_lookup_elem(&bufs, &zero);
	struct task_struct *task = bpf_get_current_task_btf();
	struct bpf_pidns_info ns = {};
	struct walk *w = walk_state();
	struct nw_bpf_proc_vmas *pv;
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (!rec || !w)
		return 1;
	/* A sample that interrupted a probe's walk on this CPU: its state is in use. */
	if (!probe && have_probes && probe_running())
		return busy_back();
	__builtin_memset(w, 0, sizeof(*w));
	w->end = NW_BPF_END_KERNEL;
	w->in_task = probe;
	/* A task outside the recorder's PID namespace: perf knows how to say its pid. */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 1;
	rec->w[1] = sample_id;
	rec->w[2] = ip;
	rec->w[3] = (__u64)ns.tgid | (__u64)ns.pid << 32;
	rec->w[4] = bpf_ktime_get_ns();
	rec->w[5] = period;
	if (!probe && want_kernel && kernel) {
		long got;

		rec->w[7] = PERF_CONTEXT_KERNEL;
		got = bpf_get_stack(ctx, &rec->w[8], MAX_KERNEL * 8, 0);
		k = got > 0 ? 8 + (__u32)got / 8 : 7;
	}
	if (k > 8 + MAX_KERNEL)
		return 1;
	rec->w[k & BUF_MASK] = NW_BPF_CONTEXT;
	w->base = k + 2;
	/* Trusted BTF pointers: plain loads, no helper calls. */
	w->mm = (__u64)task->mm;
	w->tgid = ns.tgid;
	pv = bpf_map_lookup_elem(&procs, &w->tgid);
	w->gen = pv ? pv->gen : 0;
	if (w->mm) {
		w->pc = uregs->ip;
		w->sp = uregs->sp;
		w->fp = uregs->bp;
		pending_retprobes(w, task);
		w->end = NW_BPF_END_ENTRY;
		for (int i = 0; i < MAX_USER / WALK_BATCH; i++)
			if (walk_steps())
				break;
	}
	if (w->handback) {
		count(NW_BPF_HANDED_BACK, 1);
		return 1;
	}
	rec->w[(k + 1) & BUF_MASK] = NW_BPF_STATUS(w->end, w->fp_frames) | (check ? NW_BPF_TWIN : 0) |
				     (w->retprobes ? NW_BPF_RETPROBE : 0) | (w->xol ? NW_BPF_XOL : 0);
	k = w->base + w->words;
	if (k + 2 + 25 >= BUF_WORDS)
		return 1;
	rec->w[6] = k - 7;                  /* callchain entries */
	if (probe)
		k = put_regs(rec, k, uregs);
	else
		rec->w[k++ & BUF_MASK] = 0; /* no user registers */
	rec->w[k & BUF_MASK] = 0;           /* no stack copy */
	size = ((k + 1) * 8) & (sizeof(*rec) - 1);   /* (the verifier's bound) */
	rec->w[0] = PERF_RECORD_SAMPLE |
		    (__u64)(kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) << 32 |
		    (__u64)size << 48;
	/* Wake the recorder once the buffer is a quarter full, not at every sample. */
	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > ring_bytes / 4)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&samples, rec, size, flags)) {
		count(NW_BPF_LOST, 1);
		return 0;
	}
	count(NW_BPF_SAMPLES, 1);
	count(NW_BPF_FRAMES, w->n);
	count(NW_BPF_FP_FRAMES, w->fp_frames);
	return check;
}

/* A sampling event's sample: the interrupted registers, user or kernel. */
SEC("perf_event")
int nw_unwind(struct nw_perf_ctx *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct nw_user_regs u = {};

	/* The user registers: the walk needs these three. */
	u.ip = regs->ip;
	u.sp = regs->sp;
	u.bp = regs->bp;
	return unwind(ctx, &u, ctx->regs.ip, ctx->sample_period, (ctx->regs.cs & 3) == 0, false);
}

/*
 * A uprobe's sample (an allocation's, record/alloc.c): taken in the task,
 * at a user instruction, its context the user registers.  Its source reads
 * arguments from the registers, so they are written too.  A uprobe of the
 * uprobe PMU is opened once per CPU for every task, and a hit runs the
 * program of each: the one whose CPU (its attach cookie) is the hit's
 * takes the sample, as perf's own writing would.  A tracefs uprobe runs
 * the one program attached to it (cookie NW_BPF_ANY_CPU) at every hit.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nw_user_regs);
} probe_regs SEC(".maps");

SEC("kprobe")
int nw_unwind_probe(struct pt_regs *ctx)
{
	__u32 zero = 0;
	struct nw_user_regs *u = bpf_map_lookup_elem(&probe_regs, &zero);

	__u32 *b = bpf_map_lookup_elem(&busy, &zero);
	int ret;

	__u64 cookie = bpf_get_attach_cookie(ctx);

	if (cookie != NW_BPF_ANY_CPU && cookie != bpf_get_smp_processor_id())
		return 0;
	if (!b || *b)
		return busy_back();
	*b = 1;
	/* In a map: put_regs() reads them by a register's number. */
	if (!u || bpf_probe_read_kernel(u, sizeof(*u), ctx))
		ret = 1;
	else
		ret = unwind(ctx, u, u->ip, 1, false, true);
	*b = 0;
	return ret;
}
