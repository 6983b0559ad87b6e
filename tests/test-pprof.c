/* SPDX-License-Identifier: MIT */
/*
 * The pprof builder on a model made by hand (as the reader makes one),
 * decoded again with protobuf-c's own unpacker:
 *
 *   epoch 0: /bin/app mapped at 0x555000001000 (ELF 0x1000, file offset 0),
 *            /lib/libc.so mapped at 0x7f0000020000 (ELF 0x20000, offset 0x1f000)
 *   root -> A (app 0x1100, a caller: main)
 *             -> B (app 0x1200, leaf: helper inlined into work)  3 samples
 *             -> C (libc 0x20500, leaf, unknown to the symbol table) 1 sample
 *        -> D (0x1234, in no module)  2 samples
 *
 * The integration test export-pprof.sh checks real measurements with
 * Google's pprof and protoc.
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

#include "export/pprof.h"
#include "export/profile.pb-c.h"
#include "fixture.h"

#define APP_BASE 0x555000001000ULL
#define LIBC_BASE 0x7f0000020000ULL

struct fixture {
	struct nw_measurement *m;
	struct nw_pprof *b; /* the builder, for its frames */
	Perftools__Profiles__Profile *prof;
};

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static struct nw_symframe frame(const char *fn, const char *file, uint32_t line,
				uint32_t decl_line)
{
	return (struct nw_symframe){ .function = xstrdup(fn), .file = xstrdup(file), .line = line,
				     .decl_line = decl_line, .decl_file = xstrdup(file) };
}

static void set_node(struct nw_cct *t, uint32_t node, uint64_t samples)
{
	nw_cct_metrics(t, node)[0] = samples;
	nw_cct_metrics(t, node)[1] = samples * 1000000;
}

/* The model of the comment above: one process, thread 11 "app" of pid 10. */
static struct nw_measurement *model(void)
{
	static const uint8_t build_id[] = { 0xab, 0xcd };
	char *argv[] = { "/bin/app", "--fast" };
	struct nw_measurement *m = nw_measurement_new();
	struct nw_map maps[] = {
		{ .start = APP_BASE, .end = LIBC_BASE, .pgoff = 0, .vaddr = 0x1000, .module = 0 },
		{ .start = LIBC_BASE, .end = UINT64_MAX, .pgoff = 0x1f000, .vaddr = 0x20000,
		  .module = 1 },
	};
	struct nw_symframe *fr;
	struct nw_mthread *th;
	struct nw_epoch *e;
	struct nw_cct *t;
	uint32_t a, n;

	assert_non_null(m);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 1000000), 0);
	assert_int_equal(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_PERIOD, 1000000), 1);
	assert_int_equal(nw_run_set_argv(&m->run, 2, argv), 0);
	m->run.start_ns = 1000;
	m->run.end_ns = 5000;
	assert_int_equal(nw_module_intern(m->modules, "/bin/app", build_id, sizeof(build_id)), 0);
	assert_int_equal(nw_module_intern(m->modules, "/lib/libc.so", NULL, 0), 1);
	e = nw_epoch_new(maps, 2, 0);
	assert_non_null(e);
	assert_int_equal(nw_measurement_add_epoch(m, e), 0);

	/* A is a caller: the symbol table holds its return address - 1. */
	fr = calloc(1, sizeof(*fr));
	assert_non_null(fr);
	fr[0] = frame("main", "/src/app.c", 10, 5);
	assert_int_equal(nw_symtab_add(m->symtab, 0, 0x10ff, fr, 1), 0);
	fr = calloc(2, sizeof(*fr));
	assert_non_null(fr);
	fr[0] = frame("helper", "/src/helper.h", 21, 20);
	fr[1] = frame("work", "/src/app.c", 31, 30);
	assert_int_equal(nw_symtab_add(m->symtab, 0, 0x1200, fr, 2), 0);
	nw_symtab_sort(m->symtab);

	assert_int_equal(nw_measurement_add_process(m, 10, 1, "app"), 0);
	th = nw_measurement_add_thread(m, 10, 11, "app", NULL);
	assert_non_null(th);
	th->nepochs = 1;
	t = nw_cct_new(2);
	assert_non_null(t);
	a = nw_cct_child(t, NW_CCT_ROOT, APP_BASE + 0x100, 0);
	n = nw_cct_child(t, a, APP_BASE + 0x200, 0);
	set_node(t, n, 3);
	n = nw_cct_child(t, a, LIBC_BASE + 0x500, 0);
	set_node(t, n, 1);
	n = nw_cct_child(t, NW_CCT_ROOT, 0x1234, 0);
	set_node(t, n, 2);
	assert_int_equal(nw_mthread_add_tree(th, 0, t), 0);
	return m;
}

