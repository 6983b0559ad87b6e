/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report --callers (report/callers.h) on models built by hand
 * (fixture.h) whose splits are known, so every percentage and every
 * line's place is asserted:
 *
 *   two callers:  main;a;hot 20  main;a;hot;x 10  main;b;hot 70  main;other 100
 *                 (period: 60000, 30000, 10000, 100000: a leads by period)
 *   recursion:    main;f 2  main;f;f;f;leaf 4  main;g;f;f 4  main;other 10
 *
 * and the same two-caller split over two threads, per thread or merged;
 * the percent limit; the functions matched by their whole names, never a
 * thread frame; -ENOENT, -EINVAL and -EIO.
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
#include "report/callers.h"
#include "report/transform.h"

/* hot reached from a (30 samples) and from b (70), and as much weight elsewhere. */
static struct fx *two_callers(void)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th;

	fx_func(fx, "main", "/src/main.c", 3);
	fx_func(fx, "hot", "/src/hot.c", 12);
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;a;hot", 20, 60000);
	fx_add(fx, th, "main;a;hot;x", 10, 30000);
	fx_add(fx, th, "main;b;hot", 70, 10000);
	fx_add(fx, th, "main;other", 100, 100000);
	return fx;
}

static struct nw_stacks *stacks_of(const struct fx *fx, bool per_thread)
{
	struct nw_stacks_opts so = { .per_thread = per_thread };
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &so), 0);
	return s;
}

/* The view of the functions matching @pattern; its status in *ret. */
static char *run_on(const struct nw_stacks *s, const char *pattern, const struct nw_view_opts *o,
		    int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	regex_t re;

	assert_non_null(out);
	assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	*ret = nw_view_callers(out, s, &re, o);
	regfree(&re);
	fclose(out);
	return buf;
}

static char *run(const struct fx *fx, bool per_thread, const char *pattern,
		 const struct nw_view_opts *o, int *ret)
{
	struct nw_stacks *s = stacks_of(fx, per_thread);
	char *buf = run_on(s, pattern, o, ret);

	nw_stacks_free(s);
	return buf;
}

static void assert_view(const struct fx *fx, bool per_thread, const char *pattern,
			const struct nw_view_opts *o, const char *want)
{
	int ret;
	char *got = run(fx, per_thread, pattern, o, &ret);

	assert_int_equal(ret, 0);
	if (strcmp(got, want))
		fail_msg("--callers %s:\n%s\nexpected:\n%s", pattern, got, want);
	free(got);
}

/* Self and total, both callers heaviest first with both shares, and the direct callee. */
static void test_two_callers(void **state)
{
	struct fx *fx = two_callers();
	struct nw_view_opts o = { .percent_limit = 0.5 };

	(void)state;
	assert_view(fx, false, "hot", &o,
		    "Function: hot (hot.c:12) in app\n"
		    "Self:  45.0% (90)   Total:  50.0% (100)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  hot\n"
		    "  35.0%    70.0%    b\n"
		    "  35.0%    70.0%      main\n"
		    "  15.0%    30.0%    a\n"
		    "  15.0%    30.0%      main\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  50.0%   100.0%  hot\n"
		    "   5.0%    10.0%    x\n"
		    "\n");
	fx_free(fx);
}

/* Weighed by the period, a leads and hot's self is smaller: every number from metric 1. */
static void test_metric(void **state)
{
	struct fx *fx = two_callers();
	struct nw_view_opts o = { .percent_limit = 0.5, .metric = 1 };

	(void)state;
	assert_view(fx, false, "hot", &o,
		    "Function: hot (hot.c:12) in app\n"
		    "Self:  35.0% (70000)   Total:  50.0% (100000)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  hot\n"
		    "  45.0%    90.0%    a\n"
		    "  45.0%    90.0%      main\n"
		    "   5.0%    10.0%    b\n"
		    "   5.0%    10.0%      main\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  50.0%   100.0%  hot\n"
		    "  15.0%    30.0%    x\n"
		    "\n");
	fx_free(fx);
}

/* Each matching function, heaviest total first; a function without callees has no Callees. */
static void test_several_functions(void **state)
{
	struct fx *fx = two_callers();
	struct nw_view_opts o = { .percent_limit = 0.5 };

	(void)state;
	assert_view(fx, false, "^(a|b|x)$", &o,
		    "Function: b in app\n"
		    "Self:   0.0% (0)   Total:  35.0% (70)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  35.0%   100.0%  b\n"
		    "  35.0%   100.0%    main\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  35.0%   100.0%  b\n"
		    "  35.0%   100.0%    hot\n"
		    "\n"
		    "Function: a in app\n"
		    "Self:   0.0% (0)   Total:  15.0% (30)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  15.0%   100.0%  a\n"
		    "  15.0%   100.0%    main\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  15.0%   100.0%  a\n"
		    "  15.0%   100.0%    hot\n"
		    "\n"
		    "Function: x in app\n"
		    "Self:   5.0% (10)   Total:   5.0% (10)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "   5.0%   100.0%  x\n"
		    "   5.0%   100.0%    hot\n"
		    "   5.0%   100.0%      a\n"
		    "   5.0%   100.0%        main\n"
		    "\n");
	fx_free(fx);
}

