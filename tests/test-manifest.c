/* SPDX-License-Identifier: MIT */
/* manifest.json: round trip, missing and ill-typed keys, files that are not JSON. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "format/manifest.h"

#define PATH NW_TEST_BUILD "/test-manifest.json"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static struct nw_manifest *sample_manifest(void)
{
	static const char *argv[] = { "./app", "--name=\"quoted\"", "", "/a/b\\c", "caf\xc3\xa9" };
	struct nw_manifest *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->version = NW_MANIFEST_VERSION;
	m->narwhal_version = xstrdup("0.1.0");
	m->arch = xstrdup("x86_64");
	m->argc = 5;
	m->argv = calloc(6, sizeof(char *));
	assert_non_null(m->argv);
	for (int i = 0; i < 5; i++)
		m->argv[i] = xstrdup(argv[i]);
	m->call_graph = xstrdup("dwarf");
	m->stack_size = 8192;
	m->max_stack = 512;
	m->nevents = 2;
	m->events = calloc(2, sizeof(*m->events));
	assert_non_null(m->events);
	m->events[0] = (struct nw_manifest_event){ xstrdup("cpu-clock"), 1, 0, true, 999 };
	m->events[1] = (struct nw_manifest_event){ xstrdup("INST_RETIRED:ANY_P"), 4,
						   UINT64_MAX - 1, false, 1ULL << 63 };
	m->start_ns = 1700000000123456789ULL;
	m->end_ns = 18446744073709551615ULL;
	m->exit_status = -1;
	m->samples = 12345;
	m->lost = 7;
	m->throttled = 3;
	m->unwind_errors = 1ULL << 40;
	m->nprocs = 2;
	m->procs = calloc(2, sizeof(*m->procs));
	assert_non_null(m->procs);
	m->procs[0] = (struct nw_manifest_process){ 100, 1, xstrdup("app") };
	m->procs[1] = (struct nw_manifest_process){ 4294967295u, 100, xstrdup("child") };
	m->nthreads = 3;
	m->threads = calloc(3, sizeof(*m->threads));
	assert_non_null(m->threads);
	m->threads[0] = (struct nw_manifest_thread){ 100, 100, xstrdup("app"),
						     xstrdup("app-100-100.csprof"), 10000 };
	m->threads[1] = (struct nw_manifest_thread){ 100, 101, xstrdup("worker"),
						     xstrdup("worker-100-101.csprof"), 2345 };
	m->threads[2] = (struct nw_manifest_thread){ 4294967295u, 102, xstrdup("child"),
						     xstrdup("child-x.csprof"), 0 };
	m->nmodules = 2;
	m->modules = calloc(2, sizeof(*m->modules));
	assert_non_null(m->modules);
	m->modules[0] = (struct nw_manifest_module){ xstrdup("/usr/bin/app"),
						     xstrdup("0123456789abcdef0123456789abcdef01234567") };
	m->modules[1] = (struct nw_manifest_module){ xstrdup("/tmp/deleted (deleted)"), xstrdup("") };
	return m;
}

static void assert_same_manifest(const struct nw_manifest *a, const struct nw_manifest *b)
{
	assert_int_equal(a->version, b->version);
	assert_string_equal(a->narwhal_version, b->narwhal_version);
	assert_string_equal(a->arch, b->arch);
	assert_int_equal(a->argc, b->argc);
	for (uint32_t i = 0; i < a->argc; i++)
		assert_string_equal(a->argv[i], b->argv[i]);
	assert_null(b->argv[b->argc]);
	assert_string_equal(a->call_graph, b->call_graph);
	assert_int_equal(a->stack_size, b->stack_size);
	assert_int_equal(a->max_stack, b->max_stack);
	assert_int_equal(a->nevents, b->nevents);
	for (uint32_t i = 0; i < a->nevents; i++) {
		assert_string_equal(a->events[i].name, b->events[i].name);
		assert_int_equal(a->events[i].type, b->events[i].type);
		assert_int_equal(a->events[i].config, b->events[i].config);
		assert_int_equal(a->events[i].freq, b->events[i].freq);
		assert_int_equal(a->events[i].value, b->events[i].value);
	}
	assert_int_equal(a->start_ns, b->start_ns);
	assert_int_equal(a->end_ns, b->end_ns);
	assert_int_equal(a->exit_status, b->exit_status);
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(a->lost, b->lost);
	assert_int_equal(a->throttled, b->throttled);
	assert_int_equal(a->unwind_errors, b->unwind_errors);
	assert_int_equal(a->nprocs, b->nprocs);
	for (uint32_t i = 0; i < a->nprocs; i++) {
		assert_int_equal(a->procs[i].pid, b->procs[i].pid);
		assert_int_equal(a->procs[i].ppid, b->procs[i].ppid);
		assert_string_equal(a->procs[i].comm, b->procs[i].comm);
	}
	assert_int_equal(a->nthreads, b->nthreads);
	for (uint32_t i = 0; i < a->nthreads; i++) {
		assert_int_equal(a->threads[i].pid, b->threads[i].pid);
		assert_int_equal(a->threads[i].tid, b->threads[i].tid);
		assert_string_equal(a->threads[i].comm, b->threads[i].comm);
		assert_string_equal(a->threads[i].file, b->threads[i].file);
		assert_int_equal(a->threads[i].samples, b->threads[i].samples);
	}
	assert_int_equal(a->nmodules, b->nmodules);
	for (uint32_t i = 0; i < a->nmodules; i++) {
		assert_string_equal(a->modules[i].path, b->modules[i].path);
		assert_string_equal(a->modules[i].build_id, b->modules[i].build_id);
	}
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 65536);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	assert_true(n > 0 && n < 65535);
	fclose(f);
	return buf;
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_round_trip(void **state)
{
	struct nw_manifest *m = sample_manifest(), *r = NULL;
	struct json_object *root;
	char err[256];
	char *text;

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	assert_int_equal(nw_manifest_read(PATH, &r, err, sizeof(err)), 0);
	assert_non_null(r);
	assert_same_manifest(m, r);

	/* Pretty JSON with the snake_case keys of the struct fields. */
	text = read_text(PATH);
	assert_non_null(strstr(text, "\n  \"unwind_errors\":"));
	assert_non_null(strstr(text, "\"call_graph\":\"dwarf\""));
	assert_non_null(strstr(text, "\"build_id\":"));
	assert_non_null(strstr(text, "\"/usr/bin/app\""));
	free(text);
	nw_manifest_free(r);

	/* Empty arrays are fine, and keys the reader does not know are ignored. */
	for (uint32_t i = 0; i < m->nprocs; i++)
		free(m->procs[i].comm);
	m->nprocs = 0;
	assert_int_equal(nw_manifest_write(PATH, m), 0);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	json_object_object_add(root, "future_key", json_object_new_string("ignored"));
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);
	assert_int_equal(nw_manifest_read(PATH, &r, err, sizeof(err)), 0);
	assert_int_equal(r->nprocs, 0);
	assert_same_manifest(m, r);
	nw_manifest_free(r);
	nw_manifest_free(m);
	unlink(PATH);
}

