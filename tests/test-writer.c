/* SPDX-License-Identifier: MIT */
/*
 * Writing a measurement directory (format/writer.h) and reading it back
 * (format/reader.h): a model built by hand (two processes, three epochs, a
 * library loaded between two of them, four threads, one without a file)
 * comes back with the same run, metrics, modules and their facts, epochs,
 * threads, trees and symbols; the HPC_CSPROF files hold file epoch 0 as the
 * newest, the newest epoch's tree first, and in -F mode the mean period of
 * their own samples.  Then the atomic replacement: NW_WRITE_NEW keeps the
 * older run as DIR.old, NW_WRITE_REPLACE leaves nothing beside DIR, and a
 * write that fails says why and leaves the old directory as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/csprof.h"
#include "format/reader.h"
#include "format/writer.h"
#include "model/measurement.h"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

/* ---- the model ---- */

enum { APP, LIBA, VDSO };
enum { M_CPU_SAMPLES, M_CPU_PERIOD, M_CYC_SAMPLES, M_CYC_PERIOD, NMETRICS };

#define APP_TEXT 0x555555556000ull  /* ELF address 0x2000, file offset 0x1000 */
#define LIBA_AT 0x7f0000001000ull   /* ELF address 0x4000, file offset 0x3000 */
#define VDSO_AT 0x7fff00000000ull
#define IP_MAIN (APP_TEXT + 0x10)   /* a return address in main */
#define IP_F (APP_TEXT + 0x100)
#define IP_A (LIBA_AT + 0x10)

static const uint8_t app_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2,  3,  4,  5,  6,
				    7,    8,    9,    10,   11, 12, 13, 14, 15, 16 };
static const uint8_t liba_id[4] = { 0xca, 0xfe, 0xf0, 0x0d };
static const char jit_map[] = "7f0000100000 40 jitted_fn\n";

/* A tree of one path (@ips root first), @v (NMETRICS values) at its leaf; sp tags @sp. */
static void add_path(struct nw_cct *t, const uint64_t *ips, size_t n, uint64_t sp,
		     const uint64_t *v)
{
	struct nw_frame f[8];
	uint32_t leaf;

	for (size_t i = 0; i < n; i++)
		f[i] = (struct nw_frame){ ips[n - 1 - i], sp ? sp + 0x10 * i : 0 };
	leaf = nw_cct_insert(t, f, n);
	assert_int_not_equal(leaf, NW_CCT_NONE);
	for (unsigned k = 0; k < t->nmetrics; k++)
		nw_cct_metrics(t, leaf)[k] += v[k];
	/* As the recorder's session does: a checkpoint's journal writes what changed. */
	nw_cct_mark_changed(t, leaf);
}

static struct nw_mthread *add_thread(struct nw_measurement *m, uint32_t pid, uint32_t tid,
				     const char *comm, uint32_t first_epoch, uint32_t nepochs)
{
	char file[64];
	struct nw_mthread *th;

	nw_thread_file_name(file, sizeof(file), comm, pid, tid);
	th = nw_measurement_add_thread(m, pid, tid, comm, file);
	assert_non_null(th);
	th->first_epoch = first_epoch;
	th->nepochs = nepochs;
	return th;
}

static struct nw_cct *tree_of(struct nw_mthread *th, uint32_t epoch)
{
	struct nw_cct *t = nw_cct_new(NMETRICS);

	assert_non_null(t);
	assert_int_equal(nw_mthread_add_tree(th, epoch, t), 0);
	return t;
}

/* Samples of every event in @th's trees: what the reader counts again. */
static void count_samples(struct nw_measurement *m, struct nw_mthread *th)
{
	th->samples = nw_mthread_total(th, M_CPU_SAMPLES) + nw_mthread_total(th, M_CYC_SAMPLES);
	m->run.samples += th->samples;
}

static void add_symbol(struct nw_symtab *t, uint32_t module, uint64_t addr, const char *fn,
		       const char *file, uint32_t line, bool inlined)
{
	uint32_t n = inlined ? 2 : 1;
	struct nw_symframe *f = calloc(n, sizeof(*f));

	assert_non_null(f);
	f[0].function = xstrdup(fn);
	f[0].file = file ? xstrdup(file) : NULL;
	f[0].line = line;
	f[0].decl_file = file ? xstrdup(file) : NULL;
	f[0].decl_line = line ? line - 1 : 0;
	if (inlined) {
		f[1].function = xstrdup("outer");
		f[1].file = xstrdup("/src/outer.c");
		f[1].line = 77;
	}
	assert_int_equal(nw_symtab_add(t, module, addr, f, n), 0);
}

/*
 * Process 10 ("app") has epochs 0 (the program and the vdso) and 1 (liba
 * loaded too); process 20 ("child") has epoch 2.  Threads: app (10, 10)
 * sampled in both epochs of its process, worker (10, 11) in the newest,
 * idle (10, 12) never (no file), child (20, 20) in its one epoch.
 * cpu-clock is sampled at a frequency (-F), cycles with a period (-c).
 */
static struct nw_measurement *sample_model(void)
{
	struct nw_measurement *m = nw_measurement_new();
	struct nw_run *r;
	struct nw_module_facts *f;
	struct nw_map maps[3];
	struct nw_mthread *th;
	struct nw_cct *t;
	char *const argv[] = { "./app", "--flag", "arg with spaces" };

