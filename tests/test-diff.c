/* SPDX-License-Identifier: MIT */
/*
 * Comparing the stacks of two known models (fixture.h) by calling context:
 *
 *   base (module /bin/app):  main;a 25   main;b 75             (total 100)
 *   new  (module /bin/app2): main;a 75   main;b 25   main;c 100 (total 200)
 *
 * Shares: a 25% -> 37.5% (+12.5), b 75% -> 12.5% (-62.5), c 0 -> 50% (+50).
 * Frames match by name although the module differs, as folded stacks do.
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
	assert_int_equal(nw_diff_new(x->bt, 1, x->nt, 1, &x->d), 0);
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

static char *run(int (*fn)(FILE *, const struct nw_diff *, double, const char *, const char *),
		 const struct nw_diff *d, double limit)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	assert_int_equal(fn(f, d, limit, "A.data", "B.data"), 0);
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

static void test_view(void **state)
{
	struct pair *x = *state;
	char *s = run(nw_diff_view, x->d, 0);

	assert_string_equal(s, "Base: A.data (100)\n"
			       "New:  B.data (200)\n"
			       "Change of each calling context's share (self), largest first.\n"
			       "\n"
			       "  DELTA   BASE%    NEW%  CONTEXT\n"
			       " -62.5%   75.0%   12.5%  main;b\n"
			       " +50.0%    0.0%   50.0%  main;c\n"
			       " +12.5%   25.0%   37.5%  main;a\n");
	free(s);
	/* Changes under the limit are counted, not shown. */
	s = run(nw_diff_view, x->d, 20);
	assert_non_null(strstr(s, "main;b\n"));
	assert_non_null(strstr(s, "main;c\n"));
	assert_null(strstr(s, "main;a\n"));
	assert_non_null(strstr(s, "(1 contexts changed by less than 20.0 points)\n"));
	free(s);
}

static int folded(FILE *f, const struct nw_diff *d, double limit, const char *a, const char *b)
{
	(void)limit;
	(void)a;
	(void)b;
	return nw_diff_folded(f, d);
}

static void test_folded(void **state)
{
	struct pair *x = *state;
	char *s = run(folded, x->d, 0);

	assert_string_equal(s, "main;a 25 75\n"
			       "main;b 75 25\n"
			       "main;c 0 100\n");
	free(s);
}

static void test_same(void **state)
{
	struct pair *x = *state;
	struct nw_diff *d;
	char *s;

	(void)state;
	assert_int_equal(nw_diff_new(x->bt, 1, x->bt, 1, &d), 0);
	s = run(nw_diff_view, d, 0);
	assert_non_null(strstr(s, "  +0.0%   25.0%   25.0%  main;a\n"));
	assert_non_null(strstr(s, "  +0.0%   75.0%   75.0%  main;b\n"));
	free(s);
	nw_diff_free(d);
}

static void test_errors(void **state)
{
	struct pair *x = *state;
	struct nw_diff *d = NULL;

	assert_int_equal(nw_diff_new(x->bt, 2, x->nt, 1, &d), -EINVAL);
	assert_int_equal(nw_diff_new(x->bt, 1, x->nt, 7, &d), -EINVAL);
	assert_null(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_joined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
