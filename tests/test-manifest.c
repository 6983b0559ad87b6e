/* SPDX-License-Identifier: MIT */
/*
 * manifest.json: round trip of a model (run, metric descriptors, modules
 * with their ELF facts, processes, threads), version 1 manifests, missing
 * and ill-typed keys, files that are not JSON.
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

static const uint8_t app_id[20] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23,
				    0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67 };

/*
 * A model with everything a manifest holds: two events (a frequency and a
 * period), their four metrics (one with a unit and flags its defaults would
 * not give, to see them read as written), two processes, three threads, a
 * module with ELF facts and one without.
 */
static struct nw_measurement *sample_model(void)
{
	static const char *argv[] = { "./app", "--name=\"quoted\"", "", "/a/b\\c", "caf\xc3\xa9" };
	struct nw_measurement *m = nw_measurement_new();
	struct nw_run *r;
	struct nw_mthread *th;
	struct nw_module_facts *f;

	assert_non_null(m);
	r = &m->run;
	r->narwhal_version = xstrdup("0.1.0");
	r->arch = xstrdup("x86_64");
	assert_int_equal(nw_run_set_argv(r, 5, (char *const *)argv), 0);
	r->call_graph = xstrdup("dwarf");
	r->stack_size = 8192;
	r->max_stack = 512;
	r->nevents = 2;
	r->events = calloc(2, sizeof(*r->events));
	assert_non_null(r->events);
	r->events[0] = (struct nw_event_info){ xstrdup("cpu-clock"), 1, 0, true, 999 };
	r->events[1] = (struct nw_event_info){ xstrdup("INST_RETIRED:ANY_P"), 4, UINT64_MAX - 1,
					       false, 1ULL << 63 };
	r->start_ns = 1700000000123456789ULL;
	r->end_ns = 18446744073709551615ULL;
	r->exit_status = -1;
	r->samples = 12345;
	r->lost = 7;
	r->throttled = 3;
	r->unwind_errors = 1ULL << 40;

	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 1001001), 0);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 1001001), 1);
	assert_int_equal(nw_measurement_add_metric(m, "INST_RETIRED:ANY_P", NW_METRIC_SAMPLES,
						   1ULL << 63), 2);
	assert_int_equal(nw_measurement_add_metric(m, "INST_RETIRED:ANY_P", NW_METRIC_PERIOD,
						   1ULL << 63), 3);
	m->metrics[3].unit = NW_UNIT_BYTES;
	m->metrics[3].flags = 0x7;

	assert_int_equal(nw_measurement_add_process(m, 100, 1, "app"), 0);
	assert_int_equal(nw_measurement_add_process(m, 4294967295u, 100, "child"), 1);
	th = nw_measurement_add_thread(m, 100, 100, "app", "app-100-100.csprof");
	assert_non_null(th);
	th->samples = 10000;
	th = nw_measurement_add_thread(m, 100, 101, "worker", "worker-100-101.csprof");
	assert_non_null(th);
	th->samples = 2345;
	/* A lifetime (the other threads have none: recorded before lifetimes were kept). */
	th->first_ns = 1000000123;
	th->last_ns = 3000000456;
	th = nw_measurement_add_thread(m, 4294967295u, 102, "child", "child-x.csprof");
	assert_non_null(th);
	th->samples = 0;

	assert_int_equal(nw_module_intern(m->modules, "/usr/bin/app", app_id, sizeof(app_id)), 0);
	assert_int_equal(nw_module_intern(m->modules, "/tmp/deleted (deleted)", NULL, 0), 1);
	f = &m->modules->v[0].facts;
	f->known = true;
	f->has_cfi = true;
	f->dyn = true;
	f->machine = 62;
	memcpy(f->build_id, app_id, sizeof(app_id));
	f->build_id_size = sizeof(app_id);
	f->entry = 0x1040;
	f->nsegs = 3;
	f->segs = calloc(3, sizeof(*f->segs));
	assert_non_null(f->segs);
	f->segs[0] = (struct nw_segment){ 0x0, 0x5f8, 0x0, 0x5f8, false };
	f->segs[1] = (struct nw_segment){ 0x1000, 0x1b5, 0x1000, 0x1b5, true };
	f->segs[2] = (struct nw_segment){ 0xffffffffffff0000ULL, 0x10, 0x3db8, 0x8, false };
	return m;
}

