/* SPDX-License-Identifier: MIT */
/*
 * Sections joined with samples (sections/join.h): the section tree and
 * which samples fall in which section (interval bounds start <= t < end,
 * nesting, filters, weights), the --sections table, and --by-section's
 * split of a small measurement written here and read back into a model
 * (nw_sections_split() feeding nw_stacks_build(): pseudo-frames, totals
 * kept, samples outside sections left in place, a caller frame turned leaf
 * still named).
 */
#include <errno.h>
#include <limits.h>
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

#include "format/reader.h"
#include "format/writer.h"
#include "model/measurement.h"
#include "report/stacks.h"
#include "sections/join.h"
#include "sections/record.h"
#include "sections/seclog.h"

/* ---- building a log and sample times in memory ---- */

static void add_name(struct nw_seclog *log, const char *name, const char *file, uint32_t line)
{
	log->names = realloc(log->names, (log->nnames + 1) * sizeof(*log->names));
	assert_non_null(log->names);
	log->names[log->nnames].name = strdup(name);
	log->names[log->nnames].file = strdup(file);
	log->names[log->nnames].line = line;
	log->cap_names = ++log->nnames;
}

static void add_thread(struct nw_seclog *log, uint32_t pid, uint32_t tid,
		       const struct nw_secinterval *v, size_t n)
{
	struct nw_secthread *th;

	log->threads = realloc(log->threads, (log->nthreads + 1) * sizeof(*log->threads));
	assert_non_null(log->threads);
	th = &log->threads[log->nthreads];
	log->cap_threads = ++log->nthreads;
	th->pid = pid;
	th->tid = tid;
	th->v = malloc(n * sizeof(*v));
	memcpy(th->v, v, n * sizeof(*v));
	th->n = th->cap = n;
	log->nintervals += n;
}

static void add_times(struct nw_stimes *st, uint32_t pid, uint32_t tid, const uint64_t *times,
		      size_t n, uint32_t node, uint64_t period)
{
	struct nw_stimes_thread *t;

	st->threads = realloc(st->threads, (st->nthreads + 1) * sizeof(*st->threads));
	assert_non_null(st->threads);
	t = &st->threads[st->nthreads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->v = calloc(n, sizeof(*t->v));
	t->n = n;
	for (size_t i = 0; i < n; i++)
		t->v[i] = (struct nw_stime){ .time = times[i], .period = period * (i + 1),
					     .node = node };
}

enum { A, B, C };

/*
 * Thread (1, 1): A [100, 1000) with B [200, 400), B [500, 600) and C
 * [700, 800) (open at the end) inside; A again [2000, 2100).
 */
static const struct nw_secinterval t11[] = {
	{ 100, 1000, A, 0, 0 }, { 200, 400, B, 1, 0 },	    { 500, 600, B, 1, 0 },
	{ 700, 800, C, 1, NW_SECLOG_OPEN }, { 2000, 2100, A, 0, 0 },
};
/* Samples of (1, 1) and where each falls. */
static const uint64_t s11[] = { 50, 100, 199, 200, 399, 400, 550, 750, 1000, 2050 };

static struct nw_sections *fixture(void)
{
	struct nw_sections *s = calloc(1, sizeof(*s));

	s->log = nw_seclog_new();
	s->times = calloc(1, sizeof(*s->times));
	add_name(s->log, "A", "a.c", 1);
	add_name(s->log, "B", "a.c", 2);
	add_name(s->log, "C", "a.c", 3);
	add_thread(s->log, 1, 1, t11, 5);
	add_thread(s->log, 1, 2, (struct nw_secinterval[]){ { 0, 10000, B, 0, 0 } }, 1);
	add_times(s->times, 1, 1, s11, 10, 1, 10);
	add_times(s->times, 1, 2, (uint64_t[]){ 5, 6 }, 2, 1, 1);
	/* A thread with samples but no sections at all. */
	add_times(s->times, 1, 3, (uint64_t[]){ 7 }, 1, 1, 1);
	return s;
}

/*
 * The model the join names threads and metrics from: one event,
 * "cpu-clock", with its samples (metric 0) and its period sum (metric 1),
 * and threads (1, 1) "main" and, with @worker, (1, 2) "worker".
 */
static struct nw_measurement *model(bool worker)
{
	struct nw_measurement *m = nw_measurement_new();
	struct nw_run *r;

	assert_non_null(m);
	r = &m->run;
	r->nevents = 1;
	r->events = calloc(1, sizeof(*r->events));
	assert_non_null(r->events);
	r->events[0] = (struct nw_event_info){ strdup("cpu-clock"), 1, 0, true, 999 };
	assert_non_null(r->events[0].name);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 0), 0);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 0), 1);
	assert_non_null(nw_measurement_add_thread(m, 1, 1, "main", NULL));
	if (worker)
		assert_non_null(nw_measurement_add_thread(m, 1, 2, "worker", NULL));
	return m;
}

