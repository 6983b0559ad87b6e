/* SPDX-License-Identifier: MIT */
/*
 * The stack transforms (report/transform.h) on a small known model, built
 * by hand (fixture.h), checked through the folded stacks of both metrics:
 *
 *   thread app    (10/10): main;a;b 2  main;a 1  main;c;b 3  main;c;d 4
 *                          main;x;y 5 (x and y in /lib/libx.so)
 *   thread worker (10/11): main;a;b 6  main;c 7  start;d 8
 *
 * Metric 1 (period) is 1000 per sample except main;c, 10000 per sample,
 * so weights summed from the wrong metric or the wrong stacks show.
 * Also: one node of the model, main;zero, has no weight at all.
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/transform.h"
#include "report/folded.h"
#include "report/views.h"

#define TOTAL 36
#define TOTAL_PERIOD 99000

static struct fx *known_profile(void)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th;

	th = fx_thread(fx, 10, 10, "app");
	fx_add(fx, th, "main;a;b", 2, 2000);
	fx_add(fx, th, "main;a", 1, 1000);
	fx_add(fx, th, "main;c;b", 3, 3000);
	fx_add(fx, th, "main;c;d", 4, 4000);
	fx_add(fx, th, "main;x@/lib/libx.so;y@/lib/libx.so", 5, 5000);
	fx_path(fx, th, 0, "main;zero", 0, NULL);
	th = fx_thread(fx, 10, 11, "worker");
	fx_add(fx, th, "main;a;b", 6, 6000);
	fx_add(fx, th, "main;c", 7, 70000);
	fx_add(fx, th, "start;d", 8, 8000);
	return fx;
}

/* The stacks of every thread, merged or each below its thread frame. */
static struct nw_stacks *stacks_of(const struct fx *fx, bool per_thread)
{
	struct nw_stacks_opts o = {.per_thread = per_thread};
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &o), 0);
	return s;
}

/* A compiled POSIX extended regular expression, as narwhal-report compiles them. */
struct res {
	regex_t re[8];
	unsigned n;
};

static const regex_t *re(struct res *r, const char *pattern)
{
	assert_true(r->n < sizeof(r->re) / sizeof(r->re[0]));
	assert_int_equal(regcomp(&r->re[r->n], pattern, REG_EXTENDED | REG_NOSUB), 0);
	return &r->re[r->n++];
}

static void res_free(struct res *r)
{
	for (unsigned i = 0; i < r->n; i++)
		regfree(&r->re[i]);
	r->n = 0;
}

typedef int (*view_fn)(FILE *, struct nw_stacks *, const struct nw_view_opts *);

/* The views of a tree only, as a view_fn. */
static int tree_view(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o)
{
	return nw_view_tree(out, s, o);
}

static int modules_view(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o)
{
	return nw_view_modules(out, s, o);
}

/* The output of @view weighed by metric @m (the caller frees it). */
static char *view(view_fn fn, struct nw_stacks *s, unsigned m)
{
	struct nw_view_opts o = {.metric = m};
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(fn(out, s, &o), 0);
	fclose(out);
	return buf;
}

static void assert_folded(struct nw_stacks *s, unsigned m, const char *want)
{
	char *got = view(nw_view_folded, s, m);

	if (strcmp(got, want))
		fail_msg("folded stacks of metric %u:\n%s\nexpected:\n%s", m, got, want);
	free(got);
}

/*
 * Every node but the root has weight below it (zero-weight branches
 * pruned), and none is the weightless frame "zero" of the model; the
 * tree has @nodes nodes.
 */