static void assert_same_facts(const struct nw_module_facts *a, const struct nw_module_facts *b)
{
	assert_int_equal(a->known, b->known);
	if (!a->known)
		return;
	assert_int_equal(a->has_cfi, b->has_cfi);
	assert_int_equal(a->dyn, b->dyn);
	assert_int_equal(a->machine, b->machine);
	assert_int_equal(a->build_id_size, b->build_id_size);
	assert_memory_equal(a->build_id, b->build_id, a->build_id_size);
	assert_int_equal(a->entry, b->entry);
	assert_int_equal(a->nsegs, b->nsegs);
	for (uint32_t i = 0; i < a->nsegs; i++) {
		assert_int_equal(a->segs[i].vaddr, b->segs[i].vaddr);
		assert_int_equal(a->segs[i].memsz, b->segs[i].memsz);
		assert_int_equal(a->segs[i].offset, b->segs[i].offset);
		assert_int_equal(a->segs[i].filesz, b->segs[i].filesz);
		assert_int_equal(a->segs[i].exec, b->segs[i].exec);
	}
}

static void assert_same_run(const struct nw_run *a, const struct nw_run *b)
{
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
}

static void assert_same_model(const struct nw_measurement *a, const struct nw_measurement *b)
{
	assert_same_run(&a->run, &b->run);
	assert_int_equal(a->nmetrics, b->nmetrics);
	for (uint32_t i = 0; i < a->nmetrics; i++) {
		assert_string_equal(a->metrics[i].name, b->metrics[i].name);
		assert_string_equal(a->metrics[i].event, b->metrics[i].event);
		assert_int_equal(a->metrics[i].kind, b->metrics[i].kind);
		assert_int_equal(a->metrics[i].unit, b->metrics[i].unit);
		assert_int_equal(a->metrics[i].period, b->metrics[i].period);
		assert_int_equal(a->metrics[i].flags, b->metrics[i].flags);
	}
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
		if (a->threads[i].file)
			assert_string_equal(a->threads[i].file, b->threads[i].file);
		else
			assert_null(b->threads[i].file);
		assert_int_equal(a->threads[i].samples, b->threads[i].samples);
		assert_int_equal(a->threads[i].first_ns, b->threads[i].first_ns);
		assert_int_equal(a->threads[i].last_ns, b->threads[i].last_ns);
		/* The manifest has no trees: the reader of the directory adds them. */
		assert_int_equal(b->threads[i].ntrees, 0);
	}
	assert_int_equal(a->modules->n, b->modules->n);
	for (uint32_t i = 0; i < a->modules->n; i++) {
		const struct nw_module *x = &a->modules->v[i], *y = &b->modules->v[i];

		assert_string_equal(x->path, y->path);
		assert_int_equal(x->build_id_size, y->build_id_size);
		assert_memory_equal(x->build_id, y->build_id, x->build_id_size);
		assert_same_facts(&x->facts, &y->facts);
	}
	/* Epochs and the symbol table live in other files. */
	assert_int_equal(b->nepochs, 0);
	assert_int_equal(b->symtab->nentries, 0);
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

/* Reads PATH into a new model, expecting success. */
static struct nw_measurement *read_ok(void)
{
	struct nw_measurement *r = nw_measurement_new();
	char err[256];
	int rc;

	assert_non_null(r);
	rc = nw_manifest_read(PATH, r, err, sizeof(err));
	if (rc)
		fail_msg("nw_manifest_read: %d: %s", rc, err);
	return r;
}

static void test_round_trip(void **state)
{
	struct nw_measurement *m = sample_model(), *r;
	struct json_object *root;
	char *text;

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	r = read_ok();
	assert_same_model(m, r);

	/* Pretty JSON with the snake_case keys of the struct fields. */
	text = read_text(PATH);
	assert_non_null(strstr(text, "\n  \"unwind_errors\":"));
	assert_non_null(strstr(text, "\"call_graph\":\"dwarf\""));
	assert_non_null(strstr(text, "\"build_id\":"));
	assert_non_null(strstr(text, "\"/usr/bin/app\""));
	free(text);
	nw_measurement_free(r);

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
	r = read_ok();
	assert_int_equal(r->nprocs, 0);
	assert_same_model(m, r);
	nw_measurement_free(r);
	nw_measurement_free(m);
	unlink(PATH);
}

