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
 *
 * More than the one epoch and the one sp tag: fx_epoch() adds an epoch in
 * which every module sits FX_EPOCH_STEP higher than in the one before, and
 * fx_path() and fx_put() add a stack of any length in any epoch's tree,
 * with an sp tag per frame.  fx_inline() declares a function whose address
 * the symbol table resolves to an inline chain.
 *
 *	uint32_t e1 = fx_epoch(fx);
 *	static const uint64_t sps[] = { 0x7000, 0x6f00 };
 *	fx_inline(fx, "work", "compute;helper");  (outermost first)
 *	fx_put(fx, th, e1, fx_path(fx, th, e1, "main;work", 0, sps), v, 2);
 *
 * A function at several addresses and lines, or an inline chain whose
 * frames have their files and lines: fx_frames() declares a key (any
 * name, one per address, "hot#12") whose symbol entry is the frames given,
 * outermost first, each with its file, line and the function's first line.
 *
 *	static const struct fx_frame at12[] = {
 *		{ "hot", "/src/hot.c", 12, 8 }, { "helper", "/src/hot.c", 5, 3 },
 *	};
 *	fx_frames(fx, "hot#12", at12, 2);
 *	fx_add(fx, th, "main;hot#12", 4, 4000);
 */
#ifndef NW_TEST_FIXTURE_H
#define NW_TEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/measurement.h"

#define FX_BASE 0x400000ull
#define FX_MODULE "/bin/app"
/* How much higher every module is mapped in each epoch than in the one before. */
#define FX_EPOCH_STEP (1ull << 32)

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

/* The base of module @i in epoch @epoch. */
static inline uint64_t fx_base_in(uint32_t i, uint32_t epoch)
{
	return fx_base(i) + epoch * FX_EPOCH_STEP;
}

/* Makes epoch @index (the next one, or one to remake) with one mapping per module. */
static inline void fx_map_epoch(struct fx *fx, uint32_t index)
{
	struct nw_map maps[64];
	uint32_t n = fx->m->modules->n;
	struct nw_epoch *e;

	assert_true(n <= 64);
	for (uint32_t i = 0; i < n; i++)
		maps[i] = (struct nw_map){ .start = fx_base_in(i, index),
					   .end = fx_base_in(i, index) + 0x100000, .module = i };
	e = nw_epoch_new(maps, n, index);
	assert_non_null(e);
	if (index < fx->m->nepochs) {
		free((void *)fx->m->epochs[index]);
		fx->m->epochs[index] = e;
	} else {
		assert_int_equal(nw_measurement_add_epoch(fx->m, e), (int)index);
	}
}

/* Remakes every epoch (epoch 0 when there is none) with one mapping per module. */
static inline void fx_remap(struct fx *fx)
{
	uint32_t n = fx->m->nepochs ? fx->m->nepochs : 1;

	for (uint32_t e = 0; e < n; e++)
		fx_map_epoch(fx, e);
}

/* Adds an epoch (every module FX_EPOCH_STEP above the previous epoch); its index. */
static inline uint32_t fx_epoch(struct fx *fx)
{
	uint32_t index = fx->m->nepochs;

	fx_map_epoch(fx, index);
	return index;
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
 * The symbol entry of one address of @module: the inline chain @chain
 * ("outer;inner", outermost first), no file or line.
 */
static inline void fx_symbol_chain(struct fx *fx, uint32_t module, uint64_t addr,
				   const char *chain)
{
	char *buf = fx_strdup(chain), *save = NULL;
	struct nw_symframe *fr = NULL;
	uint32_t n = 0;

	for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		fr = realloc(fr, (n + 1) * sizeof(*fr));
		assert_non_null(fr);
		/* Innermost first: each frame goes in front of the ones outside it. */
		memmove(fr + 1, fr, n * sizeof(*fr));
		memset(fr, 0, sizeof(*fr));
		fr->function = fx_strdup(tok);
		n++;
	}
	free(buf);
	assert_true(n > 0);
	assert_int_equal(nw_symtab_add(fx->m->symtab, module, addr, fr, n), 0);
	nw_symtab_sort(fx->m->symtab);
}

