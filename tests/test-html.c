/* SPDX-License-Identifier: MIT */
/*
 * The HTML report's file on a small known model (fixture.h), the profile
 * inside decoded back (base64, gzip, JSON):
 *
 *   thread app    (10/10): main;hot at line 12   4 samples
 *                          main;hot at line 14   2 samples
 *                          main;</script><b>     3 samples (a name that must not end the page's script)
 *   thread worker (10/11): main;hot at line 12   1 sample
 *   thread idle   (10/12): nothing (no tree: not in the file)
 *   process 10 (parent 1), named app: the threads' process, listed once
 *
 * hot's file is a real file (written by the test), so its text is
 * embedded.  The page in a browser is tests/integration/export-html.sh.
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
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "export/html.h"
#include "export/webpage.h"
#include "fixture.h"

static char src_path[] = "/tmp/nw-test-html-XXXXXX";

static struct fx *known_profile(void)
{
	struct fx *p = fx_new(NULL, 0);
	struct nw_mthread *th;
	const struct fx_frame at12[] = { { "hot", src_path, 12, 10 } };
	const struct fx_frame at14[] = { { "hot", src_path, 14, 10 } };

	fx_func(p, "main", "/src/main.c", 1);
	fx_frames(p, "hot#12", at12, 1);
	fx_frames(p, "hot#14", at14, 1);
	th = fx_thread(p, 10, 10, "app");
	fx_add(p, th, "main;hot#12", 4, 4000);
	fx_add(p, th, "main;hot#14", 2, 2000);
	fx_add(p, th, "main;</script><b>", 3, 3000);
	th = fx_thread(p, 10, 11, "worker");
	fx_add(p, th, "main;hot#12", 1, 1000);
	fx_thread(p, 10, 12, "idle");
	return p;
}

/* The page of @m as @o asks; its status in *ret. */
static char *page(const struct nw_measurement *m, const struct nw_html_opts *o, int *ret)
{
	char *s = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);

	assert_non_null(out);
	*ret = nw_html_write(out, m, o);
	fclose(out);
	return s;
}

static int b64_value(char c)
{
	const char *set = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(set, c) : NULL;

	return p ? (int)(p - set) : -1;
}

/* The profile inside @html: its base64 decoded, inflated, parsed. */
static json_object *profile_of(const char *html)
{
	const char *start = strstr(html, "type=\"application/octet-stream\">");
	const char *end;
	unsigned char *bin, *json;
	size_t n = 0, cap = 64u << 20;
	uint32_t acc = 0;
	int bits = 0;
	z_stream z = { 0 };
	json_object *o;

	assert_non_null(start);
	start = strchr(start, '>') + 1;
	end = strstr(start, "</script>");
	assert_non_null(end);
	bin = malloc((size_t)(end - start));
	json = malloc(cap);
	assert_non_null(bin);
	assert_non_null(json);
	for (const char *p = start; p < end; p++) {
		int v = b64_value(*p);

		if (v < 0)
			continue; /* newlines, padding */
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			bin[n++] = (unsigned char)(acc >> bits);
		}
	}
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = bin;
	z.avail_in = (uInt)n;
	z.next_out = json;
	z.avail_out = (uInt)cap - 1;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	json[cap - 1 - z.avail_out] = 0;
	inflateEnd(&z);
	o = json_tokener_parse((const char *)json);
	assert_non_null(o);
	free(bin);
	free(json);
	return o;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

static int64_t at(json_object *a, size_t i)
{
	return json_object_get_int64(json_object_array_get_idx(a, i));
}

static const char *str(json_object *root, int64_t i)
{
	return json_object_get_string(json_object_array_get_idx(get(root, "strings"), (size_t)i));
}