/* Version 2: the metric descriptors and each module's ELF facts, as written. */
static void test_v2_metrics_and_facts(void **state)
{
	struct nw_measurement *m = sample_model(), *r;
	struct json_object *root, *arr, *o, *v;
	struct nw_mthread *th;
	char *text;

	/* A module whose facts have no segment and no build-id, and a thread without a file. */
	assert_int_equal(nw_module_intern(m->modules, "/lib/empty.so", NULL, 0), 2);
	m->modules->v[2].facts.known = true;
	m->modules->v[2].facts.entry = 0;
	th = nw_measurement_add_thread(m, 100, 103, "nofile", NULL);
	assert_non_null(th);

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "version", &v));
	assert_int_equal(json_object_get_int(v), 2);
	assert_int_equal(NW_MANIFEST_VERSION, 2);

	/* "metrics": one object per metric, kinds and units by name. */
	assert_true(json_object_object_get_ex(root, "metrics", &arr));
	assert_int_equal(json_object_array_length(arr), 4);
	o = json_object_array_get_idx(arr, 1);
	assert_true(json_object_object_get_ex(o, "name", &v));
	assert_string_equal(json_object_get_string(v), "cpu-clock:period");
	assert_true(json_object_object_get_ex(o, "event", &v));
	assert_string_equal(json_object_get_string(v), "cpu-clock");
	assert_true(json_object_object_get_ex(o, "kind", &v));
	assert_string_equal(json_object_get_string(v), "period");
	assert_true(json_object_object_get_ex(o, "unit", &v));
	assert_string_equal(json_object_get_string(v), "nanoseconds");
	assert_true(json_object_object_get_ex(o, "period", &v));
	assert_int_equal(json_object_get_uint64(v), 1001001);
	assert_true(json_object_object_get_ex(o, "flags", &v));
	assert_int_equal(json_object_get_int(v), NW_METRIC_FLAG_ASYNC);
	o = json_object_array_get_idx(arr, 3);
	assert_true(json_object_object_get_ex(o, "unit", &v));
	assert_string_equal(json_object_get_string(v), "bytes");
	assert_true(json_object_object_get_ex(o, "period", &v));
	assert_int_equal(json_object_get_uint64(v), 1ULL << 63);

	/* "elf" only for modules whose facts are known; addresses as hex strings. */
	assert_true(json_object_object_get_ex(root, "modules", &arr));
	o = json_object_array_get_idx(arr, 0);
	assert_true(json_object_object_get_ex(o, "elf", &o));
	assert_true(json_object_object_get_ex(o, "type", &v));
	assert_string_equal(json_object_get_string(v), "dyn");
	assert_true(json_object_object_get_ex(o, "entry", &v));
	assert_string_equal(json_object_get_string(v), "0x1040");
	assert_true(json_object_object_get_ex(o, "build_id", &v));
	assert_string_equal(json_object_get_string(v), "0123456789abcdef0123456789abcdef01234567");
	assert_true(json_object_object_get_ex(o, "segments", &v));
	assert_int_equal(json_object_array_length(v), 3);
	o = json_object_array_get_idx(v, 2);
	assert_true(json_object_object_get_ex(o, "vaddr", &v));
	assert_string_equal(json_object_get_string(v), "0xffffffffffff0000");
	assert_false(json_object_object_get_ex(json_object_array_get_idx(arr, 1), "elf", NULL));
	assert_true(json_object_object_get_ex(json_object_array_get_idx(arr, 2), "elf", NULL));
	json_object_put(root);

	r = read_ok();
	assert_same_model(m, r);
	assert_true(r->modules->v[0].facts.known);
	assert_false(r->modules->v[1].facts.known);
	assert_true(r->modules->v[2].facts.known);
	assert_int_equal(r->modules->v[2].facts.nsegs, 0);
	assert_int_equal(r->modules->v[2].facts.build_id_size, 0);
	/* An ET_EXEC module says "exec". */
	nw_measurement_free(r);
	m->modules->v[0].facts.dyn = false;
	assert_int_equal(nw_manifest_write(PATH, m), 0);
	text = read_text(PATH);
	assert_non_null(strstr(text, "\"type\":\"exec\""));
	free(text);
	r = read_ok();
	assert_false(r->modules->v[0].facts.dyn);
	assert_same_model(m, r);
	/* The metrics are found by their names. */
	assert_int_equal(nw_measurement_find_metric(r, "INST_RETIRED:ANY_P:period"), 3);
	assert_int_equal(nw_measurement_samples_metric(r, 3), 2);
	nw_measurement_free(r);
	nw_measurement_free(m);
	unlink(PATH);
}