static void assert_pruned(const struct nw_stacks *s, uint32_t nodes)
{
	const struct nw_cct *t = s->tree;
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint64_t *incl = calloc(t->n, sizeof(*incl));

	assert_non_null(order);
	assert_non_null(incl);
	nw_cct_preorder(t, order);
	for (uint32_t k = t->n; k-- > 0;) {
		uint32_t i = order[k];

		for (unsigned m = 0; m < t->nmetrics; m++)
			incl[i] += nw_cct_metrics(t, i)[m];
		if (i != NW_CCT_ROOT)
			incl[t->nodes[i].parent] += incl[i];
	}
	for (uint32_t i = 1; i < t->n; i++) {
		if (!incl[i])
			fail_msg("node %u (%s) has no weight", i, s->frames.v[t->nodes[i].ip].name);
		assert_string_not_equal(s->frames.v[t->nodes[i].ip].name, "zero");
	}
	assert_int_equal(t->n, nodes);
	free(order);
	free(incl);
}

/* Applies @f to the merged stacks of the known model; the caller frees them. */
static struct nw_stacks *filtered(const struct fx *fx, bool per_thread,
				  const struct nw_stack_filter *f)
{
	struct nw_stacks *s = stacks_of(fx, per_thread);

	assert_int_equal(nw_stacks_filter(s, f), 0);
	return s;
}

static void test_active(void **state)
{
	struct res r = {0};
	struct nw_stack_filter f = {0};

	(void)state;
	assert_false(nw_stack_filter_active(NULL));
	assert_false(nw_stack_filter_active(&f));
	f.ignore_module = re(&r, "x");
	assert_true(nw_stack_filter_active(&f));
	f = (struct nw_stack_filter){.root = f.ignore_module};
	assert_true(nw_stack_filter_active(&f));
	res_free(&r);
}

/* No transform: the model's stacks, to compare the rest with. */
static void test_unfiltered(void **state)
{
	struct fx *fx = known_profile();
	struct nw_stacks *s = stacks_of(fx, false);
	char *flat;

	(void)state;
	assert_folded(s, 0,
		      "main;a 1\n"
		      "main;a;b 8\n"
		      "main;c 7\n"
		      "main;c;b 3\n"
		      "main;c;d 4\n"
		      "main;x;y 5\n"
		      "start;d 8\n");
	assert_null(s->unfiltered);
	flat = view(nw_view_flat, s, 0);
	assert_non_null(strstr(flat, "Samples: 36 (0 lost)\n"));
	free(flat);
	nw_stacks_free(s);
	fx_free(fx);
}

