/* SPDX-License-Identifier: MIT */
#include "unwind/unwind.h"

#include "unwind/dwarf.h"

#include "bpf/abi.h"

#include <errno.h>
#include <stdbool.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/*
 * NARWHAL_UNWIND=check in bpf mode: the program's frames of a thread's
 * last sample, until perf's twin of it (the same sample with a stack copy)
 * is unwound from the copy and compared.  Slots by thread id.
 */
#define CHECK_SLOTS 64

enum check_kind { CHECK_NONE, CHECK_BPF, CHECK_COPY };
/*
 * Beside a walk's end in a check slot: it took return addresses from
 * pending uretprobes; it started from a probed instruction, not its
 * out-of-line copy.  Both are addresses a stack copy cannot know.
 */
#define CHECK_RETPROBE (1u << 8)
#define CHECK_XOL (1u << 9)

struct nw_bpf_check {
	struct check_slot {
		uint32_t tid;
		uint32_t kind;   /* enum check_kind: which of the two came first */
		uint32_t end;    /* CHECK_BPF: how the walk ended (enum nw_bpf_end), CHECK_RETPROBE, _XOL */
		uint32_t n;
		struct nw_frame f[NW_UNWIND_MAX_FRAMES];
	} slot[CHECK_SLOTS];
};

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
	if (mode == NW_CALLGRAPH_BPF && getenv("NARWHAL_UNWIND") &&
	    !strcmp(getenv("NARWHAL_UNWIND"), "check")) {
		u->bpf_check = calloc(1, sizeof(*u->bpf_check));
		if (!u->bpf_check)
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
	free(u->bpf_check);
	u->bpf_check = NULL;
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

/*
 * Compares the copy's unwinding @d (@nd frames) with the program's @b
 * (@nb): they agree when one is a prefix of the other by PCs and the
 * copy's is not the longer (it stops where the copy ends; the program
 * reads on).
 */
static void check_pair(struct nw_unwinder *u, uint32_t tid, const struct nw_frame *b, size_t nb,
		       uint32_t end, const struct nw_frame *d, size_t nd)
{
	size_t common = nd < nb ? nd : nb, i;
	bool retprobe = end & CHECK_RETPROBE;

	u->stats.bpf_checked++;
	/* Started from a probed instruction: the copy's first PC is its slot's, and on from there junk. */
	if ((end & CHECK_XOL) && nb && nd && b[0].sp == d[0].sp) {
		u->stats.bpf_agree++;
		u->stats.bpf_uprobe++;
		return;
	}
	end &= ~(CHECK_RETPROBE | CHECK_XOL);
	/* Outside check mode the program hands such a sample to perf: the copy's is the one. */
	if (end == NW_BPF_END_NO_TABLE || end == NW_BPF_END_UNSEEN) {
		u->stats.bpf_unknown++;
		return;
	}
	/* The same frames: the same PCs, and the same SPs (which sp tags are made of). */
	for (i = 0; i < common; i++)
		if (d[i].sp != b[i].sp || nw_ip_pc(d[i].ip) != nw_ip_pc(b[i].ip))
			break;
	/*
	 * Where a pending uretprobe's trampoline replaced a return address,
	 * the copy holds the trampoline's and the program the real one, in
	 * the same slot; the copy goes on from it by frame pointers, which
	 * only the program's walk does not need: compared up to there.
	 */
	if (i < common && retprobe && d[i].sp == b[i].sp) {
		u->stats.bpf_agree++;
		u->stats.bpf_uprobe++;
		return;
	}
	if (i == common && nd <= nb) {
		u->stats.bpf_agree++;
		u->stats.bpf_deeper += nd < nb;
		return;
	}
	u->stats.bpf_mismatch++;
	if (i < common)
		nw_debug("bpf check: tid %u frame %zu: %#llx (sp %#llx) in the kernel, %#llx "
			 "(sp %#llx) from the copy (%zu and %zu frames)", tid, i,
			 (unsigned long long)b[i].ip, (unsigned long long)b[i].sp,
			 (unsigned long long)d[i].ip, (unsigned long long)d[i].sp, nb, nd);
	else
		nw_debug("bpf check: tid %u: the kernel's walk ends after %zu frames, the copy's "
			 "after %zu (next %#llx)", tid, nb, nd, (unsigned long long)d[nb].ip);
	/* Both walks whole, frame by frame, up to where they part and one more. */
	for (size_t k = 0; k <= i && k < (nb > nd ? nb : nd); k++)
		nw_debug("bpf check:   %zu: %#llx sp %#llx | %#llx sp %#llx", k,
			 k < nb ? (unsigned long long)b[k].ip : 0ull,
			 k < nb ? (unsigned long long)b[k].sp : 0ull,
			 k < nd ? (unsigned long long)d[k].ip : 0ull,
			 k < nd ? (unsigned long long)d[k].sp : 0ull);
}

/*
 * One of a check pair (@kind, frames @f[0..@n)) of thread @tid: compared
 * with the other when it came first, else kept until it comes.
 */
static void check_twin(struct nw_unwinder *u, uint32_t tid, enum check_kind kind, uint32_t end,
		       const struct nw_frame *f, size_t n)
{
	struct check_slot *c = &u->bpf_check->slot[tid % CHECK_SLOTS];

	/*
	 * Twins start at the same SP and PC (the same registers; the PC moved
	 * out of a uprobe's slot aside).  Another sample's
	 * (read out of order between the program's ring and perf's, or whose
	 * twin was dropped) is not compared: it is set aside, counted.
	 */
	if (c->tid == tid && c->kind != CHECK_NONE &&
	    (c->kind == kind || !n || !c->n || f[0].sp != c->f[0].sp ||
	     (!((end | c->end) & CHECK_XOL) && nw_ip_pc(f[0].ip) != nw_ip_pc(c->f[0].ip))))
		u->stats.bpf_unpaired++;
	else if (c->tid == tid && c->kind != CHECK_NONE) {
		if (kind == CHECK_BPF)
			check_pair(u, tid, f, n, end, c->f, c->n);
		else
			check_pair(u, tid, c->f, c->n, c->end, f, n);
		c->kind = CHECK_NONE;
		return;
	}
	c->tid = tid;
	c->kind = kind;
	c->end = end;
	c->n = (uint32_t)n;
	memcpy(c->f, f, n * sizeof(*f));
}

/*
 * bpf: the frames after NW_BPF_CONTEXT and its status word (bpf/abi.h: a
 * PC and an SP step a word, or a PC, then an SP).  A user frame right
 * below kernel frames keeps the exact PC the kernel was entered at.
 */
static size_t unwind_bpf(struct nw_unwinder *u, const struct nw_sample *s, struct nw_frame *out,
			 size_t max)
{
	uint64_t i = 0, status, n = 0, sp = 0;
	uint32_t end;

	while (i < s->nr && nw_rd64(s->ips, i) != NW_BPF_CONTEXT)
		i++;
	if (i + 1 >= s->nr)
		return 0;
	status = nw_rd64(s->ips, i + 1);
	end = (uint32_t)NW_BPF_STATUS_END(status) | (status & NW_BPF_RETPROBE ? CHECK_RETPROBE : 0) |
	      (status & NW_BPF_XOL ? CHECK_XOL : 0);
	if (!u->bpf_check_done) {
		u->stats.bpf_ends[NW_BPF_STATUS_END(status) & 7]++;
		u->stats.bpf_fp_frames += NW_BPF_STATUS_FP(status);
	}
	for (i += 2; i < s->nr; i++) {
		uint64_t w = nw_rd64(s->ips, i);

		if (n == max) {
			u->stats.truncated++;
			break;
		}
		if (!(w & NW_BPF_SP_FOLLOWS))
			sp += NW_BPF_SP_STEP(w) * 8;
		else if (++i < s->nr)
			sp = nw_rd64(s->ips, i);
		else
			break;
		out[n].ip = w & (NW_BPF_PC_MASK | NW_IP_EXACT);
		out[n].sp = sp;
		n++;
	}
	if (NW_BPF_STATUS_END(status) == NW_BPF_END_DEPTH && !u->bpf_check_done)
		u->stats.truncated++;
	if ((status & NW_BPF_TWIN) && u->bpf_check && !u->bpf_check_done)
		check_twin(u, s->sid.tid, CHECK_BPF, end, out, n);
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

size_t nw_unwind_copy(struct nw_unwinder *u, const struct nw_unwind_ctx *ctx,
		      const struct nw_sample *s, struct nw_frame *out, size_t max)
{
	size_t k;
	bool complete;

	if (u->mode != NW_CALLGRAPH_BPF)
		return nw_unwind(u, ctx, s, out, max);
	k = u->kernel ? kernel_frames(u, s, out, max) : 0;
	return k + nw_dwarf_unwind(u->dwarf, ctx, s, out + k, max - k, &u->stats, &complete);
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
	case NW_CALLGRAPH_BPF: {
		size_t n;

		u->twin = false;
		if (!s->stack_size)
			return k + unwind_bpf(u, s, out, max);
		n = nw_dwarf_unwind(u->dwarf, ctx, s, out, max, &u->stats, &complete);
		if (u->bpf_check) {
			/* The twin of a sample the program unwound: compared, not counted again. */
			check_twin(u, s->sid.tid, CHECK_COPY, 0, out, n);
			u->twin = true;
			return 0;
		}
		u->stats.bpf_copies++;
		return k + n;
	}
	default:
		return k + unwind_fp(u, s, out, max);
	}
}