/*
 * Version 1 (no "metrics", no "elf"): two metrics per event, samples and
 * period (off-cpu: switches and nanoseconds), the layout its writer used.
 */
static void test_v1_two_metrics_per_event(void **state)
{
	struct nw_measurement *m = sample_model(), *r;
	struct json_object *root, *arr, *o;

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	json_object_object_add(root, "version", json_object_new_int(1));
	json_object_object_del(root, "metrics");
	assert_true(json_object_object_get_ex(root, "modules", &arr));
	json_object_object_del(json_object_array_get_idx(arr, 0), "elf");
	/* A third event: off-CPU. */
	assert_true(json_object_object_get_ex(root, "events", &arr));
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string("off-cpu"));
	json_object_object_add(o, "type", json_object_new_int(1));
	json_object_object_add(o, "config", json_object_new_int(3));
	json_object_object_add(o, "freq", json_object_new_boolean(false));
	json_object_object_add(o, "value", json_object_new_int(1));
	json_object_array_add(arr, o);
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);

	r = read_ok();
	assert_int_equal(r->run.nevents, 3);
	assert_int_equal(r->nmetrics, 6);
	/* cpu-clock, in frequency mode: no fixed period. */
	assert_string_equal(r->metrics[0].name, "cpu-clock:samples");
	assert_string_equal(r->metrics[0].event, "cpu-clock");
	assert_int_equal(r->metrics[0].kind, NW_METRIC_SAMPLES);
	assert_int_equal(r->metrics[0].unit, NW_UNIT_COUNT);
	assert_int_equal(r->metrics[0].period, 0);
	assert_int_equal(r->metrics[0].flags, NW_METRIC_FLAG_ASYNC);
	assert_string_equal(r->metrics[1].name, "cpu-clock:period");
	assert_int_equal(r->metrics[1].kind, NW_METRIC_PERIOD);
	assert_int_equal(r->metrics[1].unit, NW_UNIT_NANOSECONDS);
	assert_int_equal(r->metrics[1].period, 0);
	/* A period event: its period. */
	assert_string_equal(r->metrics[2].name, "INST_RETIRED:ANY_P:samples");
	assert_int_equal(r->metrics[2].kind, NW_METRIC_SAMPLES);
	assert_int_equal(r->metrics[2].period, 1ULL << 63);
	assert_string_equal(r->metrics[3].name, "INST_RETIRED:ANY_P:period");
	assert_int_equal(r->metrics[3].kind, NW_METRIC_PERIOD);
	assert_int_equal(r->metrics[3].unit, NW_UNIT_EVENTS);
	assert_int_equal(r->metrics[3].period, 1ULL << 63);
	/* Off-CPU: switches and the time off the CPU. */
	assert_string_equal(r->metrics[4].name, "off-cpu:switches");
	assert_int_equal(r->metrics[4].kind, NW_METRIC_SWITCHES);
	assert_int_equal(r->metrics[4].unit, NW_UNIT_COUNT);
	assert_int_equal(r->metrics[4].flags, NW_METRIC_FLAG_REAL);
	assert_string_equal(r->metrics[5].name, "off-cpu:nanoseconds");
	assert_int_equal(r->metrics[5].kind, NW_METRIC_OFFCPU_TIME);
	assert_int_equal(r->metrics[5].unit, NW_UNIT_NANOSECONDS);
	for (uint32_t e = 0; e < 3; e++)
		assert_int_equal(nw_measurement_samples_metric(r, 2 * e + 1), (int)(2 * e));
	/* The rest reads as in version 2; a module without "elf" has no facts. */
	assert_string_equal(r->run.call_graph, "dwarf");
	assert_int_equal(r->run.argc, 5);
	assert_int_equal(r->run.unwind_errors, 1ULL << 40);
	assert_int_equal(r->modules->n, 2);
	assert_false(r->modules->v[0].facts.known);
	assert_int_equal(r->modules->v[0].build_id_size, 20);
	assert_int_equal(r->nthreads, 3);
	nw_measurement_free(r);

	/* A version-1 manifest with no events has no metrics. */
	root = json_object_from_file(PATH);
	assert_non_null(root);
	json_object_object_add(root, "events", json_object_new_array());
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);
	r = read_ok();
	assert_int_equal(r->nmetrics, 0);
	nw_measurement_free(r);
	nw_measurement_free(m);
	unlink(PATH);
}

