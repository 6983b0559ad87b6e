/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report --lines and --addresses (report/lines.h) on a model built
 * by hand (fixture.h): hot at four lines of a source file the test writes,
 * helper inlined into it at line 12, callee called from line 13.
 *
 *                         samples  period
 *   main;hot#10                10   40000
 *   main;hot#11                20   10000
 *   main;hot#12                40   20000   (in helper, inlined: hot.c:5)
 *   main;hot#13;callee         30   30000
 *   main;other                100  100000
 *
 * Everything comes from the model's trees and symbol table: /bin/app does
 * not exist, and a source file that cannot be read leaves line numbers.
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
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/diff.h"
#include "report/lines.h"

static const char hot_c[] = "#include <stdio.h>\n"
			    "\n"
			    "static int helper(int x)\n"
			    "{\n"
			    "\treturn x * 2;\n" /* 5 */
			    "}\n"
			    "\n"
			    "int hot(int n)\n" /* 8 */
			    "{\n"
			    "\tint s = 0;\n" /* 10 */
			    "\tfor (int i = 0; i < n; i++)\n"
			    "\t\ts += helper(i);\n"
			    "\treturn s + callee();\n"
			    "}\n"
			    "\n"
			    "int main(void)\n" /* 16 */
			    "{\n"
			    "\treturn hot(10);\n"
			    "}\n";

struct lines_state {
	char dir[64];
	char path[128]; /* dir/hot.c: hot_c, readable */
	char stale[128]; /* dir/stale.c: hot_c cut after line 11 (edited since) */
};