	assert_non_null(m);
	r = &m->run;
	r->narwhal_version = xstrdup("0.1.0");
	r->arch = xstrdup("x86_64");
	assert_int_equal(nw_run_set_argv(r, 3, argv), 0);
	r->call_graph = xstrdup("dwarf");
	r->stack_size = 8192;
	r->max_stack = 127;
	r->nevents = 2;
	r->events = calloc(2, sizeof(*r->events));
	assert_non_null(r->events);
	r->events[0] = (struct nw_event_info){ xstrdup("cpu-clock"), 1, 0, true, 999 };
	r->events[1] = (struct nw_event_info){ xstrdup("cycles"), 0, 0, false, 100000 };
	r->start_ns = 1700000000000000000ULL;
	r->end_ns = 1700000001500000000ULL;
	r->exit_status = 3;
	r->lost = 1;
	r->throttled = 2;
	r->unwind_errors = 4;

	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 1001), 0);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 1001), 1);
	assert_int_equal(nw_measurement_add_metric(m, "cycles", NW_METRIC_SAMPLES, 100000), 2);
	assert_int_equal(nw_measurement_add_metric(m, "cycles", NW_METRIC_PERIOD, 100000), 3);

	assert_int_equal(nw_module_intern(m->modules, "/bin/app", app_id, 20), APP);
	assert_int_equal(nw_module_intern(m->modules, "/lib/liba.so", liba_id, 4), LIBA);
	assert_int_equal(nw_module_intern(m->modules, "[vdso]", NULL, 0), VDSO);
	f = &m->modules->v[APP].facts;
	f->known = true;
	f->has_cfi = true;
	f->dyn = true;
	f->machine = 62;
	memcpy(f->build_id, app_id, 20);
	f->build_id_size = 20;
	f->entry = 0x2040;
	f->nsegs = 2;
	f->segs = calloc(2, sizeof(*f->segs));
	assert_non_null(f->segs);
	f->segs[0] = (struct nw_segment){ 0x0, 0x800, 0x0, 0x800, false };
	f->segs[1] = (struct nw_segment){ 0x2000, 0x2000, 0x1000, 0x2000, true };

	/* Process 10: epoch 0, then epoch 1 with liba. */
	maps[0] = (struct nw_map){ APP_TEXT, APP_TEXT + 0x2000, 0x1000, 0x2000, APP };
	maps[1] = (struct nw_map){ VDSO_AT, VDSO_AT + 0x2000, 0, 0, VDSO };
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 2, 0)), 0);
	maps[2] = (struct nw_map){ LIBA_AT, LIBA_AT + 0x1000, 0x3000, 0x4000, LIBA };
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 3, 1)), 1);
	/* Process 20: one epoch, the program alone. */
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(maps, 1, 0)), 2);
	assert_int_equal(nw_measurement_add_process(m, 10, 1, "app"), 0);
	assert_int_equal(nw_measurement_add_process(m, 20, 10, "child"), 1);

	/* app: 6 cpu-clock samples summing 6000002 ns (mean 1000000), 3 cycles samples. */
	th = add_thread(m, 10, 10, "app", 0, 2);
	t = tree_of(th, 0);
	add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2, 0, (uint64_t[]){ 3, 3000003, 1, 100000 });
	add_path(t, (uint64_t[]){ IP_MAIN }, 1, 0, (uint64_t[]){ 1, 1000001, 0, 0 });
	t = tree_of(th, 1);
	add_path(t, (uint64_t[]){ IP_MAIN, IP_A }, 2, 0, (uint64_t[]){ 2, 1999998, 2, 200000 });
	add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2, 0, (uint64_t[]){ 0, 0, 0, 0 });
	count_samples(m, th);
	/* worker: 4 samples summing 8000000 ns (mean 2000000) in the newest epoch. */
	th = add_thread(m, 10, 11, "worker", 0, 2);
	t = tree_of(th, 1);
	add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2, 0, (uint64_t[]){ 4, 8000000, 0, 0 });
	count_samples(m, th);
	/* idle: no samples, no file. */
	th = nw_measurement_add_thread(m, 10, 12, "idle", NULL);
	assert_non_null(th);
	/* child: cycles only (its file keeps cpu-clock's descriptor period); sp tags. */
	th = add_thread(m, 20, 20, "child", 2, 1);
	t = tree_of(th, 2);
	add_path(t, (uint64_t[]){ IP_MAIN, IP_F }, 2, 0x7ffc0000, (uint64_t[]){ 0, 0, 1, 100000 });
	count_samples(m, th);

	/* Symbols: a leaf, a caller's return address - 1 (an inline chain), liba, nothing known. */
	add_symbol(m->symtab, APP, 0x2100, "f", "/src/app.c", 12, false);
	add_symbol(m->symtab, APP, 0x200f, "main", "/src/app.c", 30, true);
	add_symbol(m->symtab, LIBA, 0x4010, "a_func", NULL, 0, false);
	assert_int_equal(nw_symtab_add(m->symtab, VDSO, 0x123, NULL, 0), 0);
	nw_symtab_sort(m->symtab);
	return m;
}

/* ---- comparing a model with what was read back ---- */

static void assert_same_run(const struct nw_run *a, const struct nw_run *b)
{
	assert_string_equal(a->narwhal_version, b->narwhal_version);
	assert_string_equal(a->arch, b->arch);
	assert_int_equal(a->argc, b->argc);
	for (uint32_t i = 0; i < a->argc; i++)
		assert_string_equal(a->argv[i], b->argv[i]);
	assert_null(b->argv[b->argc]);
	assert_string_equal(a->call_graph, b->call_graph);
	assert_int_equal(a->stack_size, b->stack_size);
	assert_int_equal(a->max_stack, b->max_stack);
	assert_int_equal(a->nevents, b->nevents);
	for (uint32_t i = 0; i < a->nevents; i++) {
		assert_string_equal(a->events[i].name, b->events[i].name);
		assert_int_equal(a->events[i].type, b->events[i].type);
		assert_int_equal(a->events[i].config, b->events[i].config);
		assert_int_equal(a->events[i].freq, b->events[i].freq);
		assert_int_equal(a->events[i].value, b->events[i].value);
	}
	assert_int_equal(a->start_ns, b->start_ns);
	assert_int_equal(a->end_ns, b->end_ns);
	assert_int_equal(a->exit_status, b->exit_status);
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(a->lost, b->lost);
	assert_int_equal(a->throttled, b->throttled);
	assert_int_equal(a->unwind_errors, b->unwind_errors);
}

