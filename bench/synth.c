/* SPDX-License-Identifier: MIT */
/*
 * bench-synth: writes a measurement of a known, large shape, for timing
 * the reports where recording one would take minutes (doc/PERFORMANCE.md).
 *
 *   bench-synth DIR [LEAVES [STEM [BRANCH [TAIL [THREADS [SAMPLES]]]]]]
 *
 * Each thread's tree: a stem of STEM frames (default 20), then a full tree
 * of fan-out BRANCH (default 4) deep enough for LEAVES leaves (default
 * 2^20), each leaf extended by TAIL frames (default 3) of its own, one
 * sample (period 50000 ns) at each end.  Siblings are distinct functions
 * (256 in all, each with a symbol), so the symbolic tree is as large as
 * the physical one: about LEAVES * (TAIL + 1.33) nodes per thread, 48
 * bytes each on disk.  The defaults give 1 M distinct deep paths in a
 * measurement of about 220 MB.
 *
 * With SAMPLES (>= 1, for the HTML report's benchmark, bench/html.py),
 * each thread calls its own functions below the stem (so the threads'
 * trees merge into one as large as all of them), each leaf holds SAMPLES
 * samples, and each thread has a trace: its leaves' samples one
 * millisecond apart, leaf after leaf, as if each ran in turn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/writer.h"
#include "model/measurement.h"

#define BASE 0x400000ull
#define NFUNCS 256

static uint64_t ip_of(uint32_t f)
{
	return BASE + 0x1000 + 0x100 * (uint64_t)f;
}

static int add_symbols(struct nw_measurement *m)
{
	for (uint32_t f = 0; f < NFUNCS; f++) {
		for (int k = 0; k < 2; k++) {
			struct nw_symframe *fr = calloc(1, sizeof(*fr));

			if (!fr || !(fr->function = malloc(16)))
				return -ENOMEM;
			snprintf(fr->function, 16, "fn%03u", f);
			/* The leaf's address, and a caller's return address - 1. */
			if (nw_symtab_add(m->symtab, 0, 0x1000 + 0x100 * (uint64_t)f - (uint64_t)k,
					  fr, 1))
				return -ENOMEM;
		}
	}
	nw_symtab_sort(m->symtab);
	return 0;
}

/* Adds the subtree of @node at @level; returns -ENOMEM. */
static unsigned leaf_samples = 1; /* samples per leaf */

static int grow(struct nw_cct *t, uint32_t node, uint32_t fn, unsigned level, unsigned levels,
		unsigned branch, unsigned tail, uint32_t *leaf)
{
	if (level == levels) {
		for (unsigned k = 0; k < tail; k++) {
			node = nw_cct_append(t, node, ip_of((*leaf + 31 * k) % NFUNCS), 0);
			if (node == NW_CCT_NONE)
				return -ENOMEM;
		}
		nw_cct_metrics(t, node)[0] = leaf_samples;
		nw_cct_metrics(t, node)[1] = 50000ull * leaf_samples;
		(*leaf)++;
		return 0;
	}
	for (unsigned c = 0; c < branch; c++) {
		uint32_t f = (fn * 7 + c * 13 + level) % NFUNCS;
		uint32_t child = nw_cct_append(t, node, ip_of(f), 0);

		if (child == NW_CCT_NONE ||
		    grow(t, child, f, level + 1, levels, branch, tail, leaf))
			return -ENOMEM;
	}
	return 0;
}

