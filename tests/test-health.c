/* SPDX-License-Identifier: MIT */
/*
 * Stack health on hand-built profiles: complete, truncated and stopped
 * samples, the depth limit from the manifest or the mode's default, inline
 * chains counted as one physical frame through their shared sp tag, the
 * table of stops by module with its most frequent outermost function, the
 * remedies of each mode, and the one-line summary over a measurement
 * directory written with the format writers.
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
#include "model/symtab.h"
#include "report/health.h"
#include "report/profile.h"

#define APP "/home/me/app"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

/* Which module a test frame name belongs to. */
static const char *module_of(const char *name)
{
	static const char *const libc[] = {"_start",
					   "__libc_start_main_impl",
					   "__libc_start_call_main",
					   "msort_with_tmp",
					   "qsort_r",
					   "clone3",
					   "__GI___clone3",
					   "start_thread"};

	if (!strcmp(name, "[unknown]"))
		return NULL;
	for (size_t i = 0; i < sizeof(libc) / sizeof(libc[0]); i++)
		if (!strcmp(name, libc[i]))
			return LIBC;
	return APP;
}

/* Adds @samples at @path ("a;b;c", outermost first) of @th, with a period that must not count. */
static void add(struct nw_profile *p, struct nw_prof_thread *th, const char *path, uint64_t samples)
{
	char buf[8192], *save = NULL;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
		int64_t f = nw_profile_intern(p, s, NULL, 0, module_of(s));

		assert_true(f >= 0);
		n = nw_cct_child(th->tree, n, (uint64_t)f, 0);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	nw_cct_metrics(th->tree, n)[0] += samples;
	nw_cct_metrics(th->tree, n)[1] += samples * 1000003;
	th->samples += samples;
}

/* "rec;rec;...;rec" with @n frames. */
static char *recs(unsigned n)
{
	char *s = calloc(n, 4);

	assert_non_null(s);
	for (unsigned i = 0; i < n; i++)
		strcat(s, i ? ";rec" : "rec");
	return s;
}

static struct nw_profile *new_profile(const char *call_graph, uint32_t stack_size,
				      uint32_t max_stack)
{
	struct nw_profile *p = nw_profile_new(2);

	assert_non_null(p);
	free(p->metric_names[0]);
	free(p->metric_names[1]);
	p->metric_names[0] = xstrdup("cpu-clock:samples");
	p->metric_names[1] = xstrdup("cpu-clock:period");
	p->manifest = calloc(1, sizeof(*p->manifest));
	assert_non_null(p->manifest);
	p->manifest->call_graph = xstrdup(call_graph);
	p->manifest->stack_size = stack_size;
	p->manifest->max_stack = max_stack;
	return p;
}

/*
 * fp mode, no max_stack in the manifest (127):
 *   thread 10: complete 40 + 10, stopped in libc 20 + 5, in the app 8 + 1,
 *              without a module 2, truncated 3 (127 frames)
 *   thread 11: complete 10 + 1
 */
static struct nw_profile *fp_profile(uint32_t max_stack)
{
	struct nw_profile *p = new_profile("fp", 0, max_stack);
	struct nw_prof_thread *th;
	char *r;

	th = nw_profile_add_thread(p, 10, 10, "app");
	assert_non_null(th);
	add(p, th, "_start;__libc_start_main_impl;__libc_start_call_main;main;work", 40);
	add(p, th, "__libc_start_call_main;main;work", 10);
	add(p, th, "msort_with_tmp;compare", 20);
	add(p, th, "qsort_r;msort_with_tmp;compare", 5);
	add(p, th, "compare", 8);
	add(p, th, "[unknown];compare", 2);
	r = recs(127);
	add(p, th, r, 3);
	r[strlen(r) - 4] = '\0';
	add(p, th, r, 1); /* 126 frames: below the limit */
	free(r);
	th = nw_profile_add_thread(p, 10, 11, "worker");
	assert_non_null(th);
	add(p, th, "clone3;start_thread;worker", 10);
	add(p, th, "__GI___clone3;start_thread;worker", 1);
	return p;
}