/* The name of node @i of thread @t: its frame's function. */
static const char *node_name(json_object *root, json_object *prof, size_t t, size_t i)
{
	int64_t f = at(json_object_array_get_idx(get(prof, "frame"), t), i);

	return f < 0 ? "(root)" : str(root, at(get(get(prof, "frames"), "name"), (size_t)f));
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

static void test_page_and_profile(void **state)
{
	struct fx *p = known_profile();
	struct nw_html_opts o = { .metric = 0, .label = "known" };
	json_object *root, *prof, *threads;
	int ret, hot12 = 0, hot14 = 0;
	char *html = page(p->m, &o, &ret);

	(void)state;
	assert_int_equal(ret, 0);
	/* The page around the data, as compiled in; the data ends no element. */
	assert_memory_equal(html, nw_webpage_before, strlen(nw_webpage_before));
	assert_string_equal(html + strlen(html) - strlen(nw_webpage_after), nw_webpage_after);
	assert_int_equal(count(html, "</script"),
			 count(nw_webpage_before, "</script") + count(nw_webpage_after, "</script"));
	root = profile_of(html);
	assert_string_equal(json_object_get_string(get(root, "format")), "narwhal-html");
	assert_string_equal(json_object_get_string(get(root, "label")), "known");
	assert_int_equal(json_object_array_length(get(root, "metrics")), 2);
	prof = get(root, "profile");
	threads = get(prof, "threads");
	/* idle has no tree: two threads, each with every column. */
	assert_int_equal(json_object_array_length(threads), 2);
	for (const char *const *k = (const char *const[]){ "parent", "frame", "line", "self",
							   "trace", NULL };
	     *k; k++)
		assert_int_equal(json_object_array_length(get(prof, *k)), 2);
	for (size_t t = 0; t < 2; t++) {
		json_object *parent = json_object_array_get_idx(get(prof, "parent"), t);
		json_object *line = json_object_array_get_idx(get(prof, "line"), t);
		json_object *self = json_object_array_get_idx(get(prof, "self"), t);
		json_object *s0 = json_object_array_get_idx(self, 0);
		size_t n = json_object_array_length(parent);
		int64_t sum = 0;

		assert_int_equal(json_object_array_length(self), 2);
		/* Parents as steps back: 0 only for the root, never past it. */
		assert_int_equal(at(parent, 0), 0);
		for (size_t i = 1; i < n; i++) {
			assert_true(at(parent, i) >= 1 && at(parent, i) <= (int64_t)i);
			sum += at(s0, i);
			if (!strcmp(node_name(root, prof, t, i), "hot") && at(line, i) == 12)
				hot12 += (int)at(s0, i);
			if (!strcmp(node_name(root, prof, t, i), "hot") && at(line, i) == 14)
				hot14 += (int)at(s0, i);
		}
		assert_int_equal(sum, t == 0 ? 9 : 1);
		/* The fixture keeps no trace. */
		assert_true(json_object_is_type(json_object_array_get_idx(get(prof, "trace"), t),
						json_type_null));
	}
	/* Their process once (both threads are of pid 10), named as the model names it. */
	{
		json_object *procs = get(prof, "processes"), *p0;

		assert_int_equal(json_object_array_length(procs), 1);
		p0 = json_object_array_get_idx(procs, 0);
		assert_int_equal(json_object_get_int(get(p0, "pid")), 10);
		assert_int_equal(json_object_get_int(get(p0, "ppid")), 1);
		assert_string_equal(str(root, json_object_get_int64(get(p0, "comm"))), "app");
	}
	/* hot split by line: 4 + 1 samples at line 12, 2 at line 14. */
	assert_int_equal(hot12, 5);
	assert_int_equal(hot14, 2);
	/* The text of hot's file, tabs expanded. */
	{
		json_object *src = get(root, "sources");
		json_object *lines;

		assert_int_equal(json_object_array_length(src), 1);
		lines = get(json_object_array_get_idx(src, 0), "lines");
		assert_string_equal(str(root, json_object_get_int64(get(
						      json_object_array_get_idx(src, 0), "file"))),
				    src_path);
		assert_string_equal(json_object_get_string(json_object_array_get_idx(lines, 11)),
				    "        hot line 12 \"quoted\"");
	}
	json_object_put(root);
	free(html);
	fx_free(p);
}

static void test_filter_diff_and_errors(void **state)
{
	struct fx *p = known_profile(), *b = known_profile();
	struct nw_filter f = { .tid = 11, .pid = -1 };
	struct nw_html_opts o = { .filter = &f, .metric = 1, .base = b->m, .base_label = "before" };
	json_object *root;
	int ret;
	char *html = page(p->m, &o, &ret);

	(void)state;
	assert_int_equal(ret, 0);
	root = profile_of(html);
	assert_int_equal(json_object_get_int(get(root, "metric")), 1);
	assert_int_equal(json_object_array_length(get(get(root, "profile"), "threads")), 1);
	assert_int_equal(json_object_get_int(get(json_object_array_get_idx(
				 get(get(root, "profile"), "threads"), 0), "tid")),
			 11);
	/* The base holds every thread with a tree, whatever the filter. */
	assert_int_equal(json_object_array_length(get(get(root, "base"), "threads")), 2);
	assert_string_equal(json_object_get_string(get(root, "baseLabel")), "before");
	json_object_put(root);
	free(html);

	o = (struct nw_html_opts){ .metric = 2 };
	html = page(p->m, &o, &ret);
	assert_int_equal(ret, -EINVAL);
	free(html);
	fx_free(p);
	fx_free(b);
}

static int write_source(void **state)
{
	int fd = mkstemp(src_path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	(void)state;
	if (!f)
		return -1;
	for (int i = 1; i <= 20; i++)
		fprintf(f, i == 12 ? "\thot line %d \"quoted\"\n" : "line %d\n", i);
	return fclose(f) ? -1 : 0;
}

static int remove_source(void **state)
{
	(void)state;
	unlink(src_path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_and_profile),
		cmocka_unit_test(test_filter_diff_and_errors),
	};

	return cmocka_run_group_tests(tests, write_source, remove_source);
}
