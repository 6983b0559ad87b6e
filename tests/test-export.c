/* SPDX-License-Identifier: MIT */
/*
 * What the exports share (export.h): text cleaning, metric names, the
 * per-thread tree, and nw_export_measurement() on a measurement directory
 * written with the project's own writers (manifest, one HPC_CSPROF file,
 * no symbol table: frames are module+0xADDR).
 */
#include <errno.h>
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

#include "format/csprof.h"
#include "format/manifest.h"
#include "export/export.h"
#include "export/profile.pb-c.h"
#include "report/views.h"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static void test_clean(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain name", "plain name" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },                /* é stays */
		{ "\xe2\x82\xac and \xf0\x9f\x90\xb3", "\xe2\x82\xac and \xf0\x9f\x90\xb3" },
		{ "bad\xff", "bad?" },
		{ "cut\xe2\x82", "cut??" },                      /* truncated sequence */
		{ "\xc0\xaf", "??" },                            /* overlong */
		{ "\xed\xa0\x80", "???" },                       /* a surrogate */
		{ "tab\there\n", "tab?here?" },
		{ "\xef\xbf\xbe", "???" },                       /* U+FFFE */
	};
	int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *c = nw_export_clean(cases[i].in, &failed);

		assert_non_null(c);
		assert_string_equal(c, cases[i].out);
		free(c);
	}
	assert_null(nw_export_clean(NULL, &failed));
	assert_int_equal(failed, 0);
}

static void test_metric_names(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(nw_export_event_of("cpu-clock:period", buf, sizeof(buf)), "cpu-clock");
	assert_string_equal(nw_export_event_of("a:b:samples", buf, sizeof(buf)), "a:b");
	assert_string_equal(nw_export_event_of("metric0", buf, sizeof(buf)), "metric0");
	assert_string_equal(nw_export_event_of("cpu-clock:period", buf, 4), "cpu");
	assert_true(nw_export_metric_is_ns("cpu-clock:period"));
	assert_true(nw_export_metric_is_ns("task-clock:period"));
	assert_false(nw_export_metric_is_ns("cpu-clock:samples"));
	assert_false(nw_export_metric_is_ns("cycles:period"));
	assert_string_equal(nw_export_unit("cpu-clock:period"), "ns");
	assert_string_equal(nw_export_unit("cycles:samples"), "samples");
	assert_string_equal(nw_export_unit("cycles:period"), "events");
}

static void add(struct nw_profile *p, struct nw_prof_thread *th, const char *path,
		uint64_t samples)
{
	char buf[128], *save = NULL;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		int64_t f = nw_profile_intern(p, t, NULL, 0, "/bin/app");

		assert_true(f >= 0);
		n = nw_cct_child(th->tree, n, (uint64_t)f, 0);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	nw_cct_metrics(th->tree, n)[0] += samples;
	nw_cct_metrics(th->tree, n)[1] += samples * 10;
}

static char *folded(const struct nw_profile *p, const struct nw_cct *t)
{
	struct nw_view_opts o = { .metric = 0 };
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	assert_int_equal(nw_view_folded(f, p, t, &o), 0);
	fclose(f);
	return s;
}

static void test_thread_tree(void **state)
{
	struct nw_profile *p = nw_profile_new(2);
	struct nw_filter only_11 = { .tid = 11 };
	struct nw_prof_thread *th;
	struct nw_cct *t;
	uint64_t sum;
	char *s;

	(void)state;
	assert_non_null(p);
	th = nw_profile_add_thread(p, 10, 10, "app");
	assert_non_null(th);
	add(p, th, "main;a", 2);
	add(p, th, "main;b", 1);
	th = nw_profile_add_thread(p, 10, 11, "pool worker;1");
	assert_non_null(th);
	add(p, th, "start;a", 4);

	t = nw_export_thread_tree(p, NULL);
	assert_non_null(t);
	s = folded(p, t);
	assert_string_equal(s, "app-10;main;a 2\n"
			       "app-10;main;b 1\n"
			       "pool_worker_1-11;start;a 4\n");
	free(s);
	/* Metrics other than the first come along too. */
	sum = 0;
	for (uint32_t i = 0; i < t->n; i++)
		sum += nw_cct_metrics(t, i)[1];
	assert_int_equal(sum, 70);
	nw_cct_free(t);

	t = nw_export_thread_tree(p, &only_11);
	assert_non_null(t);
	s = folded(p, t);
	assert_string_equal(s, "pool_worker_1-11;start;a 4\n");
	free(s);
	nw_cct_free(t);
	nw_profile_free(p);
}