static int write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	if (fwrite(text, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static int setup(void **state)
{
	struct lines_state *ls = calloc(1, sizeof(*ls));
	const char *line12 = strstr(hot_c, "\t\ts += helper");

	if (!ls)
		return -1;
	*state = ls;
	snprintf(ls->dir, sizeof(ls->dir), "/tmp/nw-test-lines-XXXXXX");
	if (!mkdtemp(ls->dir))
		return -1;
	snprintf(ls->path, sizeof(ls->path), "%s/hot.c", ls->dir);
	snprintf(ls->stale, sizeof(ls->stale), "%s/stale.c", ls->dir);
	return write_file(ls->path, hot_c, strlen(hot_c)) ||
	       write_file(ls->stale, hot_c, (size_t)(line12 - hot_c));
}

static int teardown(void **state)
{
	struct lines_state *ls = *state;

	unlink(ls->path);
	unlink(ls->stale);
	rmdir(ls->dir);
	free(ls);
	return 0;
}

/* The model above, its functions in @file (which need not exist). */
static struct fx *hot_model(const char *file)
{
	struct fx *fx = fx_new(NULL, 0);
	const struct fx_frame main18[] = { { "main", file, 18, 16 } };
	const struct fx_frame hot10[] = { { "hot", file, 10, 8 } };
	const struct fx_frame hot11[] = { { "hot", file, 11, 8 } };
	const struct fx_frame hot12[] = { { "hot", file, 12, 8 }, { "helper", file, 5, 3 } };
	const struct fx_frame hot13[] = { { "hot", file, 13, 8 } };
	struct nw_mthread *th;

	fx_frames(fx, "main", main18, 1);
	fx_frames(fx, "hot#10", hot10, 1);
	fx_frames(fx, "hot#11", hot11, 1);
	fx_frames(fx, "hot#12", hot12, 2);
	fx_frames(fx, "hot#13", hot13, 1);
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;hot#10", 10, 40000);
	fx_add(fx, th, "main;hot#11", 20, 10000);
	fx_add(fx, th, "main;hot#12", 40, 20000);
	fx_add(fx, th, "main;hot#13;callee", 30, 30000);
	fx_add(fx, th, "main;other", 100, 100000);
	return fx;
}

/* The view of the functions matching @pattern; its status in *ret. */
static char *run(const struct fx *fx, const struct nw_filter *f, const char *pattern,
		 struct nw_lines_opts *o, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	regex_t re;

	assert_non_null(out);
	assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	o->func = &re;
	*ret = nw_view_lines(out, fx->m, f, o);
	o->func = NULL;
	regfree(&re);
	fclose(out);
	return buf;
}

static void assert_view(const struct fx *fx, const struct nw_filter *f, const char *pattern,
			struct nw_lines_opts *o, const char *want)
{
	int ret;
	char *got = run(fx, f, pattern, o, &ret);

	assert_int_equal(ret, 0);
	if (strcmp(got, want))
		fail_msg("--lines %s:\n%s\nexpected:\n%s", pattern, got, want);
	free(got);
}

static const char hot_head[] = "Function: hot (hot.c:8) in app\n"
			       "Self:  15.0% (30)   Total:  50.0% (100)\n";

/* helper's code inlined at line 12: no self of hot there, and helper's own line below. */
static const char hot_inlined[] = "\n"
				  "Inlined into hot, at their own lines:\n"
				  "  SELF%  TOTAL%  FILE:LINE  FUNCTION\n"
				  "  20.0%    20.0%  hot.c:5  helper\n"
				  "\n";

/*
 * The source beside the lines, from two lines above the function's first
 * to two below the last sampled one; self and total per line, inlined code
 * counted at its call site (12) and a call at its line (13, total only).
 */
static void test_source(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->path);
	struct nw_lines_opts o = { 0 };
	char want[2048];

	snprintf(want, sizeof(want),
		 "%sSource: %s\n"
		 "\n"
		 "  SELF%%  TOTAL%%   LINE  SOURCE\n"
		 "                      6  }\n"
		 "                      7  \n"
		 "                      8  int hot(int n)\n"
		 "                      9  {\n"
		 "   5.0%%     5.0%%     10  \tint s = 0;\n"
		 "  10.0%%    10.0%%     11  \tfor (int i = 0; i < n; i++)\n"
		 "   0.0%%    20.0%%     12  \t\ts += helper(i);\n"
		 "   0.0%%    15.0%%     13  \treturn s + callee();\n"
		 "                     14  }\n"
		 "                     15  \n"
		 "%s",
		 hot_head, ls->path, hot_inlined);
	assert_view(fx, NULL, "^hot$", &o, want);

	/* One line of context: from the function's first line - 1. */
	o.context = 1;
	snprintf(want, sizeof(want),
		 "%sSource: %s\n"
		 "\n"
		 "  SELF%%  TOTAL%%   LINE  SOURCE\n"
		 "                      7  \n"
		 "                      8  int hot(int n)\n"
		 "                      9  {\n"
		 "   5.0%%     5.0%%     10  \tint s = 0;\n"
		 "  10.0%%    10.0%%     11  \tfor (int i = 0; i < n; i++)\n"
		 "   0.0%%    20.0%%     12  \t\ts += helper(i);\n"
		 "   0.0%%    15.0%%     13  \treturn s + callee();\n"
		 "                     14  }\n"
		 "%s",
		 hot_head, ls->path, hot_inlined);
	assert_view(fx, NULL, "^hot$", &o, want);
	fx_free(fx);
}

/*
 * A source file shorter than the lines sampled (edited since): the lines
 * past its end still show, by number, after the text it has.
 */
static void test_source_shorter(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->stale);
	struct nw_lines_opts o = { 0 };
	char want[2048];

	snprintf(want, sizeof(want),
		 "Function: hot (stale.c:8) in app\n"
		 "Self:  15.0%% (30)   Total:  50.0%% (100)\n"
		 "Source: %s\n"
		 "\n"
		 "  SELF%%  TOTAL%%   LINE  SOURCE\n"
		 "                      6  }\n"
		 "                      7  \n"
		 "                      8  int hot(int n)\n"
		 "                      9  {\n"
		 "   5.0%%     5.0%%     10  \tint s = 0;\n"
		 "  10.0%%    10.0%%     11  \tfor (int i = 0; i < n; i++)\n"
		 "   0.0%%    20.0%%     12  stale.c\n"
		 "   0.0%%    15.0%%     13  stale.c\n"
		 "\n"
		 "Inlined into hot, at their own lines:\n"
		 "  SELF%%  TOTAL%%  FILE:LINE  FUNCTION\n"
		 "  20.0%%    20.0%%  stale.c:5  helper\n"
		 "\n",
		 ls->stale);
	assert_view(fx, NULL, "^hot$", &o, want);
	fx_free(fx);
}