/* max_stack is optional: older manifests lack it, and 0 (unknown) is not written. */
static void test_optional_max_stack(void **state)
{
	struct nw_measurement *m = sample_model(), *r;
	struct json_object *root;
	char *text;

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
	r = read_ok();
	assert_int_equal(r->run.max_stack, 0);
	m->run.max_stack = 0;
	assert_same_model(m, r);
	nw_measurement_free(r);

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	text = read_text(PATH);
	assert_null(strstr(text, "max_stack"));
	free(text);
	nw_measurement_free(m);
	unlink(PATH);
}

/*
 * The object at @path in @root: keys and array items, "modules[0].elf" or
 * "" for @root itself.
 */
static struct json_object *walk(struct json_object *root, const char *path)
{
	char buf[128], *p = buf;
	struct json_object *o = root;

	snprintf(buf, sizeof(buf), "%s", path);
	while (*p) {
		char *dot = strchr(p, '.'), *br;
		long idx = -1;

		if (dot)
			*dot = 0;
		br = strchr(p, '[');
		if (br) {
			idx = strtol(br + 1, NULL, 10);
			*br = 0;
		}
		assert_true(json_object_object_get_ex(o, p, &o));
		if (idx >= 0) {
			o = json_object_array_get_idx(o, (size_t)idx);
			assert_non_null(o);
		}
		if (!dot)
			break;
		p = dot + 1;
	}
	return o;
}

/* Reads PATH, expecting -EBADMSG with a message naming the file and @msg_part. */
static void expect_read_bad(const char *msg_part)
{
	struct nw_measurement *r = nw_measurement_new();
	char err[256];

	assert_non_null(r);
	assert_int_equal(nw_manifest_read(PATH, r, err, sizeof(err)), -EBADMSG);
	/* What was read before the error is the caller's to free (LeakSanitizer checks). */
	nw_measurement_free(r);
	if (!strstr(err, PATH) || !strstr(err, msg_part))
		fail_msg("message \"%s\" lacks the path or \"%s\"", err, msg_part);
	unlink(PATH);
}

/*
 * Writes the sample model's manifest with one key changed: @key of the
 * object at @where ("" for the top), or when @key is NULL the item @index
 * of the array at @where; @val NULL removes the key.  Then expects the read
 * to fail with @msg_part.
 */
static void expect_bad_at(const char *where, int index, const char *key,
			  struct json_object *val, const char *msg_part)
{
	struct nw_measurement *m = sample_model();
	struct json_object *root, *obj;

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	nw_measurement_free(m);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	obj = walk(root, where);
	if (key) {
		assert_true(json_object_object_get_ex(obj, key, NULL));
		if (val)
			json_object_object_add(obj, key, val);
		else
			json_object_object_del(obj, key);
	} else {
		/* Replace the array item itself. */
		json_object_array_put_idx(obj, (size_t)index, val);
	}
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);
	expect_read_bad(msg_part);
}

/* The checks of version 1's tests: @key of item @index of @array, or of the top. */
static void expect_bad(const char *array, int index, const char *key, struct json_object *val,
		       const char *msg_part)
{
	char where[64];

	if (!array)
		snprintf(where, sizeof(where), "%s", "");
	else if (key)
		snprintf(where, sizeof(where), "%s[%d]", array, index);
	else
		snprintf(where, sizeof(where), "%s", array);
	expect_bad_at(where, index, key, val, msg_part);
}