static const struct nw_secnode *child(const struct nw_sectree *t, uint32_t parent, uint32_t name)
{
	for (uint32_t c = t->nodes[parent].first_child; c != UINT32_MAX; c = t->nodes[c].next_sibling)
		if (t->nodes[c].name == name)
			return &t->nodes[c];
	return NULL;
}

static void test_tree(void **state)
{
	struct nw_sections *s = fixture();
	struct nw_measurement *p = model(true);
	struct nw_filter only11 = { .tid = 1, .pid = -1 };
	struct nw_filter workers = { .tid = -1, .pid = -1, .comm = "worker" };
	struct nw_sectree *t;
	const struct nw_secnode *a, *b, *c;

	assert_int_equal(nw_sectree_build(s, p, &only11, 0, &t), 0);
	assert_int_equal(t->nthreads, 1);
	assert_int_equal(t->nintervals, 5);
	assert_true(t->joined);
	a = child(t, NW_SECNODE_ROOT, A);
	assert_non_null(a);
	b = child(t, (uint32_t)(a - t->nodes), B);
	c = child(t, (uint32_t)(a - t->nodes), C);
	assert_non_null(b);
	assert_non_null(c);
	assert_null(child(t, NW_SECNODE_ROOT, B));
	assert_int_equal(a->count, 2);
	assert_int_equal(a->total_ns, 1000);
	assert_int_equal(a->self_ns, 600);
	assert_int_equal(a->min_ns, 100);
	assert_int_equal(a->max_ns, 900);
	assert_int_equal(b->count, 2);
	assert_int_equal(b->total_ns, 300);
	assert_int_equal(c->open, 1);
	assert_int_equal(a->depth, 1);
	assert_int_equal(b->depth, 2);
	/* start <= t < end: 100 and 400 in, 1000 out. */
	assert_int_equal(t->total_weight, 10);
	assert_int_equal(a->weight, 8);
	assert_int_equal(a->self_weight, 4); /* 100, 199, 400, 2050 */
	assert_int_equal(b->weight, 3);      /* 200, 399, 550 */
	assert_int_equal(c->weight, 1);      /* 750 */
	assert_int_equal(t->nodes[0].self_weight, 2); /* 50, 1000 */
	nw_sectree_free(t);

	/* Weighed by period (metric 1): sample i weighs 10 * (i + 1). */
	assert_int_equal(nw_sectree_build(s, p, &only11, 1, &t), 0);
	b = child(t, (uint32_t)(child(t, 0, A) - t->nodes), B);
	assert_int_equal(b->weight, 40 + 50 + 70);
	assert_int_equal(t->total_weight, 550);
	nw_sectree_free(t);

	/* By name: the worker's B at the top; its samples inside it. */
	assert_int_equal(nw_sectree_build(s, p, &workers, 0, &t), 0);
	assert_int_equal(t->nthreads, 1);
	assert_null(child(t, 0, A));
	assert_int_equal(child(t, 0, B)->weight, 2);
	nw_sectree_free(t);

	/* All threads: the one without intervals counts at the root, unmatched. */
	assert_int_equal(nw_sectree_build(s, p, NULL, 0, &t), 0);
	assert_int_equal(t->nthreads, 2);
	assert_int_equal(t->total_weight, 13);
	assert_int_equal(t->unmatched, 1);
	assert_int_equal(t->nodes[0].self_weight, 3);
	nw_sectree_free(t);
	nw_measurement_free(p);
	nw_sections_free(s);
}

