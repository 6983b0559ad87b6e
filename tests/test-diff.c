/* SPDX-License-Identifier: MIT */
/*
 * Comparing the stacks of two known models (fixture.h), per function, per
 * calling context and as folded stacks:
 *
 *   base (module /bin/app):  main;a 25   main;b 75             (total 100)
 *   new  (module /bin/app2): main;a 75   main;b 25   main;c 100 (total 200)
 *
 * Shares: a 25% -> 37.5% (+12.5), b 75% -> 12.5% (-62.5), c 0 -> 50% (+50).
 * Frames match by name although the module differs, as folded stacks do.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/diff.h"

/* @path ("main;a") with every frame in @module: fixture.h's keys "main@MODULE;a@MODULE". */
static void add(struct fx *fx, struct nw_mthread *th, const char *module, const char *path,
		uint64_t w)
{
	char buf[128], keys[512] = "", *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save))
		snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s%s@%s",
			 keys[0] ? ";" : "", s, module);
	/* Metric 1 holds the weight; metric 0 something else, to catch a wrong metric. */
	fx_add(fx, th, keys, 1, w);
}

static struct nw_stacks *stacks_of(const struct fx *fx)
{
	struct nw_stacks_opts o = { 0 };
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &o), 0);
	return s;
}

/* The index of the frame called @name in @s. */
static int64_t frame_named(const struct nw_stacks *s, const char *name)
{
	for (uint32_t i = 0; i < s->frames.n; i++)
		if (!strcmp(s->frames.v[i].name, name))
			return i;
	return -1;
}

struct pair {
	struct fx *base, *new;
	struct nw_stacks *bt, *nt;
	struct nw_diff *d;
};

static int setup(void **state)
{
	struct pair *x = calloc(1, sizeof(*x));
	struct nw_mthread *th;

	assert_non_null(x);
	x->base = fx_new(NULL, 0);
	x->new = fx_new(NULL, 0);
	th = fx_thread(x->base, 1, 1, "app");
	add(x->base, th, "/bin/app", "main;a", 25);
	add(x->base, th, "/bin/app", "main;b", 75);
	/* Added in another order: frame indexes differ between the two. */
	th = fx_thread(x->new, 2, 2, "app2");
	add(x->new, th, "/bin/app2", "main;c", 100);
	add(x->new, th, "/bin/app2", "main;b", 25);
	add(x->new, th, "/bin/app2", "main;a", 75);
	x->bt = stacks_of(x->base);
	x->nt = stacks_of(x->new);
	assert_int_not_equal(frame_named(x->bt, "a"), frame_named(x->nt, "a"));
	assert_int_equal(nw_diff_new(x->bt, 1, 1, x->nt, 1, 1, &x->d), 0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct pair *x = *state;

	nw_diff_free(x->d);
	nw_stacks_free(x->bt);
	nw_stacks_free(x->nt);
	fx_free(x->base);
	fx_free(x->new);
	free(x);
	return 0;
}

/* The output of @fn on @d with @o (labels A.data and B.data). */
static char *run(int (*fn)(FILE *, const struct nw_diff *, const struct nw_diff_opts *),
		 const struct nw_diff *d, struct nw_diff_opts o)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	o.base_label = "A.data";
	o.new_label = "B.data";
	assert_int_equal(fn(f, d, &o), 0);
	fclose(f);
	return s;
}

static void test_joined(void **state)
{
	struct pair *x = *state;

	assert_int_equal(x->d->total[NW_DIFF_BASE], 100);
	assert_int_equal(x->d->total[NW_DIFF_NEW], 200);
	/* root, main, a, b, c: one tree, frames by name. */
	assert_int_equal(x->d->stacks->tree->n, 5);
	assert_int_equal(x->d->stacks->frames.n, 4);
}

/*
 * Per function, with the noise of 100 and 200 samples: b 75 -> 12.5 %
 * (SE 4.92 points, z -12.7) and c 0 -> 50 % (SE 3.54, z +14.1) are beyond
 * noise; a 25 -> 37.5 % (SE 5.52, z +2.3) and main (no self) are not.
 */
static void test_flat(void **state)
{
	struct pair *x = *state;
	char *s = run(nw_diff_flat, x->d, (struct nw_diff_opts){ 0 }), *b, *c;

	assert_non_null(strstr(s, "Base: A.data (100 samples)\nNew:  B.data (200 samples)\n"));
	assert_non_null(strstr(s, "binomial"));
	b = strstr(s, "  -62.5    4.9  -12.7   75.0%   12.5%   75.0%   12.5%  -62.5  b\n");
	c = strstr(s, "  +50.0    3.5  +14.1    0.0%   50.0%    0.0%   50.0%  +50.0  c (new)\n");
	assert_non_null(b);
	assert_non_null(c);
	assert_true(b < c);
	assert_null(strstr(s, "  a\n"));
	assert_non_null(strstr(s, "(2 functions changed within sampling noise; --all lists them)\n"));
	free(s);
	/* --all: the others too, after those beyond noise. */
	s = run(nw_diff_flat, x->d, (struct nw_diff_opts){ .all = true });
	assert_non_null(strstr(s, "  +12.5    5.5   +2.3   25.0%   37.5%   25.0%   37.5%  +12.5  a\n"));
	assert_true(strstr(s, "  a\n") > strstr(s, "  c (new)\n"));
	assert_null(strstr(s, "within sampling noise"));
	free(s);
	/* --diff-absolute: samples, Poisson: c 0 -> 100 (z +10.0), b 75 -> 25 (z -5.0). */
	s = run(nw_diff_flat, x->d, (struct nw_diff_opts){ .absolute = true });
	assert_non_null(strstr(s, "Poisson"));
	assert_non_null(strstr(s, "      +100        10  +10.0"));
	assert_non_null(strstr(s, "       -50        10   -5.0"));
	free(s);
}