/* Callers and functions of equal weight: by name. */
static void test_ties(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_view_opts o = { .percent_limit = 0.5 };
	struct nw_mthread *th;

	(void)state;
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;zeta;hot", 5, 0);
	fx_add(fx, th, "main;alpha;hot", 5, 0);
	fx_add(fx, th, "main;mid;hot", 5, 0);
	fx_add(fx, th, "main;other", 15, 0);
	/* hot and other weigh 15 each; "o" matches both (a search, not the whole string). */
	assert_view(fx, false, "o", &o,
		    "Function: hot in app\n"
		    "Self:  50.0% (15)   Total:  50.0% (15)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  hot\n"
		    "  16.7%    33.3%    alpha\n"
		    "  16.7%    33.3%      main\n"
		    "  16.7%    33.3%    mid\n"
		    "  16.7%    33.3%      main\n"
		    "  16.7%    33.3%    zeta\n"
		    "  16.7%    33.3%      main\n"
		    "\n"
		    "Function: other in app\n"
		    "Self:  50.0% (15)   Total:  50.0% (15)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  other\n"
		    "  50.0%   100.0%    main\n"
		    "\n");
	fx_free(fx);
}

/*
 * The limit is a share of everything (ALL%), not of the function: a (15%
 * of all, 30% of hot) goes at 20%, with the callers above it, and so does
 * the callee x (5%); the function's own line stays.
 */
static void test_percent_limit(void **state)
{
	struct fx *fx = two_callers();
	struct nw_view_opts o = { .percent_limit = 20 };

	(void)state;
	assert_view(fx, false, "hot", &o,
		    "Function: hot (hot.c:12) in app\n"
		    "Self:  45.0% (90)   Total:  50.0% (100)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  hot\n"
		    "  35.0%    70.0%    b\n"
		    "  35.0%    70.0%      main\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  50.0%   100.0%  hot\n"
		    "\n");
	/* Above the function's own share: only its line. */
	o.percent_limit = 60;
	assert_view(fx, false, "hot", &o,
		    "Function: hot (hot.c:12) in app\n"
		    "Self:  45.0% (90)   Total:  50.0% (100)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  hot\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  50.0%   100.0%  hot\n"
		    "\n");
	fx_free(fx);
}

/*
 * A recursive function counts once per path (perf's children mode): f's
 * total is its outermost occurrences' weight, 10 of 20, not the sum over
 * its frames (18); its callers are those of its outermost occurrences, and
 * its callees theirs, the recursive call among them (leaf is called by
 * an inner f only).  Self adds up at every depth.
 */
static void test_recursion(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_view_opts o = { .percent_limit = 0.5 };
	struct nw_mthread *th;

	(void)state;
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;f", 2, 0);
	fx_add(fx, th, "main;f;f;f;leaf", 4, 0);
	fx_add(fx, th, "main;g;f;f", 4, 0);
	fx_add(fx, th, "main;other", 10, 0);
	assert_view(fx, false, "^f$", &o,
		    "Function: f in app\n"
		    "Self:  30.0% (6)   Total:  50.0% (10)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  50.0%   100.0%  f\n"
		    "  30.0%    60.0%    main\n"
		    "  20.0%    40.0%    g\n"
		    "  20.0%    40.0%      main\n"
		    "\n"
		    "Callees:\n"
		    "   ALL%    FUNC%  CALLEE\n"
		    "  50.0%   100.0%  f\n"
		    "  40.0%    80.0%    f\n"
		    "\n");
	/* leaf below three f: each f once on its callers' path, not three times. */
	assert_view(fx, false, "^leaf$", &o,
		    "Function: leaf in app\n"
		    "Self:  20.0% (4)   Total:  20.0% (4)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  20.0%   100.0%  leaf\n"
		    "  20.0%   100.0%    f\n"
		    "  20.0%   100.0%      f\n"
		    "  20.0%   100.0%        f\n"
		    "  20.0%   100.0%          main\n"
		    "\n");
	fx_free(fx);
}

/* hot's callers in two threads: merged, the same split; per thread, the threads are the roots. */
static struct fx *two_threads(void)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th;

	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;a;hot", 30, 0);
	fx_add(fx, th, "main;other", 100, 0);
	/* A thread whose frame "hotel-2" the pattern matches too. */
	th = fx_thread(fx, 1, 2, "hotel");
	fx_add(fx, th, "main;b;hot", 70, 0);
	return fx;
}

