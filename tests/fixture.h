/* SPDX-License-Identifier: MIT */
/*
 * Models of measurements with known stacks, built by hand for the unit
 * tests of the views and exports (which read the model as narwhal-report
 * does).  One module, "/bin/app", mapped at FX_BASE in one epoch; each
 * function named by a test gets an address of its own, and the symbol
 * table names it both where a leaf samples it and at the return address
 * - 1 a caller is looked up at.  Two metrics by default: "t:samples"
 * (samples) and "t:period" (period sums).  Header-only: each test includes
 * it once.
 *
 *	struct fx *fx = fx_new(NULL, 0);
 *	fx_func(fx, "main", "/src/main.c", 1);
 *	struct nw_mthread *th = fx_thread(fx, 10, 10, "app");
 *	fx_add(fx, th, "main;a;b", 2, 2000);
 *	... fx->m is the model ...
 *	fx_free(fx);
 *
 * Special names: "[unknown]" is an address no module maps, "?NAME" an
 * address of the module the symbol table knows nothing about (it shows as
 * "app+0x..."), and "NAME@/lib/x.so" a function of another module, mapped
 * at a base of its own.
 */
#ifndef NW_TEST_FIXTURE_H
#define NW_TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/measurement.h"

#define FX_BASE 0x400000ull
#define FX_MODULE "/bin/app"

struct fx {
	struct nw_measurement *m;
	char **names;
	uint32_t nnames;
};

/* The base of module @i: FX_BASE, then 16 MiB apart. */
static inline uint64_t fx_base(uint32_t i)
{
	return FX_BASE + ((uint64_t)i << 24);
}

/* Remakes epoch 0 with one mapping per module. */
static inline void fx_remap(struct fx *fx)
{
	struct nw_map maps[64];
	uint32_t n = fx->m->modules->n;
	struct nw_epoch *e;

	assert_true(n <= 64);
	for (uint32_t i = 0; i < n; i++)
		maps[i] = (struct nw_map){ .start = fx_base(i), .end = fx_base(i) + 0x100000,
					   .module = i };
	e = nw_epoch_new(maps, n, 0);
	assert_non_null(e);
	if (fx->m->nepochs) {
		free((void *)fx->m->epochs[0]);
		fx->m->epochs[0] = e;
	} else {
		assert_int_equal(nw_measurement_add_epoch(fx->m, e), 0);
	}
}

/* The module called @path, mapped when new. */
static inline uint32_t fx_module(struct fx *fx, const char *path)
{
	uint32_t n = fx->m->modules->n;
	int mod = nw_module_intern(fx->m->modules, path, NULL, 0);

	assert_true(mod >= 0);
	if ((uint32_t)mod == n)
		fx_remap(fx);
	return (uint32_t)mod;
}

/*
 * A model with the metrics of @nevents events named @events (NULL: one
 * event "t"): per event its samples and its period sum.
 */
static inline struct fx *fx_new(const char *const *events, unsigned nevents)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->m = nw_measurement_new();
	assert_non_null(fx->m);
	if (!events) {
		static const char *const def[] = { "t" };

		events = def;
		nevents = 1;
	}
	for (unsigned i = 0; i < nevents; i++) {
		assert_true(nw_measurement_add_metric(fx->m, events[i], NW_METRIC_SAMPLES, 0) >= 0);
		assert_true(nw_measurement_add_metric(fx->m, events[i], NW_METRIC_PERIOD, 0) >= 0);
	}
	assert_int_equal(fx_module(fx, FX_MODULE), 0);
	return fx;
}

static inline void fx_free(struct fx *fx)
{
	for (uint32_t i = 0; i < fx->nnames; i++)
		free(fx->names[i]);
	free(fx->names);
	nw_measurement_free(fx->m);
	free(fx);
}

static inline char *fx_strdup(const char *s)
{
	char *d = s ? strdup(s) : NULL;

	assert_true(!s || d);
	return d;
}

/* The symbol entry of one address of @module: @name (in @file, first line @line). */
static inline void fx_symbol(struct fx *fx, uint32_t module, uint64_t addr, const char *name,
			     const char *file, uint32_t line)
{
	struct nw_symframe *fr = calloc(1, sizeof(*fr));

	assert_non_null(fr);
	fr->function = fx_strdup(name);
	fr->decl_file = fx_strdup(file);
	fr->file = fx_strdup(file);
	fr->decl_line = line;
	fr->line = line;
	assert_int_equal(nw_symtab_add(fx->m->symtab, module, addr, fr, 1), 0);
	nw_symtab_sort(fx->m->symtab);
}