static void test_entries(void **state)
{
	static const char *const yes[] = {"_start",
					  "__libc_start_main",
					  "__libc_start_main_impl",
					  "__libc_start_call_main",
					  "main",
					  "start_thread",
					  "clone",
					  "clone3",
					  "__clone",
					  "__clone3",
					  "thread_start",
					  "__GI___clone3",
					  "__GI___clone"};
	static const char *const no[] = {"mainloop", "_start_x", "start",	"__GI_",
					 "",	     "Main",	 "__libc_start"};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!nw_health_is_entry(yes[i]))
			fail_msg("%s is a thread entry", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (nw_health_is_entry(no[i]))
			fail_msg("%s is not a thread entry", no[i]);
	assert_false(nw_health_is_entry(NULL));
}

static void test_fp_classify(void **state)
{
	struct nw_profile *p = fp_profile(0);
	struct nw_health *h = NULL;
	char buf[256];

	assert_int_equal(nw_health_classify(p, NULL, &h), 0);
	assert_false(h->dwarf);
	assert_int_equal(h->max_stack, NW_HEALTH_FP_MAX_STACK);
	assert_int_equal(h->samples, 100);
	assert_int_equal(h->complete, 61);
	assert_int_equal(h->truncated, 3);
	assert_int_equal(h->stopped, 36);
	assert_int_equal(h->nstops, 3);
	/* Most samples first. */
	assert_string_equal(h->stops[0].module, LIBC);
	assert_int_equal(h->stops[0].samples, 25);
	assert_string_equal(h->stops[0].func, "msort_with_tmp");
	assert_int_equal(h->stops[0].func_samples, 20);
	assert_true(h->stops[0].system);
	assert_string_equal(h->stops[1].module, APP);
	assert_int_equal(h->stops[1].samples, 9);
	assert_string_equal(h->stops[1].func, "compare");
	assert_false(h->stops[1].system);
	assert_null(h->stops[2].module);
	assert_int_equal(h->stops[2].samples, 2);
	assert_string_equal(h->stops[2].func, "[unknown]");

	/* fp remedies: dwarf for libraries, frame pointers for the program. */
	nw_health_remedy(h, &h->stops[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "record with --call-graph dwarf"));
	nw_health_remedy(h, &h->stops[1], buf, sizeof(buf));
	assert_non_null(strstr(buf, "build with -fno-omit-frame-pointer"));
	nw_health_remedy(h, &h->stops[2], buf, sizeof(buf));
	assert_non_null(strstr(buf, "record with --call-graph dwarf"));
	nw_health_free(h);
	nw_profile_free(p);
}

static void test_filter_and_limit(void **state)
{
	struct nw_profile *p = fp_profile(126);
	struct nw_filter worker = {.tid = 11};
	struct nw_health *h = NULL;

	/* The manifest's limit: the 126-frame path is truncated too. */
	assert_int_equal(nw_health_classify(p, NULL, &h), 0);
	assert_int_equal(h->max_stack, 126);
	assert_int_equal(h->truncated, 4);
	assert_int_equal(h->stopped, 35);
	assert_int_equal(h->stops[1].samples, 8);
	nw_health_free(h);

	assert_int_equal(nw_health_classify(p, &worker, &h), 0);
	assert_int_equal(h->samples, 11);
	assert_int_equal(h->complete, 11);
	assert_int_equal(h->nstops, 0);
	nw_health_free(h);
	nw_profile_free(p);
}