/* A file that cannot be read here: the line numbers alone, by line. */
static void test_unreadable(void **state)
{
	struct fx *fx = hot_model("/nonexistent/narwhal/hot.c");
	struct nw_lines_opts o = { 0 };
	char want[2048];

	(void)state;
	snprintf(want, sizeof(want),
		 "%sSource: /nonexistent/narwhal/hot.c (not readable here: line numbers only)\n"
		 "\n"
		 "  SELF%%  TOTAL%%   LINE  FILE\n"
		 "   5.0%%     5.0%%     10  hot.c\n"
		 "  10.0%%    10.0%%     11  hot.c\n"
		 "   0.0%%    20.0%%     12  hot.c\n"
		 "   0.0%%    15.0%%     13  hot.c\n"
		 "%s",
		 hot_head, hot_inlined);
	assert_view(fx, NULL, "^hot$", &o, want);
	fx_free(fx);
}

/*
 * --sort: hottest total first, no source; the inlined callee is a
 * function of its own too (its line is self there).  By period, another
 * order.
 */
static void test_sort_and_metric(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->path);
	struct nw_lines_opts o = { .sort = true };

	assert_view(fx, NULL, "hot|helper", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  15.0% (30)   Total:  50.0% (100)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "   0.0%    20.0%     12  hot.c\n"
		    "   0.0%    15.0%     13  hot.c\n"
		    "  10.0%    10.0%     11  hot.c\n"
		    "   5.0%     5.0%     10  hot.c\n"
		    "\n"
		    "Inlined into hot, at their own lines:\n"
		    "  SELF%  TOTAL%  FILE:LINE  FUNCTION\n"
		    "  20.0%    20.0%  hot.c:5  helper\n"
		    "\n"
		    "Function: helper (hot.c:3) in app\n"
		    "Self:  20.0% (40)   Total:  20.0% (40)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "  20.0%    20.0%      5  hot.c\n"
		    "\n");
	/* By period: line 10 leads, helper weighs less than hot's line 13. */
	o.metric = 1;
	assert_view(fx, NULL, "hot|helper", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  25.0% (50000)   Total:  50.0% (100000)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "  20.0%    20.0%     10  hot.c\n"
		    "   0.0%    15.0%     13  hot.c\n"
		    "   0.0%    10.0%     12  hot.c\n"
		    "   5.0%     5.0%     11  hot.c\n"
		    "\n"
		    "Inlined into hot, at their own lines:\n"
		    "  SELF%  TOTAL%  FILE:LINE  FUNCTION\n"
		    "  10.0%    10.0%  hot.c:5  helper\n"
		    "\n"
		    "Function: helper (hot.c:3) in app\n"
		    "Self:  10.0% (20000)   Total:  10.0% (20000)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "  10.0%    10.0%      5  hot.c\n"
		    "\n");
	fx_free(fx);
}

/*
 * --addresses: per sampled instruction, as the module's offset, by
 * address (a caller at its call instruction: the return address - 1) or
 * hottest first.  The instruction of helper inlined into hot is hot's
 * own, so hot's self counts it here.
 */
