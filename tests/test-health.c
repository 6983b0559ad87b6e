/* SPDX-License-Identifier: MIT */
/*
 * Stack health on models built by hand (fixture.h), read through their
 * per-thread symbolic stacks: complete, truncated and stopped samples, the
 * depth limit from the run or the mode's default, inline chains counted as
 * one physical frame through their shared sp tag, the table of stops by
 * module with its most frequent outermost function, each module's CFI from
 * its ELF facts, the remedies of each mode, and the one-line summary of a
 * model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/health.h"
#include "report/stacks.h"
#include "util/strbuf.h"

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

/* @path ("a;b;c") with each frame's module: "a@MODULE;..." (fixture.h's keys), from malloc. */
static char *keys(const char *path, const char *module)
{
	struct nw_strbuf b = {0};
	char *buf = xstrdup(path), *save = NULL;

	for (char *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
		const char *mod = module ? module : module_of(s);

		nw_sb_printf(&b, "%s%s%s%s", b.len ? ";" : "", s, mod ? "@" : "", mod ? mod : "");
	}
	free(buf);
	assert_false(b.failed);
	return nw_sb_take(&b);
}

/*
 * Adds @samples at @path ("a;b;c", outermost first) of @th, frames in the
 * modules module_of() says, with a period that must not count.
 */