static void test_missing_keys(void **state)
{
	static const char *top[] = { "version", "narwhal_version", "arch", "argv",
				     "call_graph", "stack_size", "events", "start_ns",
				     "end_ns", "exit_status", "samples", "lost",
				     "throttled", "unwind_errors", "processes", "threads",
				     "modules", "metrics" };
	static const char *metric[] = { "name", "event", "kind", "unit", "period", "flags" };
	static const char *elf[] = { "build_id", "type", "machine", "entry", "cfi", "segments" };
	static const char *seg[] = { "vaddr", "memsz", "offset", "filesz", "exec" };
	char msg[96];

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

	/* Version 2's keys. */
	for (size_t i = 0; i < sizeof(metric) / sizeof(metric[0]); i++) {
		snprintf(msg, sizeof(msg), "missing key \"metrics[3].%s\"", metric[i]);
		expect_bad("metrics", 3, metric[i], NULL, msg);
	}
	for (size_t i = 0; i < sizeof(elf) / sizeof(elf[0]); i++) {
		snprintf(msg, sizeof(msg), "missing key \"modules[0].elf.%s\"", elf[i]);
		expect_bad_at("modules[0].elf", 0, elf[i], NULL, msg);
	}
	for (size_t i = 0; i < sizeof(seg) / sizeof(seg[0]); i++) {
		snprintf(msg, sizeof(msg), "missing key \"modules[0].elf.segments[1].%s\"", seg[i]);
		expect_bad_at("modules[0].elf.segments[1]", 0, seg[i], NULL, msg);
	}
}

static void test_ill_typed_keys(void **state)
{
	expect_bad(NULL, 0, "version", json_object_new_string("1"),
		   "key \"version\" must be an integer");
	/* Version 2 is this writer's: the first version this reader does not know is 3. */
	expect_bad(NULL, 0, "version", json_object_new_int(3), "unsupported manifest version 3");
	expect_bad(NULL, 0, "version", json_object_new_int(0), "unsupported manifest version 0");
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
	expect_bad("threads", 1, "first_ns", json_object_new_string("1"),
		   "key \"threads[1].first_ns\" must be an integer");
	expect_bad("threads", 1, "last_ns", json_object_new_int64(999),
		   "threads[1].last_ns is before its first_ns");
	expect_bad("events", 0, "freq", json_object_new_int(1),
		   "\"events[0].freq\" must be true or false");
	expect_bad("events", 1, NULL, json_object_new_string("cycles"),
		   "\"events[1]\" must be an object");
	expect_bad("argv", 1, NULL, json_object_new_int(5), "\"argv[1]\" must be a string");
	expect_bad("modules", 0, "path", NULL, "missing key \"modules[0].path\"");
	expect_bad("modules", 0, "path", json_object_new_array(), "\"modules[0].path\" must be");

	/* Version 2's keys. */
	expect_bad(NULL, 0, "metrics", json_object_new_object(),
		   "key \"metrics\" must be an array");
	expect_bad("metrics", 0, NULL, json_object_new_int(1), "\"metrics[0]\" must be an object");
	expect_bad("metrics", 1, "kind", json_object_new_string("bogus"),
		   "\"metrics[1].kind\" is \"bogus\", which this Narwhal does not know");
	expect_bad("metrics", 1, "unit", json_object_new_string("furlongs"),
		   "\"metrics[1].unit\" is \"furlongs\", which this Narwhal does not know");
	expect_bad("metrics", 2, "kind", json_object_new_int(0),
		   "key \"metrics[2].kind\" must be a string");
	expect_bad("metrics", 2, "period", json_object_new_int64(-1),
		   "\"metrics[2].period\" must be an integer in");
	expect_bad("metrics", 0, "flags", json_object_new_int64(1LL << 32),
		   "\"metrics[0].flags\" must be an integer in 0..4294967295");
	expect_bad("modules", 0, "build_id", json_object_new_string("xyz"),
		   "\"modules[0].build_id\" is not a hex build-id");
	/* 21 bytes: longer than any build-id. */
	expect_bad("modules", 0, "build_id",
		   json_object_new_string("00112233445566778899aabbccddeeff0011223344"),
		   "\"modules[0].build_id\" is not a hex build-id");
	expect_bad("modules", 0, "elf", json_object_new_string("yes"),
		   "key \"modules[0].elf.build_id\"");
	expect_bad_at("modules[0].elf", 0, "build_id", json_object_new_string("0g"),
		      "\"modules[0].elf.build_id\" is not a hex build-id");
	expect_bad_at("modules[0].elf", 0, "type", json_object_new_string("rel"),
		      "\"modules[0].elf.type\" must be \"dyn\" or \"exec\"");
	expect_bad_at("modules[0].elf", 0, "machine", json_object_new_int64(-62),
		      "\"modules[0].elf.machine\" must be an integer in");
	expect_bad_at("modules[0].elf", 0, "entry", json_object_new_int(4160),
		      "key \"modules[0].elf.entry\" must be a string");
	expect_bad_at("modules[0].elf", 0, "entry", json_object_new_string("1040"),
		      "\"modules[0].elf.entry\" must be a hex string like \"0x1139\", "
		      "not \"1040\"");
	expect_bad_at("modules[0].elf", 0, "cfi", json_object_new_string("true"),
		      "\"modules[0].elf.cfi\" must be true or false");
	expect_bad_at("modules[0].elf", 0, "segments", json_object_new_object(),
		      "key \"modules[0].elf.segments\" must be an array");
	expect_bad_at("modules[0].elf.segments", 2, NULL, json_object_new_array(),
		      "\"modules[0].elf.segments[2]\" must be an object");
	expect_bad_at("modules[0].elf.segments[1]", 0, "memsz",
		      json_object_new_string("0x10000000000000000"),
		      "\"modules[0].elf.segments[1].memsz\" must be a hex string");
	expect_bad_at("modules[0].elf.segments[0]", 0, "exec", json_object_new_int(0),
		      "\"modules[0].elf.segments[0].exec\" must be true or false");
}