static void test_addresses(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->path);
	struct nw_lines_opts o = { .addresses = true };

	assert_view(fx, NULL, "^hot$", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  35.0% (70)   Total:  50.0% (100)\n"
		    "\n"
		    "  SELF%  TOTAL%  ADDRESS             LINE\n"
		    "   5.0%     5.0%  app+0x1100        hot.c:10\n"
		    "  10.0%    10.0%  app+0x1200        hot.c:11\n"
		    "  20.0%    20.0%  app+0x1300        hot.c:12\n"
		    "   0.0%    15.0%  app+0x1400        hot.c:13\n"
		    "\n");
	o.sort = true;
	assert_view(fx, NULL, "^(hot|helper)$", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  35.0% (70)   Total:  50.0% (100)\n"
		    "\n"
		    "  SELF%  TOTAL%  ADDRESS             LINE\n"
		    "  20.0%    20.0%  app+0x1300        hot.c:12\n"
		    "   0.0%    15.0%  app+0x1400        hot.c:13\n"
		    "  10.0%    10.0%  app+0x1200        hot.c:11\n"
		    "   5.0%     5.0%  app+0x1100        hot.c:10\n"
		    "\n"
		    "Function: helper (hot.c:3) in app\n"
		    "Self:  20.0% (40)   Total:  20.0% (40)\n"
		    "\n"
		    "  SELF%  TOTAL%  ADDRESS             LINE\n"
		    "  20.0%    20.0%  app+0x1300        hot.c:5\n"
		    "\n");
	fx_free(fx);
}