static void add(struct fx *fx, struct nw_mthread *th, const char *path, uint64_t samples)
{
	uint64_t v[2] = {samples, samples * 1000003};
	char *k = keys(path, NULL);

	fx_put(fx, th, 0, fx_path(fx, th, 0, k, 0, NULL), v, 2);
	free(k);
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

/* A model of one event, cpu-clock, recorded in mode @call_graph. */
static struct fx *new_profile(const char *call_graph, uint32_t stack_size, uint32_t max_stack)
{
	static const char *const events[] = {"cpu-clock"};
	struct fx *fx = fx_new(events, 1);

	fx->m->run.call_graph = xstrdup(call_graph);
	fx->m->run.stack_size = stack_size;
	fx->m->run.max_stack = max_stack;
	return fx;
}

/* nw_health_classify() of the threads @f selects. */
static int classify(const struct fx *fx, const struct nw_filter *f, struct nw_health **ret)
{
	return nw_health_classify(fx->m, f, ret);
}

/*
 * fp mode, no max_stack in the run (127):
 *   thread 10: complete 40 + 10, stopped in libc 20 + 5, in the app 8 + 1,
 *              without a module 2, truncated 3 (127 frames)
 *   thread 11: complete 10 + 1
 */
static struct fx *fp_profile(uint32_t max_stack)
{
	struct fx *p = new_profile("fp", 0, max_stack);
	struct nw_mthread *th;
	char *r;

	th = fx_thread(p, 10, 10, "app");
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
	th = fx_thread(p, 10, 11, "worker");
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
	struct fx *p = fp_profile(0);
	struct nw_health *h = NULL;
	char buf[256];

	assert_int_equal(classify(p, NULL, &h), 0);
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

	for (uint32_t i = 0; i < h->nstops; i++)
		assert_int_equal(h->stops[i].cause, NW_STOP_FP);
	/* fp remedies: dwarf for libraries, frame pointers for the program. */
	nw_health_remedy(h, &h->stops[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "record with --call-graph dwarf"));
	nw_health_remedy(h, &h->stops[1], buf, sizeof(buf));
	assert_non_null(strstr(buf, "build with -fno-omit-frame-pointer"));
	nw_health_remedy(h, &h->stops[2], buf, sizeof(buf));
	assert_non_null(strstr(buf, "record with --call-graph dwarf"));
	nw_health_free(h);
	fx_free(p);
}

static void test_filter_and_limit(void **state)
{
	struct fx *p = fp_profile(126);
	struct nw_filter worker = {.tid = 11, .pid = -1};
	struct nw_health *h = NULL;

	/* The run's limit: the 126-frame path is truncated too. */
	assert_int_equal(classify(p, NULL, &h), 0);
	assert_int_equal(h->max_stack, 126);
	assert_int_equal(h->truncated, 4);
	assert_int_equal(h->stopped, 35);
	assert_int_equal(h->stops[1].samples, 8);
	nw_health_free(h);

	assert_int_equal(classify(p, &worker, &h), 0);
	assert_int_equal(h->samples, 11);
	assert_int_equal(h->complete, 11);
	assert_int_equal(h->nstops, 0);
	nw_health_free(h);
	fx_free(p);
}

/* Every samples metric counts, the period metrics do not. */
static void test_two_events(void **state)
{
	static const char *const events[] = {"a", "b"};
	static const uint64_t v[] = {3, 300, 4, 400};
	struct fx *p = fx_new(events, 2);
	struct nw_mthread *th;
	struct nw_health *h = NULL;

	/* a:samples, a:period, b:samples, b:period */
	assert_int_equal(p->m->nmetrics, 4);
	th = fx_thread(p, 1, 1, "x");
	fx_put(p, th, 0, fx_path(p, th, 0, "main@" APP, 0, NULL), v, 4);
	/* No call graph in the run: fp and its default limit. */
	assert_int_equal(classify(p, NULL, &h), 0);
	assert_false(h->dwarf);
	assert_int_equal(h->max_stack, 127);
	assert_int_equal(h->samples, 7);
	assert_int_equal(h->complete, 7);
	nw_health_free(h);
	fx_free(p);
}

#define WITH_CFI "/home/me/lib/libwithcfi.so"
#define NO_CFI "/home/me/lib/libnocfi.so"
#define GONE "/nonexistent/lib.so"

/* The ELF facts the recorder kept of module @path: @known (read at all) and @cfi. */
static void set_facts(struct fx *fx, const char *path, bool known, bool cfi)
{
	uint32_t i = fx_module(fx, path);

	fx->m->modules->v[i].facts.known = known;
	fx->m->modules->v[i].facts.has_cfi = cfi;
}

/* Appends @n frames @key (a fixture.h key) to the stack @b ("a;b"). */
static void repeat(struct nw_strbuf *b, const char *key, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		nw_sb_printf(b, "%s%s", b->len ? ";" : "", key);
	assert_false(b->failed);
}

/* Adds @samples at the stack @b, frame i (0 = outermost) tagged @sps[i] (or 0); resets @b. */
static void put(struct fx *fx, struct nw_mthread *th, struct nw_strbuf *b, const uint64_t *sps,
		uint64_t samples)
{
	fx_put(fx, th, 0, fx_path(fx, th, 0, nw_sb_str(b), 0, sps), &samples, 1);
	nw_sb_reset(b);
}

static void test_dwarf(void **state)
{
	struct fx *p;
	struct nw_mthread *th;
	struct nw_health *h = NULL;
	struct nw_strbuf b = {0};
	uint64_t *sps = calloc(600, sizeof(*sps)), *near = calloc(600, sizeof(*near));
	char buf[256];

	assert_non_null(sps);
	assert_non_null(near);
	p = new_profile("dwarf", 16384, 0);
	set_facts(p, WITH_CFI, true, true);
	set_facts(p, NO_CFI, true, false);
	/* A module whose file could not be read when recording: facts unknown. */
	set_facts(p, GONE, false, false);
	/* Two frames of one physical frame each: an inline chain. */
	fx_inline(p, "inl@" NO_CFI, "inl;inl");
	fx_inline(p, "inl2@" NO_CFI, "inl2;inl2");
	th = fx_thread(p, 1, 1, "x");
	/* 512 frames with distinct sp tags: truncated at dwarf's default limit. */
	for (unsigned i = 0; i < 512; i++)
		sps[i] = 0x7fff0000 - 0x40 * i;
	repeat(&b, "deep@" APP, 512);
	put(p, th, &b, sps, 5);
	/* 511 frames: below it; stopped in a module with CFI. */
	repeat(&b, "deep2@" WITH_CFI, 511);
	put(p, th, &b, sps, 4);
	/*
	 * 600 symbolic frames, 300 physical (pairs share a tag): an inline
	 * chain, not truncated; 32 bytes a frame, inside the copy.
	 */
	for (unsigned i = 0; i < 600; i++)
		near[i] = 0x7fff0000 - 0x20 * i;
	repeat(&b, "inl@" NO_CFI, 150);
	repeat(&b, "inl2@" NO_CFI, 150);
	put(p, th, &b, near, 3);
	repeat(&b, "gone@" GONE, 1);
	put(p, th, &b, NULL, 2);
	repeat(&b, "[unknown]", 1);
	put(p, th, &b, NULL, 1);
	/* JIT code: named by a perf map (it has no CFI), and not named. */
	repeat(&b, "jitted@//anon", 1);
	put(p, th, &b, NULL, 7);
	repeat(&b, "?code@//anon", 1);
	put(p, th, &b, NULL, 6);
	nw_sb_fini(&b);

	assert_int_equal(classify(p, NULL, &h), 0);
	assert_true(h->dwarf);
	assert_int_equal(h->max_stack, NW_HEALTH_DWARF_MAX_STACK);
	assert_int_equal(h->samples, 28);
	assert_int_equal(h->complete, 0);
	assert_int_equal(h->truncated, 5);
	assert_int_equal(h->stopped, 23);
	assert_int_equal(h->nstops, 6);
	/* Most samples first: the named JIT code, the unnamed, the copy's end, ... */
	assert_string_equal(h->stops[0].module, "//anon");
	assert_string_equal(h->stops[0].func, "jitted");
	assert_int_equal(h->stops[0].cause, NW_STOP_NO_CFI);
	nw_health_remedy(h, &h->stops[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, "JIT code has no CFI"));
	assert_non_null(strstr(buf, "--call-graph hybrid"));
	assert_string_equal(h->stops[1].module, "//anon");
	assert_int_equal(h->stops[1].samples, 6);
	assert_int_equal(h->stops[1].cause, NW_STOP_JIT);
	nw_health_remedy(h, &h->stops[1], buf, sizeof(buf));
	assert_non_null(strstr(buf, "perf-PID.map"));
	/* 511 frames 64 bytes apart reach past the 16384-byte copy. */
	assert_string_equal(h->stops[2].module, WITH_CFI);
	assert_int_equal(h->stops[2].cfi, 1);
	assert_int_equal(h->stops[2].cause, NW_STOP_COPY);
	nw_health_remedy(h, &h->stops[2], buf, sizeof(buf));
	assert_non_null(strstr(buf, "raise the stack copy"));
	assert_non_null(strstr(buf, "--call-graph dwarf,32768"));
	assert_string_equal(h->stops[3].module, NO_CFI);
	assert_int_equal(h->stops[3].samples, 3);
	assert_string_equal(h->stops[3].func, "inl");
	assert_int_equal(h->stops[3].cfi, 0);
	assert_int_equal(h->stops[3].cause, NW_STOP_NO_CFI);
	nw_health_remedy(h, &h->stops[3], buf, sizeof(buf));
	assert_non_null(strstr(buf, "the module has no CFI"));
	assert_non_null(strstr(buf, "-fno-omit-frame-pointer"));
	assert_null(strstr(buf, "stack copy"));
	/* A module whose file was gone: its CFI is unknown, and so is why. */
	assert_string_equal(h->stops[4].module, GONE);
	assert_int_equal(h->stops[4].cfi, -1);
	assert_int_equal(h->stops[4].cause, NW_STOP_OTHER);
	nw_health_remedy(h, &h->stops[4], buf, sizeof(buf));
	assert_non_null(strstr(buf, "could not be read when recording"));
	assert_null(strstr(buf, "stack copy"));
	assert_null(h->stops[5].module);
	assert_int_equal(h->stops[5].cause, NW_STOP_NO_CFI);
	nw_health_remedy(h, &h->stops[5], buf, sizeof(buf));
	assert_non_null(strstr(buf, "code outside any module has no CFI"));

	/* At the largest copy there is nothing left to raise. */
	h->stack_size = 65528;
	nw_health_remedy(h, &h->stops[2], buf, sizeof(buf));
	assert_null(strstr(buf, "dwarf,"));
	assert_non_null(strstr(buf, "maximum"));
	nw_health_free(h);
	fx_free(p);
	free(sps);
	free(near);
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
	struct fx *p = fp_profile(0);
	struct nw_health *h = NULL;
	char *s;

	assert_int_equal(classify(p, NULL, &h), 0);
	s = print(h);
	assert_has(s, "Call graph: fp (depth limit 127 frames)\n");
	assert_has(s, "Samples: 100\n");
	assert_has(s, "Complete:          61   61.0%");
	assert_has(s, "Truncated:          3    3.0%");
	assert_has(s, "kernel.perf_event_max_stack=254");
	assert_has(s, "Stopped:           36   36.0%");
	assert_has(s, "      25   25.0%  " LIBC " (msort_with_tmp): frame-pointer chain broken\n"
		      "                  remedy: record with --call-graph dwarf");
	assert_has(s, "       9    9.0%  " APP " (compare): frame-pointer chain broken\n"
		      "                  remedy: build with -fno-omit-frame-pointer");
	assert_has(s, "       2    2.0%  [unknown] ([unknown]): frame-pointer chain broken\n");
	free(s);
	nw_health_free(h);
	fx_free(p);
}

/* ---- the summary of a model ---- */

/* Adds @samples (and a period) at @path of @th, frames of APP, frame i tagged @sps[i]. */
static void add_sp(struct fx *fx, struct nw_mthread *th, const char *path, const uint64_t *sps,
		   uint64_t samples)
{
	uint64_t v[2] = {samples, samples * 1000000};
	char *k = keys(path, APP);

	fx_put(fx, th, 0, fx_path(fx, th, 0, k, 0, sps), v, 2);
	free(k);
}

/*
 * dwarf mode, max_stack 6, every frame in APP:
 *   _start -> main -> work                           6  complete
 *   helper                                           3  stopped
 *   rec x5 -> rec: 6 physical frames                 1  truncated
 *   inl x3 -> inl, each the chain outer_fn;inl:      2  stopped
 *     4 physical frames, 8 symbolic frames
 */
static struct fx *summary_model(bool all_complete)
{
	static const uint64_t start[] = {0x7ff0, 0x7fe0, 0x7fd0}, helper[] = {0x7000};
	struct fx *p = new_profile("dwarf", 16384, 6);
	uint64_t rec[6], inl[4];
	struct nw_mthread *th;

	fx_inline(p, "inl@" APP, "outer_fn;inl");
	th = fx_thread(p, 1, 1, "app");
	add_sp(p, th, "_start;main;work", start, 6);
	if (all_complete)
		return p;
	add_sp(p, th, "helper", helper, 3);
	for (unsigned i = 0; i < 5; i++)
		rec[i] = 0x6000 - 0x100 * i;
	rec[5] = 0x5000;
	add_sp(p, th, "rec;rec;rec;rec;rec;rec", rec, 1);
	for (unsigned i = 0; i < 3; i++)
		inl[i] = 0x4000 - 0x100 * i;
	inl[3] = 0x3000;
	add_sp(p, th, "inl;inl;inl;inl", inl, 2);
	return p;
}

static void test_summary(void **state)
{
	/* Where the model was written: the summary only names it. */
	const char *dir = NW_TEST_BUILD "/test-health.data";
	struct nw_stacks_opts so = {.per_thread = true};
	struct fx *p = summary_model(false);
	struct nw_health *h = NULL;
	struct nw_stacks *s;
	const struct nw_cct *tree;
	char line[512], want[512];
	uint32_t t, outer = NW_CCT_NONE;

	/* The stacks give an inline chain's frames the sp of their physical frame. */
	s = nw_stacks_new(p->m, p->m->nmetrics);
	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &so), 0);
	tree = s->tree;
	t = tree->nodes[s->thread_node[0]].first_child;
	for (; t != NW_CCT_NONE; t = tree->nodes[t].next_sibling)
		if (!strcmp(s->frames.v[tree->nodes[t].ip].name, "outer_fn"))
			outer = t;
	assert_int_not_equal(outer, NW_CCT_NONE);
	assert_int_equal(tree->nodes[outer].sp, 0x4000);
	t = tree->nodes[outer].first_child;
	assert_string_equal(s->frames.v[tree->nodes[t].ip].name, "inl");
	assert_int_equal(tree->nodes[t].sp, 0x4000);
	assert_int_equal(nw_health_classify(p->m, NULL, &h), 0);
	assert_int_equal(h->samples, 12);
	assert_int_equal(h->complete, 6);
	assert_int_equal(h->truncated, 1);
	assert_int_equal(h->stopped, 5);
	assert_int_equal(h->nstops, 1);
	assert_string_equal(h->stops[0].func, "helper");
	nw_health_free(h);
	nw_stacks_free(s);

	assert_int_equal(nw_health_summary(p->m, dir, line, sizeof(line)), 0);
	snprintf(want, sizeof(want),
		 "stacks: 50.0%% complete, 8.3%% truncated; run narwhal-report --stack-health %s "
		 "for where unwinding stops",
		 dir);
	assert_string_equal(line, want);
	fx_free(p);

	p = summary_model(true);
	assert_int_equal(nw_health_summary(p->m, dir, line, sizeof(line)), 0);
	assert_string_equal(line, "stacks: 100.0% complete, 0.0% truncated");
	fx_free(p);
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
