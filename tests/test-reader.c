/* SPDX-License-Identifier: MIT */
/*
 * Reading a measurement directory into the model, and the symbolic stacks
 * of what was read.  The directory is made with the format writers: two
 * threads, one with two epochs where the same library sits at different
 * addresses, an inline chain, return addresses that must be looked up at
 * ip-1, frames without symbols, an ip outside every module.  Decoy symbol
 * entries sit where a wrong lookup (ip instead of ip-1, or the other way
 * round) would land.  How stacks are built from any model is test-stacks'.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/csprof.h"
#include "format/manifest.h"
#include "format/reader.h"
#include "format/symbols.h"
#include "model/measurement.h"
#include "report/stacks.h"

#define APP	"/usr/bin/app"
#define LIBFOO	"/usr/lib/libfoo.so.1"
#define LIBBAR	"/usr/lib/libbar.so"	/* mapped, but absent from the symbol table */

/* app: ELF vaddr 0x1000 mapped at APP_BASE + 0x1000, so elf = ip - APP_BASE. */
#define APP_BASE 0x555500000000ULL
#define APP_IP(elf) (APP_BASE + (elf))
/* libfoo (vaddr 0) at a different base in each epoch and thread. */
#define FOO_A0 0x7f0000100000ULL
#define FOO_A1 0x7f0000200000ULL
#define FOO_B0 0x7f0000300000ULL
#define BAR_BASE 0x7f0000900000ULL

struct fixture {
	char dir[64];
};

/* ---- building the measurement ---- */

static void add_sym(struct nw_symtab *t, uint32_t mod, uint64_t addr, const char *file,
		    uint32_t decl_line, unsigned n, ...)
{
	struct nw_symframe *fr = calloc(n ? n : 1, sizeof(*fr));
	va_list ap;

	assert_non_null(fr);
	va_start(ap, n);
	for (unsigned i = 0; i < n; i++) {
		fr[i].function = strdup(va_arg(ap, const char *));
		fr[i].file = file ? strdup(file) : NULL;
		fr[i].line = decl_line + 3;
		fr[i].decl_line = decl_line;
		fr[i].decl_file = file ? strdup(file) : NULL;
	}
	va_end(ap);
	assert_int_equal(nw_symtab_add(t, mod, addr, fr, n), 0);
}

/* The modules and symbol table of the run, as narwhal-record writes them. */
static void write_symtab(const char *dir, struct nw_measurement *w)
{
	struct nw_symtab *t = w->symtab;
	int app = nw_module_find(w->modules, APP), foo = nw_module_find(w->modules, LIBFOO);
	char path[128];

	assert_true(app >= 0 && foo >= 0);
	/* main's call sites return to 0x1235 and 0x1245: looked up at -1. */
	add_sym(t, app, 0x1234, "/src/main.c", 10, 1, "main");
	add_sym(t, app, 0x1235, "/src/main.c", 10, 1, "decoy_return_address");
	add_sym(t, app, 0x1244, "/src/main.c", 10, 1, "main");
	/* A leaf inside an inlined helper: innermost first. */
	add_sym(t, app, 0x1300, "/src/compute.c", 40, 2, "helper_inline", "compute");
	add_sym(t, app, 0x12ff, "/src/compute.c", 40, 1, "decoy_leaf_minus_one");
	add_sym(t, app, 0x1350, "/src/compute.c", 40, 1, "compute");
	/* An entry that knows nothing: shown as module+0xADDR. */
	add_sym(t, app, 0x1400, NULL, 0, 0);
	/* work is at the same ELF address in every epoch. */
	add_sym(t, foo, 0x2000, "/src/foo.c", 7, 1, "work");
	add_sym(t, foo, 0x2101, NULL, 0, 1, "decoy_foo");
	nw_symtab_sort(t);
	snprintf(path, sizeof(path), "%s/symbols.json", dir);
	assert_int_equal(nw_symbols_write(path, w->modules, t), 0);
}

static uint32_t node(struct nw_cct *c, uint32_t parent, uint64_t ip, uint64_t samples)
{
	uint32_t n = nw_cct_child(c, parent, ip, 0);

	assert_int_not_equal(n, NW_CCT_NONE);
	nw_cct_metrics(c, n)[0] += samples;
	nw_cct_metrics(c, n)[1] += samples * 1000;
	return n;
}

