/* SPDX-License-Identifier: MIT */
/*
 * The model of a measurement (model/measurement.h): the resolver over the
 * epochs of a process (a library unloaded and another mapped at the same
 * address, caller frames looked up at ip - 1, ips no mapping holds), the
 * metric descriptors and their lookup, who owns what (an owned model,
 * and the recorder's borrowed one), and merging measurements (models
 * built with fixture.h).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "model/measurement.h"
#include "model/places.h"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

/* A symbol entry of one frame, @fn, at (@module, @addr). */
static void add_symbol(struct nw_symtab *t, uint32_t module, uint64_t addr, const char *fn)
{
	struct nw_symframe *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->function = xstrdup(fn);
	assert_int_equal(nw_symtab_add(t, module, addr, f, 1), 0);
}

/* The function the symbol entry of @r names, or NULL. */
static const char *sym_name(const struct nw_resolved *r)
{
	return r->sym && r->sym->nframes ? r->sym->frames[0].function : NULL;
}

/* ---- the resolver ---- */

#define APP_BASE 0x555555554000ull  /* a PIE: ELF address 0 there */
#define APP_TEXT 0x555555555000ull  /* its text: ELF address 0x1000, file offset 0x1000 */
#define LIB_AT 0x7f0000000000ull    /* liba, then libb, mapped here */

enum { APP, LIBA, LIBB, NMODULES };

/*
 * One process over three epochs: 0 the program alone; 1 after dlopen of
 * liba (its text mapped at LIB_AT, ELF address 0x1000); 2 after liba was
 * unloaded and libb mapped at the same address (ELF address 0x4000).
 */
static struct nw_measurement *three_epochs(void)
{
	struct nw_measurement *m = nw_measurement_new();
	const struct nw_map app[] = {
		{ APP_BASE, APP_BASE + 0x1000, 0x0, 0x0, APP },
		{ APP_TEXT, APP_TEXT + 0x2000, 0x1000, 0x1000, APP },
	};
	struct nw_map maps[3];

	assert_non_null(m);
	assert_int_equal(nw_module_intern(m->modules, "/bin/app", NULL, 0), APP);
	assert_int_equal(nw_module_intern(m->modules, "/lib/liba.so", NULL, 0), LIBA);
	assert_int_equal(nw_module_intern(m->modules, "/lib/libb.so", NULL, 0), LIBB);
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(app, 2, 0)), 0);
	/* Listed out of order: nw_epoch_new() sorts by start. */
	maps[0] = (struct nw_map){ LIB_AT, LIB_AT + 0x3000, 0x1000, 0x1000, LIBA };
	maps[1] = app[1];
	maps[2] = app[0];
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 3, 1)), 1);
	maps[0] = (struct nw_map){ LIB_AT, LIB_AT + 0x1000, 0x4000, 0x4000, LIBB };
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 3, 2)), 2);
	for (uint32_t e = 0; e < 3; e++)
		for (uint32_t i = 1; i < m->epochs[e]->n; i++)
			assert_true(m->epochs[e]->maps[i - 1].start < m->epochs[e]->maps[i].start);

	/* Leaf addresses, and the caller addresses (return address - 1) some calls have. */
	add_symbol(m->symtab, APP, 0x1010, "main");
	add_symbol(m->symtab, APP, 0x1020, "main_after_call");
	add_symbol(m->symtab, APP, 0x101f, "main_call");
	add_symbol(m->symtab, LIBA, 0x1010, "a_func");
	add_symbol(m->symtab, LIBB, 0x4010, "b_func");
	add_symbol(m->symtab, LIBB, 0x400f, "b_call");
	nw_symtab_sort(m->symtab);
	return m;
}

static void test_resolve_per_epoch(void **state)
{
	struct nw_measurement *m = three_epochs();
	struct nw_resolved r;

	/* The program's ips resolve alike in every epoch. */
	for (uint32_t e = 0; e < 3; e++) {
		nw_measurement_resolve(m, e, APP_TEXT + 0x10, false, &r);
		assert_non_null(r.map);
		assert_int_equal(r.module_index, APP);
		assert_ptr_equal(r.module, &m->modules->v[APP]);
		assert_int_equal(r.addr, 0x1010);
		assert_string_equal(sym_name(&r), "main");
	}
	/* LIB_AT + 0x10: nothing in epoch 0 (past the end of the app's text)... */
	nw_measurement_resolve(m, 0, LIB_AT + 0x10, false, &r);
	assert_null(r.map);
	assert_null(r.sym);
	/* ...liba's a_func in epoch 1... */
	nw_measurement_resolve(m, 1, LIB_AT + 0x10, false, &r);
	assert_int_equal(r.module_index, LIBA);
	assert_string_equal(r.module->path, "/lib/liba.so");
	assert_int_equal(r.map->start, LIB_AT);
	assert_int_equal(r.addr, 0x1010);
	assert_string_equal(sym_name(&r), "a_func");
	/* ...and libb's b_func in epoch 2, at another ELF address. */
	nw_measurement_resolve(m, 2, LIB_AT + 0x10, false, &r);
	assert_int_equal(r.module_index, LIBB);
	assert_string_equal(r.module->path, "/lib/libb.so");
	assert_int_equal(r.addr, 0x4010);
	assert_string_equal(sym_name(&r), "b_func");
	nw_measurement_free(m);
}