/* The encoded profile, as the builder writes it piece by piece. */
struct membuf {
	uint8_t *v;
	size_t n;
};

static struct membuf out;

static int write_mem(void *arg, const void *buf, size_t len)
{
	struct membuf *mb = arg;
	uint8_t *v = realloc(mb->v, mb->n + len + 1);

	if (!v)
		return -ENOMEM;
	memcpy(v + mb->n, buf, len);
	mb->v = v;
	mb->n += len;
	return 0;
}

/* A builder for @m writing into the test's buffer (emptied). */
static struct nw_pprof *builder(const struct nw_measurement *m)
{
	free(out.v);
	out = (struct membuf){ 0 };
	return nw_pprof_new(m, write_mem, &out);
}

/* Finishes @b: the bytes written, handed over to the caller. */
static int pack(struct nw_pprof *b, uint8_t **buf, size_t *len)
{
	int ret = nw_pprof_finish(b);

	*buf = out.v;
	*len = out.n;
	out = (struct membuf){ 0 };
	return ret;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	uint8_t *buf;
	size_t len;

	assert_non_null(f);
	f->m = model();
	f->b = builder(f->m);
	assert_non_null(f->b);
	assert_int_equal(nw_pprof_add(f->b, NULL, NULL), 0);
	assert_int_equal(pack(f->b, &buf, &len), 0);
	f->prof = perftools__profiles__profile__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(f->prof);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	perftools__profiles__profile__free_unpacked(f->prof, NULL);
	nw_pprof_free(f->b);
	nw_measurement_free(f->m);
	free(f);
	return 0;
}

static const char *str(const Perftools__Profiles__Profile *pr, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < pr->n_string_table);
	return pr->string_table[i];
}

static const Perftools__Profiles__Location *loc(const Perftools__Profiles__Profile *pr,
						uint64_t id)
{
	for (size_t i = 0; i < pr->n_location; i++)
		if (pr->location[i]->id == id)
			return pr->location[i];
	fail_msg("no location %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Function *func(const Perftools__Profiles__Profile *pr,
						 uint64_t id)
{
	for (size_t i = 0; i < pr->n_function; i++)
		if (pr->function[i]->id == id)
			return pr->function[i];
	fail_msg("no function %llu", (unsigned long long)id);
	return NULL;
}

static const Perftools__Profiles__Mapping *mapping(const Perftools__Profiles__Profile *pr,
						   uint64_t id)
{
	for (size_t i = 0; i < pr->n_mapping; i++)
		if (pr->mapping[i]->id == id)
			return pr->mapping[i];
	fail_msg("no mapping %llu", (unsigned long long)id);
	return NULL;
}

/* The name of line @k of location @id. */
static const char *line_name(const Perftools__Profiles__Profile *pr, uint64_t id, size_t k)
{
	const Perftools__Profiles__Location *l = loc(pr, id);

	assert_true(k < l->n_line);
	return str(pr, func(pr, l->line[k]->function_id)->name);
}

/* The sample whose leaf location's first line is @leaf. */
static const Perftools__Profiles__Sample *sample(const Perftools__Profiles__Profile *pr,
						 const char *leaf)
{
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];

		if (s->n_location_id && strcmp(line_name(pr, s->location_id[0], 0), leaf) == 0)
			return s;
	}
	fail_msg("no sample ending in %s", leaf);
	return NULL;
}

static void test_header(void **state)
{
	const Perftools__Profiles__Profile *pr = ((struct fixture *)*state)->prof;

	assert_true(pr->n_string_table > 0);
	assert_string_equal(pr->string_table[0], "");
	assert_int_equal(pr->n_sample_type, 2);
	assert_string_equal(str(pr, pr->sample_type[0]->type), "samples");
	assert_string_equal(str(pr, pr->sample_type[0]->unit), "count");
	assert_string_equal(str(pr, pr->sample_type[1]->type), "cpu");
	assert_string_equal(str(pr, pr->sample_type[1]->unit), "nanoseconds");
	assert_non_null(pr->period_type);
	assert_string_equal(str(pr, pr->period_type->type), "cpu");
	assert_string_equal(str(pr, pr->period_type->unit), "nanoseconds");
	assert_int_equal(pr->period, 1000000);
	assert_int_equal(pr->time_nanos, 1000);
	assert_int_equal(pr->duration_nanos, 4000);
	assert_int_equal(pr->n_comment, 2);
	assert_string_equal(str(pr, pr->comment[0]), "narwhal-record /bin/app --fast");
}

