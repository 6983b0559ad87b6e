/* SPDX-License-Identifier: MIT */
/*
 * Turns one PERF_RECORD_SAMPLE into frames (ip, sp), leaf first.
 * Frame-pointer mode takes the kernel's user callchain; the leaf's sp
 * comes from PERF_SAMPLE_REGS_USER.  DWARF mode (CFI over a stack copy)
 * plugs in here.
 */
#ifndef NW_UNWIND_H
#define NW_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "arch/arch.h"
#include "cct/cct.h"
#include "sampler/record.h"

enum nw_callgraph {
	NW_CALLGRAPH_FP,
	NW_CALLGRAPH_DWARF,
};

#define NW_UNWIND_MAX_FRAMES 512

struct nw_unwinder {
	enum nw_callgraph mode;
	const struct nw_arch_ops *arch;
	int sp_index;            /* index of SP in the REGS_USER dump, -1: none */
	uint64_t truncated;      /* samples whose chain hit the depth limit */
};

/* -EINVAL for a mode this build cannot unwind. */
int nw_unwinder_init(struct nw_unwinder *u, enum nw_callgraph mode, const struct nw_arch_ops *arch,
		     uint64_t regs_mask);
void nw_unwinder_fini(struct nw_unwinder *u);

/*
 * Fills up to @max frames of @s into @out, leaf first, and returns how many
 * (0 when the sample holds no user frame, e.g. a kernel-only chain).
 */
size_t nw_unwind(struct nw_unwinder *u, const struct nw_sample *s, struct nw_frame *out,
		 size_t max);

#endif