static void test_resolve_caller(void **state)
{
	struct nw_measurement *m = three_epochs();
	struct nw_resolved r;

	/* A return address is looked up inside its call instruction: ip - 1. */
	nw_measurement_resolve(m, 0, APP_TEXT + 0x20, false, &r);
	assert_int_equal(r.addr, 0x1020);
	assert_string_equal(sym_name(&r), "main_after_call");
	nw_measurement_resolve(m, 0, APP_TEXT + 0x20, true, &r);
	assert_int_equal(r.addr, 0x101f);
	assert_string_equal(sym_name(&r), "main_call");
	nw_measurement_resolve(m, 2, LIB_AT + 0x10, true, &r);
	assert_int_equal(r.module_index, LIBB);
	assert_int_equal(r.addr, 0x400f);
	assert_string_equal(sym_name(&r), "b_call");
	/* A caller frame of liba with no entry at ip - 1: the module, no symbol. */
	nw_measurement_resolve(m, 1, LIB_AT + 0x10, true, &r);
	assert_int_equal(r.module_index, LIBA);
	assert_int_equal(r.addr, 0x100f);
	assert_null(r.sym);
	nw_measurement_free(m);
}

static void test_resolve_unmapped(void **state)
{
	struct nw_measurement *m = three_epochs();
	struct nw_resolved r;

	/* Below every mapping: nothing at all. */
	memset(&r, 0xa5, sizeof(r));
	nw_measurement_resolve(m, 1, 0x1000, false, &r);
	assert_null(r.map);
	assert_null(r.module);
	assert_null(r.sym);
	assert_int_equal(r.addr, 0);
	nw_measurement_resolve(m, 1, APP_BASE - 1, true, &r);
	assert_null(r.map);
	nw_measurement_resolve(m, 0, 0, false, &r);
	assert_null(r.map);
	/* The first byte of the first mapping is its own. */
	nw_measurement_resolve(m, 0, APP_BASE, false, &r);
	assert_non_null(r.map);
	assert_int_equal(r.addr, 0);
	/*
	 * Past the end of the last mapping: unmapped (the reader gives each
	 * mapping of a file, which keeps no ends, the end of the next one's
	 * start or of its module's segments).  Its last byte is still its own.
	 */
	nw_measurement_resolve(m, 2, LIB_AT + 0x5000, false, &r);
	assert_null(r.map);
	nw_measurement_resolve(m, 2, LIB_AT + 0xfff, false, &r);
	assert_int_equal(r.module_index, LIBB);
	assert_int_equal(r.addr, 0x4fff);
	/* An epoch the model does not have. */
	nw_measurement_resolve(m, 3, APP_TEXT, false, &r);
	assert_null(r.map);
	nw_measurement_resolve(m, UINT32_MAX, APP_TEXT, false, &r);
	assert_null(r.map);
	nw_measurement_free(m);
}

static void test_locate(void **state)
{
	struct nw_measurement *m = three_epochs();
	struct nw_resolved r, s;

	/* locate() is resolve() without the symbol lookup. */
	nw_measurement_locate(m, 1, LIB_AT + 0x10, false, &r);
	nw_measurement_resolve(m, 1, LIB_AT + 0x10, false, &s);
	assert_ptr_equal(r.map, s.map);
	assert_ptr_equal(r.module, s.module);
	assert_int_equal(r.module_index, s.module_index);
	assert_int_equal(r.addr, s.addr);
	assert_null(r.sym);
	assert_non_null(s.sym);
	/* A mapping of a module the table does not have is no mapping. */
	((struct nw_epoch *)m->epochs[0])->maps[1].module = NMODULES;
	nw_measurement_resolve(m, 0, APP_TEXT + 0x10, false, &r);
	assert_null(r.map);
	assert_null(r.module);
	nw_measurement_free(m);
}

/* nw_epoch_new() copies and sorts; nw_epoch_find() takes [start, end). */
static void test_epoch_new(void **state)
{
	struct nw_map maps[] = {
		{ 0x3000, 0x4000, 0, 0, 2 },
		{ 0x1000, 0x2000, 0, 0, 1 },
	};
	struct nw_epoch *e = nw_epoch_new(maps, 2, 7);

	assert_non_null(e);
	assert_int_equal(e->index, 7);
	assert_int_equal(e->n, 2);
	maps[1].module = 9;
	assert_int_equal(e->maps[0].module, 1);
	assert_int_equal(nw_epoch_find(e, 0x1fff)->module, 1);
	assert_null(nw_epoch_find(e, 0x2000));
	assert_int_equal(nw_epoch_find(e, 0x3000)->module, 2);
	free(e);
	e = nw_epoch_new(NULL, 0, 0);
	assert_non_null(e);
	assert_int_equal(e->n, 0);
	assert_null(nw_epoch_find(e, 0));
	free(e);
}

/* ---- metrics ---- */