static void test_subtitle(void **state)
{
	struct nw_profile *p = nw_profile_new(2);
	struct nw_prof_thread *th;
	char *s;

	(void)state;
	assert_non_null(p);
	free(p->metric_names[0]);
	p->metric_names[0] = xstrdup("cpu-clock:samples");
	th = nw_profile_add_thread(p, 1, 1, "x");
	assert_non_null(th);
	add(p, th, "main;a", 7);
	add(p, th, "main", 3);
	s = nw_export_subtitle(p, th->tree, 0);
	assert_non_null(s);
	assert_string_equal(s, "cpu-clock:samples - 10 samples");
	free(s);
	nw_profile_free(p);
}

/* ---- nw_export_measurement on a directory written by the project's writers ---- */

#define BASE 0x400000ULL

static void write_measurement(const char *dir)
{
	struct nw_manifest *m = calloc(1, sizeof(*m));
	struct nw_csprof_metric metrics[2] = {
		{ .name = "cpu-clock:samples", .flags = NW_CSPROF_FLAG_ASYNC },
		{ .name = "cpu-clock:period", .flags = NW_CSPROF_FLAG_ASYNC },
	};
	struct nw_csprof_module mod = { .name = "/opt/prog", .vaddr = 0x1000, .mapped = BASE };
	struct nw_csprof_epoch ep = { .nmodules = 1, .modules = &mod };
	struct nw_csprof_tree tr = { .epoch = 0 };
	struct nw_csprof cp = { .target = "prog", .nmetrics = 2, .metrics = metrics,
				.nepochs = 1, .epochs = &ep, .ntrees = 1, .trees = &tr };
	char path[512];
	uint32_t a, b;

	assert_non_null(m);
	tr.cct = nw_cct_new(2);
	assert_non_null(tr.cct);
	a = nw_cct_child(tr.cct, NW_CCT_ROOT, BASE + 0x10, 0);
	b = nw_cct_child(tr.cct, a, BASE + 0x20, 0);
	nw_cct_metrics(tr.cct, b)[0] = 30;
	nw_cct_metrics(tr.cct, b)[1] = 30000;
	b = nw_cct_child(tr.cct, a, BASE + 0x30, 0);
	nw_cct_metrics(tr.cct, b)[0] = 10;
	nw_cct_metrics(tr.cct, b)[1] = 10000;
	snprintf(path, sizeof(path), "%s/prog-7-7.csprof", dir);
	assert_int_equal(nw_csprof_write_file(path, &cp), 0);
	nw_cct_free(tr.cct);

	m->version = NW_MANIFEST_VERSION;
	m->narwhal_version = xstrdup("test");
	m->arch = xstrdup("x86_64");
	m->argc = 1;
	m->argv = calloc(1, sizeof(*m->argv));
	assert_non_null(m->argv);
	m->argv[0] = xstrdup("/opt/prog");
	m->call_graph = xstrdup("fp");
	m->nevents = 1;
	m->events = calloc(1, sizeof(*m->events));
	assert_non_null(m->events);
	m->events[0] = (struct nw_manifest_event){ .name = xstrdup("cpu-clock"), .type = 1,
						   .value = 1000 };
	m->start_ns = 100;
	m->end_ns = 200;
	m->samples = 40;
	m->nprocs = 1;
	m->procs = calloc(1, sizeof(*m->procs));
	assert_non_null(m->procs);
	m->procs[0] = (struct nw_manifest_process){ .pid = 7, .comm = xstrdup("prog") };
	m->nthreads = 1;
	m->threads = calloc(1, sizeof(*m->threads));
	assert_non_null(m->threads);
	m->threads[0] = (struct nw_manifest_thread){ .pid = 7, .tid = 7, .comm = xstrdup("prog"),
						     .file = xstrdup("prog-7-7.csprof"),
						     .samples = 40 };
	m->nmodules = 1;
	m->modules = calloc(1, sizeof(*m->modules));
	assert_non_null(m->modules);
	m->modules[0] = (struct nw_manifest_module){ .path = xstrdup("/opt/prog"),
						     .build_id = xstrdup("") };
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(nw_manifest_write(path, m), 0);
	nw_manifest_free(m);
}