/* Every samples metric counts, the period metrics do not. */
static void test_two_events(void **state)
{
	struct nw_profile *p = nw_profile_new(4);
	struct nw_prof_thread *th;
	struct nw_health *h = NULL;
	static const char *const names[] = {"a:samples", "a:period", "b:samples", "b:period"};
	int64_t f;
	uint32_t n;

	assert_non_null(p);
	for (int i = 0; i < 4; i++) {
		free(p->metric_names[i]);
		p->metric_names[i] = xstrdup(names[i]);
	}
	th = nw_profile_add_thread(p, 1, 1, "x");
	assert_non_null(th);
	f = nw_profile_intern(p, "main", NULL, 0, APP);
	assert_true(f >= 0);
	n = nw_cct_child(th->tree, NW_CCT_ROOT, (uint64_t)f, 0);
	nw_cct_metrics(th->tree, n)[0] = 3;
	nw_cct_metrics(th->tree, n)[1] = 300;
	nw_cct_metrics(th->tree, n)[2] = 4;
	nw_cct_metrics(th->tree, n)[3] = 400;
	/* No manifest: fp and its default limit. */
	assert_int_equal(nw_health_classify(p, NULL, &h), 0);
	assert_false(h->dwarf);
	assert_int_equal(h->max_stack, 127);
	assert_int_equal(h->samples, 7);
	assert_int_equal(h->complete, 7);
	nw_health_free(h);
	nw_profile_free(p);
}

/* Adds @n frames of @name below @node, frame i with sp @sps[i] (or 0). */
static uint32_t chain(struct nw_profile *p, struct nw_cct *t, uint32_t node, const char *name,
		      const char *module, unsigned n, const uint64_t *sps)
{
	int64_t f = nw_profile_intern(p, name, NULL, 0, module);

	assert_true(f >= 0);
	for (unsigned i = 0; i < n; i++) {
		node = nw_cct_child(t, node, (uint64_t)f, sps ? sps[i] : 0);
		assert_int_not_equal(node, NW_CCT_NONE);
	}
	return node;
}

