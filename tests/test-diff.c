/* SPDX-License-Identifier: MIT */
/*
 * Comparing two known trees by calling context:
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

#include "report/diff.h"

static void add(struct nw_profile *p, struct nw_cct *t, const char *module, const char *path,
		uint64_t w)
{
	char buf[128], *save = NULL;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
		int64_t f = nw_profile_intern(p, s, NULL, 0, module);

		assert_true(f >= 0);
		n = nw_cct_child(t, n, (uint64_t)f, 0);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	/* Metric 1 holds the weight; metric 0 something else, to catch a wrong metric. */
	nw_cct_metrics(t, n)[0] += 1;
	nw_cct_metrics(t, n)[1] += w;
}

struct pair {
	struct nw_profile *base, *new;
	struct nw_cct *bt, *nt;
	struct nw_diff *d;
};

static int setup(void **state)
{
	struct pair *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	x->base = nw_profile_new(2);
	x->new = nw_profile_new(2);
	x->bt = nw_cct_new(2);
	x->nt = nw_cct_new(2);
	assert_true(x->base && x->new && x->bt && x->nt);
	add(x->base, x->bt, "/bin/app", "main;a", 25);
	add(x->base, x->bt, "/bin/app", "main;b", 75);
	/* Interned in another order: frame indexes differ between the two. */
	add(x->new, x->nt, "/bin/app2", "main;c", 100);
	add(x->new, x->nt, "/bin/app2", "main;b", 25);
	add(x->new, x->nt, "/bin/app2", "main;a", 75);
	assert_int_equal(nw_diff_new(x->base, x->bt, 1, x->new, x->nt, 1, &x->d), 0);
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct pair *x = *state;

	nw_diff_free(x->d);
	nw_cct_free(x->bt);
	nw_cct_free(x->nt);
	nw_profile_free(x->base);
	nw_profile_free(x->new);
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
	assert_int_equal(x->d->tree->n, 5);
	assert_int_equal(x->d->frames->nfuncs, 4);
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
	assert_int_equal(nw_diff_new(x->base, x->bt, 1, x->base, x->bt, 1, &d), 0);
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

	assert_int_equal(nw_diff_new(x->base, x->bt, 2, x->new, x->nt, 1, &d), -EINVAL);
	assert_int_equal(nw_diff_new(x->base, x->bt, 1, x->new, x->nt, 7, &d), -EINVAL);
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
