/* SPDX-License-Identifier: MIT */
/*
 * The text views on a small known profile, built by hand:
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

#include "report/profile.h"
#include "report/views.h"

static uint32_t fn(struct nw_profile *p, const char *name, const char *file, uint32_t line,
		   const char *module)
{
	int64_t f = nw_profile_intern(p, name, file, line, module);

	assert_true(f >= 0);
	return (uint32_t)f;
}

/* Adds @samples (and @period) at the stack @path ("main;a;b") of @th. */
static void add(struct nw_profile *p, struct nw_prof_thread *th, const char *path,
		uint64_t samples, uint64_t period)
{
	char buf[128], *save = NULL;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		n = nw_cct_child(th->tree, n, fn(p, t, NULL, 0, "/bin/app"), 0);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	nw_cct_metrics(th->tree, n)[0] += samples;
	nw_cct_metrics(th->tree, n)[1] += period;
	th->samples += samples;
}

static void name_metric(struct nw_profile *p, unsigned i, const char *name)
{
	free(p->metric_names[i]);
	p->metric_names[i] = strdup(name);
	assert_non_null(p->metric_names[i]);
}

static struct nw_profile *known_profile(void)
{
	struct nw_profile *p = nw_profile_new(2);
	struct nw_prof_thread *th;

	assert_non_null(p);
	name_metric(p, 0, "t:samples");
	name_metric(p, 1, "t:period");
	fn(p, "main", "/src/main.c", 1, "/bin/app");
	fn(p, "b", "/src/deep/b.c", 5, "/bin/app");
	fn(p, "c", "/src/c.c", 0, "/bin/app");

	th = nw_profile_add_thread(p, 10, 10, "app");
	assert_non_null(th);
	add(p, th, "main;a;b", 2, 2000);
	add(p, th, "main;a", 2, 2000);
	add(p, th, "main;b", 1, 1000);
	add(p, th, "main;rec;rec;leaf", 3, 3000);
	/* The second thread comes later: th may have moved. */
	th = nw_profile_add_thread(p, 10, 11, "worker");
	assert_non_null(th);
	add(p, th, "main;a;b", 4, 4000);
	add(p, th, "main;c", 8, 28000);
	return p;
}

/* Runs @view into a string; returns the view's status in *ret. */
typedef int (*view_fn)(FILE *, const struct nw_profile *, const struct nw_cct *,
		       const struct nw_view_opts *);

static char *run(view_fn view, const struct nw_profile *p, const struct nw_filter *f,
		 const struct nw_view_opts *o, int *ret)
{
	struct nw_cct *t = nw_profile_merge(p, f);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(t);
	assert_non_null(out);
	*ret = view(out, p, t, o);
	fclose(out);
	nw_cct_free(t);
	return buf;
}

static char *run_ok(view_fn view, const struct nw_profile *p, const struct nw_filter *f,
		    const struct nw_view_opts *o)
{
	int ret;
	char *s = run(view, p, f, o, &ret);

	assert_int_equal(ret, 0);
	return s;
}

static void test_folded(void **state)
{
	struct nw_profile *p = known_profile();
	struct nw_view_opts o = { .percent_limit = 0.5, .metric = 0 };
	struct nw_filter worker = { .tid = 11 };
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
	nw_profile_free(p);
}

static void test_folded_same_name(void **state)
{
	struct nw_profile *p = nw_profile_new(2);
	struct nw_view_opts o = { .metric = 0 };
	struct nw_prof_thread *th;
	uint32_t m, x, y, n;
	char *s;

	(void)state;
	assert_non_null(p);
	th = nw_profile_add_thread(p, 1, 1, "t");
	assert_non_null(th);
	m = fn(p, "main", NULL, 0, "/bin/app");
	x = fn(p, "dup", NULL, 0, "/lib/x.so");
	y = fn(p, "dup", NULL, 0, "/lib/y.so");
	assert_int_not_equal(x, y);
	n = nw_cct_child(th->tree, NW_CCT_ROOT, m, 0);
	nw_cct_metrics(th->tree, nw_cct_child(th->tree, n, x, 0))[0] = 1;
	nw_cct_metrics(th->tree, nw_cct_child(th->tree, n, y, 0))[0] = 2;
	nw_cct_metrics(th->tree, n)[0] = 5;
	/* Two frames, one name: one line. */
	s = run_ok(nw_view_folded, p, NULL, &o);
	assert_string_equal(s, "main 5\nmain;dup 3\n");
	free(s);
	nw_profile_free(p);
}