static void assert_same_modules(const struct nw_module_table *a, const struct nw_module_table *b)
{
	assert_int_equal(a->n, b->n);
	for (uint32_t i = 0; i < a->n; i++) {
		const struct nw_module *x = &a->v[i], *y = &b->v[i];

		assert_string_equal(x->path, y->path);
		assert_int_equal(x->build_id_size, y->build_id_size);
		assert_memory_equal(x->build_id, y->build_id, x->build_id_size);
		assert_int_equal(x->facts.known, y->facts.known);
		if (!x->facts.known)
			continue;
		assert_int_equal(x->facts.has_cfi, y->facts.has_cfi);
		assert_int_equal(x->facts.dyn, y->facts.dyn);
		assert_int_equal(x->facts.machine, y->facts.machine);
		assert_int_equal(x->facts.entry, y->facts.entry);
		assert_int_equal(x->facts.build_id_size, y->facts.build_id_size);
		assert_memory_equal(x->facts.build_id, y->facts.build_id, x->facts.build_id_size);
		assert_int_equal(x->facts.nsegs, y->facts.nsegs);
		assert_memory_equal(x->facts.segs, y->facts.segs,
				    x->facts.nsegs * sizeof(*x->facts.segs));
	}
}

/*
 * Epoch @b read back for epoch @a: the same mappings, starts and ELF
 * addresses; the file offset from the module's facts (without facts the
 * file keeps none: the ELF address stands for it); each mapping reaching
 * the next (the file keeps no ends), or the end of its module's last
 * segment where the facts know it and it comes first.
 */
static uint64_t expected_end(const struct nw_measurement *m, const struct nw_epoch *a, uint32_t k)
{
	const struct nw_map *x = &a->maps[k];
	const struct nw_module_facts *f = &m->modules->v[x->module].facts;
	uint64_t end = k + 1 < a->n ? a->maps[k + 1].start : UINT64_MAX, hi = 0;

	for (uint32_t i = 0; f->known && i < f->nsegs; i++)
		if (f->segs[i].vaddr + f->segs[i].memsz > hi)
			hi = f->segs[i].vaddr + f->segs[i].memsz;
	if (hi > x->vaddr && x->start + (hi - x->vaddr) < end)
		end = x->start + (hi - x->vaddr);
	return end;
}

static void assert_same_epoch(const struct nw_measurement *m, const struct nw_epoch *a,
			      const struct nw_epoch *b)
{
	assert_int_equal(a->index, b->index);
	assert_int_equal(a->n, b->n);
	for (uint32_t k = 0; k < a->n; k++) {
		const struct nw_map *x = &a->maps[k], *y = &b->maps[k];

		assert_int_equal(x->start, y->start);
		assert_int_equal(x->vaddr, y->vaddr);
		assert_int_equal(x->module, y->module);
		if (m->modules->v[x->module].facts.known)
			assert_int_equal(x->pgoff, y->pgoff);
		else
			assert_int_equal(y->pgoff, x->vaddr);
		assert_int_equal(y->end, expected_end(m, a, k));
	}
}

/* Tree @b read back for @a: node i is @a's i-th node in preorder, with its metrics. */
/* Files written as a checkpoint's pack list nodes in the model's order, not preorder. */
static bool index_order;

static void assert_same_tree(const struct nw_cct *a, const struct nw_cct *b)
{
	uint32_t *order = malloc(a->n * sizeof(*order)), *pos = malloc(a->n * sizeof(*pos));

	assert_non_null(order);
	assert_non_null(pos);
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->nmetrics, b->nmetrics);
	if (index_order) {
		for (uint32_t k = 0; k < a->n; k++)
			order[k] = k;
	} else {
		assert_int_equal(nw_cct_preorder(a, order), a->n);
	}
	for (uint32_t k = 0; k < a->n; k++)
		pos[order[k]] = k;
	for (uint32_t k = 0; k < a->n; k++) {
		const struct nw_cct_node *x = &a->nodes[order[k]], *y = &b->nodes[k];

		assert_int_equal(x->ip, y->ip);
		assert_int_equal(x->sp, y->sp);
		if (k)
			assert_int_equal(pos[x->parent], y->parent);
		assert_memory_equal(nw_cct_metrics(a, order[k]), nw_cct_metrics(b, k),
				    a->nmetrics * sizeof(uint64_t));
	}
	free(order);
	free(pos);
}

static void assert_same_symtab(const struct nw_symtab *a, const struct nw_symtab *b)
{
	assert_int_equal(a->nentries, b->nentries);
	for (uint32_t i = 0; i < a->nentries; i++) {
		const struct nw_symentry *x = &a->entries[i], *y = &b->entries[i];

		assert_int_equal(x->module, y->module);
		assert_int_equal(x->addr, y->addr);
		assert_int_equal(x->nframes, y->nframes);
		for (uint32_t k = 0; k < x->nframes; k++) {
			const struct nw_symframe *p = &x->frames[k], *q = &y->frames[k];

			assert_string_equal(p->function, q->function);
			if (p->file)
				assert_string_equal(p->file, q->file);
			else
				assert_null(q->file);
			if (p->decl_file)
				assert_string_equal(p->decl_file, q->decl_file);
			else
				assert_null(q->decl_file);
			assert_int_equal(p->line, q->line);
			assert_int_equal(p->decl_line, q->decl_line);
		}
	}
}