/* The rows --lines prints, as data: per line of hot (and helper inlined at 12), self and total. */
static void test_weights(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->path);
	struct nw_addr_weights w;
	regex_t re;
	bool seen = false;

	assert_int_equal(regcomp(&re, "^hot$", REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(nw_lines_weights(fx->m, NULL, &re, 0, &w), 0);
	assert_int_equal(w.whole, 200);
	for (size_t i = 0; i < w.n; i++) {
		const struct nw_addr_weight *r = &w.v[i];

		assert_string_equal(r->func, "hot");
		assert_string_equal(r->file, ls->path);
		if (r->line == 13)
			assert_true(r->self == 0 && r->total == 30);
		if (r->callee) {
			assert_string_equal(r->callee, "helper");
			assert_true(r->line == 5 && r->self == 40 && r->total == 40);
			seen = true;
		}
	}
	assert_true(seen);
	nw_addr_weights_fini(&w);
	regfree(&re);
	fx_free(fx);
}

/*
 * --diff --lines: line 11 of hot 20 -> 120 samples (10 % of 200 -> 40 % of
 * 300: +30 points, SE sqrt(.1 * .9 / 200 + .4 * .6 / 300) = 3.5, z +8.5);
 * the other lines within noise, listed with --all, helper's as inlined.
 */
static void test_diff(void **state)
{
	struct lines_state *ls = *state;
	struct fx *base = hot_model(ls->path), *new = hot_model(ls->path);
	struct nw_diff_opts o = { .base_label = "A", .new_label = "B" };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	regex_t re;

	fx_add(new, &new->m->threads[0], "main;hot#11", 100, 0);
	assert_int_equal(regcomp(&re, "^hot$", REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(nw_diff_lines(out, base->m, 0, new->m, 0, NULL, &re, &o), 0);
	o.all = true;
	assert_int_equal(nw_diff_lines(out, base->m, 0, new->m, 0, NULL, &re, &o), 0);
	fclose(out);
	assert_non_null(strstr(buf, "  +30.0    3.5   +8.5   10.0%   40.0%   10.0%   40.0%  +30.0  "
				    "hot (hot.c:11)\n"));
	assert_non_null(strstr(buf, "(4 lines changed within sampling noise; --all lists them)\n"));
	assert_non_null(strstr(buf, "  hot (hot.c:5), inlined helper\n"));
	free(buf);
	regfree(&re);
	fx_free(base);
	fx_free(new);
}

/* A sample with hot at two lines counts at both, and hot once; a line on the path twice once. */
static void test_once_per_sample(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	const struct fx_frame hot10[] = { { "hot", "/nonexistent/hot.c", 10, 8 } };
	const struct fx_frame hot13[] = { { "hot", "/nonexistent/hot.c", 13, 8 } };
	struct nw_lines_opts o = { 0 };
	struct nw_mthread *th;

	(void)state;
	fx_frames(fx, "hot#10", hot10, 1);
	fx_frames(fx, "hot#13", hot13, 1);
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;hot#13;hot#13;hot#10", 5, 0);
	fx_add(fx, th, "main;other", 5, 0);
	assert_view(fx, NULL, "hot", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  50.0% (5)   Total:  50.0% (5)\n"
		    "Source: /nonexistent/hot.c (not readable here: line numbers only)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "  50.0%    50.0%     10  hot.c\n"
		    "   0.0%    50.0%     13  hot.c\n"
		    "\n");
	fx_free(fx);
}

/* The threads a filter selects, and only theirs, make the numbers. */
static void test_filter(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->path);
	struct nw_filter first = { .tid = 1, .pid = -1 }, second = { .tid = 2, .pid = -1 };
	struct nw_lines_opts o = { .sort = true };
	int ret;
	char *got;

	fx_add(fx, fx_thread(fx, 1, 2, "worker"), "main;hot#11", 50, 0);
	/* Both threads: line 11 has 20 + 50 of 250. */
	assert_view(fx, NULL, "^hot$", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  32.0% (80)   Total:  60.0% (150)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "  28.0%    28.0%     11  hot.c\n"
		    "   0.0%    16.0%     12  hot.c\n"
		    "   0.0%    12.0%     13  hot.c\n"
		    "   4.0%     4.0%     10  hot.c\n"
		    "\n"
		    "Inlined into hot, at their own lines:\n"
		    "  SELF%  TOTAL%  FILE:LINE  FUNCTION\n"
		    "  16.0%    16.0%  hot.c:5  helper\n"
		    "\n");
	/* The first thread alone: as without the second. */
	got = run(fx, &first, "^hot$", &o, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(got, "Self:  15.0% (30)   Total:  50.0% (100)\n"));
	free(got);
	/* The second alone: all of it at line 11; helper was not sampled there. */
	got = run(fx, &second, "hot|helper", &o, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(got, "Function: hot (hot.c:8) in app\n"
				 "Self: 100.0% (50)   Total: 100.0% (50)\n"
				 "\n"
				 "  SELF%  TOTAL%   LINE  FILE\n"
				 " 100.0%   100.0%     11  hot.c\n"
				 "\n");
	free(got);
	got = run(fx, &second, "^helper$", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	free(got);
	fx_free(fx);
}

/* Names: matched whole, shown short unless full_names, the inlined callee's too. */
static void test_names(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	const struct fx_frame at[] = { { "ns::Foo::bar(int) const", "/nonexistent/foo.cc", 41, 40 },
				       { "ns::get<int>(int*)", "/nonexistent/foo.h", 7, 6 } };
	struct nw_lines_opts o = { .sort = true };

	(void)state;
	fx_frames(fx, "bar#41", at, 2);
	fx_add(fx, fx_thread(fx, 1, 1, "app"), "main;bar#41", 4, 0);
	assert_view(fx, NULL, "bar\\(int\\)", &o,
		    "Function: ns::Foo::bar (foo.cc:40) in app\n"
		    "Self:   0.0% (0)   Total: 100.0% (4)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "   0.0%   100.0%     41  foo.cc\n"
		    "\n"
		    "Inlined into ns::Foo::bar, at their own lines:\n"
		    "  SELF%  TOTAL%  FILE:LINE  FUNCTION\n"
		    " 100.0%   100.0%  foo.h:7  ns::get<int>\n"
		    "\n");
	o.full_names = true;
	assert_view(fx, NULL, "bar\\(int\\)", &o,
		    "Function: ns::Foo::bar(int) const (foo.cc:40) in app\n"
		    "Self:   0.0% (0)   Total: 100.0% (4)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "   0.0%   100.0%     41  foo.cc\n"
		    "\n"
		    "Inlined into ns::Foo::bar(int) const, at their own lines:\n"
		    "  SELF%  TOTAL%  FILE:LINE  FUNCTION\n"
		    " 100.0%   100.0%  foo.h:7  ns::get<int>(int*)\n"
		    "\n");
	fx_free(fx);
}

/*
 * Addresses without a line (a stripped module, no -g): a function with
 * none says so and points at --addresses; one with some shows the others
 * as "-".
 */
static void test_no_line_information(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	const struct fx_frame hot10[] = { { "hot", "/nonexistent/hot.c", 10, 8 } };
	const struct fx_frame hot0[] = { { "hot", NULL, 0, 0 } };
	struct nw_lines_opts o = { .sort = true };

	(void)state;
	fx_func(fx, "cold", NULL, 0);
	fx_frames(fx, "hot#10", hot10, 1);
	fx_frames(fx, "hot#0", hot0, 1);
	fx_add(fx, fx_thread(fx, 1, 1, "app"), "main;cold", 1, 0);
	fx_add(fx, fx_th(fx, 0), "main;hot#10", 2, 0);
	fx_add(fx, fx_th(fx, 0), "main;hot#0", 1, 0);
	assert_view(fx, NULL, "^(hot|cold)$", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self:  75.0% (3)   Total:  75.0% (3)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    "  50.0%    50.0%     10  hot.c\n"
		    "  25.0%    25.0%      -  (no line information)\n"
		    "\n"
		    "Function: cold in app\n"
		    "Self:  25.0% (1)   Total:  25.0% (1)\n"
		    "No line information (a stripped module, or built without -g): see --addresses\n"
		    "\n");
	fx_free(fx);
}

/* A function the chosen metric never sampled is no sampled function: -ENOENT, not an empty view. */
static void test_no_weight(void **state)
{
	static const char *const events[] = { "t", "u" };
	struct fx *fx = fx_new(events, 2);
	static const uint64_t t_only[] = { 5, 5000 }, u_only[] = { 0, 0, 7, 7000 };
	struct nw_lines_opts o = { .sort = true };
	char *got;
	int ret;

	(void)state;
	fx_func(fx, "hot", "/nonexistent/hot.c", 8);
	fx_addv(fx, fx_thread(fx, 1, 1, "app"), "main;hot", 0, t_only, 2);
	fx_addv(fx, fx_th(fx, 0), "main;other", 0, u_only, 4);
	assert_view(fx, NULL, "^hot$", &o,
		    "Function: hot (hot.c:8) in app\n"
		    "Self: 100.0% (5)   Total: 100.0% (5)\n"
		    "\n"
		    "  SELF%  TOTAL%   LINE  FILE\n"
		    " 100.0%   100.0%      8  hot.c\n"
		    "\n");
	o.metric = 2;
	got = run(fx, NULL, "^hot$", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	fx_free(fx);
}

static void test_errors(void **state)
{
	struct lines_state *ls = *state;
	struct fx *fx = hot_model(ls->path);
	struct nw_lines_opts o = { 0 };
	char small[64];
	regex_t re;
	FILE *out;
	char *got;
	int ret;

	/* No sampled function matches: -ENOENT, nothing written. */
	got = run(fx, NULL, "nothing", &o, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	/* A metric the model lacks. */
	o.metric = 2;
	got = run(fx, NULL, "hot", &o, &ret);
	assert_int_equal(ret, -EINVAL);
	assert_string_equal(got, "");
	free(got);
	/* A full output: -EIO. */
	o.metric = 0;
	assert_int_equal(regcomp(&re, "hot", REG_EXTENDED | REG_NOSUB), 0);
	o.func = &re;
	out = fmemopen(small, sizeof(small), "w");
	assert_non_null(out);
	setvbuf(out, NULL, _IONBF, 0);
	assert_int_equal(nw_view_lines(out, fx->m, NULL, &o), -EIO);
	fclose(out);
	regfree(&re);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_source),
		cmocka_unit_test(test_source_shorter),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_sort_and_metric),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_weights),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_once_per_sample),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_no_line_information),
		cmocka_unit_test(test_no_weight),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