/*
 * The address in its module of key @key ("NAME" or "NAME@MODULE"), made
 * at its first use (*@is_new then true: its symbols are to be added); its
 * module in *@mod.
 */
static inline uint64_t fx_key(struct fx *fx, const char *key, uint32_t *mod, bool *is_new)
{
	const char *at = strchr(key, '@');
	uint32_t k;

	*mod = at ? fx_module(fx, at + 1) : 0;
	*is_new = false;
	for (k = 0; k < fx->nnames; k++)
		if (!strcmp(fx->names[k], key))
			return 0x1000 + 0x100 * (uint64_t)k;
	fx->names = realloc(fx->names, (fx->nnames + 1) * sizeof(*fx->names));
	assert_non_null(fx->names);
	fx->names[fx->nnames++] = fx_strdup(key);
	*is_new = true;
	return 0x1000 + 0x100 * (uint64_t)k;
}

/*
 * The ip of function @key ("NAME" or "NAME@MODULE"), declared at its first
 * use: with @file and @line, or as the inline chain @chain when not NULL.
 */
static inline uint64_t fx_decl(struct fx *fx, const char *key, const char *file, uint32_t line,
			       const char *chain)
{
	char name[256];
	const char *at = strchr(key, '@');
	uint32_t mod;
	uint64_t addr;
	bool is_new;

	if (!strcmp(key, "[unknown]"))
		return 0x10;
	snprintf(name, sizeof(name), "%.*s", at ? (int)(at - key) : (int)strlen(key), key);
	addr = fx_key(fx, key, &mod, &is_new);
	if (!is_new)
		return fx_base(mod) + addr;
	/* Where a leaf is looked up, and where a caller's return address - 1 is. */
	if (chain) {
		fx_symbol_chain(fx, mod, addr, chain);
		fx_symbol_chain(fx, mod, addr - 1, chain);
	} else if (name[0] != '?') {
		fx_symbol(fx, mod, addr, name, file, line);
		fx_symbol(fx, mod, addr - 1, name, file, line);
	}
	return fx_base(mod) + addr;
}