/* Writes a 64-byte ELF header without sections: a module without CFI. */
static void write_elf_without_cfi(const char *path)
{
	unsigned char h[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	uint16_t type = 3, machine = 62, ehsize = 64;
	uint32_t version = 1;
	FILE *f = fopen(path, "w");

	memcpy(h + 16, &type, 2);
	memcpy(h + 18, &machine, 2);
	memcpy(h + 20, &version, 4);
	memcpy(h + 52, &ehsize, 2);
	assert_non_null(f);
	assert_int_equal(fwrite(h, 1, sizeof(h), f), sizeof(h));
	assert_int_equal(fclose(f), 0);
}

static void test_dwarf(void **state)
{
	char self[4096], nocfi[256], buf[256];
	struct nw_profile *p;
	struct nw_prof_thread *th;
	struct nw_health *h = NULL;
	uint64_t *sps = calloc(600, sizeof(*sps));
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	uint32_t n;

	assert_non_null(sps);
	assert_true(len > 0);
	self[len] = '\0';
	snprintf(nocfi, sizeof(nocfi), "%s/test-health-nocfi.so", NW_TEST_BUILD);
	write_elf_without_cfi(nocfi);

	p = new_profile("dwarf", 16384, 0);
	th = nw_profile_add_thread(p, 1, 1, "x");
	assert_non_null(th);
	/* 512 frames with distinct sp tags: truncated at dwarf's default limit. */
	for (unsigned i = 0; i < 512; i++)
		sps[i] = 0x7fff0000 - 0x40 * i;
	n = chain(p, th->tree, NW_CCT_ROOT, "deep", APP, 512, sps);
	nw_cct_metrics(th->tree, n)[0] = 5;
	/* 511 frames: below it; stopped in this test program (it has CFI). */
	n = chain(p, th->tree, NW_CCT_ROOT, "deep2", self, 511, sps);
	nw_cct_metrics(th->tree, n)[0] = 4;
	/* 600 symbolic frames, 300 physical (pairs share a tag): an inline chain, not truncated. */
	for (unsigned i = 0; i < 600; i++)
		sps[i] = 0x7fff0000 - 0x40 * (i / 2);
	n = chain(p, th->tree, NW_CCT_ROOT, "inl", nocfi, 300, sps);
	n = chain(p, th->tree, n, "inl2", nocfi, 300, sps + 300);
	nw_cct_metrics(th->tree, n)[0] = 3;
	/* A module that cannot be read. */
	n = chain(p, th->tree, NW_CCT_ROOT, "gone", "/nonexistent/lib.so", 1, NULL);
	nw_cct_metrics(th->tree, n)[0] = 2;
	n = chain(p, th->tree, NW_CCT_ROOT, "[unknown]", NULL, 1, NULL);
	nw_cct_metrics(th->tree, n)[0] = 1;

	assert_int_equal(nw_health_classify(p, NULL, &h), 0);
	assert_true(h->dwarf);
	assert_int_equal(h->max_stack, NW_HEALTH_DWARF_MAX_STACK);
	assert_int_equal(h->samples, 15);
	assert_int_equal(h->complete, 0);
	assert_int_equal(h->truncated, 5);
	assert_int_equal(h->stopped, 10);
	assert_int_equal(h->nstops, 4);
	assert_string_equal(h->stops[0].module, self);
	assert_int_equal(h->stops[0].cfi, 1);
	nw_health_remedy(h, &h->stops[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "raise the stack copy"));
	assert_non_null(strstr(buf, "--call-graph dwarf,32768"));
	assert_string_equal(h->stops[1].module, nocfi);
	assert_int_equal(h->stops[1].samples, 3);
	assert_string_equal(h->stops[1].func, "inl");
	assert_int_equal(h->stops[1].cfi, 0);
	nw_health_remedy(h, &h->stops[1], buf, sizeof(buf));
	assert_non_null(strstr(buf, "no CFI"));
	assert_non_null(strstr(buf, "-fno-omit-frame-pointer"));
	assert_string_equal(h->stops[2].module, "/nonexistent/lib.so");
	assert_int_equal(h->stops[2].cfi, -1);
	nw_health_remedy(h, &h->stops[2], buf, sizeof(buf));
	assert_non_null(strstr(buf, "raise the stack copy"));
	assert_null(h->stops[3].module);
	nw_health_remedy(h, &h->stops[3], buf, sizeof(buf));
	assert_non_null(strstr(buf, "no CFI"));

	/* At the largest copy there is nothing left to raise. */
	h->stack_size = 65528;
	nw_health_remedy(h, &h->stops[0], buf, sizeof(buf));
	assert_null(strstr(buf, "dwarf,"));
	assert_non_null(strstr(buf, "maximum"));
	nw_health_free(h);
	nw_profile_free(p);
	unlink(nocfi);
	free(sps);
}

static char *print(const struct nw_health *h)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(nw_health_print(out, h), 0);
	fclose(out);
	return buf;
}

static void assert_has(const char *text, const char *part)
{
	if (!strstr(text, part))
		fail_msg("\"%s\" is missing from:\n%s", part, text);
}

static void test_print(void **state)
{
	struct nw_profile *p = fp_profile(0);
	struct nw_health *h = NULL;
	char *s;

	assert_int_equal(nw_health_classify(p, NULL, &h), 0);
	s = print(h);
	assert_has(s, "Call graph: fp (depth limit 127 frames)\n");
	assert_has(s, "Samples: 100\n");
	assert_has(s, "Complete:          61   61.0%");
	assert_has(s, "Truncated:          3    3.0%");
	assert_has(s, "kernel.perf_event_max_stack=254");
	assert_has(s, "Stopped:           36   36.0%");
	assert_has(s, "      25   25.0%  " LIBC " (msort_with_tmp)\n"
		      "                  remedy: record with --call-graph dwarf");
	assert_has(s, "       9    9.0%  " APP " (compare)\n"
		      "                  remedy: build with -fno-omit-frame-pointer");
	assert_has(s, "       2    2.0%  [unknown] ([unknown])\n");
	free(s);
	nw_health_free(h);
	nw_profile_free(p);
}

/* ---- the summary over a measurement directory ---- */

#define BASE 0x400000ULL