/* max_stack is optional: older manifests lack it, and 0 (unknown) is not written. */
static void test_optional_max_stack(void **state)
{
	struct nw_manifest *m = sample_manifest(), *r = NULL;
	struct json_object *root;
	char err[256], *text;

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	text = read_text(PATH);
	assert_non_null(strstr(text, "\"max_stack\":512"));
	free(text);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "max_stack", NULL));
	json_object_object_del(root, "max_stack");
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);
	assert_int_equal(nw_manifest_read(PATH, &r, err, sizeof(err)), 0);
	assert_int_equal(r->max_stack, 0);
	m->max_stack = 0;
	assert_same_manifest(m, r);
	nw_manifest_free(r);

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	text = read_text(PATH);
	assert_null(strstr(text, "max_stack"));
	free(text);
	nw_manifest_free(m);
	unlink(PATH);
}

/*
 * Writes the sample manifest with one key changed: @key of the top-level
 * object, or of item @index of array @array; @val NULL removes it.  Then
 * reads it and expects -EBADMSG with a message naming the file and @msg_part.
 */
static void expect_bad(const char *array, int index, const char *key, struct json_object *val,
		       const char *msg_part)
{
	struct nw_manifest *m = sample_manifest(), *r = NULL;
	struct json_object *root, *obj, *arr;
	char err[256];

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	nw_manifest_free(m);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	obj = root;
	if (array) {
		assert_true(json_object_object_get_ex(root, array, &arr));
		obj = json_object_array_get_idx(arr, index);
		assert_non_null(obj);
	}
	if (key) {
		assert_true(json_object_object_get_ex(obj, key, NULL));
		if (val)
			json_object_object_add(obj, key, val);
		else
			json_object_object_del(obj, key);
	} else {
		/* Replace the array item itself. */
		json_object_array_put_idx(arr, index, val);
	}
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);

	assert_int_equal(nw_manifest_read(PATH, &r, err, sizeof(err)), -EBADMSG);
	assert_null(r);
	if (!strstr(err, PATH) || !strstr(err, msg_part))
		fail_msg("message \"%s\" lacks the path or \"%s\"", err, msg_part);
	unlink(PATH);
}