/* Everything of @m comes back in @r. */
static void assert_same_model(const struct nw_measurement *m, const struct nw_measurement *r)
{
	assert_same_run(&m->run, &r->run);
	assert_int_equal(m->nmetrics, r->nmetrics);
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		assert_string_equal(m->metrics[i].name, r->metrics[i].name);
		assert_string_equal(m->metrics[i].event, r->metrics[i].event);
		assert_int_equal(m->metrics[i].kind, r->metrics[i].kind);
		assert_int_equal(m->metrics[i].unit, r->metrics[i].unit);
		assert_int_equal(m->metrics[i].period, r->metrics[i].period);
		assert_int_equal(m->metrics[i].flags, r->metrics[i].flags);
	}
	assert_same_modules(m->modules, r->modules);
	assert_int_equal(m->nprocs, r->nprocs);
	for (uint32_t i = 0; i < m->nprocs; i++) {
		assert_int_equal(m->procs[i].pid, r->procs[i].pid);
		assert_int_equal(m->procs[i].ppid, r->procs[i].ppid);
		assert_string_equal(m->procs[i].comm, r->procs[i].comm);
	}
	assert_int_equal(m->nthreads, r->nthreads);
	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *a = &m->threads[i], *b = &r->threads[i];

		assert_int_equal(a->pid, b->pid);
		assert_int_equal(a->tid, b->tid);
		assert_string_equal(a->comm, b->comm);
		assert_int_equal(a->samples, b->samples);
		if (!a->file) {
			/* No file: in the manifest only. */
			assert_null(b->file);
			assert_int_equal(b->ntrees, 0);
			assert_int_equal(b->nepochs, 0);
			continue;
		}
		assert_string_equal(a->file, b->file);
		/* The epochs of its process, oldest first. */
		assert_int_equal(a->nepochs, b->nepochs);
		for (uint32_t e = 0; e < a->nepochs; e++)
			assert_same_epoch(m, m->epochs[a->first_epoch + e],
					  r->epochs[b->first_epoch + e]);
		/* Each tree with the epoch it was sampled in (file order: newest first). */
		assert_int_equal(a->ntrees, b->ntrees);
		for (uint32_t t = 0; t < a->ntrees; t++) {
			uint32_t want = b->first_epoch + (a->trees[t].epoch - a->first_epoch);
			const struct nw_tree *got = NULL;

			for (uint32_t u = 0; u < b->ntrees; u++)
				if (b->trees[u].epoch == want)
					got = &b->trees[u];
			assert_non_null(got);
			assert_same_tree(a->trees[t].cct, got->cct);
		}
		for (uint32_t u = 1; u < b->ntrees; u++)
			assert_true(b->trees[u - 1].epoch > b->trees[u].epoch);
	}
	assert_same_symtab(m->symtab, r->symtab);
}

/* ---- files and directories ---- */

static uint8_t *load(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*size = (size_t)len;
	return buf;
}

static uint32_t get_u32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