static void test_two_threads(void **state)
{
	struct fx *fx = two_threads();
	struct nw_view_opts o = { .percent_limit = 0.5 };
	const char *head = "Function: hot in app\n"
			   "Self:  50.0% (100)   Total:  50.0% (100)\n"
			   "\n"
			   "Callers:\n"
			   "   ALL%    FUNC%  CALLER\n"
			   "  50.0%   100.0%  hot\n";
	char want[1024];

	(void)state;
	snprintf(want, sizeof(want), "%s%s", head,
		 "  35.0%    70.0%    b\n"
		 "  35.0%    70.0%      main\n"
		 "  15.0%    30.0%    a\n"
		 "  15.0%    30.0%      main\n"
		 "\n");
	assert_view(fx, false, "hot", &o, want);
	/* A thread frame is no function: hotel-2 is a caller, never a function shown. */
	snprintf(want, sizeof(want), "%s%s", head,
		 "  35.0%    70.0%    b\n"
		 "  35.0%    70.0%      main\n"
		 "  35.0%    70.0%        hotel-2\n"
		 "  15.0%    30.0%    a\n"
		 "  15.0%    30.0%      main\n"
		 "  15.0%    30.0%        app-1\n"
		 "\n");
	assert_view(fx, true, "hot", &o, want);
	fx_free(fx);
}

/* Matched against the whole name; shown short unless full_names. */
static void test_names(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_view_opts o = { .percent_limit = 0.5 };
	struct nw_mthread *th;

	(void)state;
	fx_func(fx, "ns::Foo::bar(int) const", "/src/foo.cc", 40);
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;ns::Foo::bar(int) const", 1, 0);
	fx_add(fx, th, "main", 3, 0);
	assert_view(fx, false, "bar\\(int\\)", &o,
		    "Function: ns::Foo::bar (foo.cc:40) in app\n"
		    "Self:  25.0% (1)   Total:  25.0% (1)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  25.0%   100.0%  ns::Foo::bar\n"
		    "  25.0%   100.0%    main\n"
		    "\n");
	o.full_names = true;
	assert_view(fx, false, "bar\\(int\\)", &o,
		    "Function: ns::Foo::bar(int) const (foo.cc:40) in app\n"
		    "Self:  25.0% (1)   Total:  25.0% (1)\n"
		    "\n"
		    "Callers:\n"
		    "   ALL%    FUNC%  CALLER\n"
		    "  25.0%   100.0%  ns::Foo::bar(int) const\n"
		    "  25.0%   100.0%    main\n"
		    "\n");
	fx_free(fx);
}

static void test_errors(void **state)
{
	struct fx *fx = two_threads();
	struct nw_view_opts o = { .percent_limit = 0.5 };
	struct nw_stacks *s;
	char small[64];
	regex_t re;
	FILE *out;
	char *got;
	int ret;

	(void)state;
	/* Nothing matches: -ENOENT and nothing written. */
	got = run(fx, false, "nothing", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	/* Only a thread frame matches: no function does. */
	got = run(fx, true, "^hotel-2$", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	/* A metric the tree lacks. */
	o.metric = 2;
	got = run(fx, false, "hot", &o, &ret);
	assert_int_equal(ret, -EINVAL);
	assert_string_equal(got, "");
	free(got);
	/* A full output: -EIO, not a silently short view. */
	o.metric = 0;
	s = stacks_of(fx, false);
	assert_int_equal(regcomp(&re, "hot", REG_EXTENDED | REG_NOSUB), 0);
	out = fmemopen(small, sizeof(small), "w");
	assert_non_null(out);
	setvbuf(out, NULL, _IONBF, 0);
	assert_int_equal(nw_view_callers(out, s, &re, &o), -EIO);
	fclose(out);
	regfree(&re);
	nw_stacks_free(s);
	fx_free(fx);
}

/*
 * A function in the frame table without weight in the view (a filter took
 * its stacks, or the metric has none there) matches nothing: -ENOENT, as
 * for a name never seen, not an empty view that succeeds.
 */
static void test_no_weight(void **state)
{
	static const char *const events[] = { "t", "u" };
	struct fx *fx = fx_new(events, 2);
	static const uint64_t t_only[] = { 5, 5000 }, u_only[] = { 0, 0, 7, 7000 };
	struct nw_view_opts o = { .percent_limit = 0.5 };
	struct nw_stack_filter sf = { 0 };
	struct nw_stacks *s;
	regex_t ignore;
	char *got;
	int ret;

	(void)state;
	fx_addv(fx, fx_thread(fx, 1, 1, "app"), "main;hot", 0, t_only, 2);
	fx_addv(fx, fx_th(fx, 0), "main;other", 0, u_only, 4);
	got = run(fx, false, "hot", &o, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(got, "Total: 100.0% (5)\n"));
	free(got);
	/* Event u never sampled hot. */
	o.metric = 2;
	got = run(fx, false, "hot", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	/* --ignore hot: the frame stays in the table, its stacks are gone. */
	o.metric = 0;
	s = stacks_of(fx, false);
	assert_int_equal(regcomp(&ignore, "hot", REG_EXTENDED | REG_NOSUB), 0);
	sf.ignore = &ignore;
	assert_int_equal(nw_stacks_filter(s, &sf), 0);
	got = run_on(s, "hot", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	regfree(&ignore);
	nw_stacks_free(s);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_callers),
		cmocka_unit_test(test_metric),
		cmocka_unit_test(test_several_functions),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_percent_limit),
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_no_weight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
