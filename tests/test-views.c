/* SPDX-License-Identifier: MIT */
/*
 * The text views on a small known model, built by hand (fixture.h):
 *
 *   thread app    (10/10): main;a;b 2  main;a 2  main;b 1  main;rec;rec;leaf 3
 *   thread worker (10/11): main;a;b 4  main;c 8
 *
 * Metric 1 (period) is 1000 per sample, except main;c which weighs 28000,
 * so a view weighed by the wrong metric shows different numbers.
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
#include "report/folded.h"
#include "report/views.h"

static struct fx *known_profile(void)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th;

	fx_func(fx, "main", "/src/main.c", 1);
	fx_func(fx, "b", "/src/deep/b.c", 5);
	fx_func(fx, "c", "/src/c.c", 0);
	th = fx_thread(fx, 10, 10, "app");
	fx_add(fx, th, "main;a;b", 2, 2000);
	fx_add(fx, th, "main;a", 2, 2000);
	fx_add(fx, th, "main;b", 1, 1000);
	fx_add(fx, th, "main;rec;rec;leaf", 3, 3000);
	/* The second thread comes later: th may have moved. */
	th = fx_thread(fx, 10, 11, "worker");
	fx_add(fx, th, "main;a;b", 4, 4000);
	fx_add(fx, th, "main;c", 8, 28000);
	return fx;
}

/* Runs @view on the stacks of the threads @f selects; the view's status in *ret. */
typedef int (*view_fn)(FILE *, struct nw_stacks *, const struct nw_view_opts *);

/* The views of a tree only, as a view_fn. */
static int tree_view(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o)
{
	return nw_view_tree(out, s, o);
}

static struct nw_stacks *stacks_of(const struct fx *fx, const struct nw_filter *f)
{
	struct nw_stacks_opts so = { .filter = f };
	struct nw_stacks *st = nw_stacks_new(fx->m, fx->m->nmetrics);

	assert_non_null(st);
	assert_int_equal(nw_stacks_build(st, &so), 0);
	return st;
}

static char *run(view_fn view, const struct fx *fx, const struct nw_filter *f,
		 const struct nw_view_opts *o, int *ret)
{
	struct nw_stacks *st = stacks_of(fx, f);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	*ret = view(out, st, o);
	fclose(out);
	nw_stacks_free(st);
	return buf;
}

static char *run_ok(view_fn view, const struct fx *p, const struct nw_filter *f,
		    const struct nw_view_opts *o)
{
	int ret;
	char *s = run(view, p, f, o, &ret);

	assert_int_equal(ret, 0);
	return s;
}

static void test_folded(void **state)
{
	struct fx *p = known_profile();
	struct nw_view_opts o = { .percent_limit = 0.5, .metric = 0 };
	struct nw_filter worker = { .tid = 11, .pid = -1 };
	char *s;

	(void)state;
	s = run_ok(nw_view_folded, p, NULL, &o);
	assert_string_equal(s, "main;a 2\n"
			       "main;a;b 6\n"
			       "main;b 1\n"
			       "main;c 8\n"
			       "main;rec;rec;leaf 3\n");
	free(s);

	o.metric = 1;
	s = run_ok(nw_view_folded, p, NULL, &o);
	assert_string_equal(s, "main;a 2000\n"
			       "main;a;b 6000\n"
			       "main;b 1000\n"
			       "main;c 28000\n"
			       "main;rec;rec;leaf 3000\n");
	free(s);

	o.metric = 0;
	s = run_ok(nw_view_folded, p, &worker, &o);
	assert_string_equal(s, "main;a;b 4\nmain;c 8\n");
	free(s);
	fx_free(p);
}

static void test_folded_same_name(void **state)
{
	struct fx *p = fx_new(NULL, 0);
	struct nw_view_opts o = { .metric = 0 };
	struct nw_mthread *th;
	struct nw_stacks *st;
	char *s;

	(void)state;
	th = fx_thread(p, 1, 1, "t");
	fx_add(p, th, "main;dup@/lib/x.so", 1, 0);
	fx_add(p, th, "main;dup@/lib/y.so", 2, 0);
	fx_add(p, th, "main", 5, 0);
	/* Two frames (one per module), one name: one line. */
	st = stacks_of(p, NULL);
	assert_int_equal(st->frames.n, 3);
	nw_stacks_free(st);
	s = run_ok(nw_view_folded, p, NULL, &o);
	assert_string_equal(s, "main 5\nmain;dup 3\n");
	free(s);
	fx_free(p);
}

static void test_flat(void **state)
{
	struct fx *p = known_profile();
	struct nw_view_opts o = { .percent_limit = 0.5, .metric = 0 };
	char *s;

	(void)state;
	s = run_ok(nw_view_flat, p, NULL, &o);
	/* rec is counted once per stack (15%), not once per frame (30%). */
	assert_string_equal(s, "Samples: 20 (0 lost)\n"
			       "\n"
			       " SELF%  CUMUL%  FUNCTION\n"
			       " 40.0%   40.0%  c (c.c)\n"
			       " 35.0%   35.0%  b (b.c:5)\n"
			       " 15.0%   15.0%  leaf\n"
			       " 10.0%   40.0%  a\n"
			       "  0.0%  100.0%  main (main.c:1)\n"
			       "  0.0%   15.0%  rec\n");
	free(s);

	o.metric = 1;
	s = run_ok(nw_view_flat, p, NULL, &o);
	assert_string_equal(s, "Samples: 20 (0 lost)\n"
			       "Metric: t:period, total 40000\n"
			       "\n"
			       " SELF%  CUMUL%  FUNCTION\n"
			       " 70.0%   70.0%  c (c.c)\n"
			       " 17.5%   17.5%  b (b.c:5)\n"
			       "  7.5%    7.5%  leaf\n"
			       "  5.0%   20.0%  a\n"
			       "  0.0%  100.0%  main (main.c:1)\n"
			       "  0.0%    7.5%  rec\n");
	free(s);
	fx_free(p);
}