static struct nw_measurement *metrics_model(void)
{
	struct nw_measurement *m = nw_measurement_new();

	assert_non_null(m);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 0), 0);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 0), 1);
	assert_int_equal(nw_measurement_add_metric(m, "cycles", NW_METRIC_SAMPLES, 100000), 2);
	assert_int_equal(nw_measurement_add_metric(m, "cycles", NW_METRIC_PERIOD, 100000), 3);
	assert_int_equal(nw_measurement_add_metric(m, "off-cpu", NW_METRIC_SWITCHES, 1), 4);
	assert_int_equal(nw_measurement_add_metric(m, "off-cpu", NW_METRIC_OFFCPU_TIME, 1), 5);
	return m;
}

static void test_metric_descriptors(void **state)
{
	struct nw_measurement *m = metrics_model();
	const struct nw_metric *d = m->metrics;
	struct nw_metric c;

	assert_int_equal(m->nmetrics, 6);
	assert_string_equal(d[0].name, "cpu-clock:samples");
	assert_string_equal(d[0].event, "cpu-clock");
	assert_int_equal(d[0].unit, NW_UNIT_COUNT);
	assert_int_equal(d[0].flags, NW_METRIC_FLAG_ASYNC);
	/* A clock's period is time; another event's is events. */
	assert_string_equal(d[1].name, "cpu-clock:period");
	assert_int_equal(d[1].unit, NW_UNIT_NANOSECONDS);
	assert_int_equal(d[3].unit, NW_UNIT_EVENTS);
	assert_int_equal(d[3].period, 100000);
	assert_string_equal(d[4].name, "off-cpu:switches");
	assert_int_equal(d[4].unit, NW_UNIT_COUNT);
	assert_int_equal(d[4].flags, NW_METRIC_FLAG_REAL);
	assert_string_equal(d[5].name, "off-cpu:nanoseconds");
	assert_int_equal(d[5].unit, NW_UNIT_NANOSECONDS);
	assert_int_equal(d[5].flags, NW_METRIC_FLAG_REAL);
	assert_true(nw_metric_counts_samples(&d[0]));
	assert_false(nw_metric_counts_samples(&d[1]));
	assert_true(nw_metric_counts_samples(&d[4]));
	assert_false(nw_metric_counts_samples(&d[5]));

	/* A copy (of another model's descriptor) owns its strings. */
	{
		struct nw_measurement *o = metrics_model();

		assert_int_equal(nw_measurement_copy_metric(m, &o->metrics[3]), 6);
		nw_measurement_free(o);
	}
	d = m->metrics;
	assert_string_equal(d[6].name, "cycles:period");
	assert_string_equal(d[6].event, "cycles");
	assert_int_equal(d[6].kind, NW_METRIC_PERIOD);
	assert_int_equal(d[6].period, 100000);
	assert_int_equal(nw_metric_copy(&c, &d[5]), 0);
	assert_string_equal(c.event, "off-cpu");
	nw_metric_fini(&c);
	assert_null(c.name);

	/* Kinds and units by name, both ways. */
	for (int k = 0; k < NW_METRIC_KINDS; k++)
		assert_int_equal(nw_metric_kind_parse(nw_metric_kind_name(k)), k);
	for (int u = 0; u < NW_UNIT_UNITS; u++)
		assert_int_equal(nw_metric_unit_parse(nw_metric_unit_name(u)), u);
	assert_int_equal(nw_metric_kind_parse("Samples"), -EINVAL);
	assert_int_equal(nw_metric_unit_parse(""), -EINVAL);
	assert_string_equal(nw_metric_kind_name(NW_METRIC_KINDS), "?");
	assert_string_equal(nw_metric_unit_name(NW_UNIT_UNITS), "?");
	nw_measurement_free(m);
}