static void test_view(void **state)
{
	struct nw_sections *s = fixture();
	struct nw_measurement *p = model(false);
	struct nw_filter only11 = { .tid = 1, .pid = -1 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_int_equal(nw_sections_view(f, s, p, &only11, 0), 0);
	fclose(f);
	/*
	 * The metric named by its descriptor.  Children indented under A, the
	 * biggest first; the samples outside last.
	 */
	assert_non_null(strstr(text, "Joined with cpu-clock:samples: 10 in all, 80.0% inside "
				     "sections"));
	assert_non_null(strstr(text, "  80.0%  40.0%  A\n"));
	assert_non_null(strstr(text, "  30.0%  30.0%    B\n"));
	assert_non_null(strstr(text, "  10.0%  10.0%    C  (1 open at the end)\n"));
	assert_non_null(strstr(text, "(outside any section)"));
	assert_true(strstr(text, "    B\n") < strstr(text, "    C  ("));
	assert_non_null(strstr(text, "1.000 us"));
	free(text);
	nw_measurement_free(p);
	nw_sections_free(s);
}

/* ---- --by-section on a measurement written here ---- */

#define MAPPED 0x400000ull
#define IP_MAIN 0x401010ull /* return address in main (a caller frame) */
#define IP_F 0x401100ull    /* PC in f */
#define IP_G 0x401200ull    /* PC in g */

static struct nw_symframe *frame(const char *fn)
{
	struct nw_symframe *f = calloc(1, sizeof(*f));

	f->function = strdup(fn);
	f->file = strdup("prog.c");
	f->decl_file = strdup("prog.c");
	f->line = f->decl_line = 5;
	return f;
}

static void u32(FILE *f, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		fputc((int)((v >> (8 * i)) & 0xff), f);
}

static void u64(FILE *f, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		fputc((int)((v >> (8 * i)) & 0xff), f);
}

/*
 * The measurement: thread (9, 9) with one tree: main -> f (4 samples),
 * main -> g (2), main itself (1).  Its log: section "outer" [100, 500)
 * holding "inner" [200, 300).  Samples (time: node): f at 50, 250, 600,
 * 700; g at 260, 800; main at 400.  The model is written with the
 * measurement writer into @dir (which must not exist yet), the sections
 * files by hand.
 */
static void write_measurement(const char *dir)
{
	char path[PATH_MAX + 64], err[512] = "";
	struct nw_measurement *mm = nw_measurement_new();
	struct nw_cct *cct = nw_cct_new(2);
	struct nw_frame pf[] = { { IP_F, 0 }, { IP_MAIN, 0 } }, pg[] = { { IP_G, 0 }, { IP_MAIN, 0 } };
	uint32_t nf = nw_cct_insert(cct, pf, 2), ng = nw_cct_insert(cct, pg, 2);
	uint32_t nmain = nw_cct_find(cct, NW_CCT_ROOT, IP_MAIN);
	struct nw_map map = { .start = MAPPED, .end = MAPPED + 0x10000, .pgoff = 0,
			      .vaddr = MAPPED, .module = 0 };
	char *const argv[] = { "prog" };
	struct nw_mthread *th;
	const struct { uint64_t t; uint32_t *node; } smp[] = {
		{ 50, &nf }, { 250, &nf }, { 260, &ng }, { 400, &nmain }, { 600, &nf },
		{ 700, &nf }, { 800, &ng },
	};
	FILE *f;
	int mi;

	assert_non_null(mm);
	assert_non_null(cct);
	nw_cct_metrics(cct, nf)[0] = 4;
	nw_cct_metrics(cct, nf)[1] = 4000;
	nw_cct_metrics(cct, ng)[0] = 2;
	nw_cct_metrics(cct, ng)[1] = 2000;
	nw_cct_metrics(cct, nmain)[0] = 1;
	nw_cct_metrics(cct, nmain)[1] = 1000;

	mm->run.narwhal_version = strdup("0");
	mm->run.arch = strdup("x86_64");
	mm->run.call_graph = strdup("fp");
	assert_int_equal(nw_run_set_argv(&mm->run, 1, argv), 0);
	mm->run.nevents = 1;
	mm->run.events = calloc(1, sizeof(*mm->run.events));
	assert_non_null(mm->run.events);
	mm->run.events[0] = (struct nw_event_info){ strdup("cpu-clock"), 1, 0, true, 999 };
	mm->run.exit_status = 0;
	mm->run.samples = 7;
	assert_int_equal(nw_measurement_add_metric(mm, "cpu-clock", NW_METRIC_SAMPLES, 0), 0);
	assert_int_equal(nw_measurement_add_metric(mm, "cpu-clock", NW_METRIC_PERIOD, 0), 1);
	mi = nw_module_intern(mm->modules, "/bin/prog", NULL, 0);
	assert_int_equal(mi, 0);
	assert_int_equal(nw_measurement_add_epoch(mm, nw_epoch_new(&map, 1, 0)), 0);
	assert_int_equal(nw_measurement_add_process(mm, 9, 1, "prog"), 0);
	th = nw_measurement_add_thread(mm, 9, 9, "prog", "prog-9-9.csprof");
	assert_non_null(th);
	th->samples = 7;
	th->first_epoch = 0;
	th->nepochs = 1;
	assert_int_equal(nw_mthread_add_tree(th, 0, cct), 0);
	/* Symbols as the recorder resolves them: main only at its caller address. */
	assert_int_equal(nw_symtab_add(mm->symtab, (uint32_t)mi, IP_MAIN - 1, frame("main"), 1), 0);
	assert_int_equal(nw_symtab_add(mm->symtab, (uint32_t)mi, IP_F, frame("f"), 1), 0);
	assert_int_equal(nw_symtab_add(mm->symtab, (uint32_t)mi, IP_G, frame("g"), 1), 0);
	nw_symtab_sort(mm->symtab);
	/* The thread's trace, node ids as in memory: the writer maps them to the file's. */
	th->trace = calloc(1, sizeof(*th->trace));
	assert_non_null(th->trace);
	nw_trace_init(th->trace, 0, 1);
	for (size_t i = 0; i < 7; i++) {
		struct nw_trace_event ev = { .time = smp[i].t, .value = 1000, .node = *smp[i].node,
					     .kind = NW_TRACE_SAMPLE };

		assert_int_equal(nw_trace_add(th->trace, &ev), 0);
	}
	th->trace_file = strdup("prog-9-9.trace");
	assert_non_null(th->trace_file);
	if (nw_measurement_write(mm, NULL, 0, dir, NW_WRITE_NEW, err, sizeof(err)))
		fail_msg("nw_measurement_write: %s", err);

	snprintf(path, sizeof(path), "%s/sections", dir);
	assert_int_equal(mkdir(path, 0777), 0);
	/* The log: START, two NAMEs, one INTERVALS block, END. */
	snprintf(path, sizeof(path), "%s/sections/sections-9.bin", dir);
	f = fopen(path, "w");
	u32(f, NW_SECLOG_START);
	u32(f, NW_SECLOG_START_SIZE);
	fwrite(NW_SECLOG_MAGIC, 1, 8, f);
	u32(f, NW_SECLOG_VERSION);
	u32(f, 9);
	u64(f, 50);
	u32(f, 0);
	u32(f, 128);
	u32(f, NW_SECLOG_NAME);
	u32(f, NW_SECLOG_NAME_FIXED + 5 + 6);
	u32(f, 0);
	u32(f, 11);
	u32(f, 5);
	u32(f, 6);
	fwrite("outerprog.c", 1, 11, f);
	u32(f, NW_SECLOG_NAME);
	u32(f, NW_SECLOG_NAME_FIXED + 5);
	u32(f, 1);
	u32(f, 12);
	u32(f, 5);
	u32(f, 0);
	fwrite("inner", 1, 5, f);
	/* inner [200, 300) depth 1, then outer [100, 500) depth 0 (exit order) */
	u32(f, NW_SECLOG_INTERVALS);
	u32(f, NW_SECLOG_INTERVALS_FIXED + 12);
	u32(f, 9);
	u32(f, 2);
	u64(f, 200);
	fwrite("\x01\x01\x00\x00\x64", 1, 5, f);              /* id 1, depth 1, +0, 100 */
	fwrite("\x00\x00\x00\xc7\x01\x90\x03", 1, 7, f);      /* id 0, depth 0, -100, 400 */
	fclose(f);
	nw_measurement_free(mm);
}

/* The node of frame @name below @parent in the symbolic tree of @s, or NW_CCT_NONE. */
static uint32_t find(const struct nw_stacks *s, uint32_t parent, const char *name)
{
	const struct nw_cct *t = s->tree;

	for (uint32_t c = t->nodes[parent].first_child; c != NW_CCT_NONE; c = t->nodes[c].next_sibling)
		if (strcmp(s->frames.v[t->nodes[c].ip].name, name) == 0)
			return c;
	return NW_CCT_NONE;
}

static uint64_t incl(const struct nw_cct *t, uint32_t node, unsigned m)
{
	uint64_t sum = nw_cct_metrics(t, node)[m];

	for (uint32_t c = t->nodes[node].first_child; c != NW_CCT_NONE; c = t->nodes[c].next_sibling)
		sum += incl(t, c, m);
	return sum;
}

/*
 * The symbolic stacks of @m split by the sections @sec (NULL: none), as
 * --by-section builds them.
 */
static struct nw_stacks *split_stacks(const struct nw_measurement *m,
				      const struct nw_sections *sec, bool per_thread)
{
	struct nw_stacks *st = nw_stacks_new(m, m->nmetrics);
	struct nw_split *split = NULL;
	struct nw_stacks_opts o = { .per_thread = per_thread };

	assert_non_null(st);
	if (sec)
		assert_int_equal(nw_sections_split(sec, m, &st->frames, &split), 0);
	o.split = split;
	assert_int_equal(nw_stacks_build(st, &o), 0);
	nw_split_free(split);
	return st;
}

static void test_split(void **state)
{
	char base[] = "/tmp/narwhal-test-sections.XXXXXX", dir[PATH_MAX];
	struct nw_sections *s = NULL;
	struct nw_measurement *m = NULL;
	struct nw_stacks *st;
	const struct nw_cct *t;
	const struct nw_func *fn;
	char err[512] = "";
	uint32_t outer, inner, mn, top;

	assert_non_null(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/m", base);
	write_measurement(dir);
	if (nw_measurement_read(dir, &m, err, sizeof(err)))
		fail_msg("nw_measurement_read: %s", err);
	assert_int_equal(nw_measurement_read_traces(m, dir, err, sizeof(err)), 1);
	assert_int_equal(nw_sections_load(dir, m, &s, err, sizeof(err)), 0);
	assert_non_null(s->times);
	st = split_stacks(m, s, false);
	t = st->tree;
	/* Totals unchanged. */
	assert_int_equal(incl(t, NW_CCT_ROOT, 0), 7);
	assert_int_equal(incl(t, NW_CCT_ROOT, 1), 7000);
	/* [section outer]: main at 400; inside it [section inner]: f 250, g 260. */
	outer = find(st, NW_CCT_ROOT, "[section outer]");
	assert_int_not_equal(outer, NW_CCT_NONE);
	assert_int_equal(find(st, NW_CCT_ROOT, "[section inner]"), NW_CCT_NONE);
	inner = find(st, outer, "[section inner]");
	assert_int_not_equal(inner, NW_CCT_NONE);
	assert_int_equal(incl(t, outer, 0), 3);
	assert_int_equal(incl(t, inner, 0), 2);
	assert_int_equal(incl(t, inner, 1), 2000);
	mn = find(st, inner, "main");
	assert_int_not_equal(mn, NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(t, find(st, mn, "f"))[0], 1);
	assert_int_equal(nw_cct_metrics(t, find(st, mn, "g"))[0], 1);
	/* main's own sample, a leaf below outer: still named main, not prog+0x... */
	mn = find(st, outer, "main");
	assert_int_not_equal(mn, NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(t, mn)[0], 1);
	assert_int_equal(t->nodes[mn].first_child, NW_CCT_NONE);
	/* Outside any section: f at 50, 600 and 700, g at 800, where they were. */
	mn = find(st, NW_CCT_ROOT, "main");
	assert_int_not_equal(mn, NW_CCT_NONE);
	assert_int_equal(incl(t, mn, 0), 4);
	assert_int_equal(nw_cct_metrics(t, mn)[0], 0);
	assert_int_equal(nw_cct_metrics(t, find(st, mn, "f"))[0], 3);
	/* The pseudo-frames say where the section is. */
	fn = &st->frames.v[t->nodes[outer].ip];
	assert_int_equal(fn->kind, NW_FRAME_SECTION);
	assert_string_equal(fn->file, "prog.c");
	assert_int_equal(fn->line, 11);
	assert_string_equal(fn->module, NW_FRAMES_SECTION_MODULE);
	nw_stacks_free(st);

	/* Per thread: the same split below the thread's frame. */
	st = split_stacks(m, s, true);
	t = st->tree;
	top = find(st, NW_CCT_ROOT, "prog-9");
	assert_int_not_equal(top, NW_CCT_NONE);
	outer = find(st, top, "[section outer]");
	assert_int_not_equal(outer, NW_CCT_NONE);
	assert_int_equal(incl(t, outer, 0), 3);
	assert_int_equal(incl(t, find(st, outer, "[section inner]"), 1), 2000);
	assert_int_equal(incl(t, top, 0), 7);
	nw_stacks_free(st);

	/* Without the split: the stacks the split starts from. */
	st = split_stacks(m, NULL, false);
	t = st->tree;
	assert_int_equal(find(st, NW_CCT_ROOT, "[section outer]"), NW_CCT_NONE);
	mn = find(st, NW_CCT_ROOT, "main");
	assert_int_equal(incl(t, mn, 0), 7);
	assert_int_equal(nw_cct_metrics(t, mn)[0], 1);
	assert_int_equal(nw_cct_metrics(t, find(st, mn, "f"))[0], 4);
	nw_stacks_free(st);

	nw_measurement_free(m);
	nw_sections_free(s);
	nw_seclog_stage_remove(base);
}

static void test_no_sections(void **state)
{
	char dir[] = "/tmp/narwhal-test-nosections.XXXXXX", err[512] = "";
	struct nw_sections *s = NULL;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(nw_sections_load(dir, NULL, &s, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no instrumented sections"));
	assert_non_null(strstr(err, dir));
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_view),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_no_sections),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
