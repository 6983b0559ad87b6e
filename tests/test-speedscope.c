/* SPDX-License-Identifier: MIT */
/*
 * The speedscope export of a small known model (fixture.h), its stacks
 * built per thread, read back with json-c:
 *
 *   thread app    (10/10): main;a;b 2  main;a 3         (period 1000 per sample)
 *   thread worker (10/11): main;a;b 4  main;c 1         (main;c weighs 9000)
 *   thread idle   (10/12): nothing
 *
 * The schema check with the speedscope package and the app itself are in
 * tests/integration/export-speedscope.sh.
 */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "export/speedscope.h"
#include "fixture.h"

static struct fx *known_profile(const char *event)
{
	const char *events[] = { event };
	struct fx *p = fx_new(events, 1);
	struct nw_mthread *th;

	fx_func(p, "main", "/src/main.c", 12);
	th = fx_thread(p, 10, 10, "app");
	fx_add(p, th, "main;a;b", 2, 2000);
	fx_add(p, th, "main;a", 3, 3000);
	th = fx_thread(p, 10, 11, "worker");
	fx_add(p, th, "main;a;b", 4, 4000);
	fx_add(p, th, "main;c", 1, 9000);
	fx_thread(p, 10, 12, "idle");
	return p;
}

/*
 * The export of the threads of @p that @f selects, weighed by @metric,
 * from the built tree or (@stream) written as the stacks are merged; its
 * status in *ret.
 */
static char *speedscope_of(const struct fx *p, const struct nw_filter *f, unsigned metric,
			   bool stream, int *ret)
{
	struct nw_stacks_opts so = { .filter = f, .per_thread = true };
	struct nw_stacks *st = nw_stacks_new(p->m, p->m->nmetrics);
	char *s = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);

	assert_non_null(st);
	assert_non_null(out);
	if (stream)
		nw_stacks_defer(st, f, true);
	else
		assert_int_equal(nw_stacks_build(st, &so), 0);
	*ret = nw_speedscope_write(out, st, metric);
	fclose(out);
	nw_stacks_free(st);
	return s;
}

static char *speedscope(const struct fx *p, const struct nw_filter *f, unsigned metric, int *ret)
{
	return speedscope_of(p, f, metric, false, ret);
}

static json_object *export(const struct fx *p, const struct nw_filter *f, unsigned metric)
{
	json_object *o;
	int ret;
	char *s = speedscope(p, f, metric, &ret);

	assert_int_equal(ret, 0);
	o = json_tokener_parse(s);
	assert_non_null(o);
	free(s);
	return o;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

static const char *get_str(json_object *o, const char *key)
{
	return json_object_get_string(get(o, key));
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of @s in sorted order (a new string; @s is freed). */
static char *sorted_lines(char *s)
{
	char *lines[64], *save = NULL, *out;
	size_t n = 0, len = strlen(s), pos = 0;

	for (char *t = strtok_r(s, "\n", &save); t && n < 64; t = strtok_r(NULL, "\n", &save))
		lines[n++] = t;
	qsort(lines, n, sizeof(*lines), cmp_line);
	out = malloc(len + 1);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++)
		pos += (size_t)sprintf(out + pos, "%s\n", lines[i]);
	out[pos] = '\0';
	free(s);
	return out;
}

/* "stack weight" lines of profile @pi (frame names joined by ';'), sorted. */
static char *stacks(json_object *root, size_t pi)
{
	json_object *frames = get(get(root, "shared"), "frames");
	json_object *prof = json_object_array_get_idx(get(root, "profiles"), pi);
	json_object *samples = get(prof, "samples"), *weights = get(prof, "weights");
	char *s = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);

	assert_non_null(out);
	assert_int_equal(json_object_array_length(samples), json_object_array_length(weights));
	for (size_t i = 0; i < json_object_array_length(samples); i++) {
		json_object *st = json_object_array_get_idx(samples, i);

		for (size_t k = 0; k < json_object_array_length(st); k++) {
			int64_t fi = json_object_get_int64(json_object_array_get_idx(st, k));

			assert_true(fi >= 0 && (size_t)fi < json_object_array_length(frames));
			fprintf(out, "%s%s", k ? ";" : "",
				get_str(json_object_array_get_idx(frames, (size_t)fi), "name"));
		}
		fprintf(out, " %lld\n",
			(long long)json_object_get_int64(json_object_array_get_idx(weights, i)));
	}
	fclose(out);
	return sorted_lines(s);
}