static void add_sym(struct nw_symtab *t, uint32_t mod, uint64_t addr, unsigned n, ...)
{
	struct nw_symframe *fr = calloc(n, sizeof(*fr));
	va_list ap;

	assert_non_null(fr);
	va_start(ap, n);
	for (unsigned i = 0; i < n; i++)
		fr[i].function = xstrdup(va_arg(ap, const char *));
	va_end(ap);
	assert_int_equal(nw_symtab_add(t, mod, addr, fr, n), 0);
}

static uint32_t raw(struct nw_cct *c, uint32_t parent, uint64_t addr, uint64_t sp)
{
	uint32_t n = nw_cct_child(c, parent, BASE + addr, sp);

	assert_int_not_equal(n, NW_CCT_NONE);
	return n;
}

/*
 * dwarf mode, max_stack 6, module APP mapped at BASE (vaddr 0):
 *   _start(0x101) -> main(0x201) -> work(0x300)                 6  complete
 *   helper(0x400)                                                3  stopped
 *   rec(0x501) x5 -> rec(0x500): 6 physical frames              1  truncated
 *   outer_fn;inl(0x601) x3 -> outer_fn;inl(0x600): 4 physical,  2  stopped
 *     8 symbolic frames
 */
static void write_measurement(const char *dir, bool all_complete)
{
	static struct nw_csprof_metric metrics[2] = {
	    {.name = (char *)"cpu-clock:samples", .flags = NW_CSPROF_FLAG_ASYNC},
	    {.name = (char *)"cpu-clock:period", .flags = NW_CSPROF_FLAG_ASYNC},
	};
	struct nw_csprof_module mod = {.name = (char *)APP, .vaddr = 0, .mapped = BASE};
	struct nw_csprof_epoch ep = {.nmodules = 1, .modules = &mod};
	struct nw_csprof_tree tree = {.epoch = 0, .cct = nw_cct_new(2)};
	struct nw_csprof cp = {.target = (char *)"app",
			       .nmetrics = 2,
			       .metrics = metrics,
			       .nepochs = 1,
			       .epochs = &ep,
			       .ntrees = 1,
			       .trees = &tree};
	struct nw_manifest_event ev = {
	    .name = (char *)"cpu-clock", .type = 1, .freq = true, .value = 999};
	struct nw_manifest_thread mt = {.pid = 1,
					.tid = 1,
					.comm = (char *)"app",
					.file = (char *)"app-1-1.csprof",
					.samples = 12};
	char *argv[] = {(char *)"app", NULL};
	struct nw_manifest m = {.version = NW_MANIFEST_VERSION,
				.narwhal_version = (char *)"0",
				.arch = (char *)"x86_64",
				.argc = 1,
				.argv = argv,
				.call_graph = (char *)"dwarf",
				.stack_size = 16384,
				.max_stack = 6,
				.nevents = 1,
				.events = &ev,
				.nthreads = 1,
				.threads = &mt};
	struct nw_symtab *st = nw_symtab_new();
	struct nw_cct *c = tree.cct;
	char path[256];
	uint32_t n;
	int app;

	assert_non_null(c);
	assert_non_null(st);
	n = raw(c, raw(c, raw(c, NW_CCT_ROOT, 0x101, 0x7ff0), 0x201, 0x7fe0), 0x300, 0x7fd0);
	nw_cct_metrics(c, n)[0] = 6;
	if (!all_complete) {
		nw_cct_metrics(c, raw(c, NW_CCT_ROOT, 0x400, 0x7000))[0] = 3;
		n = NW_CCT_ROOT;
		for (unsigned i = 0; i < 5; i++)
			n = raw(c, n, 0x501, 0x6000 - 0x100 * i);
		nw_cct_metrics(c, raw(c, n, 0x500, 0x5000))[0] = 1;
		n = NW_CCT_ROOT;
		for (unsigned i = 0; i < 3; i++)
			n = raw(c, n, 0x601, 0x4000 - 0x100 * i);
		nw_cct_metrics(c, raw(c, n, 0x600, 0x3000))[0] = 2;
	}
	for (uint32_t i = 0; i < c->n; i++)
		nw_cct_metrics(c, i)[1] = nw_cct_metrics(c, i)[0] * 1000000;

	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/app-1-1.csprof", dir);
	assert_int_equal(nw_csprof_write_file(path, &cp), 0);
	nw_cct_free(c);
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(nw_manifest_write(path, &m), 0);
	app = nw_symtab_module(st, APP, "");
	assert_true(app >= 0);
	add_sym(st, (uint32_t)app, 0x100, 1, "_start");
	add_sym(st, (uint32_t)app, 0x200, 1, "main");
	add_sym(st, (uint32_t)app, 0x300, 1, "work");
	add_sym(st, (uint32_t)app, 0x400, 1, "helper");
	add_sym(st, (uint32_t)app, 0x500, 1, "rec");
	add_sym(st, (uint32_t)app, 0x600, 2, "inl", "outer_fn"); /* innermost first */
	nw_symtab_sort(st);
	snprintf(path, sizeof(path), "%s/symbols.json", dir);
	assert_int_equal(nw_symtab_write(path, st), 0);
	nw_symtab_free(st);
}