static struct nw_csprof_metric metrics[2] = {
	{ .name = (char *)"cpu-clock:samples", .flags = NW_CSPROF_FLAG_ASYNC, .period = 1000 },
	{ .name = (char *)"cpu-clock:period", .flags = NW_CSPROF_FLAG_ASYNC, .period = 1000 },
};

static void write_csprof(const char *dir, const char *file, struct nw_csprof_epoch *epochs,
			 uint32_t nepochs, struct nw_csprof_tree *trees, uint32_t ntrees)
{
	struct nw_csprof p = {
		.target = (char *)"app",
		.nmetrics = 2,
		.metrics = metrics,
		.nepochs = nepochs,
		.epochs = epochs,
		.ntrees = ntrees,
		.trees = trees,
	};
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	assert_int_equal(nw_csprof_write_file(path, &p), 0);
	for (uint32_t i = 0; i < ntrees; i++)
		nw_cct_free(trees[i].cct);
}

/*
 * Thread A (tid 100), epoch 0 (newest; modules listed unsorted):
 *   main(0x1235) -> compute;helper_inline (leaf 0x1300)      3
 *   main(0x1235) -> compute(0x1351) -> work (leaf foo 0x2000) 5
 *   main(0x1235) -> app+0x1400 (leaf, empty entry)           2
 *   main(0x1245) -> app+0x1501 (caller, looked up at 0x1500) -> work 1
 *   [unknown] (leaf 0x10)                                    1
 *   libbar.so+0x77 (leaf, module not in the table)           1
 * Thread A, epoch 1 (libfoo elsewhere):
 *   main(0x1235) -> compute(0x1351) -> work                  4
 * Thread B (tid 101, libfoo elsewhere again):
 *   main(0x1235) -> compute(0x1351) -> work                  7
 */
static void write_threads(const char *dir)
{
	struct nw_csprof_module a0[] = {
		{ .name = (char *)LIBFOO, .vaddr = 0, .mapped = FOO_A0 },
		{ .name = (char *)LIBBAR, .vaddr = 0, .mapped = BAR_BASE },
		{ .name = (char *)APP, .vaddr = 0x1000, .mapped = APP_BASE + 0x1000 },
	};
	struct nw_csprof_module a1[] = {
		{ .name = (char *)APP, .vaddr = 0x1000, .mapped = APP_BASE + 0x1000 },
		{ .name = (char *)LIBFOO, .vaddr = 0, .mapped = FOO_A1 },
	};
	struct nw_csprof_module b0[] = {
		{ .name = (char *)LIBFOO, .vaddr = 0, .mapped = FOO_B0 },
		{ .name = (char *)APP, .vaddr = 0x1000, .mapped = APP_BASE + 0x1000 },
	};
	struct nw_csprof_epoch ea[] = { { 3, a0 }, { 2, a1 } }, eb[] = { { 2, b0 } };
	struct nw_csprof_tree ta[2], tb[1];
	uint32_t m, c;

	ta[0] = (struct nw_csprof_tree){ .epoch = 0, .cct = nw_cct_new(2) };
	ta[1] = (struct nw_csprof_tree){ .epoch = 1, .cct = nw_cct_new(2) };
	tb[0] = (struct nw_csprof_tree){ .epoch = 0, .cct = nw_cct_new(2) };
	assert_true(ta[0].cct && ta[1].cct && tb[0].cct);

	m = node(ta[0].cct, NW_CCT_ROOT, APP_IP(0x1235), 0);
	node(ta[0].cct, m, APP_IP(0x1300), 3);
	c = node(ta[0].cct, m, APP_IP(0x1351), 0);
	node(ta[0].cct, c, FOO_A0 + 0x2000, 5);
	node(ta[0].cct, m, APP_IP(0x1400), 2);
	m = node(ta[0].cct, NW_CCT_ROOT, APP_IP(0x1245), 0);
	c = node(ta[0].cct, m, APP_IP(0x1501), 0);
	node(ta[0].cct, c, FOO_A0 + 0x2000, 1);
	node(ta[0].cct, NW_CCT_ROOT, 0x10, 1);
	node(ta[0].cct, NW_CCT_ROOT, BAR_BASE + 0x77, 1);

	m = node(ta[1].cct, NW_CCT_ROOT, APP_IP(0x1235), 0);
	c = node(ta[1].cct, m, APP_IP(0x1351), 0);
	node(ta[1].cct, c, FOO_A1 + 0x2000, 4);

	m = node(tb[0].cct, NW_CCT_ROOT, APP_IP(0x1235), 0);
	c = node(tb[0].cct, m, APP_IP(0x1351), 0);
	node(tb[0].cct, c, FOO_B0 + 0x2000, 7);

	write_csprof(dir, "app-100-100.csprof", ea, 2, ta, 2);
	write_csprof(dir, "worker-100-101.csprof", eb, 1, tb, 1);
}