/* rm -r @path. */
static void remove_tree(const char *path)
{
	assert_int_equal(nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* A temporary directory for one test: @base (PATH_MAX) and @dir = @base/m. */
static void tmp_dirs(char *base, char *dir)
{
	strcpy(base, "/tmp/narwhal-test-writer.XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(dir, PATH_MAX, "%s/m", base);
}

/* The number of entries of @parent whose name starts with @prefix. */
static int count_entries(const char *parent, const char *prefix)
{
	DIR *d = opendir(parent);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static struct nw_measurement *read_dir(const char *dir)
{
	struct nw_measurement *r = NULL;
	char err[512] = "";

	if (nw_measurement_read(dir, &r, err, sizeof(err)))
		fail_msg("nw_measurement_read(%s): %s", dir, err);
	return r;
}

static void write_dir(const struct nw_measurement *m, const char *dir, enum nw_write_mode mode)
{
	struct nw_extra_file x = { "jit/perf-10.map", (void *)jit_map, sizeof(jit_map) - 1 };
	char err[512] = "";

	if (nw_measurement_write(m, &x, 1, dir, mode, err, sizeof(err)))
		fail_msg("nw_measurement_write(%s): %s", dir, err);
	assert_string_equal(err, "");
}

/* The exit status a measurement at @dir recorded (what tells two runs apart here). */
static int exit_status_of(const char *dir)
{
	struct nw_measurement *r = read_dir(dir);
	int s = r->run.exit_status;

	nw_measurement_free(r);
	return s;
}

/* ---- the tests ---- */

static void test_round_trip(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64];
	struct nw_measurement *m = sample_model(), *r;
	size_t size;
	uint8_t *bytes;

	tmp_dirs(base, dir);
	write_dir(m, dir, NW_WRITE_NEW);
	r = read_dir(dir);
	assert_same_model(m, r);
	assert_int_equal(r->run.samples, 14);

	/* The reader's model: the newest epoch's tree first, as in the file. */
	assert_int_equal(r->threads[0].ntrees, 2);
	assert_int_equal(r->threads[0].trees[0].epoch, r->threads[0].first_epoch + 1);
	assert_int_equal(r->threads[0].trees[1].epoch, r->threads[0].first_epoch);
	/* It resolves as the model did. */
	{
		struct nw_resolved a, b;

		nw_measurement_resolve(m, m->threads[0].trees[0].epoch, IP_MAIN, true, &a);
		nw_measurement_resolve(r, r->threads[0].trees[1].epoch, IP_MAIN, true, &b);
		assert_non_null(b.sym);
		assert_int_equal(a.sym - m->symtab->entries, b.sym - r->symtab->entries);
		assert_string_equal(b.sym->frames[1].function, "outer");
		nw_measurement_resolve(r, r->threads[0].trees[0].epoch, IP_A, false, &b);
		assert_string_equal(b.module->path, "/lib/liba.so");
		assert_string_equal(b.sym->frames[0].function, "a_func");
		/*
		 * Not in the older epoch: liba was not loaded yet, and the app's
		 * mapping ends where its segments do.
		 */
		nw_measurement_resolve(r, r->threads[0].trees[1].epoch, IP_A, false, &b);
		assert_null(b.module);
		assert_null(b.sym);
	}

	/* The extra file, as it was given. */
	snprintf(path, sizeof(path), "%s/jit/perf-10.map", dir);
	bytes = load(path, &size);
	assert_int_equal(size, sizeof(jit_map) - 1);
	assert_memory_equal(bytes, jit_map, size);
	free(bytes);
	/* The idle thread has no file; nothing else lies beside the measurement. */
	snprintf(path, sizeof(path), "%s/idle-10-12.csprof", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(count_entries(base, "m."), 0);
	nw_measurement_free(r);
	nw_measurement_free(m);
	remove_tree(base);
}

/*
 * app-10-10.csprof byte by byte: file epoch 0 is the newest (3 modules),
 * the trees come newest epoch first, and each file's metrics carry the
 * period its reader multiplies samples by: -F's mean over the file's own
 * samples, -c's period.
 */
static void test_csprof_files(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], path[PATH_MAX + 64];
	struct nw_measurement *m = sample_model();
	struct nw_csprof_error cerr;
	struct nw_csprof *cp = NULL;
	uint8_t *b;
	size_t size, ntrees = 0, at[4];

	tmp_dirs(base, dir);
	write_dir(m, dir, NW_WRITE_NEW);
	snprintf(path, sizeof(path), "%s/app-10-10.csprof", dir);
	b = load(path, &size);
	/* Each tree: "HPC_CSTREE", version, vma and uint sizes, node count, then its epoch. */
	for (size_t i = 0; i + 10 <= size && ntrees < 4; i++)
		if (!memcmp(b + i, "HPC_CSTREE", 10))
			at[ntrees++] = i;
	assert_int_equal(ntrees, 2);
	assert_true(at[0] + 36 <= size);
	assert_int_equal(get_u32(b + at[0] + 32), 0);   /* newest first */
	assert_int_equal(get_u32(b + at[1] + 32), 1);
	free(b);

	assert_int_equal(nw_csprof_read_file(path, &cp, &cerr), 0);
	assert_string_equal(cp->target, "app");
	assert_int_equal(cp->nepochs, 2);
	assert_int_equal(cp->epochs[0].nmodules, 3);
	assert_int_equal(cp->epochs[1].nmodules, 2);
	/* By address: the program, liba, the vdso. */
	assert_string_equal(cp->epochs[0].modules[1].name, "/lib/liba.so");
	assert_int_equal(cp->epochs[0].modules[1].vaddr, 0x4000);
	assert_int_equal(cp->epochs[0].modules[1].mapped, LIBA_AT);
	assert_string_equal(cp->epochs[0].modules[2].name, "[vdso]");
	assert_int_equal(cp->epochs[1].modules[0].vaddr, 0x2000);
	assert_int_equal(cp->trees[0].epoch, 0);
	assert_same_tree(m->threads[0].trees[1].cct, cp->trees[0].cct);
	assert_same_tree(m->threads[0].trees[0].cct, cp->trees[1].cct);
	assert_int_equal(cp->nmetrics, NMETRICS);
	assert_string_equal(cp->metrics[M_CPU_PERIOD].name, "cpu-clock:period");
	assert_int_equal(cp->metrics[M_CPU_PERIOD].flags, m->metrics[M_CPU_PERIOD].flags);
	/* 6000002 ns over 6 samples, rounded. */
	assert_int_equal(cp->metrics[M_CPU_SAMPLES].period, 1000000);
	assert_int_equal(cp->metrics[M_CPU_PERIOD].period, 1000000);
	assert_int_equal(cp->metrics[M_CYC_SAMPLES].period, 100000);
	assert_int_equal(cp->metrics[M_CYC_PERIOD].period, 100000);
	nw_csprof_free(cp);

	/* Another file of the same run, another mean. */
	snprintf(path, sizeof(path), "%s/worker-10-11.csprof", dir);
	assert_int_equal(nw_csprof_read_file(path, &cp, &cerr), 0);
	assert_string_equal(cp->target, "app");            /* its process's name */
	assert_int_equal(cp->metrics[M_CPU_SAMPLES].period, 2000000);
	assert_int_equal(cp->metrics[M_CYC_PERIOD].period, 100000);
	assert_int_equal(cp->ntrees, 1);
	assert_int_equal(cp->trees[0].epoch, 0);
	nw_csprof_free(cp);
	/* No cpu-clock samples: the descriptor's period. */
	snprintf(path, sizeof(path), "%s/child-20-20.csprof", dir);
	assert_int_equal(nw_csprof_read_file(path, &cp, &cerr), 0);
	assert_string_equal(cp->target, "child");
	assert_int_equal(cp->nepochs, 1);
	assert_int_equal(cp->metrics[M_CPU_SAMPLES].period, 1001);
	nw_csprof_free(cp);
	/* The manifest keeps the descriptors' own periods. */
	{
		struct nw_measurement *r = read_dir(dir);

		assert_int_equal(r->metrics[M_CPU_SAMPLES].period, 1001);
		nw_measurement_free(r);
	}
	nw_measurement_free(m);
	remove_tree(base);
}

/* NW_WRITE_NEW: an existing directory (an older run) moves to DIR.old. */
static void test_write_new(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], old[PATH_MAX + 8];
	struct nw_measurement *m = sample_model();

	tmp_dirs(base, dir);
	snprintf(old, sizeof(old), "%s.old", dir);
	write_dir(m, dir, NW_WRITE_NEW);
	assert_int_equal(access(old, F_OK), -1);
	m->run.exit_status = 5;
	write_dir(m, dir, NW_WRITE_NEW);
	assert_int_equal(exit_status_of(dir), 5);
	assert_int_equal(exit_status_of(old), 3);
	/* A third run: the second becomes DIR.old, the first is gone. */
	m->run.exit_status = 6;
	write_dir(m, dir, NW_WRITE_NEW);
	assert_int_equal(exit_status_of(dir), 6);
	assert_int_equal(exit_status_of(old), 5);
	assert_int_equal(count_entries(base, "m."), 1);
	assert_int_equal(count_entries(base, "m.new-"), 0);
	nw_measurement_free(m);
	remove_tree(base);
}

/* NW_WRITE_REPLACE: the same run again; DIR is the new one, nothing left beside it. */
static void test_write_replace(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], old[PATH_MAX + 8], path[PATH_MAX + 64];
	struct nw_measurement *m = sample_model();
	struct nw_mthread *th;
	struct nw_measurement *r;

	tmp_dirs(base, dir);
	snprintf(old, sizeof(old), "%s.old", dir);
	/* Into nothing: the directory is made. */
	write_dir(m, dir, NW_WRITE_REPLACE);
	assert_int_equal(exit_status_of(dir), 3);
	/* A checkpoint with more samples replaces it... */
	th = &m->threads[1];
	add_path(th->trees[0].cct, (uint64_t[]){ IP_MAIN }, 1, 0, (uint64_t[]){ 1, 1, 0, 0 });
	th->samples++;
	m->run.samples++;
	m->run.exit_status = 7;
	write_dir(m, dir, NW_WRITE_REPLACE);
	r = read_dir(dir);
	assert_same_model(m, r);
	nw_measurement_free(r);
	/* ...and leaves neither DIR.old nor a DIR.new-* behind. */
	assert_int_equal(access(old, F_OK), -1);
	assert_int_equal(count_entries(base, "m."), 0);
	assert_int_equal(count_entries(base, "m"), 1);
	/* A file of the older write that the new one lacks is gone with it. */
	snprintf(path, sizeof(path), "%s/stale", dir);
	fclose(fopen(path, "w"));
	write_dir(m, dir, NW_WRITE_REPLACE);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(count_entries(base, "m."), 0);
	/* A DIR.old an earlier run left is not this run's to remove. */
	write_dir(m, dir, NW_WRITE_NEW);
	assert_int_equal(access(old, F_OK), 0);
	write_dir(m, dir, NW_WRITE_REPLACE);
	assert_int_equal(access(old, F_OK), 0);
	assert_int_equal(count_entries(base, "m.new-"), 0);
	nw_measurement_free(m);
	remove_tree(base);
}

/* A write that fails says why and leaves the old measurement as it was. */
static void expect_write_fails(const struct nw_measurement *m, const char *dir, int rc,
			       const char *msg_part)
{
	char err[512] = "";
	int got = nw_measurement_write(m, NULL, 0, dir, NW_WRITE_REPLACE, err, sizeof(err));

	if (got != rc || !strstr(err, msg_part))
		fail_msg("write %s: %d \"%s\", expected %d \"%s\"", dir, got, err, rc, msg_part);
}

static void test_write_fails(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], missing[PATH_MAX + 32], msg[2 * PATH_MAX];
	struct nw_measurement *m = sample_model();
	struct nw_measurement *r;
	char *file;

	tmp_dirs(base, dir);
	write_dir(m, dir, NW_WRITE_NEW);

	/* A missing parent: named, with the cause. */
	snprintf(missing, sizeof(missing), "%s/no-such-dir/m", base);
	snprintf(msg, sizeof(msg), "cannot write %s: No such file or directory", missing);
	expect_write_fails(m, missing, -ENOENT, msg);

	/* A thread file that cannot be made, halfway through: the file named. */
	file = m->threads[1].file;
	m->threads[1].file = xstrdup("no-such-subdir/worker.csprof");
	m->run.exit_status = 9;
	snprintf(msg, sizeof(msg), "cannot write %s/no-such-subdir/worker.csprof: No such file",
		 dir);
	expect_write_fails(m, dir, -ENOENT, msg);
	free(m->threads[1].file);
	m->threads[1].file = file;

	/* A tree outside its thread's epochs. */
	m->threads[3].trees[0].epoch = 0;
	expect_write_fails(m, dir, -EINVAL, "child-20-20.csprof: a tree outside its epochs");
	m->threads[3].trees[0].epoch = 2;

	/* Each time the old measurement stayed, whole, and nothing was left beside it. */
	m->run.exit_status = 3;
	r = read_dir(dir);
	assert_same_model(m, r);
	nw_measurement_free(r);
	assert_int_equal(count_entries(base, "m."), 0);
	nw_measurement_free(m);
	remove_tree(base);
}