static void test_samples(void **state)
{
	const Perftools__Profiles__Profile *pr = ((struct fixture *)*state)->prof;
	const Perftools__Profiles__Sample *s;
	uint64_t total = 0;

	assert_int_equal(pr->n_sample, 3);
	for (size_t i = 0; i < pr->n_sample; i++) {
		assert_int_equal(pr->sample[i]->n_value, 2);
		assert_int_equal(pr->sample[i]->value[1], pr->sample[i]->value[0] * 1000000);
		total += (uint64_t)pr->sample[i]->value[0];
		/* Labels: thread name, tid, pid. */
		assert_int_equal(pr->sample[i]->n_label, 3);
		assert_string_equal(str(pr, pr->sample[i]->label[0]->key), "thread");
		assert_string_equal(str(pr, pr->sample[i]->label[0]->str), "app");
		assert_string_equal(str(pr, pr->sample[i]->label[1]->key), "tid");
		assert_int_equal(pr->sample[i]->label[1]->num, 11);
		assert_string_equal(str(pr, pr->sample[i]->label[2]->key), "pid");
		assert_int_equal(pr->sample[i]->label[2]->num, 10);
	}
	assert_int_equal(total, 6);

	/* Leaf first: B's location, then A's. */
	s = sample(pr, "helper");
	assert_int_equal(s->value[0], 3);
	assert_int_equal(s->n_location_id, 2);
	assert_string_equal(line_name(pr, s->location_id[1], 0), "main");
	s = sample(pr, "libc.so+0x20500");
	assert_int_equal(s->value[0], 1);
	assert_int_equal(s->n_location_id, 2);
	assert_string_equal(line_name(pr, s->location_id[1], 0), "main");
	/* A is one location, shared by both stacks. */
	assert_int_equal(s->location_id[1], sample(pr, "helper")->location_id[1]);
	s = sample(pr, "[unknown]");
	assert_int_equal(s->value[0], 2);
	assert_int_equal(s->n_location_id, 1);
}

static void test_locations(void **state)
{
	const Perftools__Profiles__Profile *pr = ((struct fixture *)*state)->prof;
	const Perftools__Profiles__Sample *s = sample(pr, "helper");
	const Perftools__Profiles__Location *b = loc(pr, s->location_id[0]);
	const Perftools__Profiles__Location *a = loc(pr, s->location_id[1]);
	const Perftools__Profiles__Location *c =
		loc(pr, sample(pr, "libc.so+0x20500")->location_id[0]);
	const Perftools__Profiles__Location *d = loc(pr, sample(pr, "[unknown]")->location_id[0]);

	assert_int_equal(pr->n_location, 4);
	/* Real addresses; a caller at its return address - 1. */
	assert_int_equal(a->address, APP_BASE + 0xff);
	assert_int_equal(b->address, APP_BASE + 0x200);
	assert_int_equal(c->address, LIBC_BASE + 0x500);
	assert_int_equal(d->address, 0x1234);
	assert_int_equal(d->mapping_id, 0);
	/* The inline chain: innermost first, with each frame's own line. */
	assert_int_equal(b->n_line, 2);
	assert_string_equal(line_name(pr, b->id, 0), "helper");
	assert_int_equal(b->line[0]->line, 21);
	assert_string_equal(line_name(pr, b->id, 1), "work");
	assert_int_equal(b->line[1]->line, 31);
	assert_int_equal(a->n_line, 1);
	assert_int_equal(a->line[0]->line, 10);
	assert_int_equal(c->n_line, 1);
	assert_int_equal(c->line[0]->line, 0);
}

static void test_functions(void **state)
{
	struct fixture *f = *state;
	const Perftools__Profiles__Profile *pr = f->prof;
	const Perftools__Profiles__Location *b = loc(pr, sample(pr, "helper")->location_id[0]);
	const Perftools__Profiles__Function *fn = func(pr, b->line[0]->function_id);
	int64_t idx;

	assert_int_equal(pr->n_function, 5);
	assert_string_equal(str(pr, fn->name), "helper");
	assert_string_equal(str(pr, fn->system_name), "helper");
	assert_string_equal(str(pr, fn->filename), "/src/helper.h");
	assert_int_equal(fn->start_line, 20);
	fn = func(pr, b->line[1]->function_id);
	assert_string_equal(str(pr, fn->filename), "/src/app.c");
	assert_int_equal(fn->start_line, 30);
	/* The Functions are the builder's frames: (kind, name, module) as the stacks name them. */
	idx = nw_frames_intern(nw_pprof_frames(f->b), NW_FRAME_FUNCTION, "work", NULL, 0,
			       "/bin/app");
	assert_int_equal((uint64_t)idx + 1, b->line[1]->function_id);
	idx = nw_frames_intern(nw_pprof_frames(f->b), NW_FRAME_ADDRESS, "libc.so+0x20500", NULL,
			       0, "/lib/libc.so");
	assert_true(idx >= 0);
	assert_int_equal(nw_pprof_frames(f->b)->n, 5);
}