/* What the manifest says of the run; the symbol table is filled by write_symtab(). */
static struct nw_measurement *run_model(void)
{
	static const uint8_t app_id[] = { 0xaa, 0xbb, 0xcc };
	char *argv[] = { (char *)"./app", (char *)"--fast" };
	struct nw_measurement *w = nw_measurement_new();
	struct nw_run *r;
	struct nw_mthread *th;

	assert_non_null(w);
	r = &w->run;
	r->narwhal_version = strdup("0.1.0");
	r->arch = strdup("x86_64");
	r->call_graph = strdup("fp");
	r->events = calloc(1, sizeof(*r->events));
	assert_true(r->narwhal_version && r->arch && r->call_graph && r->events);
	assert_int_equal(nw_run_set_argv(r, 2, argv), 0);
	r->nevents = 1;
	r->events[0] = (struct nw_event_info){ .name = strdup("cpu-clock"), .type = 1,
					       .config = 0, .freq = true, .value = 1000 };
	assert_non_null(r->events[0].name);
	r->start_ns = 1;
	r->end_ns = 2;
	r->exit_status = 0;
	r->samples = 24;
	r->lost = 3;
	assert_int_equal(nw_measurement_add_metric(w, "cpu-clock", NW_METRIC_SAMPLES, 1000), 0);
	assert_int_equal(nw_measurement_add_metric(w, "cpu-clock", NW_METRIC_PERIOD, 1000), 1);
	assert_int_equal(nw_measurement_add_process(w, 100, 1, "app"), 0);
	th = nw_measurement_add_thread(w, 100, 100, "app", "app-100-100.csprof");
	assert_non_null(th);
	th->samples = 17;
	th = nw_measurement_add_thread(w, 100, 101, "worker", "worker-100-101.csprof");
	assert_non_null(th);
	th->samples = 7;
	assert_int_equal(nw_module_intern(w->modules, APP, app_id, sizeof(app_id)), 0);
	assert_int_equal(nw_module_intern(w->modules, LIBFOO, NULL, 0), 1);
	return w;
}