/*
 * The ip of function @key ("NAME" or "NAME@MODULE"), declared (with
 * @file and @line) at its first use.
 */
static inline uint64_t fx_ip_decl(struct fx *fx, const char *key, const char *file,
				  uint32_t line)
{
	char name[256];
	const char *at = strchr(key, '@');
	uint32_t k, mod = 0;
	uint64_t addr;

	if (!strcmp(key, "[unknown]"))
		return 0x10;
	if (at)
		mod = fx_module(fx, at + 1);
	snprintf(name, sizeof(name), "%.*s", at ? (int)(at - key) : (int)strlen(key), key);
	for (k = 0; k < fx->nnames; k++)
		if (!strcmp(fx->names[k], key))
			return fx_base(mod) + 0x1000 + 0x100 * (uint64_t)k;
	fx->names = realloc(fx->names, (fx->nnames + 1) * sizeof(*fx->names));
	assert_non_null(fx->names);
	fx->names[fx->nnames++] = fx_strdup(key);
	addr = 0x1000 + 0x100 * (uint64_t)k;
	if (name[0] != '?') {
		/* Where a leaf is looked up, and where a caller's return address - 1 is. */
		fx_symbol(fx, mod, addr, name, file, line);
		fx_symbol(fx, mod, addr - 1, name, file, line);
	}
	return fx_base(mod) + addr;
}

/* The ip of function @key (see fx_ip_decl()). */
static inline uint64_t fx_ip(struct fx *fx, const char *key)
{
	return fx_ip_decl(fx, key, NULL, 0);
}

/* Declares function @key with its file and first line (before any use of it). */
static inline void fx_func(struct fx *fx, const char *key, const char *file, uint32_t line)
{
	fx_ip_decl(fx, key, file, line);
}

/* A thread (with the epoch of the one process), without samples yet. */
static inline struct nw_mthread *fx_thread(struct fx *fx, uint32_t pid, uint32_t tid,
					   const char *comm)
{
	struct nw_mthread *th = nw_measurement_add_thread(fx->m, pid, tid, comm, NULL);

	assert_non_null(th);
	th->first_epoch = 0;
	th->nepochs = 1;
	if (!nw_measurement_process(fx->m, pid))
		assert_true(nw_measurement_add_process(fx->m, pid, 1, comm) >= 0);
	return th;
}

/* The thread at @index (threads may move when more are added). */
static inline struct nw_mthread *fx_th(struct fx *fx, uint32_t index)
{
	return &fx->m->threads[index];
}

/* The tree of @th, made at the first use. */
static inline struct nw_cct *fx_tree(struct fx *fx, struct nw_mthread *th)
{
	if (!th->ntrees) {
		struct nw_cct *t = nw_cct_new(fx->m->nmetrics);

		assert_non_null(t);
		assert_int_equal(nw_mthread_add_tree(th, 0, t), 0);
	}
	return th->trees[0].cct;
}

/*
 * Adds @values (one per metric, the rest 0) at the stack @path ("main;a;b",
 * root first) of @th; returns the leaf's node.  @sp: the sp tag of every
 * frame (0: none).
 */
static inline uint32_t fx_addv(struct fx *fx, struct nw_mthread *th, const char *path,
			       uint64_t sp, const uint64_t *values, unsigned nvalues)
{
	struct nw_cct *t = fx_tree(fx, th);
	char buf[1024], *save = NULL;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		n = nw_cct_child(t, n, fx_ip(fx, tok), sp);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	for (unsigned i = 0; i < nvalues && i < t->nmetrics; i++)
		nw_cct_metrics(t, n)[i] += values[i];
	for (unsigned i = 0; i < nvalues && i < fx->m->nmetrics; i++)
		if (nw_metric_counts_samples(&fx->m->metrics[i]))
			th->samples += values[i];
	return n;
}

/* fx_addv() of the samples and the period of the first event. */
static inline uint32_t fx_add(struct fx *fx, struct nw_mthread *th, const char *path,
			      uint64_t samples, uint64_t period)
{
	uint64_t v[2] = { samples, period };

	return fx_addv(fx, th, path, 0, v, 2);
}

#endif