static void test_find_metric(void **state)
{
	struct nw_measurement *m = metrics_model();

	/* The default: the first metric that counts samples. */
	assert_int_equal(nw_measurement_find_metric(m, NULL), 0);
	/* A metric name. */
	assert_int_equal(nw_measurement_find_metric(m, "cycles:period"), 3);
	assert_int_equal(nw_measurement_find_metric(m, "off-cpu:nanoseconds"), 5);
	/* An event name: its samples metric. */
	assert_int_equal(nw_measurement_find_metric(m, "cycles"), 2);
	assert_int_equal(nw_measurement_find_metric(m, "off-cpu"), 4);
	assert_int_equal(nw_measurement_find_metric(m, "nope"), -ENOENT);
	assert_int_equal(nw_measurement_find_metric(m, "cycles:"), -ENOENT);
	assert_int_equal(nw_measurement_find_metric(m, ""), -ENOENT);

	/* Each metric's samples metric: its event's count. */
	assert_int_equal(nw_measurement_samples_metric(m, 0), 0);
	assert_int_equal(nw_measurement_samples_metric(m, 1), 0);
	assert_int_equal(nw_measurement_samples_metric(m, 3), 2);
	assert_int_equal(nw_measurement_samples_metric(m, 5), 4);
	assert_int_equal(nw_measurement_samples_metric(m, 6), -ENOENT);
	assert_int_equal(nw_measurement_samples_metric(m, UINT32_MAX), -ENOENT);
	nw_measurement_free(m);

	/* Descriptors decide, not positions: a period first, a count after it. */
	m = nw_measurement_new();
	assert_non_null(m);
	assert_int_equal(nw_measurement_find_metric(m, NULL), -ENOENT);
	assert_int_equal(nw_measurement_find_metric(m, "t"), -ENOENT);
	assert_int_equal(nw_measurement_add_metric(m, "t", NW_METRIC_PERIOD, 0), 0);
	/* An event with no count: its first metric, and no samples metric. */
	assert_int_equal(nw_measurement_find_metric(m, "t"), 0);
	assert_int_equal(nw_measurement_samples_metric(m, 0), -ENOENT);
	assert_int_equal(nw_measurement_add_metric(m, "u", NW_METRIC_PERIOD, 0), 1);
	assert_int_equal(nw_measurement_add_metric(m, "u", NW_METRIC_SAMPLES, 0), 2);
	assert_int_equal(nw_measurement_add_metric(m, "t", NW_METRIC_SAMPLES, 0), 3);
	assert_int_equal(nw_measurement_find_metric(m, NULL), 2);
	assert_int_equal(nw_measurement_find_metric(m, "u"), 2);
	assert_int_equal(nw_measurement_find_metric(m, "t"), 3);
	assert_int_equal(nw_measurement_samples_metric(m, 0), 3);
	assert_int_equal(nw_measurement_samples_metric(m, 1), 2);
	nw_measurement_free(m);
}

/* ---- processes, threads, trees and who owns them ---- */

static struct nw_cct *tree_with(unsigned nmetrics, uint64_t ip, uint64_t v0, uint64_t v1)
{
	struct nw_cct *t = nw_cct_new(nmetrics);
	struct nw_frame f = { ip, 0 };
	uint32_t n;

	assert_non_null(t);
	n = nw_cct_insert(t, &f, 1);
	assert_int_not_equal(n, NW_CCT_NONE);
	nw_cct_metrics(t, n)[0] = v0;
	if (nmetrics > 1)
		nw_cct_metrics(t, n)[1] = v1;
	return t;
}

static void test_threads_and_trees(void **state)
{
	struct nw_measurement *m = nw_measurement_new();
	char comm[] = "worker", file[] = "worker-1-2.csprof";
	struct nw_mthread *th;
	const struct nw_mprocess *p;

	assert_non_null(m);
	assert_int_equal(m->run.exit_status, -1);
	assert_false(m->borrowed);
	assert_int_equal(nw_measurement_add_metric(m, "t", NW_METRIC_SAMPLES, 0), 0);
	assert_int_equal(nw_measurement_add_metric(m, "t", NW_METRIC_PERIOD, 0), 1);

	/* Processes: a reused pid is found as its last process. */
	assert_int_equal(nw_measurement_add_process(m, 1, 0, "init"), 0);
	assert_int_equal(nw_measurement_add_process(m, 5, 1, "old"), 1);
	assert_int_equal(nw_measurement_add_process(m, 5, 1, "new"), 2);
	assert_int_equal(nw_measurement_add_process(m, 6, 5, NULL), 3);
	p = nw_measurement_process(m, 5);
	assert_non_null(p);
	assert_string_equal(p->comm, "new");
	assert_string_equal(nw_measurement_process(m, 6)->comm, "");
	assert_null(nw_measurement_process(m, 7));

	/* Threads copy their strings; a thread without a file has none. */
	th = nw_measurement_add_thread(m, 1, 2, comm, file);
	assert_non_null(th);
	comm[0] = 'X';
	file[0] = 'X';
	assert_string_equal(th->comm, "worker");
	assert_string_equal(th->file, "worker-1-2.csprof");
	assert_int_equal(th->ntrees, 0);
	assert_int_equal(nw_mthread_add_tree(th, 0, tree_with(2, 0x10, 3, 300)), 0);
	assert_int_equal(nw_mthread_add_tree(th, 1, tree_with(2, 0x20, 4, 400)), 0);
	assert_int_equal(th->ntrees, 2);
	assert_int_equal(th->trees[1].epoch, 1);
	/* Totals over every tree; a metric the trees do not have sums to 0. */
	assert_int_equal(nw_mthread_total(th, 0), 7);
	assert_int_equal(nw_mthread_total(th, 1), 700);
	assert_int_equal(nw_mthread_total(th, 2), 0);
	{
		uint64_t sums[3] = { 9, 9, 9 };

		/* All in one pass, the same sums. */
		nw_mthread_totals(th, 3, sums);
		assert_int_equal(sums[0], 7);
		assert_int_equal(sums[1], 700);
		assert_int_equal(sums[2], 0);
	}

	th = nw_measurement_add_thread(m, 1, 3, NULL, NULL);
	assert_non_null(th);
	assert_string_equal(th->comm, "");
	assert_null(th->file);
	assert_int_equal(nw_mthread_total(th, 0), 0);
	/* Many threads: the array grows (pointers to threads move; indexes stay). */
	for (uint32_t i = 0; i < 100; i++)
		assert_non_null(nw_measurement_add_thread(m, 1, 100 + i, "many", NULL));
	assert_int_equal(m->nthreads, 102);
	assert_int_equal(m->threads[0].tid, 2);
	assert_int_equal(m->threads[101].tid, 199);
	assert_int_equal(nw_mthread_total(&m->threads[0], 0), 7);

	/* Epochs the model owns. */
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(NULL, 0, 0)), 0);
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(NULL, 0, 1)), 1);

	/* The command line: NULL-terminated, NULL arguments as "". */
	{
		char *const argv[] = { "prog", NULL, "-x" };

		assert_int_equal(nw_run_set_argv(&m->run, 3, argv), 0);
		assert_int_equal(m->run.argc, 3);
		assert_string_equal(m->run.argv[1], "");
		assert_string_equal(m->run.argv[2], "-x");
		assert_null(m->run.argv[3]);
	}
	/* The model frees its trees, epochs, modules and symbol table (LeakSanitizer checks). */
	nw_measurement_free(m);
	nw_measurement_free(NULL);
}