static void test_flat(void **state)
{
	struct nw_profile *p = known_profile();
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
	nw_profile_free(p);
}

static void test_flat_recursion(void **state)
{
	struct nw_profile *p = nw_profile_new(2);
	struct nw_view_opts o = { .metric = 0 };
	struct nw_prof_thread *th;
	char *s;

	(void)state;
	assert_non_null(p);
	th = nw_profile_add_thread(p, 1, 1, "t");
	assert_non_null(th);
	/* f recursing through g: f;g;f;g;f.  f and g each appear in every stack. */
	add(p, th, "f;g;f;g;f", 2, 0);
	add(p, th, "f;g", 1, 0);
	add(p, th, "h;f", 1, 0);
	s = run_ok(nw_view_flat, p, NULL, &o);
	assert_string_equal(s, "Samples: 4 (0 lost)\n"
			       "\n"
			       " SELF%  CUMUL%  FUNCTION\n"
			       " 75.0%  100.0%  f\n"
			       " 25.0%   75.0%  g\n"
			       "  0.0%   25.0%  h\n");
	free(s);
	nw_profile_free(p);
}

static void test_tree(void **state)
{
	struct nw_profile *p = known_profile();
	struct nw_view_opts o = { .percent_limit = 0.5, .metric = 0 };
	struct nw_filter app = { .tid = -1, .comm = "app" };
	const char *head = "Command:\n"
			   "Event: t\n"
			   "Samples: 20 (0 lost)\n"
			   "Threads: 2\n"
			   "\n"
			   " INCL%   SELF%  FUNCTION\n";
	char want[1024];
	char *s;

	(void)state;
	s = run_ok(nw_view_tree, p, NULL, &o);
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
	s = run_ok(nw_view_tree, p, NULL, &o);
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
	s = run_ok(nw_view_tree, p, NULL, &o);
	assert_non_null(strstr(s, "Metric: t:period, total 40000\n"));
	assert_non_null(strstr(s, "100.0%    0.0%  main\n"
				  " 70.0%   70.0%    c\n"
				  " 20.0%    5.0%    a\n"
				  " 15.0%   15.0%      b\n"
				  "  7.5%    0.0%    rec\n"));
	free(s);

	/* One thread: its own percentages, and the header says so. */
	o.metric = 0;
	o.filter = &app;
	s = run_ok(nw_view_tree, p, &app, &o);
	assert_non_null(strstr(s, "Samples: 8 (0 lost)\nThreads: 1\n"));
	assert_non_null(strstr(s, "100.0%    0.0%  main\n"
				  " 50.0%   25.0%    a\n"
				  " 25.0%   25.0%      b\n"
				  " 37.5%    0.0%    rec\n"));
	free(s);
	nw_profile_free(p);
}

static void test_threads(void **state)
{
	struct nw_profile *p = known_profile();
	struct nw_filter app = { .tid = 10 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	(void)state;
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(nw_view_threads(out, p, NULL), 0);
	fclose(out);
	assert_string_equal(buf, "     PID      TID  NAME                SAMPLES  SHARE%\n"
				 "      10       11  worker                   12   60.0%\n"
				 "      10       10  app                       8   40.0%\n");
	free(buf);

	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(nw_view_threads(out, p, &app), 0);
	fclose(out);
	assert_string_equal(buf, "     PID      TID  NAME                SAMPLES  SHARE%\n"
				 "      10       10  app                       8  100.0%\n");
	free(buf);
	nw_profile_free(p);
}

static void test_errors(void **state)
{
	struct nw_profile *p = known_profile();
	struct nw_view_opts o = { .metric = 2 };
	struct nw_cct *t = nw_profile_merge(p, NULL);
	char small[16];
	FILE *out;
	int ret;

	(void)state;
	assert_non_null(t);
	free(run(nw_view_tree, p, NULL, &o, &ret));
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
	assert_int_equal(nw_view_folded(out, p, t, &o), -EIO);
	fclose(out);
	nw_cct_free(t);
	nw_profile_free(p);
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
