/* SPDX-License-Identifier: MIT */
/*
 * What the exports share (export.h): text cleaning, the unit of a metric
 * descriptor, the subtitle of a graph of stacks, and
 * nw_export_measurement() on a model made by hand as the reader makes one
 * (one module mapped at an ELF address, one thread, no symbol table:
 * frames are module+0xADDR).  The per-thread tree is test-stacks'.
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

#include "export/export.h"
#include "export/profile.pb-c.h"
#include "fixture.h"

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

/* A metric's event and unit are its descriptor's (model/metric.h), not parsed from its name. */
static void test_metric_names(void **state)
{
	struct nw_metric d;

	(void)state;
	assert_int_equal(nw_metric_init(&d, "cpu-clock", NW_METRIC_PERIOD, 0), 0);
	assert_string_equal(d.name, "cpu-clock:period");
	assert_string_equal(d.event, "cpu-clock");
	assert_int_equal(d.unit, NW_UNIT_NANOSECONDS);
	assert_string_equal(nw_export_unit(&d), "ns");
	nw_metric_fini(&d);
	assert_int_equal(nw_metric_init(&d, "a:b", NW_METRIC_SAMPLES, 0), 0);
	assert_string_equal(d.name, "a:b:samples");
	assert_string_equal(d.event, "a:b");
	nw_metric_fini(&d);
	assert_int_equal(nw_metric_init(&d, "task-clock", NW_METRIC_PERIOD, 0), 0);
	assert_int_equal(d.unit, NW_UNIT_NANOSECONDS);
	nw_metric_fini(&d);
	assert_int_equal(nw_metric_init(&d, "cpu-clock", NW_METRIC_SAMPLES, 0), 0);
	assert_int_not_equal(d.unit, NW_UNIT_NANOSECONDS);
	nw_metric_fini(&d);
	assert_int_equal(nw_metric_init(&d, "cycles", NW_METRIC_PERIOD, 0), 0);
	assert_int_not_equal(d.unit, NW_UNIT_NANOSECONDS);
	assert_string_equal(nw_export_unit(&d), "events");
	nw_metric_fini(&d);
	assert_int_equal(nw_metric_init(&d, "cycles", NW_METRIC_SAMPLES, 0), 0);
	assert_string_equal(nw_export_unit(&d), "samples");
	nw_metric_fini(&d);
}

static void test_subtitle(void **state)
{
	static const char *const events[] = { "cpu-clock" };
	struct fx *p = fx_new(events, 1);
	struct nw_stacks_opts so = { 0 };
	struct nw_mthread *th;
	struct nw_stacks *st;
	char *s;

	(void)state;
	th = fx_thread(p, 1, 1, "x");
	fx_add(p, th, "main;a", 7, 70);
	fx_add(p, th, "main", 3, 30);
	st = nw_stacks_new(p->m, p->m->nmetrics);
	assert_non_null(st);
	assert_int_equal(nw_stacks_build(st, &so), 0);
	s = nw_export_subtitle(st, 0);
	assert_non_null(s);
	assert_string_equal(s, "cpu-clock:samples - 10 samples");
	free(s);
	nw_stacks_free(st);
	fx_free(p);
}

/* ---- nw_export_measurement on a model ---- */

#define BASE 0x400000ULL

/*
 * What the reader makes of a run of /opt/prog (pid 7): cpu-clock every
 * 1000 ns, /opt/prog's ELF address 0x1000 mapped at BASE, one thread:
 *   0x10 -> 0x20  30 samples
 *        -> 0x30  10 samples
 */
static struct nw_measurement *prog_model(void)
{
	struct nw_measurement *m = nw_measurement_new();
	struct nw_map map = { .start = BASE, .end = UINT64_MAX, .pgoff = 0x1000, .vaddr = 0x1000,
			      .module = 0 };
	char *argv[] = { "/opt/prog" };
	struct nw_epoch *e;
	struct nw_mthread *th;
	struct nw_cct *t;
	uint32_t a, b;

	assert_non_null(m);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 1000), 0);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 1000), 1);
	assert_int_equal(nw_run_set_argv(&m->run, 1, argv), 0);
	m->run.call_graph = xstrdup("fp");
	m->run.start_ns = 100;
	m->run.end_ns = 200;
	m->run.samples = 40;
	assert_int_equal(nw_module_intern(m->modules, "/opt/prog", NULL, 0), 0);
	e = nw_epoch_new(&map, 1, 0);
	assert_non_null(e);
	assert_int_equal(nw_measurement_add_epoch(m, e), 0);
	assert_int_equal(nw_measurement_add_process(m, 7, 1, "prog"), 0);
	th = nw_measurement_add_thread(m, 7, 7, "prog", "prog-7-7.csprof");
	assert_non_null(th);
	th->nepochs = 1;
	th->samples = 40;
	t = nw_cct_new(2);
	assert_non_null(t);
	a = nw_cct_child(t, NW_CCT_ROOT, BASE + 0x10, 0);
	b = nw_cct_child(t, a, BASE + 0x20, 0);
	nw_cct_metrics(t, b)[0] = 30;
	nw_cct_metrics(t, b)[1] = 30000;
	b = nw_cct_child(t, a, BASE + 0x30, 0);
	nw_cct_metrics(t, b)[0] = 10;
	nw_cct_metrics(t, b)[1] = 10000;
	assert_int_equal(nw_mthread_add_tree(th, 0, t), 0);
	return m;
}

/* ---- nw_export_measurement on a directory written by the project's writers ---- */

#define BASE 0x400000ULL

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
	struct nw_measurement *m = prog_model();
	Perftools__Profiles__Profile *pr;
	int64_t total = 0;
	size_t len;
	char *buf;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(pb, sizeof(pb), "%s/out.pb.gz", dir);
	snprintf(svg, sizeof(svg), "%s/out.svg", dir);

	/* Nothing asked for: nothing written. */
	assert_int_equal(nw_export_measurement(m, NULL, NULL, NULL, err, sizeof(err)), 0);
	assert_int_not_equal(access(pb, F_OK), 0);

	assert_int_equal(nw_export_measurement(m, pb, svg, NULL, err, sizeof(err)), 0);
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
	/* Without a symbol table frames are module+ELF address (a caller at its return address). */
	assert_non_null(strstr(buf, "<title>prog+0x1010\n40 samples (100.00%)"));
	assert_non_null(strstr(buf, "<title>prog+0x1020\n30 samples (75.00%)"));
	assert_non_null(strstr(buf, "<title>prog+0x1030\n10 samples (25.00%)"));
	free(buf);

	/* An export that cannot be written: an error naming the file. */
	assert_int_equal(nw_export_measurement(m, NULL, "/nonexistent-nw/x.svg", NULL, err,
					       sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-nw/x.svg"));
	assert_int_equal(nw_export_measurement(m, "/nonexistent-nw/x.pb.gz", NULL, NULL, err,
					       sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/nonexistent-nw/x.pb.gz"));

	unlink(pb);
	unlink(svg);
	assert_int_equal(rmdir(dir), 0);
	nw_measurement_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_metric_names),
		cmocka_unit_test(test_subtitle),
		cmocka_unit_test(test_measurement),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