static void test_missing_keys(void **state)
{
	static const char *top[] = { "version", "narwhal_version", "arch", "argv",
				     "call_graph", "stack_size", "events", "start_ns",
				     "end_ns", "exit_status", "samples", "lost",
				     "throttled", "unwind_errors", "processes", "threads",
				     "modules" };
	char msg[64];

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
		snprintf(msg, sizeof(msg), "missing key \"%s\"", top[i]);
		expect_bad(NULL, 0, top[i], NULL, msg);
	}
	expect_bad("events", 1, "config", NULL, "missing key \"events[1].config\"");
	expect_bad("events", 0, "freq", NULL, "missing key \"events[0].freq\"");
	expect_bad("processes", 1, "ppid", NULL, "missing key \"processes[1].ppid\"");
	expect_bad("threads", 2, "file", NULL, "missing key \"threads[2].file\"");
	expect_bad("threads", 0, "tid", NULL, "missing key \"threads[0].tid\"");
	expect_bad("modules", 1, "build_id", NULL, "missing key \"modules[1].build_id\"");
}

static void test_ill_typed_keys(void **state)
{
	expect_bad(NULL, 0, "version", json_object_new_string("1"),
		   "key \"version\" must be an integer");
	expect_bad(NULL, 0, "version", json_object_new_int(2), "unsupported manifest version 2");
	expect_bad(NULL, 0, "arch", json_object_new_int(64), "key \"arch\" must be a string");
	expect_bad(NULL, 0, "events", json_object_new_object(), "key \"events\" must be an array");
	expect_bad(NULL, 0, "samples", json_object_new_double(1.5),
		   "key \"samples\" must be an integer");
	expect_bad(NULL, 0, "lost", json_object_new_int64(-1), "key \"lost\" must be an integer in");
	expect_bad(NULL, 0, "stack_size", json_object_new_int64(1LL << 32),
		   "\"stack_size\" must be an integer in 0..4294967295");
	expect_bad(NULL, 0, "exit_status", json_object_new_int64(1LL << 40), "exit_status");
	expect_bad(NULL, 0, "max_stack", json_object_new_string("127"),
		   "key \"max_stack\" must be an integer");
	expect_bad(NULL, 0, "max_stack", json_object_new_int64(-1), "\"max_stack\" must be");
	expect_bad(NULL, 0, "threads", NULL, "missing key \"threads\"");
	expect_bad("threads", 1, "tid", json_object_new_int64(-5), "\"threads[1].tid\" must be");
	expect_bad("events", 0, "freq", json_object_new_int(1),
		   "\"events[0].freq\" must be true or false");
	expect_bad("events", 1, NULL, json_object_new_string("cycles"),
		   "\"events[1]\" must be an object");
	expect_bad("argv", 1, NULL, json_object_new_int(5), "\"argv[1]\" must be a string");
	expect_bad("modules", 0, "path", NULL, "missing key \"modules[0].path\"");
	expect_bad("modules", 0, "path", json_object_new_array(), "\"modules[0].path\" must be");
}

static void expect_not_json(const char *text, size_t len, const char *msg_part)
{
	struct nw_manifest *r = NULL;
	char err[256];

	write_text(PATH, text, len);
	assert_int_equal(nw_manifest_read(PATH, &r, err, sizeof(err)), -EBADMSG);
	assert_null(r);
	if (!strstr(err, PATH) || !strstr(err, msg_part))
		fail_msg("message \"%s\" lacks the path or \"%s\"", err, msg_part);
	unlink(PATH);
}

static void test_not_json(void **state)
{
	struct nw_manifest *r = NULL;
	char err[256];

	expect_not_json("", 0, "not JSON");
	expect_not_json("this is not json\n", 17, "not JSON");
	expect_not_json("{\"version\": 1,", 14, "not JSON");
	expect_not_json("{\"version\": 1} }", 16, "data after the end");
	expect_not_json("{\"version\"\0: 1}", 15, "NUL byte");
	expect_not_json("[1, 2]", 6, "not a JSON object");
	expect_not_json("{}", 2, "missing key \"version\"");

	assert_int_equal(nw_manifest_read(NW_TEST_BUILD "/no-such-manifest.json", &r, err,
					  sizeof(err)),
			 -ENOENT);
	assert_null(r);
	assert_non_null(strstr(err, "no-such-manifest.json"));
}

static void test_write_error(void **state)
{
	struct nw_manifest *m = sample_manifest();

	assert_int_equal(nw_manifest_write(NW_TEST_BUILD "/no-such-dir/manifest.json", m), -ENOENT);
	nw_manifest_free(m);
	nw_manifest_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_optional_max_stack),
		cmocka_unit_test(test_missing_keys),
		cmocka_unit_test(test_ill_typed_keys),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