static void write_manifest(const char *dir, const struct nw_measurement *w)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(nw_manifest_write(path, w), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct nw_measurement *w;

	if (!fx)
		return -1;
	strcpy(fx->dir, "/tmp/nw-test-reader-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	w = run_model();
	write_symtab(fx->dir, w);
	write_threads(fx->dir);
	write_manifest(fx->dir, w);
	nw_measurement_free(w);
	*state = fx;
	return 0;
}

static void rm(const char *dir, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	rm(fx->dir, "symbols.json");
	rm(fx->dir, "manifest.json");
	rm(fx->dir, "app-100-100.csprof");
	rm(fx->dir, "worker-100-101.csprof");
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* ---- looking at the result ---- */

static int64_t func_index(const struct nw_stacks *p, const char *name)
{
	int64_t found = -1;

	for (uint32_t i = 0; i < p->frames.n; i++) {
		if (strcmp(p->frames.v[i].name, name) == 0) {
			/* Each name here belongs to one module: one frame. */
			assert_int_equal(found, -1);
			found = i;
		}
	}
	return found;
}

/* The node at path "a;b;c" from the root of the stacks' tree, or NW_CCT_NONE. */
static uint32_t find_path(const struct nw_stacks *p, const char *path)
{
	char buf[256], *save = NULL, *tok;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		int64_t f = func_index(p, tok);

		if (f < 0)
			return NW_CCT_NONE;
		n = nw_cct_find(p->tree, n, (uint64_t)f);
		if (n == NW_CCT_NONE)
			return NW_CCT_NONE;
	}
	return n;
}

static uint64_t self_at(const struct nw_stacks *p, const char *path, unsigned m)
{
	uint32_t n = find_path(p, path);

	if (n == NW_CCT_NONE)
		fail_msg("no node %s", path);
	return nw_cct_metrics(p->tree, n)[m];
}

static uint32_t nchildren(const struct nw_cct *t, uint32_t n)
{
	uint32_t k = 0;

	for (uint32_t c = t->nodes[n].first_child; c != NW_CCT_NONE; c = t->nodes[c].next_sibling)
		k++;
	return k;
}

static uint64_t tree_total(const struct nw_cct *t, unsigned m)
{
	uint64_t s = 0;

	for (uint32_t i = 0; i < t->n; i++)
		s += nw_cct_metrics(t, i)[m];
	return s;
}

static struct nw_measurement *load(const char *dir)
{
	struct nw_measurement *m = NULL;
	char err[512];
	int rc = nw_measurement_read(dir, &m, err, sizeof(err));

	if (rc)
		fail_msg("read: %d: %s", rc, err);
	assert_non_null(m);
	return m;
}

/* The symbolic stacks of the threads of @m that @f selects, merged. */
static struct nw_stacks *merge(const struct nw_measurement *m, const struct nw_filter *f)
{
	struct nw_stacks_opts o = { .filter = f };
	struct nw_stacks *s = nw_stacks_new(m, m->nmetrics);

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &o), 0);
	return s;
}

/* The mapping of module @path in epoch @e, or NULL. */
static const struct nw_map *map_of(const struct nw_measurement *m, uint32_t e, const char *path)
{
	int mod = nw_module_find(m->modules, path);

	for (uint32_t i = 0; mod >= 0 && i < m->epochs[e]->n; i++)
		if (m->epochs[e]->maps[i].module == (uint32_t)mod)
			return &m->epochs[e]->maps[i];
	return NULL;
}

static void test_load_threads(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *p = load(fx->dir);

	assert_int_equal(p->run.lost, 3);
	assert_int_equal(p->nthreads, 2);
	assert_int_equal(p->threads[0].tid, 100);
	assert_string_equal(p->threads[0].comm, "app");
	assert_int_equal(p->threads[0].samples, 3 + 5 + 2 + 1 + 1 + 1 + 4);
	assert_int_equal(p->threads[1].tid, 101);
	assert_int_equal(p->threads[1].pid, 100);
	assert_string_equal(p->threads[1].comm, "worker");
	assert_int_equal(p->threads[1].samples, 7);
	assert_int_equal(p->nmetrics, 2);
	assert_string_equal(p->metrics[0].name, "cpu-clock:samples");
	assert_string_equal(p->metrics[1].name, "cpu-clock:period");
	nw_measurement_free(p);
}

/* Each file's epochs become the model's, oldest first; each tree keeps the file's nodes. */
static void test_epochs_and_trees(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *p = load(fx->dir);
	const struct nw_mthread *a = &p->threads[0], *b = &p->threads[1];
	const struct nw_cct *t;

	assert_int_equal(p->nepochs, 3);
	assert_int_equal(a->first_epoch, 0);
	assert_int_equal(a->nepochs, 2);
	assert_int_equal(b->first_epoch, 2);
	assert_int_equal(b->nepochs, 1);
	/* The file's epoch 0 is the newest: libfoo at FOO_A1 first, then FOO_A0. */
	assert_int_equal(map_of(p, 0, LIBFOO)->start, FOO_A1);
	assert_int_equal(map_of(p, 1, LIBFOO)->start, FOO_A0);
	assert_int_equal(map_of(p, 2, LIBFOO)->start, FOO_B0);
	assert_int_equal(map_of(p, 1, APP)->vaddr, 0x1000);
	/* libbar is in no module list but its epoch's: a module of the model all the same. */
	assert_non_null(map_of(p, 1, LIBBAR));
	/* The tree of the file's epoch 0 (11 nodes) is in the newer epoch, 1; the other in 0. */
	assert_int_equal(a->ntrees, 2);
	for (uint32_t i = 0; i < a->ntrees; i++)
		assert_int_equal(a->trees[i].epoch, a->trees[i].cct->n == 11 ? 1 : 0);
	assert_int_equal(a->trees[0].cct->n + a->trees[1].cct->n, 11 + 4);
	/* Node i is the file's node i: preorder, root first. */
	assert_int_equal(b->ntrees, 1);
	assert_int_equal(b->trees[0].epoch, 2);
	t = b->trees[0].cct;
	assert_int_equal(t->n, 4);
	assert_int_equal(t->nodes[1].ip, APP_IP(0x1235));
	assert_int_equal(t->nodes[2].ip, APP_IP(0x1351));
	assert_int_equal(t->nodes[3].ip, FOO_B0 + 0x2000);
	assert_int_equal(t->nodes[3].parent, 2);
	assert_int_equal(nw_cct_metrics(t, 3)[0], 7);
	assert_int_equal(nw_cct_metrics(t, 3)[1], 7000);
	nw_measurement_free(p);
}

