/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel unwinder, from the recorder's side (-g bpf;
 * doc/UNWINDING.md): loads bpf/unwind.bpf.c (its skeleton is generated at
 * build time), attaches it to sampling events, loads modules' unwind
 * tables into its maps, and hands out the samples it wrote, already in
 * the layout of PERF_RECORD_SAMPLE (bpf/abi.h).
 */
#ifndef NW_BPF_UNWINDER_H
#define NW_BPF_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/abi.h"

struct nw_bpf_opts {
	uint32_t max_frames;       /* user frames per sample, at most 1024 */
	bool kernel;               /* the kernel's frames too, from its own unwinder */
	uint32_t ring_bytes;       /* the ring buffer, a power of two of pages */
	uint32_t max_rows;         /* rows of all modules' tables together */
	unsigned nevents;          /* events sampled: a copy of the program for each */
	const unsigned *probes;    /* a source's uprobe events it unwinds (their numbers) */
	unsigned nprobes;
	uint64_t regs_mask;        /* the session's sample_regs_user, which a probe's samples carry */
	bool check;                /* perf writes each sample too, with a stack copy */
};

#define NW_BPF_DEFAULT_RING (8u << 20)
#define NW_BPF_DEFAULT_ROWS (16u << 20)   /* 256 MiB at most, in chunks of 4 MiB */

struct nw_bpf_stats {
	uint64_t v[NW_BPF_NSTATS];          /* the program's counters, all CPUs */
	uint64_t rows, max_rows, modules;   /* what the tables hold */
	uint64_t table_bytes;               /* the kernel memory of the rows' chunks */
	uint64_t run_ns, runs;              /* the program's time (kernel.bpf_stats_enabled) */
	uint32_t insns;                     /* instructions the verifier processed */
};

struct nw_bpf_unwinder;

/*
 * Whether -g bpf can work here; if not, why (a sentence for a notice),
 * in @why: no BTF, not allowed (root, or CAP_BPF and CAP_PERFMON), a
 * kernel older than 5.15, a build without BPF.
 */
bool nw_bpf_usable(char *why, size_t len);

/* Loads the program.  -errno, with a sentence in @err. */
int nw_bpf_open(struct nw_bpf_unwinder **ret, const struct nw_bpf_opts *o, char *err,
		size_t len);
/*
 * Attaches it to the perf event @fd of the session's event @event; its
 * samples carry the id NW_BPF_ID(@event).  -errno.
 */
int nw_bpf_attach(struct nw_bpf_unwinder *u, int fd, unsigned event);
/*
 * ... to the uprobe event @fd, opened on @cpu for every task, of a
 * source's event @which, one of nw_bpf_opts.probes: NW_BPF_PROBE_ID(@which).
 * (A uprobe runs the program of every such event at each hit: the one
 * opened on the CPU of the hit takes the sample.)  @cpu -1: @fd is the
 * one event of a tracefs uprobe that holds the program, which then takes
 * every hit of every task.
 */
int nw_bpf_attach_probe(struct nw_bpf_unwinder *u, int fd, unsigned which, int cpu);
/* Whether the table of the file (@dev, @ino) is loaded (or known to be empty). */
bool nw_bpf_has_module(const struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino);
/*
 * Loads the @n rows of the table of the file (@dev, @ino): the kernel's
 * dev_t (major << 20 | minor).  -ENOSPC when the rows map is full (its
 * samples go on being handed back to perf), -errno.
 */
int nw_bpf_add_module(struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino,
		      const struct nw_cfi_row *rows, uint32_t n);
/*
 * The recorder tells the program each process's mappings of code, with
 * nw_bpf_map() and nw_bpf_set_mappings(), as it reads them.  Whether the
 * program also looks up those it was not told yet (bpf_find_vma(), 5.17+;
 * not with NARWHAL_BPF_FIND_VMA=0); else they wait for the recorder.
 */
bool nw_bpf_finds(const struct nw_bpf_unwinder *u);
/*
 * Process @tgid mapped @v (start, end, bias, key, kind; kind NONE: not
 * known): the mappings the program learned or was told that it overlaps
 * are gone (bpf/abi.h, struct nw_bpf_proc_vmas), and @v is one.
 */
void nw_bpf_map(struct nw_bpf_unwinder *u, uint32_t tgid, const struct nw_bpf_vma *v);
/*
 * Process @tgid's mappings of code are @v[0..@n) (a fork's, its parent's;
 * an exec's, none), the first NW_BPF_PROC_WAYS of them.
 */
void nw_bpf_set_mappings(struct nw_bpf_unwinder *u, uint32_t tgid, const struct nw_bpf_vma *v,
			 unsigned n);
/* A file descriptor that polls readable when samples are waiting. */
int nw_bpf_fd(const struct nw_bpf_unwinder *u);
/* Hands every waiting sample to @fn; the count, or -errno. */
int nw_bpf_consume(struct nw_bpf_unwinder *u, int (*fn)(void *arg, const void *rec, size_t size),
		   void *arg);
void nw_bpf_get_stats(const struct nw_bpf_unwinder *u, struct nw_bpf_stats *st);
void nw_bpf_close(struct nw_bpf_unwinder *u);

#endif