/*
 * Per calling context: main holds everything on both sides (no change), b
 * and c below it; a (z +2.3) only with --all.
 */
static void test_tree(void **state)
{
	struct pair *x = *state;
	char *s = run(nw_diff_tree, x->d, (struct nw_diff_opts){ .percent_limit = 0 });

	/* main is shown within noise as the caller of b and c, which are beyond it. */
	assert_non_null(strstr(s, "   +0.0    0.0   +0.0  100.0%  100.0%  main\n"));
	assert_non_null(strstr(s, "    b\n"));
	assert_null(strstr(s, "    a\n"));
	assert_non_null(strstr(s, "(1 calling context changed within sampling noise; --all lists "
				  "them)\n"));
	free(s);
	s = run(nw_diff_tree, x->d, (struct nw_diff_opts){ .percent_limit = 0, .all = true });

	assert_non_null(strstr(s, "   +0.0    0.0   +0.0  100.0%  100.0%  main\n"));
	assert_non_null(strstr(s, "  -62.5    4.9  -12.7   75.0%   12.5%    b\n"));
	assert_non_null(strstr(s, "  +50.0    3.5  +14.1    0.0%   50.0%    c\n"));
	/* The heavier of the two sides first: b (75 %) before c (50 %) before a (37.5 %). */
	assert_true(strstr(s, "    b\n") < strstr(s, "    c\n"));
	assert_true(strstr(s, "    c\n") < strstr(s, "    a\n"));
	free(s);
	/* Nodes under the limit on both sides are left out. */
	s = run(nw_diff_tree, x->d, (struct nw_diff_opts){ .percent_limit = 40, .all = true });
	assert_null(strstr(s, "    a\n"));
	assert_non_null(strstr(s, "    c\n"));
	free(s);
}

static int folded(FILE *f, const struct nw_diff *d, const struct nw_diff_opts *o)
{
	(void)o;
	return nw_diff_folded(f, d);
}

static void test_folded(void **state)
{
	struct pair *x = *state;
	char *s = run(folded, x->d, (struct nw_diff_opts){ 0 });

	assert_string_equal(s, "main;a 25 75\n"
			       "main;b 75 25\n"
			       "main;c 0 100\n");
	free(s);
}

/* A measurement against itself: nothing changed, nothing beyond noise. */
static void test_same(void **state)
{
	struct pair *x = *state;
	struct nw_diff *d;
	char *s;

	(void)state;
	assert_int_equal(nw_diff_new(x->bt, 1, 1, x->bt, 1, 1, &d), 0);
	s = run(nw_diff_flat, d, (struct nw_diff_opts){ .all = true });
	assert_non_null(strstr(s, "   +0.0    6.1   +0.0   25.0%   25.0%   25.0%   25.0%   +0.0  a\n"));
	assert_non_null(strstr(s, "   +0.0    6.1   +0.0   75.0%   75.0%   75.0%   75.0%   +0.0  b\n"));
	free(s);
	s = run(nw_diff_flat, d, (struct nw_diff_opts){ 0 });
	assert_non_null(strstr(s, "(3 functions changed within sampling noise"));
	free(s);
	nw_diff_free(d);
}

/* The node of @name below main in @d's joined tree. */
static uint32_t node_named(const struct nw_diff *d, const char *name)
{
	const struct nw_cct *t = d->stacks->tree;

	for (uint32_t i = 1; i < t->n; i++)
		if (!strcmp(d->stacks->frames.v[t->nodes[i].ip].name, name))
			return i;
	fail_msg("no node %s", name);
	return 0;
}

/*
 * Runs apart: base runs A and B, new runs B and B.  a's shares 25 and 37.5
 * against 37.5 and 37.5: Welch's SE sqrt(78.125 / 2) = 6.25, t 1 with one
 * degree of freedom (tail 0.5, z 0.674); the change shown is the merged
 * runs' (100 of 300 -> 150 of 400: +4.17).  Runs that agree exactly on
 * both sides (B and B against B and B) fall back to the sample counts.
 */