static char *slurp_gzip(const char *path, size_t *ret_len)
{
	gzFile gz = gzopen(path, "rb");
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int n;

	assert_non_null(gz);
	assert_non_null(buf);
	while ((n = gzread(gz, buf + len, (unsigned)(cap - len))) > 0) {
		len += (size_t)n;
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	assert_int_equal(n, 0);
	gzclose(gz);
	*ret_len = len;
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_measurement(void **state)
{
	char dir[] = "/tmp/nw-test-export.XXXXXX", pb[600], svg[600], err[512];
	Perftools__Profiles__Profile *pr;
	int64_t total = 0;
	size_t len;
	char *buf;

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_measurement(dir);
	snprintf(pb, sizeof(pb), "%s/out.pb.gz", dir);
	snprintf(svg, sizeof(svg), "%s/out.svg", dir);

	/* Nothing asked for: nothing written. */
	assert_int_equal(nw_export_measurement(dir, NULL, NULL, err, sizeof(err)), 0);
	assert_int_not_equal(access(pb, F_OK), 0);

	assert_int_equal(nw_export_measurement(dir, pb, svg, err, sizeof(err)), 0);
	buf = slurp_gzip(pb, &len);
	pr = perftools__profiles__profile__unpack(NULL, len, (const uint8_t *)buf);
	free(buf);
	assert_non_null(pr);
	assert_int_equal(pr->n_sample, 2);
	for (size_t i = 0; i < pr->n_sample; i++)
		total += pr->sample[i]->value[0];
	assert_int_equal(total, 40);
	assert_int_equal(pr->n_mapping, 1);
	assert_int_equal(pr->mapping[0]->memory_start, BASE);
	assert_int_equal(pr->n_location, 3);
	assert_int_equal(pr->duration_nanos, 100);
	perftools__profiles__profile__free_unpacked(pr, NULL);

	buf = slurp(svg);
	assert_non_null(strstr(buf, "<svg "));
	/* Without a symbol table frames are module+ELF address (a caller at ip-1). */
	assert_non_null(strstr(buf, "<title>prog+0x100f\n40 samples (100.00%)"));
	assert_non_null(strstr(buf, "<title>prog+0x1020\n30 samples (75.00%)"));
	assert_non_null(strstr(buf, "<title>prog+0x1030\n10 samples (25.00%)"));
	free(buf);

	/* A directory that is no measurement: an error naming it. */
	assert_int_not_equal(nw_export_measurement("/nonexistent-nw", pb, NULL, err, sizeof(err)),
			     0);
	assert_non_null(strstr(err, "/nonexistent-nw"));
	/* An export that cannot be written: an error naming the file. */
	assert_int_equal(nw_export_measurement(dir, NULL, "/nonexistent-nw/x.svg", err,
					       sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-nw/x.svg"));

	unlink(pb);
	unlink(svg);
	snprintf(pb, sizeof(pb), "%s/manifest.json", dir);
	unlink(pb);
	snprintf(pb, sizeof(pb), "%s/prog-7-7.csprof", dir);
	unlink(pb);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_metric_names),
		cmocka_unit_test(test_thread_tree),
		cmocka_unit_test(test_subtitle),
		cmocka_unit_test(test_measurement),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