/*
 * The recorder's model borrows its modules, symbol table, places, epochs
 * and trees: freeing the model leaves them to their owner.
 */
static void test_borrowed(void **state)
{
	struct nw_measurement *m = nw_measurement_new();
	struct nw_module_table mods;
	struct nw_symtab *symtab = nw_symtab_new();
	struct nw_places *places = nw_places_new();
	struct nw_epoch *e = nw_epoch_new(NULL, 0, 0);
	struct nw_cct *t = tree_with(1, 0x10, 1, 0);
	struct nw_mthread *th;
	struct nw_resolved r;

	assert_non_null(m);
	assert_non_null(symtab);
	assert_non_null(places);
	assert_non_null(e);
	nw_module_table_init(&mods);
	assert_int_equal(nw_module_intern(&mods, "/bin/app", NULL, 0), 0);
	add_symbol(symtab, 0, 0x10, "f");
	nw_symtab_sort(symtab);

	nw_measurement_borrow(m, &mods, symtab, places);
	assert_true(m->borrowed);
	assert_ptr_equal(m->modules, &mods);
	assert_ptr_equal(m->symtab, symtab);
	assert_ptr_equal(m->places, places);
	assert_int_equal(nw_measurement_add_metric(m, "t", NW_METRIC_SAMPLES, 0), 0);
	assert_int_equal(nw_measurement_add_epoch(m, e), 0);
	th = nw_measurement_add_thread(m, 1, 1, "app", NULL);
	assert_non_null(th);
	assert_int_equal(nw_mthread_add_tree(th, 0, t), 0);
	assert_int_equal(nw_mthread_total(th, 0), 1);
	{
		struct nw_place pl = { .addr = 0x10, .module = 0 };

		assert_int_equal(nw_places_intern(m->places, &pl), 0);
	}
	/* Dropping the trees leaves the owner's places alone. */
	nw_measurement_drop_trees(m);
	assert_int_equal(places->n, 1);
	nw_measurement_free(m);

	/* Still theirs, and whole. */
	assert_int_equal(mods.n, 1);
	assert_string_equal(mods.v[0].path, "/bin/app");
	assert_non_null(nw_symtab_lookup(symtab, 0, 0x10));
	assert_int_equal(nw_cct_metrics(t, nw_cct_find(t, NW_CCT_ROOT, 0x10))[0], 1);
	assert_int_equal(e->index, 0);

	/* A model of them again: it resolves against what it borrows. */
	m = nw_measurement_new();
	assert_non_null(m);
	nw_measurement_borrow(m, &mods, symtab, places);
	{
		struct nw_map map = { 0x1000, 0x2000, 0, 0, 0 };
		struct nw_epoch *e2 = nw_epoch_new(&map, 1, 0);

		assert_non_null(e2);
		assert_int_equal(nw_measurement_add_epoch(m, e2), 0);
		nw_measurement_resolve(m, 0, 0x1010, false, &r);
		assert_string_equal(sym_name(&r), "f");
		nw_measurement_free(m);
		free(e2);
	}
	free(e);
	nw_cct_free(t);
	nw_symtab_free(symtab);
	assert_int_equal(places->n, 1);
	nw_places_free(places);
	nw_module_table_fini(&mods);
}

/* ---- merging measurements ---- */