static void test_runs(void **state)
{
	struct pair *x = *state;
	struct nw_diff_run b[2] = { { x->bt, 1, 1 }, { x->nt, 1, 1 } };
	struct nw_diff_run n[2] = { { x->nt, 1, 1 }, { x->nt, 1, 1 } };
	struct nw_diff *d = NULL, *same = NULL;
	struct nw_change c;
	char *s;

	assert_int_equal(nw_diff_join(b, 2, n, 2, 0, &d), 0);
	assert_true(d->runs);
	assert_int_equal(d->nmetrics, NW_DIFF_METRICS + 4);
	assert_int_equal(d->total[NW_DIFF_RUN], 100);
	assert_int_equal(d->total[NW_DIFF_RUN + 1], 200);
	assert_int_equal(d->total[NW_DIFF_BASE], 300);
	c = nw_diff_change(d, false, nw_cct_metrics(d->stacks->tree, node_named(d, "a")));
	assert_float_equal(c.se, 6.25, 1e-9);
	assert_float_equal(c.z, 0.6745, 1e-3);
	assert_float_equal(c.delta, 37.5 - 100.0 / 3, 1e-9);
	s = run(nw_diff_flat, d, (struct nw_diff_opts){ 0 });
	assert_non_null(strstr(s, "(300 samples in 2 runs)"));
	assert_non_null(strstr(s, "Noise: run-to-run spread (Welch, 2 base runs, 2 new runs"));
	assert_non_null(strstr(s, "changed within run-to-run noise"));
	free(s);
	assert_int_equal(nw_diff_join(n, 2, n, 2, 0, &same), 0);
	c = nw_diff_change(same, false, nw_cct_metrics(same->stacks->tree, node_named(same, "a")));
	assert_float_equal(c.se, 100 * sqrt(2 * 0.375 * 0.625 / 400), 1e-9);
	/* By module: every frame of the fixture is in /bin/app or /bin/app2, by file name. */
	nw_diff_free(same);
	assert_int_equal(nw_diff_join(b, 1, n, 1, NW_DIFF_BY_MODULE, &same), 0);
	assert_false(same->runs);
	s = run(nw_diff_flat, same, (struct nw_diff_opts){ .all = true });
	assert_non_null(strstr(s, "MODULE\n"));
	assert_non_null(strstr(s, "  app (gone)\n"));
	assert_non_null(strstr(s, "  app2 (new)\n"));
	free(s);
	nw_diff_free(same);
	nw_diff_free(d);
}

static int callers_of_b(FILE *f, const struct nw_diff *d, const struct nw_diff_opts *o)
{
	regex_t re;
	int ret;

	assert_int_equal(regcomp(&re, "^b$", REG_EXTENDED | REG_NOSUB), 0);
	ret = nw_diff_callers(f, d, &re, o);
	regfree(&re);
	return ret;
}

/* --callers b: b's self and total 75 -> 12.5 % (z -12.7), and so through main, its caller. */
static void test_callers(void **state)
{
	struct pair *x = *state;
	char *s = run(callers_of_b, x->d, (struct nw_diff_opts){ 0 });
	regex_t none;

	assert_non_null(strstr(s, "Function: b\n"));
	assert_non_null(strstr(s, "  -62.5    4.9  -12.7   75.0%   12.5%  self\n"));
	assert_non_null(strstr(s, "  -62.5    4.9  -12.7   75.0%   12.5%  total\n"));
	assert_non_null(strstr(s, "Callers:\n  -62.5    4.9  -12.7   75.0%   12.5%  b\n"
				  "  -62.5    4.9  -12.7   75.0%   12.5%    main\n"));
	free(s);
	assert_int_equal(regcomp(&none, "^nothing$", REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(nw_diff_callers(stdout, x->d, &none, &(struct nw_diff_opts){ 0 }),
			 -ENOENT);
	regfree(&none);
}

/*
 * The contexts of the joined tree in preorder: main on top, a, b and c
 * below it with the z of --diff --tree; a (37.5 % at most) left out under
 * a limit of 40 %.
 */
static void test_contexts(void **state)
{
	struct pair *x = *state;
	struct nw_diff_context *v;
	uint32_t n, b = UINT32_MAX;

	assert_int_equal(nw_diff_contexts(x->d, false, 0, &v, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(v[0].name, "main");
	assert_int_equal(v[0].parent, UINT32_MAX);
	assert_false(v[0].beyond);
	for (uint32_t i = 1; i < n; i++) {
		assert_int_equal(v[i].parent, 0);
		if (!strcmp(v[i].name, "b"))
			b = i;
	}
	assert_int_not_equal(b, UINT32_MAX);
	assert_float_equal(v[b].c.z, -12.7, 0.05);
	assert_true(v[b].beyond);
	free(v);
	assert_int_equal(nw_diff_contexts(x->d, false, 40, &v, &n), 0);
	assert_int_equal(n, 3);
	for (uint32_t i = 0; i < n; i++)
		assert_string_not_equal(v[i].name, "a");
	free(v);
}

static void test_errors(void **state)
{
	struct pair *x = *state;
	struct nw_diff *d = NULL;

	assert_int_equal(nw_diff_new(x->bt, 2, 1, x->nt, 1, 1, &d), -EINVAL);
	assert_int_equal(nw_diff_new(x->bt, 1, 1, x->nt, 7, 1, &d), -EINVAL);
	assert_int_equal(nw_diff_new(x->bt, 1, 9, x->nt, 1, 1, &d), -EINVAL);
	assert_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_joined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_callers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_contexts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
