/* SPDX-License-Identifier: MIT */
/*
 * bench-synth: writes a measurement of a known, large shape, for timing
 * the reports where recording one would take minutes (doc/PERFORMANCE.md).
 *
 *   bench-synth DIR [LEAVES [STEM [BRANCH [TAIL [THREADS]]]]]
 *
 * Each thread's tree: a stem of STEM frames (default 20), then a full tree
 * of fan-out BRANCH (default 4) deep enough for LEAVES leaves (default
 * 2^20), each leaf extended by TAIL frames (default 3) of its own, one
 * sample (period 50000 ns) at each end.  Siblings are distinct functions
 * (256 in all, each with a symbol), so the symbolic tree is as large as
 * the physical one: about LEAVES * (TAIL + 1.33) nodes per thread, 48
 * bytes each on disk.  The defaults give 1 M distinct deep paths in a
 * measurement of about 220 MB.
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
static int grow(struct nw_cct *t, uint32_t node, uint32_t fn, unsigned level, unsigned levels,
		unsigned branch, unsigned tail, uint32_t *leaf)
{
	if (level == levels) {
		for (unsigned k = 0; k < tail; k++) {
			node = nw_cct_append(t, node, ip_of((*leaf + 31 * k) % NFUNCS), 0);
			if (node == NW_CCT_NONE)
				return -ENOMEM;
		}
		nw_cct_metrics(t, node)[0] = 1;
		nw_cct_metrics(t, node)[1] = 50000;
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

int main(int argc, char **argv)
{
	unsigned long leaves = argc > 2 ? strtoul(argv[2], NULL, 0) : 1ul << 20;
	unsigned stem = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 20;
	unsigned branch = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 0) : 4;
	unsigned tail = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 0) : 3;
	unsigned threads = argc > 6 ? (unsigned)strtoul(argv[6], NULL, 0) : 1;
	struct nw_map map = { .start = BASE, .end = BASE + 0x100000 };
	struct nw_measurement *m = nw_measurement_new();
	char *argv0[] = { "bench-synth" }, err[512];
	unsigned levels = 0;
	struct nw_epoch *e;
	int ret;

	if (argc < 2 || !m || branch < 2 || branch > 16) {
		fprintf(stderr, "usage: bench-synth DIR [LEAVES [STEM [BRANCH [TAIL [THREADS]]]]]\n");
		return 2;
	}
	for (unsigned long n = 1; n < leaves; n *= branch)
		levels++;
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
		if (node == NW_CCT_NONE || grow(t, node, 0, 0, levels, branch, tail, &leaf) ||
		    nw_mthread_add_tree(th, 0, t))
			goto oom;
		th->samples = leaf;
		m->run.samples += leaf;
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