static void test_merged_tree(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *m = load(fx->dir);
	struct nw_stacks *p = merge(m, NULL);
	const struct nw_cct *t = p->tree;
	int64_t work, main_f;
	uint32_t n;

	/* One frame per function, however many epochs and threads hold it. */
	work = func_index(p, "work");
	main_f = func_index(p, "main");
	assert_true(work >= 0 && main_f >= 0);
	assert_string_equal(p->frames.v[work].module, LIBFOO);
	assert_string_equal(p->frames.v[work].file, "/src/foo.c");
	assert_int_equal(p->frames.v[work].line, 7);
	assert_string_equal(p->frames.v[main_f].module, APP);

	/* Callers looked up at ip-1 (0x1234, 0x1244), never at the decoys. */
	assert_int_equal(func_index(p, "decoy_return_address"), -1);
	assert_int_equal(func_index(p, "decoy_leaf_minus_one"), -1);
	assert_int_equal(func_index(p, "decoy_foo"), -1);

	/* Both call sites in main are one node; work merged over 2 epochs, 2 threads. */
	assert_int_equal(nchildren(t, NW_CCT_ROOT), 3);
	assert_int_equal(self_at(p, "main;compute;work", 0), 5 + 4 + 7);
	assert_int_equal(self_at(p, "main;compute;work", 1), (5 + 4 + 7) * 1000);
	/* The inline chain: helper_inline nested in compute, which is the same
	 * node as the caller frame compute (0x1351). */
	assert_int_equal(self_at(p, "main;compute;helper_inline", 0), 3);
	assert_int_equal(self_at(p, "main;compute", 0), 0);
	assert_int_equal(nchildren(t, find_path(p, "main;compute")), 2);
	assert_int_equal(self_at(p, "main", 0), 0);
	assert_int_equal(nchildren(t, find_path(p, "main")), 3);
	/* No symbol: module basename + the PC (a caller's return address, not ip-1). */
	assert_int_equal(self_at(p, "main;app+0x1400", 0), 2);
	assert_int_equal(self_at(p, "main;app+0x1501;work", 0), 1);
	assert_int_equal(self_at(p, "libbar.so+0x77", 0), 1);
	assert_string_equal(p->frames.v[func_index(p, "app+0x1400")].module, APP);
	assert_null(p->frames.v[func_index(p, "app+0x1400")].file);
	/* No module holds the ip. */
	n = find_path(p, "[unknown]");
	assert_int_not_equal(n, NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(t, n)[0], 1);
	assert_null(p->frames.v[func_index(p, "[unknown]")].module);

	assert_int_equal(tree_total(t, 0), 3 + 5 + 2 + 1 + 1 + 1 + 4 + 7);
	/* Exactly the nodes above: root, main, compute, helper_inline, work,
	 * app+0x1400, app+0x1501, work, [unknown], libbar.so+0x77. */
	assert_int_equal(t->n, 10);
	nw_stacks_free(p);
	nw_measurement_free(m);
}