static void test_flat_recursion(void **state)
{
	struct fx *p = fx_new(NULL, 0);
	struct nw_view_opts o = { .metric = 0 };
	struct nw_mthread *th;
	char *s;

	(void)state;
	th = fx_thread(p, 1, 1, "t");
	/* f recursing through g: f;g;f;g;f.  f and g each appear in every stack. */
	fx_add(p, th, "f;g;f;g;f", 2, 0);
	fx_add(p, th, "f;g", 1, 0);
	fx_add(p, th, "h;f", 1, 0);
	s = run_ok(nw_view_flat, p, NULL, &o);
	assert_string_equal(s, "Samples: 4 (0 lost)\n"
			       "\n"
			       " SELF%  CUMUL%  FUNCTION\n"
			       " 75.0%  100.0%  f\n"
			       " 25.0%   75.0%  g\n"
			       "  0.0%   25.0%  h\n");
	free(s);
	fx_free(p);
}

static void test_tree(void **state)
{
	struct fx *p = known_profile();
	struct nw_view_opts o = { .percent_limit = 0.5, .metric = 0 };
	struct nw_filter app = { .tid = -1, .pid = -1, .comm = "app" };
	const char *head = "Command:\n"
			   "Event: t\n"
			   "Samples: 20 (0 lost)\n"
			   "Threads: 2\n"
			   "\n"
			   " INCL%   SELF%  FUNCTION\n";
	char want[1024];
	char *s;

	(void)state;
	s = run_ok(tree_view, p, NULL, &o);
	snprintf(want, sizeof(want), "%s%s", head,
		 "100.0%    0.0%  main\n"
		 " 40.0%   10.0%    a\n"
		 " 30.0%   30.0%      b\n"
		 " 40.0%   40.0%    c\n"
		 " 15.0%    0.0%    rec\n"
		 " 15.0%    0.0%      rec\n"
		 " 15.0%   15.0%        leaf\n"
		 "  5.0%    5.0%    b\n");
	assert_string_equal(s, want);
	free(s);

	/* Below the limit, a node goes with its subtree. */
	o.percent_limit = 20;
	s = run_ok(tree_view, p, NULL, &o);
	snprintf(want, sizeof(want), "%s%s", head,
		 "100.0%    0.0%  main\n"
		 " 40.0%   10.0%    a\n"
		 " 30.0%   30.0%      b\n"
		 " 40.0%   40.0%    c\n");
	assert_string_equal(s, want);
	free(s);

	/* Weighed by period, c leads. */
	o.percent_limit = 0.5;
	o.metric = 1;
	s = run_ok(tree_view, p, NULL, &o);
	assert_non_null(strstr(s, "Metric: t:period, total 40000\n"));
	assert_non_null(strstr(s, "100.0%    0.0%  main\n"
				  " 70.0%   70.0%    c\n"
				  " 20.0%    5.0%    a\n"
				  " 15.0%   15.0%      b\n"
				  "  7.5%    0.0%    rec\n"));
	free(s);

	/* One thread: its own percentages, and the header says so. */
	o.metric = 0;
	s = run_ok(tree_view, p, &app, &o);
	assert_non_null(strstr(s, "Samples: 8 (0 lost)\nThreads: 1\n"));
	assert_non_null(strstr(s, "100.0%    0.0%  main\n"
				  " 50.0%   25.0%    a\n"
				  " 25.0%   25.0%      b\n"
				  " 37.5%    0.0%    rec\n"));
	free(s);
	fx_free(p);
}

static void test_threads(void **state)
{
	struct fx *p = known_profile();
	struct nw_filter app = { .tid = 10, .pid = -1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	(void)state;
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(nw_view_threads(out, p->m, NULL), 0);
	fclose(out);
	/* Most samples first; the process's name last. */
	assert_string_equal(buf, "     PID      TID  NAME                SAMPLES  SHARE%  PROCESS\n"
				 "      10       11  worker                   12   60.0%  app\n"
				 "      10       10  app                       8   40.0%  app\n");
	free(buf);

	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(nw_view_threads(out, p->m, &app), 0);
	fclose(out);
	assert_string_equal(buf, "     PID      TID  NAME                SAMPLES  SHARE%  PROCESS\n"
				 "      10       10  app                       8  100.0%  app\n");
	free(buf);
	fx_free(p);
}

static void test_errors(void **state)
{
	struct fx *p = known_profile();
	struct nw_view_opts o = { .metric = 2 };
	struct nw_stacks *t = stacks_of(p, NULL);
	char small[16];
	FILE *out;
	int ret;

	(void)state;
	free(run(tree_view, p, NULL, &o, &ret));
	assert_int_equal(ret, -EINVAL);
	free(run(nw_view_flat, p, NULL, &o, &ret));
	assert_int_equal(ret, -EINVAL);
	free(run(nw_view_folded, p, NULL, &o, &ret));
	assert_int_equal(ret, -EINVAL);

	/* A full output reports -EIO instead of a silently short view. */
	o.metric = 0;
	out = fmemopen(small, sizeof(small), "w");
	assert_non_null(out);
	setvbuf(out, NULL, _IONBF, 0);
	assert_int_equal(nw_view_folded(out, t, &o), -EIO);
	fclose(out);
	nw_stacks_free(t);
	fx_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_folded_same_name),
		cmocka_unit_test(test_flat),
		cmocka_unit_test(test_flat_recursion),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