static void test_mappings(void **state)
{
	const Perftools__Profiles__Profile *pr = ((struct fixture *)*state)->prof;
	const Perftools__Profiles__Location *a = loc(pr, sample(pr, "helper")->location_id[1]);
	const Perftools__Profiles__Location *c =
		loc(pr, sample(pr, "libc.so+0x20500")->location_id[0]);
	const Perftools__Profiles__Mapping *ma = mapping(pr, a->mapping_id);
	const Perftools__Profiles__Mapping *mc = mapping(pr, c->mapping_id);

	assert_int_equal(pr->n_mapping, 2);
	/* The program first: pprof takes mapping 1 for the main binary. */
	assert_int_equal(pr->mapping[0]->id, 1);
	assert_ptr_equal(pr->mapping[0], ma);
	assert_string_equal(str(pr, ma->filename), "/bin/app");
	assert_string_equal(str(pr, ma->build_id), "abcd");
	assert_int_equal(ma->memory_start, APP_BASE);
	/* The page after the highest address sampled (0x200). */
	assert_int_equal(ma->memory_limit, APP_BASE + 0x1000);
	/* The recorded mapping's file offset (not its ELF address). */
	assert_int_equal(ma->file_offset, 0);
	assert_true(ma->has_functions && ma->has_filenames && ma->has_line_numbers &&
		    ma->has_inline_frames);
	assert_string_equal(str(pr, mc->filename), "/lib/libc.so");
	assert_int_equal(mc->build_id, 0);
	assert_int_equal(mc->memory_start, LIBC_BASE);
	assert_int_equal(mc->memory_limit, LIBC_BASE + 0x1000);
	assert_int_equal(mc->file_offset, 0x1f000);
	/* Its only location has no symbol: pprof may symbolize it itself. */
	assert_false(mc->has_functions);
	assert_false(mc->has_line_numbers);
}

/* Two events: the sample types name them, the period is each event's. */
static void test_two_events(void **state)
{
	static const char *const events[] = { "cpu-clock", "page-faults" };
	struct fx *p = fx_new(events, 2);
	Perftools__Profiles__Profile *pr;
	uint8_t *buf;
	size_t len;

	(void)state;
	fx_thread(p, 1, 1, "x");
	assert_int_equal(nw_pprof_build(p->m, NULL, &buf, &len), 0);
	pr = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(pr);
	assert_int_equal(pr->n_sample_type, 4);
	assert_string_equal(str(pr, pr->sample_type[0]->type), "cpu-clock-samples");
	assert_string_equal(str(pr, pr->sample_type[1]->type), "cpu-clock");
	assert_string_equal(str(pr, pr->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(str(pr, pr->sample_type[2]->type), "page-faults-samples");
	assert_string_equal(str(pr, pr->sample_type[3]->type), "page-faults");
	assert_string_equal(str(pr, pr->sample_type[3]->unit), "count");
	assert_int_equal(pr->n_sample, 0);
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(buf);
	fx_free(p);
}

/* A tree whose metrics are not the model's is refused. */
static void test_bad_tree(void **state)
{
	struct fixture *f = *state;
	struct nw_mthread *th = nw_measurement_add_thread(f->m, 1, 1, "x", NULL);
	struct nw_cct *t = nw_cct_new(3);
	struct nw_pprof *b = builder(f->m);

	assert_non_null(th);
	assert_non_null(t);
	assert_non_null(b);
	th->nepochs = 1;
	assert_int_equal(nw_mthread_add_tree(th, 0, t), 0);
	assert_int_equal(nw_pprof_add_thread(b, f->m->nthreads - 1, NULL), -EBADMSG);
	nw_pprof_free(b);
}

/* Strings that are not UTF-8 (a protobuf string must be) are made so. */
static void test_invalid_utf8(void **state)
{
	struct fx *p = fx_new(NULL, 0);
	Perftools__Profiles__Profile *pr;
	struct nw_pprof *b;
	uint8_t *buf;
	size_t len;
	bool found = false;

	(void)state;
	fx_thread(p, 1, 1, "bad\xff\xfename\n");
	b = builder(p->m);
	assert_non_null(b);
	assert_int_equal(nw_pprof_add_thread(b, 0, NULL), 0);
	assert_int_equal(pack(b, &buf, &len), 0);
	pr = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(pr);
	for (size_t i = 0; i < pr->n_string_table; i++)
		found |= strcmp(pr->string_table[i], "bad??name?") == 0;
	assert_true(found);
	perftools__profiles__profile__free_unpacked(pr, NULL);
	free(buf);
	nw_pprof_free(b);
	fx_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_samples, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_functions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mappings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_tree, setup, teardown),
		cmocka_unit_test(test_two_events),
		cmocka_unit_test(test_invalid_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