/* focus: the stacks with a matching frame, whole and with their weights. */
static void test_focus(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	f.focus = re(&r, "^b$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;a;b 8\nmain;c;b 3\n");
	assert_folded(s, 1, "main;a;b 8000\nmain;c;b 3000\n");
	assert_pruned(s, 6);
	nw_stacks_free(s);

	/* A match anywhere in the name: "ai" is in main, not in start. */
	res_free(&r);
	f.focus = re(&r, "ai");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;a 1\nmain;a;b 8\nmain;c 7\nmain;c;b 3\nmain;c;d 4\nmain;x;y 5\n");
	nw_stacks_free(s);

	/* A frame in the middle of the stack keeps the frames below it too. */
	res_free(&r);
	f.focus = re(&r, "^c$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;c 7\nmain;c;b 3\nmain;c;d 4\n");
	assert_folded(s, 1, "main;c 70000\nmain;c;b 3000\nmain;c;d 4000\n");
	nw_stacks_free(s);

	/* No match: nothing left but the root. */
	res_free(&r);
	f.focus = re(&r, "^nothing$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "");
	assert_pruned(s, 1);
	assert_int_equal(nw_cct_metrics(s->tree, NW_CCT_ROOT)[0], 0);
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* ignore: the stacks with a matching frame go; nothing else changes. */
static void test_ignore(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	f.ignore = re(&r, "^b$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;a 1\nmain;c 7\nmain;c;d 4\nmain;x;y 5\nstart;d 8\n");
	assert_folded(s, 1,
		      "main;a 1000\nmain;c 70000\nmain;c;d 4000\nmain;x;y 5000\n"
		      "start;d 8000\n");
	/* root main a c d x y start d: b and zero pruned */
	assert_pruned(s, 9);
	nw_stacks_free(s);

	/* A frame near the root takes its whole subtree. */
	res_free(&r);
	f.ignore = re(&r, "^main$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "start;d 8\n");
	assert_pruned(s, 3);
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* hide: the frames go, the samples stay; stacks that become equal merge. */
static void test_hide(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;
	char *flat;

	(void)state;
	f.hide = re(&r, "^(a|c)$");
	s = filtered(fx, false, &f);
	/* main;a + main;c = main; main;a;b + main;c;b = main;b */
	assert_folded(s, 0, "main 8\nmain;b 11\nmain;d 4\nmain;x;y 5\nstart;d 8\n");
	assert_folded(s, 1, "main 71000\nmain;b 11000\nmain;d 4000\nmain;x;y 5000\nstart;d 8000\n");
	assert_pruned(s, 8);
	/* Nothing dropped */
	flat = view(nw_view_flat, s, 0);
	assert_non_null(strstr(flat, "Samples: 36 of 36 kept by the filters (100.0%), 0 lost\n"));
	free(flat);
	nw_stacks_free(s);

	/* The root frame: the stack below it moves up and merges with start's. */
	res_free(&r);
	f.hide = re(&r, "^(main|start)$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "a 1\na;b 8\nc 7\nc;b 3\nc;d 4\nd 8\nx;y 5\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/*
 * Per thread, the filtered tree's thread frame nodes are the stacks'
 * thread nodes (speedscope and pprof write each thread from its node):
 * not the old tree's node numbers, which once named other nodes or none.
 */
static void test_thread_nodes(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	f.hide = re(&r, "^(a|c)$");
	s = filtered(fx, true, &f);
	assert_non_null(s->thread_node);
	for (uint32_t ti = 0; ti < fx->m->nthreads; ti++) {
		uint32_t n = s->thread_node[ti];
		char want[64];

		snprintf(want, sizeof(want), "%s-%u", fx->m->threads[ti].comm,
			 (unsigned)fx->m->threads[ti].tid);
		assert_true(n < s->tree->n);
		assert_int_equal(s->tree->nodes[n].parent, NW_CCT_ROOT);
		assert_string_equal(s->frames.v[s->tree->nodes[n].ip].name, want);
	}
	nw_stacks_free(s);
	/* A thread whose every frame is hidden has no node left. */
	res_free(&r);
	f.hide = re(&r, "^(main|a|b|c|d|x|y|zero)$");
	s = filtered(fx, true, &f);
	assert_int_equal(s->thread_node[0], NW_CCT_NONE);
	assert_true(s->thread_node[1] < s->tree->n);
	assert_string_equal(s->frames.v[s->tree->nodes[s->thread_node[1]].ip].name, "worker-11");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/*
 * A stack whose frames are all hidden has no stack left to count its
 * samples in: they go, as pprof drops a sample without locations, and
 * the views say so (not "7 of 7 kept" over stacks that hold 3).  The
 * same with and without thread frames.
 */
static void test_hide_whole_stack(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_mthread *th;
	struct nw_stacks *s;
	char *out;

	(void)state;
	th = fx_thread(fx, 10, 10, "app");
	fx_add(fx, th, "main", 4, 4000);
	fx_add(fx, th, "main;a", 1, 100);
	th = fx_thread(fx, 10, 11, "worker");
	fx_add(fx, th, "main;b", 2, 200);
	f.hide = re(&r, "^main$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "a 1\nb 2\n");
	assert_folded(s, 1, "a 100\nb 200\n");
	assert_int_equal(nw_cct_metrics(s->tree, NW_CCT_ROOT)[0], 0);
	assert_int_equal(nw_cct_metrics(s->tree, NW_CCT_ROOT)[1], 0);
	out = view(nw_view_flat, s, 0);
	assert_non_null(strstr(out, "Samples: 3 of 7 kept by the filters (42.9%), 0 lost\n"
				    "\n"
				    " SELF%  CUMUL%  FUNCTION\n"
				    " 66.7%   66.7%  b\n"
				    " 33.3%   33.3%  a\n"));
	free(out);
	nw_stacks_free(s);

	s = filtered(fx, true, &f);
	assert_folded(s, 0, "app-10;a 1\nworker-11;b 2\n");
	out = view(tree_view, s, 0);
	assert_non_null(strstr(out, "Samples: 3 of 7 kept by the filters (42.9%), 0 lost\n"));
	free(out);
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* root: each stack starts at its first match from the root; no match, no stack. */
static void test_root(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;
	char *flat;

	(void)state;
	f.root = re(&r, "^c$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "c 7\nc;b 3\nc;d 4\n");
	assert_folded(s, 1, "c 70000\nc;b 3000\nc;d 4000\n");
	assert_pruned(s, 4);
	flat = view(nw_view_flat, s, 0);
	assert_non_null(strstr(flat, "Samples: 14 of 36 kept by the filters (38.9%), 0 lost\n"));
	free(flat);
	nw_stacks_free(s);

	/* Cut at the first match: c;b stays c;b, and b's merge across stacks. */
	res_free(&r);
	f.root = re(&r, "^(b|c|d)$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "b 8\nc 7\nc;b 3\nc;d 4\nd 8\n");
	nw_stacks_free(s);

	/* A leaf as the root: its self weight, from every caller. */
	res_free(&r);
	f.root = re(&r, "^d$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "d 12\n");
	assert_folded(s, 1, "d 12000\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* Recursion: the cut is above the outermost match, the inner ones stay. */
static void test_root_recursion(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_mthread *th = fx_thread(fx, 1, 1, "t");
	struct nw_stacks *s;

	(void)state;
	fx_add(fx, th, "main;r;x;r;y", 2, 20);
	fx_add(fx, th, "main;q;r", 3, 30);
	f.root = re(&r, "^r$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "r 3\nr;x;r;y 2\n");
	assert_folded(s, 1, "r 30\nr;x;r;y 20\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* Filters together: focus and ignore, hide with either, root with the others. */
static void test_combined(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	/* b's stacks, without those through c */
	f.focus = re(&r, "^b$");
	f.ignore = re(&r, "^c$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;a;b 8\n");
	assert_folded(s, 1, "main;a;b 8000\n");
	nw_stacks_free(s);

	/* A frame that both focuses and ignores: ignored. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "^b$");
	f.ignore = re(&r, "^b$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "");
	assert_pruned(s, 1);
	nw_stacks_free(s);

	/* Focus looks at the frames hide removes (pprof: focus, then hide). */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "^a$");
	f.hide = re(&r, "^a$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main 1\nmain;b 8\n");
	nw_stacks_free(s);

	/* Focus looks above the root cut too: start's d, not main's. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "^start$");
	f.root = re(&r, "^d$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "d 8\n");
	nw_stacks_free(s);

	/* Hide below the cut */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.root = re(&r, "^main$");
	f.hide = re(&r, "^(a|x)$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main 1\nmain;b 8\nmain;c 7\nmain;c;b 3\nmain;c;d 4\nmain;y 5\n");
	nw_stacks_free(s);

	/* A hidden frame is no root (pprof: hide, then show_from): c's stacks go. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.root = re(&r, "^c$");
	f.hide = re(&r, "^c$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "");
	assert_pruned(s, 1);
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* focus-module and ignore-module: by the path of a frame's module. */
static void test_modules(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	f.focus_module = re(&r, "libx");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;x;y 5\n");
	assert_folded(s, 1, "main;x;y 5000\n");
	nw_stacks_free(s);

	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.ignore_module = re(&r, "/libx\\.so$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;a 1\nmain;a;b 8\nmain;c 7\nmain;c;b 3\nmain;c;d 4\nstart;d 8\n");
	nw_stacks_free(s);

	/* Module regexes do not look at function names, nor name regexes at modules. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus_module = re(&r, "^main$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "");
	nw_stacks_free(s);
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "libx");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "");
	nw_stacks_free(s);

	/* With the name filters: y's stacks that have no frame of /bin/app (none) */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "^y$");
	f.ignore_module = re(&r, "^/bin/app$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "");
	nw_stacks_free(s);
	/* ... and those that have one (all) */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "^y$");
	f.focus_module = re(&r, "^/bin/app$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;x;y 5\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/*
 * Frames of addresses: "app+0x..." (no symbol, module /bin/app) matches
 * module regexes by its module; "[unknown]" has no module, so none
 * matches it.
 */
static void test_modules_addresses(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_mthread *th = fx_thread(fx, 1, 1, "t");
	struct nw_stacks *s;

	(void)state;
	fx_add(fx, th, "f@/lib/liba.so;?anon", 2, 0);
	fx_add(fx, th, "f@/lib/liba.so;[unknown]", 3, 0);
	fx_add(fx, th, "[unknown]", 4, 0);
	s = stacks_of(fx, false);
	assert_folded(s, 0, "[unknown] 4\nf;[unknown] 3\nf;app+0x1100 2\n");
	nw_stacks_free(s);

	f.focus_module = re(&r, "^/bin/app$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "f;app+0x1100 2\n");
	nw_stacks_free(s);

	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.ignore_module = re(&r, "liba");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "[unknown] 4\n");
	nw_stacks_free(s);

	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.ignore_module = re(&r, ".*");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "[unknown] 4\n");
	nw_stacks_free(s);

	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus_module = re(&r, ".*");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "f;[unknown] 3\nf;app+0x1100 2\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/*
 * Regexes see a function's whole name, return type and parameters
 * included, not the short name the views show.
 */
static void test_whole_names(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_mthread *th = fx_thread(fx, 1, 1, "t");
	struct nw_stacks *s;

	(void)state;
	fx_add(fx, th, "main;int ns::Foo<int>::bar(char const*) const", 2, 0);
	fx_add(fx, th, "main;ns::Foo<int>::baz(int)", 3, 0);
	f.focus = re(&r, "\\(char const\\*\\) const$");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;int ns::Foo<int>::bar(char const*) const 2\n");
	nw_stacks_free(s);

	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.ignore = re(&r, "^ns::Foo<int>::");
	s = filtered(fx, false, &f);
	assert_folded(s, 0, "main;int ns::Foo<int>::bar(char const*) const 2\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* --per-thread: thread frames are never focused, ignored, hidden or cut. */
static void test_per_thread(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	s = stacks_of(fx, true);
	assert_folded(s, 0,
		      "app-10;main;a 1\n"
		      "app-10;main;a;b 2\n"
		      "app-10;main;c;b 3\n"
		      "app-10;main;c;d 4\n"
		      "app-10;main;x;y 5\n"
		      "worker-11;main;a;b 6\n"
		      "worker-11;main;c 7\n"
		      "worker-11;start;d 8\n");
	nw_stacks_free(s);

	/* Regexes that match the thread frames' names */
	f.hide = re(&r, "app|worker");
	f.ignore = re(&r, "-1[01]$");
	s = filtered(fx, true, &f);
	assert_folded(s, 0,
		      "app-10;main;a 1\n"
		      "app-10;main;a;b 2\n"
		      "app-10;main;c;b 3\n"
		      "app-10;main;c;d 4\n"
		      "app-10;main;x;y 5\n"
		      "worker-11;main;a;b 6\n"
		      "worker-11;main;c 7\n"
		      "worker-11;start;d 8\n");
	nw_stacks_free(s);

	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.focus = re(&r, "^worker-11$");
	s = filtered(fx, true, &f);
	assert_folded(s, 0, "");
	assert_pruned(s, 1);
	nw_stacks_free(s);

	/* Module regexes: a thread frame's module is "[thread]" */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.ignore_module = re(&r, "thread");
	s = filtered(fx, true, &f);
	assert_folded(s, 1,
		      "app-10;main;a 1000\n"
		      "app-10;main;a;b 2000\n"
		      "app-10;main;c;b 3000\n"
		      "app-10;main;c;d 4000\n"
		      "app-10;main;x;y 5000\n"
		      "worker-11;main;a;b 6000\n"
		      "worker-11;main;c 70000\n"
		      "worker-11;start;d 8000\n");
	nw_stacks_free(s);

	/* The cut keeps the thread frame on top. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.root = re(&r, "^(c|d)$");
	s = filtered(fx, true, &f);
	assert_folded(s, 0, "app-10;c;b 3\napp-10;c;d 4\nworker-11;c 7\nworker-11;d 8\n");
	assert_folded(s, 1,
		      "app-10;c;b 3000\napp-10;c;d 4000\nworker-11;c 70000\n"
		      "worker-11;d 8000\n");
	/* root app-10 c b d worker-11 c d */
	assert_pruned(s, 8);
	nw_stacks_free(s);

	/* Hiding the first frame below the thread: the rest moves up to it. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.hide = re(&r, "^(main|start)$");
	f.focus = re(&r, "^(b|d)$");
	s = filtered(fx, true, &f);
	assert_folded(s, 0,
		      "app-10;a;b 2\napp-10;c;b 3\napp-10;c;d 4\nworker-11;a;b 6\n"
		      "worker-11;d 8\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/*
 * s->unfiltered: the totals before the first filter, kept through the
 * next ones; the views say how much the filters kept.
 */
static void test_kept_totals(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s = stacks_of(fx, false);
	char *out;

	(void)state;
	f.focus = re(&r, "^b$");
	assert_int_equal(nw_stacks_filter(s, &f), 0);
	assert_non_null(s->unfiltered);
	assert_int_equal(s->unfiltered[0], TOTAL);
	assert_int_equal(s->unfiltered[1], TOTAL_PERIOD);
	out = view(nw_view_flat, s, 0);
	assert_non_null(strstr(out, "Samples: 11 of 36 kept by the filters (30.6%), 0 lost\n"));
	free(out);
	out = view(tree_view, s, 1);
	assert_non_null(strstr(out, "Samples: 11 of 36 kept by the filters (30.6%), 0 lost\n"
				    "Metric: t:period, total 11000\n"));
	free(out);

	/* A second filter: the totals stay those before the first. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.ignore = re(&r, "^c$");
	assert_int_equal(nw_stacks_filter(s, &f), 0);
	assert_int_equal(s->unfiltered[0], TOTAL);
	assert_int_equal(s->unfiltered[1], TOTAL_PERIOD);
	assert_folded(s, 0, "main;a;b 8\n");
	out = view(nw_view_flat, s, 0);
	assert_non_null(strstr(out, "Samples: 8 of 36 kept by the filters (22.2%), 0 lost\n"));
	free(out);
	out = view(modules_view, s, 0);
	assert_non_null(strstr(out, "Samples: 8 of 36 kept by the filters (22.2%), 0 lost\n"));
	free(out);

	/* Inverting is no filter: the totals and the header stay. */
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_int_equal(s->unfiltered[0], TOTAL);
	out = view(tree_view, s, 0);
	assert_non_null(strstr(out, "Samples: 8 of 36 kept by the filters (22.2%), 0 lost\n"));
	free(out);
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

/* The inverted stacks: leaf first, weights on the outermost caller. */
static void test_invert(void **state)
{
	struct fx *fx = known_profile();
	struct nw_stacks *s = stacks_of(fx, false);
	char *tree;

	(void)state;
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_folded(s, 0,
		      "a;main 1\n"
		      "b;a;main 8\n"
		      "b;c;main 3\n"
		      "c;main 7\n"
		      "d;c;main 4\n"
		      "d;start 8\n"
		      "y;x;main 5\n");
	assert_folded(s, 1,
		      "a;main 1000\n"
		      "b;a;main 8000\n"
		      "b;c;main 3000\n"
		      "c;main 70000\n"
		      "d;c;main 4000\n"
		      "d;start 8000\n"
		      "y;x;main 5000\n");
	/* A root frame's inclusive weight is the function's self weight. */
	tree = view(tree_view, s, 0);
	assert_non_null(strstr(tree, " INCL%   SELF%  FUNCTION\n"
				     " 33.3%    0.0%  d\n"
				     " 22.2%   22.2%    start\n"
				     " 11.1%    0.0%    c\n"
				     " 11.1%   11.1%      main\n"
				     " 30.6%    0.0%  b\n"));
	free(tree);
	/* The zero-weight node of the model is not there. */
	assert_pruned(s, 17);

	/* Twice: the stacks as they were. */
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_folded(s, 0,
		      "main;a 1\n"
		      "main;a;b 8\n"
		      "main;c 7\n"
		      "main;c;b 3\n"
		      "main;c;d 4\n"
		      "main;x;y 5\n"
		      "start;d 8\n");
	assert_null(s->unfiltered);
	nw_stacks_free(s);
	fx_free(fx);
}

/* Per thread: the thread frame stays on top, the stack below it turns. */
static void test_invert_per_thread(void **state)
{
	struct fx *fx = known_profile();
	struct nw_stacks *s = stacks_of(fx, true);

	(void)state;
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_folded(s, 0,
		      "app-10;a;main 1\n"
		      "app-10;b;a;main 2\n"
		      "app-10;b;c;main 3\n"
		      "app-10;d;c;main 4\n"
		      "app-10;y;x;main 5\n"
		      "worker-11;b;a;main 6\n"
		      "worker-11;c;main 7\n"
		      "worker-11;d;start 8\n");
	nw_stacks_free(s);
	fx_free(fx);
}

/* The root's own weight (samples without a frame) stays at the root. */
static void test_invert_root_weight(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th = fx_thread(fx, 1, 1, "t");
	static const uint64_t v[2] = {3, 300};
	struct nw_stacks *s;

	(void)state;
	fx_add(fx, th, "main;a", 1, 100);
	fx_put(fx, th, 0, NW_CCT_ROOT, v, 2);
	s = stacks_of(fx, false);
	assert_int_equal(nw_cct_metrics(s->tree, NW_CCT_ROOT)[0], 3);
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_int_equal(nw_cct_metrics(s->tree, NW_CCT_ROOT)[0], 3);
	assert_int_equal(nw_cct_metrics(s->tree, NW_CCT_ROOT)[1], 300);
	assert_folded(s, 1, "a;main 100\n");
	nw_stacks_free(s);
	fx_free(fx);
}

/* Filter, then invert (as narwhal-report does): the kept stacks, turned. */
static void test_filter_then_invert(void **state)
{
	struct fx *fx = known_profile();
	struct res r = {0};
	struct nw_stack_filter f = {0};
	struct nw_stacks *s;

	(void)state;
	f.focus = re(&r, "^b$");
	f.hide = re(&r, "^a$");
	s = filtered(fx, false, &f);
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_folded(s, 0, "b;c;main 3\nb;main 8\n");
	assert_folded(s, 1, "b;c;main 3000\nb;main 8000\n");
	nw_stacks_free(s);

	/* Per thread, cut at c: c below each thread, turned. */
	res_free(&r);
	f = (struct nw_stack_filter){0};
	f.root = re(&r, "^c$");
	s = filtered(fx, true, &f);
	assert_int_equal(nw_stacks_invert(s), 0);
	assert_folded(s, 0, "app-10;b;c 3\napp-10;d;c 4\nworker-11;c 7\n");
	nw_stacks_free(s);
	res_free(&r);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_active),
		cmocka_unit_test(test_unfiltered),
		cmocka_unit_test(test_focus),
		cmocka_unit_test(test_ignore),
		cmocka_unit_test(test_hide),
		cmocka_unit_test(test_thread_nodes),
		cmocka_unit_test(test_hide_whole_stack),
		cmocka_unit_test(test_root),
		cmocka_unit_test(test_root_recursion),
		cmocka_unit_test(test_combined),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_modules_addresses),
		cmocka_unit_test(test_whole_names),
		cmocka_unit_test(test_per_thread),
		cmocka_unit_test(test_kept_totals),
		cmocka_unit_test(test_invert),
		cmocka_unit_test(test_invert_root_weight),
		cmocka_unit_test(test_invert_per_thread),
		cmocka_unit_test(test_filter_then_invert),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