/* The same module (path and build-id) listed twice. */
static void test_repeated_module(void **state)
{
	struct nw_measurement *m = sample_model();
	struct json_object *root, *arr, *dup = NULL;

	assert_int_equal(nw_manifest_write(PATH, m), 0);
	nw_measurement_free(m);
	root = json_object_from_file(PATH);
	assert_non_null(root);
	assert_true(json_object_object_get_ex(root, "modules", &arr));
	assert_int_equal(json_object_deep_copy(json_object_array_get_idx(arr, 1), &dup, NULL), 0);
	json_object_array_add(arr, dup);
	assert_int_equal(json_object_to_file(PATH, root), 0);
	json_object_put(root);
	expect_read_bad("\"modules[2]\" repeats module 1");
}

static void expect_not_json(const char *text, size_t len, const char *msg_part)
{
	write_text(PATH, text, len);
	expect_read_bad(msg_part);
}

static void test_not_json(void **state)
{
	struct nw_measurement *r = nw_measurement_new();
	char err[256];

	expect_not_json("", 0, "not JSON");
	expect_not_json("this is not json\n", 17, "not JSON");
	expect_not_json("{\"version\": 1,", 14, "not JSON");
	expect_not_json("{\"version\": 1} }", 16, "data after the end");
	expect_not_json("{\"version\"\0: 1}", 15, "NUL byte");
	expect_not_json("[1, 2]", 6, "not a JSON object");
	expect_not_json("{}", 2, "missing key \"version\"");

	assert_non_null(r);
	assert_int_equal(nw_manifest_read(NW_TEST_BUILD "/no-such-manifest.json", r, err,
					  sizeof(err)),
			 -ENOENT);
	/* Nothing was read into the model. */
	assert_null(r->run.arch);
	assert_int_equal(r->nmetrics, 0);
	assert_int_equal(r->nthreads, 0);
	assert_int_equal(r->modules->n, 0);
	assert_non_null(strstr(err, "no-such-manifest.json"));
	nw_measurement_free(r);
}

static void test_write_error(void **state)
{
	struct nw_measurement *m = sample_model();

	assert_int_equal(nw_manifest_write(NW_TEST_BUILD "/no-such-dir/manifest.json", m), -ENOENT);
	nw_measurement_free(m);
	nw_measurement_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_v2_metrics_and_facts),
		cmocka_unit_test(test_v1_two_metrics_per_event),
		cmocka_unit_test(test_optional_max_stack),
		cmocka_unit_test(test_missing_keys),
		cmocka_unit_test(test_ill_typed_keys),
		cmocka_unit_test(test_repeated_module),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