/*
 * In a child with its own mount namespace: @ro, a tmpfs holding a
 * measurement, remounted read-only, then written to.  Returns the exit
 * status: 0 when the write failed with EROFS named and the old measurement
 * is whole, 77 when this system cannot make the mount, else a failure.
 */
static int child_read_only(const char *ro, struct nw_measurement *m)
{
	char dir[PATH_MAX + 16], err[512] = "";
	struct nw_measurement *r = NULL;
	int rc;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", ro, "tmpfs", 0, "size=4m") < 0)
		return 77;
	snprintf(dir, sizeof(dir), "%s/m", ro);
	if (nw_measurement_write(m, NULL, 0, dir, NW_WRITE_NEW, err, sizeof(err)))
		return 2;
	if (mount(NULL, ro, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return 77;
	m->run.exit_status = 8;
	rc = nw_measurement_write(m, NULL, 0, dir, NW_WRITE_REPLACE, err, sizeof(err));
	if (rc != -EROFS || !strstr(err, "the file system is read-only (EROFS)") ||
	    !strstr(err, dir)) {
		fprintf(stderr, "read-only write: %d \"%s\"\n", rc, err);
		return 3;
	}
	if (nw_measurement_read(dir, &r, err, sizeof(err)) || r->run.exit_status != 3) {
		fprintf(stderr, "the old measurement: %s\n", err);
		return 4;
	}
	nw_measurement_free(r);
	return 0;
}

static void test_write_read_only(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], ro[PATH_MAX + 8];
	struct nw_measurement *m;
	int status;
	pid_t pid;

	tmp_dirs(base, dir);
	if (geteuid() != 0) {
		/* A directory the user cannot write into. */
		m = sample_model();
		write_dir(m, dir, NW_WRITE_NEW);
		assert_int_equal(chmod(base, 0555), 0);
		m->run.exit_status = 8;
		expect_write_fails(m, dir, -EACCES, "Permission denied");
		assert_int_equal(chmod(base, 0755), 0);
		assert_int_equal(exit_status_of(dir), 3);
		assert_int_equal(count_entries(base, "m."), 0);
		nw_measurement_free(m);
		remove_tree(base);
		return;
	}
	/*
	 * root writes through permissions: a read-only file system, in a child
	 * (no cmocka assertion there) with a mount namespace of its own.
	 */
	snprintf(ro, sizeof(ro), "%s/ro", base);
	assert_int_equal(mkdir(ro, 0755), 0);
	m = sample_model();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_read_only(ro, m));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	nw_measurement_free(m);
	remove_tree(base);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * A checkpoint: one pack and the manifest naming it.  It reads into the
 * same model (trees in the model's node order), a second checkpoint
 * replaces the first and leaves one pack, and the write at the end turns
 * the directory into files again.
 */
static void test_pack(void **state)
{
	struct nw_extra_file x = { "jit/perf-10.map", (void *)jit_map, sizeof(jit_map) - 1 };
	char base[PATH_MAX], dir[PATH_MAX], old[PATH_MAX + 8];
	struct nw_measurement *m = sample_model(), *r;
	char err[512] = "";

	tmp_dirs(base, dir);
	snprintf(old, sizeof(old), "%s.old", dir);
	/* An older run's measurement moves aside, as with a directory write. */
	write_dir(m, dir, NW_WRITE_NEW);
	m->run.written = NW_RUN_CHECKPOINT;
	m->run.exit_status = -1;
	if (nw_measurement_write_pack(m, &x, 1, dir, NW_WRITE_NEW, NULL, err, sizeof(err)))
		fail_msg("nw_measurement_write_pack: %s", err);
	assert_int_equal(access(old, F_OK), 0);
	assert_int_equal(count_entries(dir, "checkpoint-"), 1);
	assert_int_equal(count_entries(dir, "app-"), 0);
	r = read_dir(dir);
	assert_non_null(r->run.pack);
	index_order = true;
	assert_same_model(m, r);
	nw_measurement_free(r);
	/* The traces' node ids stay the model's: they name the same nodes. */
	assert_int_equal(nw_measurement_read(dir, &r, err, sizeof(err)), 0);
	assert_true(nw_measurement_read_traces(r, dir, err, sizeof(err)) >= 0);
	nw_measurement_free(r);

	/* Another checkpoint with more samples: one pack again, the newer one. */
	add_path(m->threads[1].trees[0].cct, (uint64_t[]){ IP_MAIN }, 1, 0,
		 (uint64_t[]){ 1, 1, 0, 0 });
	m->threads[1].samples++;
	m->run.samples++;
	if (nw_measurement_write_pack(m, &x, 1, dir, NW_WRITE_REPLACE, NULL, err, sizeof(err)))
		fail_msg("nw_measurement_write_pack: %s", err);
	assert_int_equal(count_entries(dir, "checkpoint-"), 1);
	assert_int_equal(count_entries(dir, ".manifest"), 0);
	r = read_dir(dir);
	assert_same_model(m, r);
	assert_int_equal(r->run.samples, m->run.samples);
	nw_measurement_free(r);
	index_order = false;

	/* A pack cut short is refused, naming it; the manifest still names it. */
	{
		char cut[2 * PATH_MAX];
		DIR *d = opendir(dir);
		struct dirent *e;
		int fd;

		assert_non_null(d);
		while ((e = readdir(d)) && strncmp(e->d_name, "checkpoint-", 11))
			;
		assert_non_null(e);
		snprintf(cut, sizeof(cut), "%s/%s", dir, e->d_name);
		closedir(d);
		fd = open(cut, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, 100), 0);
		close(fd);
		r = NULL;
		assert_int_equal(nw_measurement_read(dir, &r, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "corrupt pack"));
		assert_null(r);
	}

	/* The end of the run: a directory of files in preorder again. */
	m->run.written = NW_RUN_END;
	write_dir(m, dir, NW_WRITE_REPLACE);
	assert_int_equal(count_entries(dir, "checkpoint-"), 0);
	r = read_dir(dir);
	assert_null(r->run.pack);
	assert_same_model(m, r);
	nw_measurement_free(r);
	nw_measurement_free(m);
	remove_tree(base);
}

/* Every tree of @m tracks its changes, none so far (after a write). */
static void clear_changes(struct nw_measurement *m)
{
	for (uint32_t i = 0; i < m->nthreads; i++)
		for (uint32_t t = 0; t < m->threads[i].ntrees; t++) {
			assert_int_equal(nw_cct_track_changes(m->threads[i].trees[t].cct), 0);
			nw_cct_clear_changes(m->threads[i].trees[t].cct);
		}
}

/* @n more samples of app's tree of epoch 0, node @node, in its trace. */
static void trace_samples(struct nw_mthread *th, uint32_t node, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct nw_trace_event ev = { .time = th->trace->t0 + 1000 * (th->trace->n + 1),
					     .value = 1000, .node = node, .epoch = 0 };

		assert_int_equal(nw_trace_add(th->trace, &ev), 0);
	}
}