static void remove_measurement(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/app-1-1.csprof", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/symbols.json", dir);
	unlink(path);
	rmdir(dir);
}

static void test_summary(void **state)
{
	const char *dir = NW_TEST_BUILD "/test-health.data";
	struct nw_profile *p = NULL;
	struct nw_health *h = NULL;
	char line[512], want[512], err[256];
	uint32_t t, outer = NW_CCT_NONE;

	write_measurement(dir, false);
	/* The loader gives an inline chain's frames the sp of their physical frame. */
	assert_int_equal(nw_profile_load(dir, &p, err, sizeof(err)), 0);
	assert_int_equal(p->manifest->max_stack, 6);
	t = p->threads[0].tree->nodes[NW_CCT_ROOT].first_child;
	for (; t != NW_CCT_NONE; t = p->threads[0].tree->nodes[t].next_sibling)
		if (!strcmp(p->funcs[p->threads[0].tree->nodes[t].ip].name, "outer_fn"))
			outer = t;
	assert_int_not_equal(outer, NW_CCT_NONE);
	assert_int_equal(p->threads[0].tree->nodes[outer].sp, 0x4000);
	t = p->threads[0].tree->nodes[outer].first_child;
	assert_string_equal(p->funcs[p->threads[0].tree->nodes[t].ip].name, "inl");
	assert_int_equal(p->threads[0].tree->nodes[t].sp, 0x4000);
	assert_int_equal(nw_health_classify(p, NULL, &h), 0);
	assert_int_equal(h->samples, 12);
	assert_int_equal(h->complete, 6);
	assert_int_equal(h->truncated, 1);
	assert_int_equal(h->stopped, 5);
	assert_int_equal(h->nstops, 1);
	assert_string_equal(h->stops[0].func, "helper");
	nw_health_free(h);
	nw_profile_free(p);

	assert_int_equal(nw_health_summary(dir, line, sizeof(line)), 0);
	snprintf(want, sizeof(want),
		 "stacks: 50.0%% complete, 8.3%% truncated; run narwhal-report --stack-health %s "
		 "for where unwinding stops",
		 dir);
	assert_string_equal(line, want);
	remove_measurement(dir);

	write_measurement(dir, true);
	assert_int_equal(nw_health_summary(dir, line, sizeof(line)), 0);
	assert_string_equal(line, "stacks: 100.0% complete, 0.0% truncated");
	remove_measurement(dir);

	/* A measurement that cannot be loaded: the loader's error and message. */
	assert_int_equal(nw_health_summary(dir, line, sizeof(line)), -ENOENT);
	assert_non_null(strstr(line, dir));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_entries),
	    cmocka_unit_test(test_fp_classify),
	    cmocka_unit_test(test_filter_and_limit),
	    cmocka_unit_test(test_two_events),
	    cmocka_unit_test(test_dwarf),
	    cmocka_unit_test(test_print),
	    cmocka_unit_test(test_summary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
