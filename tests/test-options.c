/* SPDX-License-Identifier: MIT */
/*
 * A front end's options from one table (util/options.h): getopt's tables
 * and --help's list made from a small table, options named as the user
 * writes them, and the parsers of option values.
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

#include "util/options.h"

enum { OPT_IDLE = NW_OPTION_LONG_ONLY, OPT_MAX_SIZE, OPT_MAX_FILES };

static const struct nw_option table[] = {
	{ "--output", required_argument, 'o', "DIR", "measurement directory\nsecond line" },
	{ "--quiet", no_argument, 'q', NULL, "no summary line" },
	{ "--idle", no_argument, OPT_IDLE, NULL, "keep the idle task" },
	{ "--max-size", required_argument, OPT_MAX_SIZE, "SIZE", NULL },
	{ "--max-files", required_argument, OPT_MAX_FILES, "N", "the oldest go\nbeyond either" },
};

#define N (sizeof(table) / sizeof(table[0]))

static void test_getopt(void **state)
{
	struct option longopts[N + 1];
	char shortopts[2 * N + 2];

	nw_options_getopt(table, N, longopts, shortopts);
	assert_string_equal(shortopts, "+o:q");
	assert_string_equal(longopts[0].name, "output");
	assert_int_equal(longopts[0].has_arg, required_argument);
	assert_int_equal(longopts[0].val, 'o');
	assert_null(longopts[0].flag);
	assert_int_equal(longopts[2].val, OPT_IDLE);
	assert_null(longopts[N].name);
}

/* Two columns: the options in 22 (longer ones push the help on), continuation lines at 26. */
static void test_help(void **state)
{
	static const char want[] = "  -o, --output DIR        measurement directory\n"
				   "                          second line\n"
				   "  -q, --quiet             no summary line\n"
				   "      --idle              keep the idle task\n"
				   "      --max-size SIZE, --max-files N  the oldest go\n"
				   "                          beyond either\n";
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	nw_options_help(f, table, N);
	fclose(f);
	assert_string_equal(text, want);
	free(text);
}

static void test_name(void **state)
{
	char buf[32];

	assert_string_equal(nw_options_name(table, N, 'o', buf, sizeof(buf)), "-o");
	assert_string_equal(nw_options_name(table, N, OPT_MAX_FILES, buf, sizeof(buf)),
			    "--max-files");
}

static void test_parsers(void **state)
{
	uint64_t v;
	double d;
	bool *cpus = NULL;

	assert_int_equal(nw_parse_count("42", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(nw_parse_count("0", &v), -EINVAL);
	assert_int_equal(nw_parse_count("-3", &v), -EINVAL);
	assert_int_equal(nw_parse_count("4x", &v), -EINVAL);
	assert_int_equal(nw_parse_seconds("2.5", false, 10, &d), 0);
	assert_true(d == 2.5);
	assert_int_equal(nw_parse_seconds("0", false, 10, &d), -EINVAL);
	assert_int_equal(nw_parse_seconds("0", true, 10, &d), 0);
	assert_int_equal(nw_parse_seconds("11", true, 10, &d), -EINVAL);
	assert_int_equal(nw_parse_seconds("nan", true, 10, &d), -EINVAL);
	assert_int_equal(nw_parse_size("512K", &v), 0);
	assert_int_equal(v, 512 * 1024);
	assert_int_equal(nw_parse_size("2GB", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(nw_parse_size("1.5m", &v), 0);
	assert_int_equal(v, 3 << 19);
	assert_int_equal(nw_parse_size("5T", &v), -EINVAL);
	assert_int_equal(nw_parse_cpus("0,2-3", 8, &cpus), 0);
	assert_true(cpus[0] && !cpus[1] && cpus[2] && cpus[3] && !cpus[4]);
	assert_int_equal(nw_parse_cpus("3-2", 8, &cpus), -EINVAL);
	assert_int_equal(nw_parse_cpus("8", 8, &cpus), -EINVAL);
	assert_true(cpus[0]); /* unchanged on failure */
	free(cpus);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_getopt),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_parsers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
