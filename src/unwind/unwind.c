/* SPDX-License-Identifier: MIT */
#include "unwind/unwind.h"

#include "unwind/dwarf.h"

#include <errno.h>
#include <stdbool.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

int nw_unwinder_init(struct nw_unwinder *u, enum nw_callgraph mode, const struct nw_arch_ops *arch,
		     uint64_t regs_mask)
{
	memset(u, 0, sizeof(*u));
	u->mode = mode;
	u->arch = arch;
	u->regs_mask = regs_mask;
	u->sp_index = nw_arch_reg_index(regs_mask, arch->perf_sp);
	if (mode != NW_CALLGRAPH_FP) {
		if (!arch->dwarf_nregs)
			return -EINVAL;
		u->dwarf = nw_dwarf_new(arch, regs_mask);
		if (!u->dwarf)
			return -ENOMEM;
	}
	if (mode == NW_CALLGRAPH_HYBRID) {
		u->scratch = calloc(NW_UNWIND_MAX_FRAMES, sizeof(*u->scratch));
		if (!u->scratch)
			return -ENOMEM;
	}
	return 0;
}

void nw_unwinder_fini(struct nw_unwinder *u)
{
	nw_dwarf_free(u->dwarf);
	free(u->scratch);
	u->dwarf = NULL;
	u->scratch = NULL;
}

void nw_unwinder_forget(struct nw_unwinder *u, uint32_t pid)
{
	if (u->dwarf)
		nw_dwarf_forget(u->dwarf, pid);
}

/* The kernel's callchain: context markers, then ips; keep the user part. */
static size_t unwind_fp(struct nw_unwinder *u, const struct nw_sample *s, struct nw_frame *out,
			size_t max)
{
	bool user = false;
	size_t n = 0;

	for (uint64_t i = 0; i < s->nr; i++) {
		uint64_t ip = nw_rd64(s->ips, i);

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (!user)
			continue;
		if (n == max) {
			u->stats.truncated++;
			break;
		}
		out[n].ip = ip;
		out[n].sp = 0;
		n++;
	}
	if (!n && s->ip && s->nr == 0) {
		/* No callchain was requested or given: the leaf alone. */
		out[n++] = (struct nw_frame){ .ip = s->ip };
	}
	if (n && u->sp_index >= 0 && s->regs && (unsigned)u->sp_index < s->nregs)
		out[0].sp = nw_rd64(s->regs, (size_t)u->sp_index);
	return n;
}

/*
 * Hybrid: CFI over a small stack copy gives the top frames exactly, even
 * in code without frame pointers; the kernel's frame-pointer chain gives
 * the rest cheaply.  They are spliced where they meet: at the first CFI
 * frame whose return address also stands in the kernel chain, the chain
 * takes over from the entry after it.
 */
static size_t unwind_hybrid(struct nw_unwinder *u, const struct nw_unwind_ctx *ctx,
			    const struct nw_sample *s, struct nw_frame *out, size_t max)
{
	struct nw_frame *kchain = u->scratch;
	bool complete;
	size_t n, k;

	n = nw_dwarf_unwind(u->dwarf, ctx, s, out, max, &u->stats, &complete);
	if (complete)
		return n;
	k = unwind_fp(u, s, kchain, NW_UNWIND_MAX_FRAMES);
	for (size_t j = 1; j < n; j++) {
		for (size_t i = 1; i < k; i++) {
			if (kchain[i].ip != out[j].ip)
				continue;
			u->stats.spliced++;
			for (i++, j++; i < k && j < max; i++, j++)
				out[j] = (struct nw_frame){ .ip = kchain[i].ip };
			return j;
		}
	}
	/* No meeting point: the longer of the two is the better guess. */
	if (k > n) {
		memcpy(out, kchain, (k < max ? k : max) * sizeof(*out));
		out[0].sp = s->regs && u->sp_index >= 0 ? nw_rd64(s->regs, (size_t)u->sp_index) : 0;
		return k < max ? k : max;
	}
	return n;
}

/* The kernel's part of the callchain (below PERF_CONTEXT_KERNEL), leaf first: the count. */
static size_t kernel_frames(struct nw_unwinder *u, const struct nw_sample *s,
			    struct nw_frame *out, size_t max)
{
	bool kernel = false;
	size_t n = 0;

	for (uint64_t i = 0; i < s->nr; i++) {
		uint64_t ip = nw_rd64(s->ips, i);

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			kernel = ip == (uint64_t)PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!kernel)
			continue;
		if (n == max) {
			u->stats.truncated++;
			break;
		}
		out[n++] = (struct nw_frame){ .ip = ip };
	}
	return n;
}

size_t nw_unwind(struct nw_unwinder *u, const struct nw_unwind_ctx *ctx, const struct nw_sample *s,
		 struct nw_frame *out, size_t max)
{
	/* Kernel frames first (the leaf end), the user stack below them. */
	size_t k = u->kernel ? kernel_frames(u, s, out, max) : 0;
	bool complete;

	out += k;
	max -= k;
	switch (u->mode) {
	case NW_CALLGRAPH_DWARF:
		return k + nw_dwarf_unwind(u->dwarf, ctx, s, out, max, &u->stats, &complete);
	case NW_CALLGRAPH_HYBRID:
		return k + unwind_hybrid(u, ctx, s, out, max);
	default:
		return k + unwind_fp(u, s, out, max);
	}
}