static void test_file(void **state)
{
	struct fx *p = known_profile("cpu-clock");
	json_object *root = export(p, NULL, nw_speedscope_default_metric(p->m));
	json_object *profiles = get(root, "profiles"), *prof, *frames;
	char *s;

	(void)state;
	assert_string_equal(get_str(root, "$schema"),
			    "https://www.speedscope.app/file-format-schema.json");
	assert_non_null(strstr(get_str(root, "exporter"), "narwhal"));
	/* The idle thread has no weight: no profile. */
	assert_int_equal(json_object_array_length(profiles), 2);
	prof = json_object_array_get_idx(profiles, 0);
	assert_string_equal(get_str(prof, "type"), "sampled");
	assert_string_equal(get_str(prof, "name"), "app (pid 10, tid 10)");
	assert_string_equal(get_str(prof, "unit"), "nanoseconds");
	assert_int_equal(json_object_get_int64(get(prof, "startValue")), 0);
	assert_int_equal(json_object_get_int64(get(prof, "endValue")), 5000);
	s = stacks(root, 0);
	assert_string_equal(s, "main;a 3000\nmain;a;b 2000\n");
	free(s);
	prof = json_object_array_get_idx(profiles, 1);
	assert_string_equal(get_str(prof, "name"), "worker (pid 10, tid 11)");
	assert_int_equal(json_object_get_int64(get(prof, "endValue")), 13000);
	s = stacks(root, 1);
	assert_string_equal(s, "main;a;b 4000\nmain;c 9000\n");
	free(s);
	/* The heaviest thread opens first. */
	assert_int_equal(json_object_get_int64(get(root, "activeProfileIndex")), 1);
	/* Frames are shared: main, a, b, c once each, with file and line where known. */
	frames = get(get(root, "shared"), "frames");
	assert_int_equal(json_object_array_length(frames), 4);
	for (size_t i = 0; i < 4; i++) {
		json_object *fr = json_object_array_get_idx(frames, i), *v;

		if (strcmp(get_str(fr, "name"), "main") == 0) {
			assert_string_equal(get_str(fr, "file"), "/src/main.c");
			assert_int_equal(json_object_get_int64(get(fr, "line")), 12);
		} else {
			assert_false(json_object_object_get_ex(fr, "file", &v));
			assert_false(json_object_object_get_ex(fr, "line", &v));
		}
	}
	json_object_put(root);
	fx_free(p);
}

static void test_samples_metric_and_filter(void **state)
{
	struct fx *p = known_profile("cycles");
	struct nw_filter f = { .tid = 11, .pid = -1 };
	json_object *root = export(p, &f, 0), *prof;
	char *s;

	(void)state;
	assert_int_equal(json_object_array_length(get(root, "profiles")), 1);
	prof = json_object_array_get_idx(get(root, "profiles"), 0);
	/* Counts, not time. */
	assert_string_equal(get_str(prof, "unit"), "none");
	assert_int_equal(json_object_get_int64(get(prof, "endValue")), 5);
	s = stacks(root, 0);
	assert_string_equal(s, "main;a;b 4\nmain;c 1\n");
	free(s);
	assert_int_equal(json_object_get_int64(get(root, "activeProfileIndex")), 0);
	json_object_put(root);
	/* cycles' period is a count: unit none as well. */
	root = export(p, NULL, 1);
	prof = json_object_array_get_idx(get(root, "profiles"), 0);
	assert_string_equal(get_str(prof, "unit"), "none");
	json_object_put(root);
	fx_free(p);
}

/*
 * Written as the stacks are merged, the file is the one written from the
 * built tree, byte for byte: every thread or one, either metric, a thread
 * of no weight left out, a frame in two modules kept two.
 */
static void test_stream(void **state)
{
	struct fx *p = known_profile("cpu-clock");
	struct nw_filter one = NW_FILTER_ALL;
	const struct nw_filter *filters[] = { NULL, &one };

	(void)state;
	fx_add(p, fx_th(p, 1), "main;a@/lib/liba.so;b", 5, 500);
	one.tid = 11;
	for (unsigned fi = 0; fi < 2; fi++) {
		for (unsigned m = 0; m < 2; m++) {
			int r1, r2;
			char *want = speedscope(p, filters[fi], m, &r1);
			char *got = speedscope_of(p, filters[fi], m, true, &r2);

			assert_int_equal(r1, 0);
			assert_int_equal(r2, 0);
			assert_string_equal(got, want);
			free(want);
			free(got);
		}
	}
	fx_free(p);
}

static void test_errors_and_names(void **state)
{
	struct fx *p = known_profile("cpu-clock");
	struct nw_mthread *th;
	json_object *root, *frames;
	bool found = false;
	int ret;

	(void)state;
	free(speedscope(p, NULL, 2, &ret));
	assert_int_equal(ret, -EINVAL);
	/* A name that is not UTF-8 still gives valid JSON. */
	th = fx_thread(p, 10, 13, "odd");
	fx_add(p, th, "main;bad\xff\"name", 1, 1000);
	root = export(p, NULL, 1);
	frames = get(get(root, "shared"), "frames");
	for (size_t i = 0; i < json_object_array_length(frames); i++)
		found |= strcmp(get_str(json_object_array_get_idx(frames, i), "name"),
				"bad?\"name") == 0;
	assert_true(found);
	json_object_put(root);
	fx_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_samples_metric_and_filter),
		cmocka_unit_test(test_errors_and_names),
		cmocka_unit_test(test_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