static void write_checkpoint(const struct nw_measurement *m, const char *dir,
			     enum nw_write_mode mode, struct nw_journal *j)
{
	char err[512] = "";

	if (nw_measurement_write_pack(m, NULL, 0, dir, mode, j, err, sizeof(err)))
		fail_msg("nw_measurement_write_pack: %s", err);
}

/* @dir read back equals @m, trees and traces. */
static void assert_reads_back(const struct nw_measurement *m, const char *dir)
{
	struct nw_measurement *r = read_dir(dir);
	char err[512] = "";

	assert_same_model(m, r);
	assert_int_equal(nw_measurement_read_traces(r, dir, err, sizeof(err)), 1);
	assert_int_equal(r->threads[0].trace->n, m->threads[0].trace->n);
	assert_int_equal(r->threads[0].trace->size, m->threads[0].trace->size);
	assert_memory_equal(r->threads[0].trace->bytes, m->threads[0].trace->bytes,
			    m->threads[0].trace->size);
	nw_measurement_free(r);
}

/*
 * Checkpoints after the first append to a journal what changed (nodes
 * added, metrics changed, trace events added, a new thread) and read back
 * as the model; bytes a failed append left are not read, a journal cut
 * short is refused, and a journal that outgrows the pack gives way to a
 * new pack.
 */