/* A trace of @th: each sample of each leaf of @t, 1 ms apart from @t0. */
static int add_trace(struct nw_measurement *m, struct nw_mthread *th, const struct nw_cct *t,
		     uint64_t t0, uint64_t *span)
{
	uint64_t at = t0;
	char name[64];

	th->trace = malloc(sizeof(*th->trace));
	snprintf(name, sizeof(name), "synth-1-%u.trace", th->tid);
	th->trace_file = strdup(name);
	if (!th->trace || !th->trace_file)
		return -ENOMEM;
	nw_trace_init(th->trace, t0, 1000);
	for (uint32_t i = 1; i < t->n; i++) {
		for (uint64_t k = 0; k < nw_cct_metrics(t, i)[0]; k++) {
			struct nw_trace_event ev = { .time = at, .value = 50000, .node = i };

			if (nw_trace_add(th->trace, &ev))
				return -ENOMEM;
			at += 1000000;
		}
	}
	th->first_ns = t0;
	th->last_ns = at;
	if (at - t0 > *span)
		*span = at - t0;
	(void)m;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long leaves = argc > 2 ? strtoul(argv[2], NULL, 0) : 1ul << 20;
	unsigned stem = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 20;
	unsigned branch = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 0) : 4;
	unsigned tail = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 0) : 3;
	unsigned threads = argc > 6 ? (unsigned)strtoul(argv[6], NULL, 0) : 1;
	unsigned samples = argc > 7 ? (unsigned)strtoul(argv[7], NULL, 0) : 0;
	uint64_t t0 = 1000000000ull, span = 0;
	struct nw_map map = { .start = BASE, .end = BASE + 0x100000 };
	struct nw_measurement *m = nw_measurement_new();
	char *argv0[] = { "bench-synth" }, err[512];
	unsigned levels = 0;
	struct nw_epoch *e;
	int ret;

	if (argc < 2 || !m || branch < 2 || branch > 16) {
		fprintf(stderr, "usage: bench-synth DIR [LEAVES [STEM [BRANCH [TAIL [THREADS "
				"[SAMPLES]]]]]]\n");
		return 2;
	}
	for (unsigned long n = 1; n < leaves; n *= branch)
		levels++;
	if (samples)
		leaf_samples = samples;
	m->run.narwhal_version = strdup(NW_VERSION);
	m->run.arch = strdup("x86_64");
	m->run.call_graph = strdup("fp");
	m->run.max_stack = 512;
	nw_run_set_argv(&m->run, 1, argv0);
	if (nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 50000) < 0 ||
	    nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 50000) < 0 ||
	    nw_module_intern(m->modules, "/bench/synth", NULL, 0) != 0 ||
	    !(e = nw_epoch_new(&map, 1, 0)) || nw_measurement_add_epoch(m, e) < 0 ||
	    nw_measurement_add_process(m, 1, 0, "synth") < 0 || add_symbols(m))
		goto oom;
	for (unsigned i = 0; i < threads; i++) {
		char file[64];
		struct nw_mthread *th;
		struct nw_cct *t = nw_cct_new(2);
		uint32_t node = NW_CCT_ROOT, leaf = 0;

		snprintf(file, sizeof(file), "synth-1-%u.csprof", i + 1);
		th = nw_measurement_add_thread(m, 1, i + 1, "synth", file);
		if (!t || !th || nw_cct_reserve(t, (uint32_t)(leaves * (tail + 2) + stem)))
			goto oom;
		th->nepochs = 1;
		for (unsigned k = 0; k < stem && node != NW_CCT_NONE; k++)
			node = nw_cct_append(t, node, ip_of(k % NFUNCS), 0);
		/* A thread of its own functions below the stem: fn 0 + i * 37 at the first level. */
		if (node == NW_CCT_NONE ||
		    grow(t, node, samples ? i * 37 : 0, 0, levels, branch, tail, &leaf) ||
		    nw_mthread_add_tree(th, 0, t))
			goto oom;
		th->samples = (uint64_t)leaf * leaf_samples;
		m->run.samples += th->samples;
		if (samples && add_trace(m, th, t, t0, &span))
			goto oom;
	}
	if (samples) {
		m->run.clock_start_ns = t0;
		m->run.clock_end_ns = t0 + span;
		m->run.start_ns = 1700000000ull * 1000000000ull;
		m->run.end_ns = m->run.start_ns + span;
		m->run.traced = true;
		/* Trace events name the perf event they sampled. */
		m->run.events = calloc(1, sizeof(*m->run.events));
		if (!m->run.events || !(m->run.events[0].name = strdup("cpu-clock")))
			goto oom;
		m->run.events[0].value = 50000;
		m->run.nevents = 1;
	}
	ret = nw_measurement_write(m, NULL, 0, argv[1], NW_WRITE_NEW, err, sizeof(err));
	if (ret)
		fprintf(stderr, "bench-synth: %s\n", err);
	nw_measurement_free(m);
	return ret ? 1 : 0;
oom:
	fprintf(stderr, "bench-synth: out of memory\n");
	nw_measurement_free(m);
	return 1;
}
