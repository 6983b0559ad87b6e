/* SPDX-License-Identifier: MIT */
/*
 * Turns one PERF_RECORD_SAMPLE into frames (ip, sp), leaf first; callers
 * hold return addresses.
 *
 * - fp: the kernel's user callchain (frame pointers); the leaf's sp from
 *   PERF_SAMPLE_REGS_USER.
 * - dwarf: CFI (.eh_frame, .debug_frame) through libdwfl over the sample's
 *   user registers and stack copy, at record time.
 * - bpf: the frames the in-kernel unwinder wrote into the sample's
 *   callchain after NW_BPF_CONTEXT (a PC and an SP step a word); a sample with a stack copy (one it
 *   handed back to perf) as in dwarf mode.  One Dwfl per process,
 *   kept across samples; its modules follow the process's epochs.  Every
 *   frame carries its CFA-derived stack pointer as sp.
 */
#ifndef NW_UNWIND_H
#define NW_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "model/cct.h"
#include "model/epoch.h"
#include "perf/record.h"

enum nw_callgraph {
	NW_CALLGRAPH_FP,
	NW_CALLGRAPH_DWARF,
	NW_CALLGRAPH_HYBRID,     /* small stack copy by CFI, spliced onto the fp chain */
	NW_CALLGRAPH_BPF,        /* CFI tables walked in the kernel (bpf/abi.h); samples
				  * it hands back carry a stack copy, unwound as dwarf */
	NW_CALLGRAPH_AUTO,       /* not asked for: the recorder picks bpf where it can, else dwarf */
};

#define NW_UNWIND_MAX_FRAMES 512

/* Where the sample's process stands: its pid, and the epoch it resolves against. */
struct nw_unwind_ctx {
	uint32_t pid;
	const void *proc;                       /* identity of the process (pid reuse) */
	const struct nw_epoch *epoch;
	const struct nw_module_table *modules;
};

struct nw_unwind_stats {
	uint64_t truncated;      /* chains cut at the depth limit */
	uint64_t cfi_failures;   /* dwarf: unwinding stopped on an error before the entry */
	uint64_t leaf_only;      /* dwarf: nothing unwound beyond the leaf */
	uint64_t fast;           /* dwarf: samples unwound with cached rules */
	uint64_t fallback;       /* dwarf: samples that needed libdwfl's full unwinder */
	uint64_t checked;        /* NARWHAL_UNWIND=check: samples unwound both ways */
	uint64_t mismatches;     /* ... where the two disagree */
	uint64_t spliced;        /* hybrid: samples joined onto the kernel chain */
	uint64_t bpf_fp_frames;  /* bpf: frames the kernel found by frame pointers */
	uint64_t bpf_ends[8];    /* bpf: samples by how the walk ended (enum nw_bpf_end) */
	uint64_t bpf_copies;     /* bpf: samples handed back, unwound from a copy */
	/* NARWHAL_UNWIND=check in bpf mode: each sample unwound in the kernel and from a copy */
	uint64_t bpf_checked, bpf_agree, bpf_deeper, bpf_mismatch;
	uint64_t bpf_unknown;    /* ... the kernel's walk met what outside check mode goes to perf */
	uint64_t bpf_uprobe;     /* ... agree, up to an address the kernel keeps for a uprobe */
	uint64_t bpf_unpaired;   /* samples whose twin did not come next (not compared) */
};

struct nw_dwarf;

struct nw_unwinder {
	enum nw_callgraph mode;
	const struct nw_arch_ops *arch;
	uint64_t regs_mask;
	int sp_index;            /* index of SP in the REGS_USER dump, -1: none */
	struct nw_dwarf *dwarf;  /* dwarf and hybrid modes' per-process state */
	struct nw_frame *scratch; /* hybrid: the kernel chain */
	bool kernel;             /* samples carry the kernel's callchain: its frames come first */
	struct nw_bpf_check *bpf_check; /* bpf, NARWHAL_UNWIND=check: frames awaiting their twin */
	bool bpf_check_done;            /* the sample being unwound was paired already */
	bool twin;               /* the last sample was a check twin: compared, not to be folded */
	struct nw_unwind_stats stats;
};

/* -EINVAL for a mode the arch cannot unwind, -ENOMEM. */
int nw_unwinder_init(struct nw_unwinder *u, enum nw_callgraph mode, const struct nw_arch_ops *arch,
		     uint64_t regs_mask);
void nw_unwinder_fini(struct nw_unwinder *u);

/*
 * Fills up to @max frames of @s into @out, leaf first, and returns how many
 * (0 when the sample holds no frame): with u->kernel, the kernel's
 * callchain, then the user stack.
 */
size_t nw_unwind(struct nw_unwinder *u, const struct nw_unwind_ctx *ctx, const struct nw_sample *s,
		 struct nw_frame *out, size_t max);

/*
 * nw_unwind() for a sample the kernel's program never sees (a source's:
 * allocation uprobes): in bpf mode its stack copy through the CFI
 * unwinder, neither counted as handed back nor checked.
 */
size_t nw_unwind_copy(struct nw_unwinder *u, const struct nw_unwind_ctx *ctx,
		      const struct nw_sample *s, struct nw_frame *out, size_t max);

/* The process @pid is gone: drop what the unwinder keeps for it. */
void nw_unwinder_forget(struct nw_unwinder *u, uint32_t pid);

#endif