static void test_journal(void **state)
{
	char base[PATH_MAX], dir[PATH_MAX], err[512] = "";
	struct nw_measurement *m = sample_model(), *r;
	struct nw_mthread *app = &m->threads[0], *th;
	struct nw_journal j;
	uint32_t leaf, segments;
	int fd;

	tmp_dirs(base, dir);
	index_order = true;
	m->run.written = NW_RUN_CHECKPOINT;
	m->run.exit_status = -1;
	clear_changes(m);
	app->trace = calloc(1, sizeof(*app->trace));
	assert_non_null(app->trace);
	nw_trace_init(app->trace, 1000000, 1000);
	app->trace_file = xstrdup("app-10-10.trace");
	trace_samples(app, 2, 5);
	nw_journal_init(&j, true);
	write_checkpoint(m, dir, NW_WRITE_NEW, &j);
	assert_int_equal(count_entries(dir, "checkpoint-"), 1);
	assert_int_equal(j.nsegments, 0);
	clear_changes(m);

	/* New nodes, a node's metrics changed, events, a thread: one segment. */
	add_path(app->trees[1].cct, (uint64_t[]){ IP_MAIN, IP_A, IP_F }, 3, 0,
		 (uint64_t[]){ 1, 1000, 0, 0 });
	add_path(app->trees[0].cct, (uint64_t[]){ IP_MAIN }, 1, 0, (uint64_t[]){ 2, 2000, 0, 0 });
	trace_samples(app, 1, 3);
	th = add_thread(m, 20, 21, "late", 2, 1);
	add_path(tree_of(th, 2), (uint64_t[]){ IP_MAIN }, 1, 0, (uint64_t[]){ 1, 10, 0, 0 });
	m->run.samples = 0;
	for (uint32_t i = 0; i < m->nthreads; i++)
		if (m->threads[i].file)
			count_samples(m, &m->threads[i]);
	write_checkpoint(m, dir, NW_WRITE_REPLACE, &j);
	assert_int_equal(count_entries(dir, "checkpoint-"), 2);
	assert_int_equal(j.nsegments, 1);
	r = read_dir(dir);
	assert_non_null(r->run.journal);
	assert_int_equal(r->run.nsegments, 1);
	nw_measurement_free(r);
	assert_reads_back(m, dir);
	clear_changes(m);

	/* Bytes of an append that did not finish are not read, and go at the next. */
	fd = open(dir, O_RDONLY);
	assert_true(fd >= 0);
	close(fd);
	{
		char path[2 * PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, j.file);
		fd = open(path, O_WRONLY | O_APPEND);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "NWPACK01 and no more", 20), 20);
		close(fd);
		assert_reads_back(m, dir);
		leaf = nw_cct_find(app->trees[0].cct, NW_CCT_ROOT, IP_MAIN);
		assert_int_not_equal(leaf, NW_CCT_NONE);
		nw_cct_metrics(app->trees[0].cct, leaf)[0] += 5;
		nw_cct_mark_changed(app->trees[0].cct, leaf);
		app->samples += 5;
		m->run.samples += 5;
		/*
		 * The segment before left symbols.json to the pack (the same
		 * symbols; read back above); this one has a symbol more.
		 */
		add_symbol(m->symtab, LIBA, 0x4020, "b_func", NULL, 0, false);
		nw_symtab_sort(m->symtab);
		write_checkpoint(m, dir, NW_WRITE_REPLACE, &j);
		assert_int_equal(j.nsegments, 2);
		assert_reads_back(m, dir);
		clear_changes(m);

		/* A journal cut short of its segments is refused, naming it. */
		fd = open(path, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, (off_t)j.segments[0] + 10), 0);
		close(fd);
		r = NULL;
		assert_int_equal(nw_measurement_read(dir, &r, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "cut short"));
		assert_non_null(strstr(err, j.file));
		assert_null(r);
	}

	/* The journal refused, the next write is a whole pack again and reads back. */
	nw_journal_fini(&j);
	write_checkpoint(m, dir, NW_WRITE_REPLACE, &j);
	assert_int_equal(count_entries(dir, "checkpoint-"), 1);
	assert_reads_back(m, dir);
	clear_changes(m);

	/* Segments until the journal outgrows the pack: then a pack alone. */
	segments = 0;
	for (int i = 0; i < 64 && (i == 0 || j.nsegments); i++) {
		add_path(app->trees[0].cct, (uint64_t[]){ IP_MAIN, IP_F, 0x1000 + i }, 3, 0,
			 (uint64_t[]){ 1, 1, 0, 0 });
		app->samples++;
		m->run.samples++;
		trace_samples(app, 1, 1);
		write_checkpoint(m, dir, NW_WRITE_REPLACE, &j);
		if (j.nsegments > segments)
			segments = j.nsegments;
		clear_changes(m);
	}
	assert_true(segments >= 1);
	assert_int_equal(j.nsegments, 0);
	assert_true(j.pack_bytes > 0);
	assert_int_equal(count_entries(dir, "checkpoint-"), 1);
	assert_reads_back(m, dir);

	nw_journal_fini(&j);
	index_order = false;
	nw_measurement_free(m);
	remove_tree(base);
}

static void test_thread_file_name(void **state)
{
	char buf[64];

	nw_thread_file_name(buf, sizeof(buf), "app", 10, 11);
	assert_string_equal(buf, "app-10-11.csprof");
	/* '/', spaces and control characters made '_'. */
	nw_thread_file_name(buf, sizeof(buf), "a/b c\td\x7f", 1, 2);
	assert_string_equal(buf, "a_b_c_d_-1-2.csprof");
	/* No name: "thread". */
	nw_thread_file_name(buf, sizeof(buf), "", 1, 2);
	assert_string_equal(buf, "thread-1-2.csprof");
	nw_thread_file_name(buf, sizeof(buf), NULL, 4294967295u, 0);
	assert_string_equal(buf, "thread-4294967295-0.csprof");
	/* At most NW_COMM_MAX characters of the name. */
	nw_thread_file_name(buf, sizeof(buf), "abcdefghijklmnopqrstuvwxyz", 1, 1);
	assert_string_equal(buf, "abcdefghijklmnop-1-1.csprof");
	/* Cut to the buffer. */
	nw_thread_file_name(buf, 8, "app", 10, 11);
	assert_string_equal(buf, "app-10-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_csprof_files),
		cmocka_unit_test(test_write_new),
		cmocka_unit_test(test_write_replace),
		cmocka_unit_test(test_write_fails),
		cmocka_unit_test(test_write_read_only),
		cmocka_unit_test(test_pack),
		cmocka_unit_test(test_journal),
		cmocka_unit_test(test_thread_file_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