static void test_filters(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *p = load(fx->dir);
	struct nw_filter by_tid = { .tid = 101, .pid = -1 };
	struct nw_filter by_comm = { .tid = -1, .pid = -1, .comm = "app" };
	struct nw_filter both = { .tid = 101, .pid = -1, .comm = "app" };
	struct nw_filter all = { .tid = -1, .pid = -1 };
	struct nw_stacks *t;

	assert_false(nw_filter_thread(&by_tid, &p->threads[0]));
	assert_true(nw_filter_thread(&by_tid, &p->threads[1]));
	assert_true(nw_filter_thread(&by_comm, &p->threads[0]));
	assert_false(nw_filter_thread(&by_comm, &p->threads[1]));
	assert_false(nw_filter_thread(&both, &p->threads[1]));
	assert_true(nw_filter_thread(&all, &p->threads[1]));

	t = merge(p, &by_tid);
	assert_int_equal(tree_total(t->tree, 0), 7);
	assert_int_equal(self_at(t, "main;compute;work", 0), 7);
	assert_int_equal(find_path(t, "main;compute;helper_inline"), NW_CCT_NONE);
	nw_stacks_free(t);

	t = merge(p, &by_comm);
	assert_int_equal(tree_total(t->tree, 0), 17);
	assert_int_equal(self_at(t, "main;compute;work", 0), 9);
	nw_stacks_free(t);

	t = merge(p, &both);
	assert_int_equal(t->tree->n, 1);
	nw_stacks_free(t);
	nw_measurement_free(p);
}

static void test_find_metric(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *p = load(fx->dir);

	assert_int_equal(nw_measurement_find_metric(p, NULL), 0);
	assert_int_equal(nw_measurement_find_metric(p, "cpu-clock"), 0);
	assert_int_equal(nw_measurement_find_metric(p, "cpu-clock:samples"), 0);
	assert_int_equal(nw_measurement_find_metric(p, "cpu-clock:period"), 1);
	assert_int_equal(nw_measurement_find_metric(p, "cpu"), -ENOENT);
	assert_int_equal(nw_measurement_find_metric(p, "cycles"), -ENOENT);
	nw_measurement_free(p);
}

static void truncate_file(const char *dir, const char *name, long cut)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(truncate(path, st.st_size - cut), 0);
}

static void test_truncated_csprof(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *p = NULL;
	char err[512], want[160];
	int rc;

	/* Cut into the last node of the worker's only tree. */
	truncate_file(fx->dir, "worker-100-101.csprof", 5);
	rc = nw_measurement_read(fx->dir, &p, err, sizeof(err));
	assert_int_equal(rc, -EBADMSG);
	assert_null(p);
	snprintf(want, sizeof(want), "%s/worker-100-101.csprof: ", fx->dir);
	assert_ptr_equal(strstr(err, want), err);
	assert_non_null(strstr(err, " at offset "));
	assert_null(strchr(err, '\n'));
}

static void test_missing(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *p = NULL;
	char err[512], dir[128];

	snprintf(dir, sizeof(dir), "%s/nope", fx->dir);
	assert_int_equal(nw_measurement_read(dir, &p, err, sizeof(err)), -ENOENT);
	assert_null(p);
	assert_ptr_equal(strstr(err, dir), err);

	/* A thread file the manifest names, gone. */
	rm(fx->dir, "app-100-100.csprof");
	assert_true(nw_measurement_read(fx->dir, &p, err, sizeof(err)) < 0);
	assert_null(p);
	assert_non_null(strstr(err, "app-100-100.csprof"));
}

static void test_no_symbols(void **state)
{
	struct fixture *fx = *state;
	struct nw_measurement *m;
	struct nw_stacks *p;

	/* Without symbols.json every frame is module+0xPC (callers' return addresses). */
	rm(fx->dir, "symbols.json");
	m = load(fx->dir);
	p = merge(m, NULL);
	assert_int_equal(func_index(p, "main"), -1);
	assert_int_equal(self_at(p, "app+0x1235;app+0x1351;libfoo.so.1+0x2000", 0), 16);
	assert_int_equal(self_at(p, "app+0x1245;app+0x1501;libfoo.so.1+0x2000", 0), 1);
	assert_int_equal(self_at(p, "app+0x1235;app+0x1300", 0), 3);
	nw_stacks_free(p);
	nw_measurement_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_load_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_and_trees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merged_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_metric, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_csprof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_symbols, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