static void set_build_id(struct fx *fx, uint32_t module, uint8_t byte)
{
	struct nw_module *mod = &fx->m->modules->v[module];

	memset(mod->build_id, byte, NW_BUILD_ID_MAX);
	mod->build_id_size = NW_BUILD_ID_MAX;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The stacks of @th as resolved in @m: "fn@module;... WEIGHT" lines of
 * metric 0, sorted, each frame the function its symbol entry names ("?"
 * without one) and the index of the module its address falls in.
 */
static char *thread_stacks(const struct nw_measurement *m, const struct nw_mthread *th)
{
	char *lines[64], *out = NULL;
	uint32_t nlines = 0;
	size_t len = 0;
	FILE *f;

	for (uint32_t t = 0; t < th->ntrees; t++) {
		const struct nw_cct *c = th->trees[t].cct;

		for (uint32_t i = 1; i < c->n; i++) {
			uint32_t path[32], d = 0;
			char *line = NULL;
			size_t llen = 0;
			FILE *lf;

			if (!nw_cct_metrics(c, i)[0])
				continue;
			for (uint32_t a = i; a != NW_CCT_ROOT; a = c->nodes[a].parent)
				path[d++] = a;
			lf = open_memstream(&line, &llen);
			assert_non_null(lf);
			while (d--) {
				const struct nw_cct_node *nd = &c->nodes[path[d]];
				struct nw_resolved r;

				nw_measurement_resolve(m, th->trees[t].epoch, nd->ip,
						       nd->first_child != NW_CCT_NONE, &r);
				assert_non_null(r.map);
				fprintf(lf, "%s@%u%s",
					r.sym && r.sym->nframes ? r.sym->frames[0].function : "?",
					r.module_index, d ? ";" : "");
			}
			fprintf(lf, " %llu", (unsigned long long)nw_cct_metrics(c, i)[0]);
			fclose(lf);
			assert_true(nlines < 64);
			lines[nlines++] = line;
		}
	}
	qsort(lines, nlines, sizeof(*lines), cmp_str);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	for (uint32_t i = 0; i < nlines; i++) {
		fprintf(f, "%s\n", lines[i]);
		free(lines[i]);
	}
	fclose(f);
	return out;
}

static void assert_stacks(const struct nw_measurement *m, uint32_t thread, const char *want)
{
	char *got = thread_stacks(m, &m->threads[thread]);

	if (strcmp(got, want))
		fail_msg("thread %u:\n%s\nexpected:\n%s", thread, got, want);
	free(got);
}

/*
 * Run A: /bin/app (build-id 11..) and /lib/libc.so (aa..), thread 10/10.
 * Run B: the same /bin/app, /lib/libz.so (cc..) and another build of
 * /lib/libc.so (bb..), thread 20/21.  Each address a key of its own,
 * so the same module's symbols agree: B's "?pad" (no symbol) sits
 * where A has a.
 */
static struct fx *run_a(void)
{
	struct fx *a = fx_new(NULL, 0);
	struct nw_mthread *th = fx_thread(a, 10, 10, "app");

	fx_add(a, th, "main;a", 3, 3000);
	fx_add(a, th, "main;memcpy@/lib/libc.so", 1, 1000);
	/* After every use of a key: fx_module() would not find them now. */
	set_build_id(a, 0, 0x11);
	set_build_id(a, 1, 0xaa);
	a->m->modules->v[0].facts = (struct nw_module_facts){ .known = true, .entry = 0x1111 };
	a->m->run.samples = 4;
	a->m->run.lost = 1;
	a->m->run.unwind_errors = 2;
	a->m->run.start_ns = 1000;
	a->m->run.end_ns = 5000;
	a->m->run.clock_start_ns = 2000;
	a->m->run.clock_end_ns = 6000;
	a->m->run.traced = true;
	return a;
}

static struct fx *run_b(void)
{
	struct fx *b = fx_new(NULL, 0);
	struct nw_mthread *th;
	struct nw_segment *seg = calloc(1, sizeof(*seg));

	assert_non_null(seg);
	fx_ip(b, "main");
	fx_ip(b, "?pad");
	th = fx_thread(b, 20, 21, "worker");
	fx_add(b, th, "main;b", 5, 5000);
	fx_add(b, th, "main;b;deflate@/lib/libz.so", 2, 2000);
	fx_add(b, th, "main;memcpy@/lib/libc.so", 4, 4000);
	assert_int_equal(b->m->modules->n, 3);
	set_build_id(b, 0, 0x11);
	set_build_id(b, 1, 0xcc);
	set_build_id(b, 2, 0xbb);
	b->m->modules->v[0].facts = (struct nw_module_facts){ .known = true, .entry = 0x2222 };
	*seg = (struct nw_segment){ .vaddr = 0x1000, .memsz = 0x2000, .exec = true };
	b->m->modules->v[1].facts =
		(struct nw_module_facts){ .known = true, .nsegs = 1, .segs = seg };
	b->m->run.samples = 11;
	b->m->run.lost = 3;
	b->m->run.throttled = 1;
	b->m->run.start_ns = 500;
	b->m->run.end_ns = 4000;
	b->m->run.clock_start_ns = 1500;
	b->m->run.clock_end_ns = 7000;
	/* Its thread has a trace; another, unsampled, would have had none. */
	th = fx_th(b, 0);
	th->trace = calloc(1, sizeof(*th->trace));
	assert_non_null(th->trace);
	nw_trace_init(th->trace, 1500, 1);
	th->trace_file = fx_strdup("worker-20-21.trace");
	b->m->run.traced = false;
	return b;
}

static const char stacks_a[] = "main@0;a@0 3\n"
			       "main@0;memcpy@1 1\n";
static const char stacks_b[] = "main@0;b@0 5\n"
			       "main@0;b@0;deflate@2 2\n"
			       "main@0;memcpy@3 4\n";

static void test_merge(void **state)
{
	struct fx *a = run_a(), *b = run_b();
	struct nw_measurement *m = a->m;
	const struct nw_cct *tree_b = b->m->threads[0].trees[0].cct;
	const struct nw_trace *trace_b = b->m->threads[0].trace;
	const struct nw_module *mod;
	char err[256] = "";

	(void)state;
	assert_stacks(b->m, 0, "main@0;b@0 5\nmain@0;b@0;deflate@1 2\nmain@0;memcpy@2 4\n");
	assert_int_equal(nw_measurement_runs(m), 1);
	assert_int_equal(nw_measurement_merge(m, b->m, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	/* Two runs now, each with its threads: A's first, then B's. */
	{
		uint32_t first, end;

		assert_int_equal(nw_measurement_runs(m), 2);
		nw_measurement_run(m, 0, &first, &end);
		assert_int_equal(first, 0);
		assert_int_equal(end, 1);
		nw_measurement_run(m, 1, &first, &end);
		assert_int_equal(first, 1);
		assert_int_equal(end, 2);
	}

	/* Modules by (path, build-id): app shared, libz new, B's libc another module. */
	assert_int_equal(m->modules->n, 4);
	mod = m->modules->v;
	assert_string_equal(mod[0].path, "/bin/app");
	assert_int_equal(mod[0].build_id[0], 0x11);
	assert_string_equal(mod[1].path, "/lib/libc.so");
	assert_int_equal(mod[1].build_id[0], 0xaa);
	assert_string_equal(mod[2].path, "/lib/libz.so");
	assert_int_equal(mod[2].build_id[0], 0xcc);
	assert_string_equal(mod[3].path, "/lib/libc.so");
	assert_int_equal(mod[3].build_id[0], 0xbb);
	/* Facts the model lacked are copied; those it had stay. */
	assert_true(mod[2].facts.known);
	assert_int_equal(mod[2].facts.nsegs, 1);
	assert_ptr_not_equal(mod[2].facts.segs, b->m->modules->v[1].facts.segs);
	assert_int_equal(mod[2].facts.segs[0].vaddr, 0x1000);
	assert_int_equal(mod[0].facts.entry, 0x1111);

	/* B's epoch after A's, its mappings naming the merged modules. */
	assert_int_equal(m->nepochs, 2);
	assert_int_equal(m->epochs[1]->n, 3);
	assert_int_equal(m->epochs[1]->maps[0].module, 0);
	assert_int_equal(m->epochs[1]->maps[1].module, 2);
	assert_int_equal(m->epochs[1]->maps[2].module, 3);

	/* Threads and processes added; B's tree and trace moved, not copied. */
	assert_int_equal(m->nthreads, 2);
	assert_int_equal(m->threads[0].tid, 10);
	assert_int_equal(m->threads[0].trees[0].epoch, 0);
	assert_int_equal(m->threads[1].pid, 20);
	assert_int_equal(m->threads[1].tid, 21);
	assert_string_equal(m->threads[1].comm, "worker");
	assert_int_equal(m->threads[1].samples, 11);
	assert_int_equal(m->threads[1].first_epoch, 1);
	assert_int_equal(m->threads[1].nepochs, 1);
	assert_int_equal(m->threads[1].ntrees, 1);
	assert_int_equal(m->threads[1].trees[0].epoch, 1);
	assert_ptr_equal(m->threads[1].trees[0].cct, tree_b);
	assert_ptr_equal(m->threads[1].trace, trace_b);
	assert_string_equal(m->threads[1].trace_file, "worker-20-21.trace");
	assert_null(b->m->threads[0].trace);
	assert_null(m->threads[0].trace);
	assert_int_equal(nw_mthread_total(&m->threads[1], 1), 11000);
	assert_int_equal(b->m->nthreads, 1);
	assert_int_equal(b->m->threads[0].ntrees, 0);
	assert_null(b->m->threads[0].trees);
	assert_int_equal(m->nprocs, 2);
	assert_string_equal(nw_measurement_process(m, 20)->comm, "worker");
	assert_string_equal(nw_measurement_process(m, 10)->comm, "app");

	/* Counts add up; the time span covers both. */
	assert_int_equal(m->run.samples, 15);
	assert_int_equal(m->run.lost, 4);
	assert_int_equal(m->run.throttled, 1);
	assert_int_equal(m->run.unwind_errors, 2);
	assert_int_equal(m->run.start_ns, 500);
	assert_int_equal(m->run.end_ns, 5000);
	assert_int_equal(m->run.clock_start_ns, 1500);
	assert_int_equal(m->run.clock_end_ns, 7000);
	/* Traced only when both were. */
	assert_false(m->run.traced);

	/* Every address resolves to its own run's function and module, B freed or not. */
	assert_stacks(m, 0, stacks_a);
	assert_stacks(m, 1, stacks_b);
	fx_free(b);
	assert_stacks(m, 0, stacks_a);
	assert_stacks(m, 1, stacks_b);
	fx_free(a);
}

/*
 * Merging again, the merged model into a third: epochs, threads and
 * symbols renumbered twice; an unknown start (0) is no start, in either
 * model.
 */
static void test_merge_twice(void **state)
{
	struct fx *a = run_a(), *b = run_b(), *c = fx_new(NULL, 0);
	struct nw_measurement *m = c->m;
	char err[256] = "";

	(void)state;
	assert_int_equal(nw_measurement_merge(a->m, b->m, err, sizeof(err)), 0);
	fx_free(b);
	/* C: one thread in its own epoch, /bin/app without a build-id, no start known. */
	fx_add(c, fx_thread(c, 30, 30, "other"), "main", 7, 7000);
	m->run.samples = 7;
	m->run.end_ns = 9000;
	assert_int_equal(nw_measurement_merge(m, a->m, err, sizeof(err)), 0);
	fx_free(a);
	/* /bin/app without a build-id is another module than with one. */
	assert_int_equal(m->modules->n, 5);
	assert_int_equal(m->modules->v[0].build_id_size, 0);
	assert_int_equal(m->modules->v[1].build_id[0], 0x11);
	assert_int_equal(m->nepochs, 3);
	assert_int_equal(m->nthreads, 3);
	assert_int_equal(m->threads[2].first_epoch, 2);
	assert_int_equal(m->threads[2].trees[0].epoch, 2);
	assert_stacks(m, 0, "main@0 7\n");
	assert_stacks(m, 1, "main@1;a@1 3\nmain@1;memcpy@2 1\n");
	assert_stacks(m, 2, "main@1;b@1 5\nmain@1;b@1;deflate@3 2\nmain@1;memcpy@4 4\n");
	assert_int_equal(m->run.samples, 22);
	assert_int_equal(m->run.lost, 4);
	assert_int_equal(m->run.start_ns, 500);
	assert_int_equal(m->run.end_ns, 9000);
	assert_int_equal(m->run.clock_start_ns, 1500);
	assert_int_equal(m->run.clock_end_ns, 7000);
	/* A run whose times are unknown (0) leaves the span; it adds its epoch, no module. */
	{
		struct fx *e = fx_new(NULL, 0);

		assert_int_equal(nw_measurement_merge(m, e->m, err, sizeof(err)), 0);
		fx_free(e);
	}
	assert_int_equal(m->run.start_ns, 500);
	assert_int_equal(m->run.end_ns, 9000);
	assert_int_equal(m->run.clock_start_ns, 1500);
	assert_int_equal(m->run.clock_end_ns, 7000);
	assert_int_equal(m->modules->n, 5);
	assert_int_equal(m->nepochs, 4);
	assert_int_equal(m->nthreads, 3);
	fx_free(c);
}

/*
 * Measurements of different metrics do not merge: -EINVAL, nothing
 * changed, and a message that lists the source's metrics, then the
 * destination's, each list bracketed.
 */
static void test_merge_metrics_differ(void **state)
{
	static const char *const t[] = { "t" }, *const u[] = { "u" }, *const tu[] = { "t", "u" };
	struct fx *a = fx_new(t, 1), *b = fx_new(u, 1), *c = fx_new(tu, 2);
	struct nw_measurement *d = nw_measurement_new();
	char err[256];

	(void)state;
	fx_add(a, fx_thread(a, 1, 1, "app"), "main", 1, 1000);
	fx_add(b, fx_thread(b, 2, 2, "app"), "main", 2, 2000);
	a->m->run.samples = 1;
	b->m->run.samples = 2;
	assert_int_equal(nw_measurement_merge(a->m, b->m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "the measurements recorded different metrics: "
				 "[u:samples, u:period] and [t:samples, t:period]");
	assert_int_equal(a->m->nthreads, 1);
	assert_int_equal(a->m->nepochs, 1);
	assert_int_equal(a->m->run.samples, 1);
	assert_int_equal(b->m->threads[0].ntrees, 1);
	/* One metric more. */
	assert_int_equal(nw_measurement_merge(a->m, c->m, err, sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    "the measurements recorded different metrics: "
			    "[t:samples, t:period, u:samples, u:period] and [t:samples, t:period]");
	/* The same event, another kind of metric. */
	assert_non_null(d);
	assert_int_equal(nw_measurement_add_metric(d, "t", NW_METRIC_SAMPLES, 0), 0);
	assert_int_equal(nw_measurement_add_metric(d, "t", NW_METRIC_OFFCPU_TIME, 0), 1);
	assert_int_equal(nw_measurement_merge(a->m, d, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "the measurements recorded different metrics: "
				 "[t:samples, t:nanoseconds] and [t:samples, t:period]");
	assert_int_equal(a->m->nthreads, 1);
	nw_measurement_free(d);
	fx_free(a);
	fx_free(b);
	fx_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_per_epoch),
		cmocka_unit_test(test_resolve_caller),
		cmocka_unit_test(test_resolve_unmapped),
		cmocka_unit_test(test_locate),
		cmocka_unit_test(test_epoch_new),
		cmocka_unit_test(test_metric_descriptors),
		cmocka_unit_test(test_find_metric),
		cmocka_unit_test(test_threads_and_trees),
		cmocka_unit_test(test_borrowed),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_twice),
		cmocka_unit_test(test_merge_metrics_differ),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
