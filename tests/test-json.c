/* SPDX-License-Identifier: MIT */
/*
 * The pull reader of format/json.h: values in file order, strings
 * unescaped, numbers bounded, skipping, and errors with their offset.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format/json.h"

struct reader {
	char err[256];
	struct nw_json_in in;
	struct nw_json_pull jp;
};

static void open_text(struct reader *r, const char *text)
{
	memset(r, 0, sizeof(*r));
	r->in = (struct nw_json_in){ .path = "t.json", .err = r->err, .errlen = sizeof(r->err) };
	nw_json_pull_init(&r->jp, &r->in, text, strlen(text));
}

/* {"b": [1, 2], "a": "x"}: keys in file order, items, then the end. */
static void test_object_in_order(void **state)
{
	struct reader r;
	bool first = true, ifirst = true;
	uint64_t v;

	(void)state;
	open_text(&r, " {\"b\": [1, 2 ], \"a\" :\"x\"}\n ");
	assert_int_equal(nw_json_pull_kind(&r.jp), NW_JSON_OBJECT);
	assert_int_equal(nw_json_pull_key(&r.jp, &first), 1);
	assert_string_equal(r.jp.str, "b");
	assert_int_equal(nw_json_pull_kind(&r.jp), NW_JSON_ARRAY);
	assert_int_equal(nw_json_pull_item(&r.jp, &ifirst), 1);
	assert_int_equal(nw_json_pull_uint(&r.jp, 10, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(nw_json_pull_item(&r.jp, &ifirst), 1);
	assert_int_equal(nw_json_pull_uint(&r.jp, 10, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(nw_json_pull_item(&r.jp, &ifirst), 0);
	assert_int_equal(nw_json_pull_key(&r.jp, &first), 1);
	assert_string_equal(r.jp.str, "a");
	assert_int_equal(nw_json_pull_str(&r.jp), 0);
	assert_string_equal(r.jp.str, "x");
	assert_int_equal(nw_json_pull_key(&r.jp, &first), 0);
	assert_int_equal(nw_json_pull_end(&r.jp), 0);
	assert_int_equal(nw_json_pull_kind(&r.jp), NW_JSON_END);
	nw_json_pull_fini(&r.jp);
}

/* Escapes: \n, \", \/, \u00e9 (2 bytes), a surrogate pair (4 bytes). */
static void test_string_escapes(void **state)
{
	struct reader r;

	(void)state;
	open_text(&r, "\"a\\n\\\"\\/\\u00e9\\ud83d\\ude00z\"");
	assert_int_equal(nw_json_pull_str(&r.jp), 0);
	assert_string_equal(r.jp.str, "a\n\"/\xc3\xa9\xf0\x9f\x98\x80z");
	assert_int_equal(r.jp.len, strlen(r.jp.str));
	assert_int_equal(nw_json_pull_end(&r.jp), 0);
	nw_json_pull_fini(&r.jp);
}

/* Numbers: in range, above @max, negative and fractional (1: a number, not that). */
static void test_uint_bounds(void **state)
{
	static const struct {
		const char *text;
		uint64_t max;
		int ret;
		uint64_t v;
	} cases[] = {
		{ "0", 5, 0, 0 },
		{ "18446744073709551615", UINT64_MAX, 0, UINT64_MAX },
		{ "6", 5, 1, 0 },
		{ "18446744073709551616", UINT64_MAX, 1, 0 },
		{ "-1", 5, 1, 0 },
		{ "1.5", 5, 1, 0 },
		{ "1e3", 5000, 1, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct reader r;
		uint64_t v = 0;

		open_text(&r, cases[i].text);
		assert_int_equal(nw_json_pull_kind(&r.jp), NW_JSON_NUMBER);
		assert_int_equal(nw_json_pull_uint(&r.jp, cases[i].max, &v), cases[i].ret);
		if (cases[i].ret == 0)
			assert_true(v == cases[i].v);
		assert_int_equal(nw_json_pull_end(&r.jp), 0);
		nw_json_pull_fini(&r.jp);
	}
}

/* Skipping a nested value leaves the reader on the next key. */
static void test_skip_nested(void **state)
{
	struct reader r;
	bool first = true;

	(void)state;
	open_text(&r, "{\"x\": {\"y\": [true, null, \"]}\", [[]], {}], \"z\": -2.5e1}, \"k\": false}");
	assert_int_equal(nw_json_pull_key(&r.jp, &first), 1);
	assert_string_equal(r.jp.str, "x");
	assert_int_equal(nw_json_pull_skip(&r.jp), 0);
	assert_int_equal(nw_json_pull_key(&r.jp, &first), 1);
	assert_string_equal(r.jp.str, "k");
	assert_int_equal(nw_json_pull_kind(&r.jp), NW_JSON_BOOL);
	assert_int_equal(nw_json_pull_skip(&r.jp), 0);
	assert_int_equal(nw_json_pull_key(&r.jp, &first), 0);
	assert_int_equal(nw_json_pull_end(&r.jp), 0);
	nw_json_pull_fini(&r.jp);
}

/* Each bad text fails with -EBADMSG and a message naming the file and an offset. */
static void test_errors(void **state)
{
	static const char *const bad[] = {
		"{\"a\" 1}",        /* no ':' */
		"{\"a\": 1,}",      /* a trailing ',' */
		"\"abc",            /* an unterminated string */
		"\"\\u12\"",        /* a short \u escape */
		"\"\\x\"",          /* an unknown escape */
		"{} x",             /* something after the value */
		"[1 2]",            /* no ',' between items */
		"tru",              /* a cut literal */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct reader r;
		int ret = 0;

		open_text(&r, bad[i]);
		/* Read the top value whatever it is, then its end. */
		if (nw_json_pull_kind(&r.jp) == NW_JSON_STRING)
			ret = nw_json_pull_str(&r.jp);
		else
			ret = nw_json_pull_skip(&r.jp);
		if (ret == 0)
			ret = nw_json_pull_end(&r.jp);
		if (ret != -EBADMSG)
			fail_msg("%s: %d", bad[i], ret);
		assert_non_null(strstr(r.err, "t.json: "));
		assert_non_null(strstr(r.err, "offset"));
		nw_json_pull_fini(&r.jp);
	}
}

/* Nesting deeper than the limit is an error, not a stack overflow. */
static void test_depth_limit(void **state)
{
	enum { DEPTH = 100000 };
	char *text = malloc(2 * DEPTH + 1);
	struct reader r;

	(void)state;
	assert_non_null(text);
	memset(text, '[', DEPTH);
	memset(text + DEPTH, ']', DEPTH);
	text[2 * DEPTH] = '\0';
	open_text(&r, text);
	assert_int_equal(nw_json_pull_skip(&r.jp), -EBADMSG);
	assert_non_null(strstr(r.err, "t.json: "));
	nw_json_pull_fini(&r.jp);
	free(text);
}

/* nw_json_parse_hex(): "0x" and 1 to 16 hex digits, nothing else. */
static void test_parse_hex(void **state)
{
	uint64_t v;

	(void)state;
	assert_true(nw_json_parse_hex("0x0", &v));
	assert_true(v == 0);
	assert_true(nw_json_parse_hex("0xffffffffffffffff", &v));
	assert_true(v == UINT64_MAX);
	assert_true(nw_json_parse_hex("0xAbC", &v));
	assert_true(v == 0xabc);
	assert_false(nw_json_parse_hex("0x", &v));
	assert_false(nw_json_parse_hex("0x10000000000000000", &v));
	assert_false(nw_json_parse_hex("12", &v));
	assert_false(nw_json_parse_hex("0x1g", &v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_object_in_order), cmocka_unit_test(test_string_escapes),
		cmocka_unit_test(test_uint_bounds),     cmocka_unit_test(test_skip_nested),
		cmocka_unit_test(test_errors),          cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_parse_hex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