/* The ip of function @key declared with @file and @line at its first use (fx_decl()). */
static inline uint64_t fx_ip_decl(struct fx *fx, const char *key, const char *file,
				  uint32_t line)
{
	return fx_decl(fx, key, file, line, NULL);
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

/*
 * Declares function @key as an address of its module that the symbol
 * table resolves to the inline chain @chain ("outer;inner", outermost
 * first), before any use of @key.
 */
static inline void fx_inline(struct fx *fx, const char *key, const char *chain)
{
	for (uint32_t k = 0; k < fx->nnames; k++)
		assert_string_not_equal(fx->names[k], key);
	fx_decl(fx, key, NULL, 0, chain);
}

/* One frame of a symbol entry fx_frames() declares. */
struct fx_frame {
	const char *function;
	const char *file;    /* the function's file, where the line is */
	uint32_t line;       /* the address's line (outer frames: the call site's) */
	uint32_t decl_line;  /* the function's first line */
};

/*
 * Declares key @key ("NAME#TAG" or "NAME#TAG@MODULE": any name not used
 * yet) as an address whose symbol entry is @frames, @n of them, outermost
 * first: another address and line of a function, or an inline chain with
 * each frame's file and line.
 */
static inline void fx_frames(struct fx *fx, const char *key, const struct fx_frame *frames,
			     uint32_t n)
{
	uint32_t mod;
	bool is_new;
	uint64_t addr = fx_key(fx, key, &mod, &is_new);

	assert_true(is_new && n > 0);
	/* Where a leaf is looked up, and where a caller's return address - 1 is. */
	for (uint64_t a = addr - 1; a <= addr; a++) {
		struct nw_symframe *fr = calloc(n, sizeof(*fr));

		assert_non_null(fr);
		/* The symbol table's chains are innermost first. */
		for (uint32_t i = 0; i < n; i++) {
			const struct fx_frame *f = &frames[n - 1 - i];

			fr[i].function = fx_strdup(f->function);
			fr[i].file = fx_strdup(f->file);
			fr[i].decl_file = fx_strdup(f->file);
			fr[i].line = f->line;
			fr[i].decl_line = f->decl_line;
		}
		assert_int_equal(nw_symtab_add(fx->m->symtab, mod, a, fr, n), 0);
	}
	nw_symtab_sort(fx->m->symtab);
}

/* The ip of function @key in epoch @epoch (see fx_decl()). */
static inline uint64_t fx_ip_in(struct fx *fx, const char *key, uint32_t epoch)
{
	uint64_t ip = fx_ip(fx, key);

	return ip < FX_BASE ? ip : ip + epoch * FX_EPOCH_STEP;
}

/* A thread (with the epochs of the one process), without samples yet. */
static inline struct nw_mthread *fx_thread(struct fx *fx, uint32_t pid, uint32_t tid,
					   const char *comm)
{
	struct nw_mthread *th = nw_measurement_add_thread(fx->m, pid, tid, comm, NULL);

	assert_non_null(th);
	th->first_epoch = 0;
	th->nepochs = fx->m->nepochs;
	if (!nw_measurement_process(fx->m, pid))
		assert_true(nw_measurement_add_process(fx->m, pid, 1, comm) >= 0);
	return th;
}

/* The thread at @index (threads may move when more are added). */
static inline struct nw_mthread *fx_th(struct fx *fx, uint32_t index)
{
	return &fx->m->threads[index];
}

/* The tree of @th in epoch @epoch, made at the first use. */
static inline struct nw_cct *fx_tree_in(struct fx *fx, struct nw_mthread *th, uint32_t epoch)
{
	struct nw_cct *t;

	assert_true(epoch < fx->m->nepochs);
	for (uint32_t i = 0; i < th->ntrees; i++)
		if (th->trees[i].epoch == epoch)
			return th->trees[i].cct;
	t = nw_cct_new(fx->m->nmetrics);
	assert_non_null(t);
	assert_int_equal(nw_mthread_add_tree(th, epoch, t), 0);
	th->nepochs = fx->m->nepochs;
	return t;
}

/* The tree of @th in epoch 0, made at the first use. */
static inline struct nw_cct *fx_tree(struct fx *fx, struct nw_mthread *th)
{
	return fx_tree_in(fx, th, 0);
}

/*
 * The node of the stack @path ("main;a;b", root first, of any length) in
 * the tree of @th in epoch @epoch, made when missing.  Frame i (0: the
 * outermost) gets the sp tag @sps[i] when @sps is not NULL, else @sp (0:
 * none).
 */
static inline uint32_t fx_path(struct fx *fx, struct nw_mthread *th, uint32_t epoch,
			       const char *path, uint64_t sp, const uint64_t *sps)
{
	struct nw_cct *t = fx_tree_in(fx, th, epoch);
	char *buf = fx_strdup(path), *save = NULL;
	uint32_t n = NW_CCT_ROOT, i = 0;

	for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save), i++) {
		n = nw_cct_child(t, n, fx_ip_in(fx, tok, epoch), sps ? sps[i] : sp);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	free(buf);
	return n;
}

/*
 * Adds @values (one per metric, the rest 0) at node @n of the tree of @th
 * in epoch @epoch, and the samples among them to the thread's count.
 */
static inline void fx_put(struct fx *fx, struct nw_mthread *th, uint32_t epoch, uint32_t n,
			  const uint64_t *values, unsigned nvalues)
{
	struct nw_cct *t = fx_tree_in(fx, th, epoch);

	assert_true(n < t->n);
	for (unsigned i = 0; i < nvalues && i < t->nmetrics; i++)
		nw_cct_metrics(t, n)[i] += values[i];
	for (unsigned i = 0; i < nvalues && i < fx->m->nmetrics; i++)
		if (nw_metric_counts_samples(&fx->m->metrics[i]))
			th->samples += values[i];
}

/*
 * Adds @values (one per metric, the rest 0) at the stack @path ("main;a;b",
 * root first) of @th in epoch 0; returns the leaf's node.  @sp: the sp tag
 * of every frame (0: none).
 */
static inline uint32_t fx_addv(struct fx *fx, struct nw_mthread *th, const char *path,
			       uint64_t sp, const uint64_t *values, unsigned nvalues)
{
	uint32_t n = fx_path(fx, th, 0, path, sp, NULL);

	fx_put(fx, th, 0, n, values, nvalues);
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
