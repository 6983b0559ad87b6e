/* SPDX-License-Identifier: MIT */
/*
 * Lock contention's pure parts (doc/LOCKS.md): the lock metrics'
 * descriptors and the default metric of a lock-only measurement
 * (model/metric.h), the function a lock's first waiter locked it in
 * (model/locks.h), locks.json written and read back (format/locksfile.h),
 * narwhal-report --locks on a table built by hand (report/locks.h), and
 * two sources of events made one (record/sources.h: --alloc and --locks).
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

#include "format/locksfile.h"
#include "model/locks.h"
#include "model/measurement.h"
#include "model/metric.h"
#include "record/sources.h"
#include "report/locks.h"

static void test_metrics(void **state)
{
	static const char *const names[] = { "lock-wait", "lock-contentions", "lock-delay" };
	struct nw_measurement *m = nw_measurement_new();

	(void)state;
	assert_non_null(m);
	for (int k = NW_METRIC_LOCK_WAIT; k <= NW_METRIC_LOCK_DELAY; k++) {
		struct nw_metric d;

		assert_int_equal(nw_metric_init(&d, NW_LOCK_EVENT, (enum nw_metric_kind)k, 1000), 0);
		/* Named by the kind alone, as the allocation metrics are. */
		assert_string_equal(d.name, names[k - NW_METRIC_LOCK_WAIT]);
		assert_int_equal(d.unit, k == NW_METRIC_LOCK_CONTENTIONS ? NW_UNIT_COUNT
									 : NW_UNIT_NANOSECONDS);
		assert_true(nw_metric_kind_is_lock(d.kind));
		assert_true(nw_metric_kind_is_weighed(d.kind));
		assert_false(nw_metric_kind_is_alloc(d.kind));
		assert_false(nw_metric_counts_samples(&d));
		assert_int_equal(nw_metric_kind_parse(nw_metric_kind_name(d.kind)), k);
		nw_metric_fini(&d);
		assert_true(nw_measurement_add_metric(m, NW_LOCK_EVENT, (enum nw_metric_kind)k,
						      1000) >= 0);
	}
	/* Locks alone: the time waited is the default. */
	assert_int_equal(nw_measurement_find_metric(m, NULL), 0);
	assert_int_equal(nw_measurement_find_metric(m, "lock-delay"), 2);
	assert_int_equal(nw_measurement_find_metric(m, "lock"), 0);
	/* With a sampled event, its samples stay the default. */
	assert_true(nw_measurement_add_metric(m, "cpu-clock", NW_METRIC_SAMPLES, 1) >= 0);
	assert_int_equal(nw_measurement_find_metric(m, NULL), 3);
	nw_measurement_free(m);
}

/* A path of the names in @s, separated by ';' (root first). */
static void set_path(struct nw_lock_path *p, const char *s, uint64_t count, uint64_t ns)
{
	char *copy = strdup(s), *save = NULL;

	assert_non_null(copy);
	p->contentions = count;
	p->ns = ns;
	p->frames = calloc(32, sizeof(*p->frames));
	assert_non_null(p->frames);
	for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save))
		p->frames[p->nframes++] = strdup(f);
	free(copy);
}

/* Two locks: lock_hot (named), and one of the heap first locked in make_table. */
static struct nw_locks *two_locks(void)
{
	struct nw_locks *l = calloc(1, sizeof(*l));
	struct nw_lock *k;

	assert_non_null(l);
	l->rate = 100000;
	l->unknown_releaser_ns = 5;
	l->v = calloc(2, sizeof(*l->v));
	assert_non_null(l->v);
	l->n = 2;
	k = &l->v[0];
	*k = (struct nw_lock){ .pid = 7, .addr = 0x1000, .contentions = 10, .wait_ns = 3000000,
			       .max_ns = 900000, .nwaiters = 2, .nreleasers = 1 };
	k->name = strdup("lock_hot");
	k->waiters = calloc(2, sizeof(*k->waiters));
	k->releasers = calloc(1, sizeof(*k->releasers));
	assert_non_null(k->waiters);
	assert_non_null(k->releasers);
	set_path(&k->waiters[0], "main;worker;hot_section;pthread_mutex_lock;__lll_lock_wait", 4,
		 1000000);
	set_path(&k->waiters[1], "main;other;hot_section;pthread_mutex_lock;__lll_lock_wait", 6,
		 2000000);
	set_path(&k->releasers[0], "main;worker;hot_section;pthread_mutex_unlock", 0, 3000000);
	k = &l->v[1];
	*k = (struct nw_lock){ .pid = 7, .addr = 0x7f0000001230, .contentions = 1,
			       .wait_ns = 6000000, .max_ns = 6000000, .nwaiters = 1 };
	k->waiters = calloc(1, sizeof(*k->waiters));
	assert_non_null(k->waiters);
	/* A function of the program named like the locking functions is still the program's. */
	set_path(&k->waiters[0], "main;sem_section;make_table;sem_wait;do_futex_wait", 1,
		 6000000);
	return l;
}

static void test_first_user(void **state)
{
	struct nw_locks *l = two_locks();
	struct nw_lock none = { 0 };

	(void)state;
	assert_string_equal(nw_lock_first_user(&l->v[0]), "hot_section");
	assert_string_equal(nw_lock_first_user(&l->v[1]), "make_table");
	assert_null(nw_lock_first_user(&none));
	nw_locks_free(l);
}

static void assert_paths_equal(const struct nw_lock_path *a, const struct nw_lock_path *b,
			       uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(a[i].contentions, b[i].contentions);
		assert_int_equal(a[i].ns, b[i].ns);
		assert_int_equal(a[i].nframes, b[i].nframes);
		for (uint32_t f = 0; f < a[i].nframes; f++)
			assert_string_equal(a[i].frames[f], b[i].frames[f]);
	}
}

static void test_file_round_trip(void **state)
{
	struct nw_locks *l = two_locks(), *back = NULL;
	size_t len = 0;
	char *text = nw_locks_to_json(l, &len), err[256] = "";

	(void)state;
	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	assert_int_equal(nw_locks_read_buf("locks.json", text, len, &back, err, sizeof(err)), 0);
	assert_int_equal(back->rate, 100000);
	assert_int_equal(back->unknown_releaser_ns, 5);
	assert_int_equal(back->n, 2);
	for (uint32_t i = 0; i < 2; i++) {
		const struct nw_lock *a = &l->v[i], *b = &back->v[i];

		assert_int_equal(a->pid, b->pid);
		assert_int_equal(a->addr, b->addr);
		if (a->name)
			assert_string_equal(a->name, b->name);
		else
			assert_null(b->name);
		assert_int_equal(a->contentions, b->contentions);
		assert_int_equal(a->wait_ns, b->wait_ns);
		assert_int_equal(a->max_ns, b->max_ns);
		assert_int_equal(a->nwaiters, b->nwaiters);
		assert_int_equal(a->nreleasers, b->nreleasers);
		assert_paths_equal(a->waiters, b->waiters, a->nwaiters);
		assert_paths_equal(a->releasers, b->releasers, a->nreleasers);
	}
	nw_locks_free(back);
	free(text);
	nw_locks_free(l);
}

static void test_file_errors(void **state)
{
	static const char *const bad[] = {
		"[]",
		"{\"rate\": 1, \"unknown_releaser_ns\": 0}",
		"{\"rate\": 1, \"unknown_releaser_ns\": 0, \"locks\": [{\"pid\": 1}]}",
		"{\"rate\": 1, \"unknown_releaser_ns\": 0, \"locks\": [{\"pid\": 1, "
		"\"addr\": 12, \"name\": null, \"contentions\": 1, \"wait_ns\": 1, "
		"\"max_ns\": 1, \"waiters\": [], \"releasers\": []}]}",
		"{\"rate\": -1, \"unknown_releaser_ns\": 0, \"locks\": []}",
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct nw_locks *l = NULL;

		err[0] = 0;
		assert_int_equal(nw_locks_read_buf("locks.json", bad[i], strlen(bad[i]), &l, err,
						   sizeof(err)),
				 -EBADMSG);
		assert_null(l);
		assert_non_null(strstr(err, "locks.json"));
	}
}

static void test_merge(void **state)
{
	struct nw_locks *a = two_locks(), *b = two_locks(), *none = NULL;

	(void)state;
	/* Into nothing: moved as it is. */
	assert_int_equal(nw_locks_merge(&none, &a), 0);
	assert_null(a);
	assert_non_null(none);
	assert_int_equal(none->n, 2);
	/* Onto a table: appended, @src emptied. */
	b->v[0].pid = 8;
	assert_int_equal(nw_locks_merge(&none, &b), 0);
	assert_null(b);
	assert_int_equal(none->n, 4);
	assert_int_equal(none->v[2].pid, 8);
	assert_string_equal(none->v[2].name, "lock_hot");
	assert_int_equal(none->unknown_releaser_ns, 10);
	/* Nothing to add. */
	assert_int_equal(nw_locks_merge(&none, &b), 0);
	assert_int_equal(none->n, 4);
	nw_locks_free(none);
}

static void test_view(void **state)
{
	struct nw_measurement *m = nw_measurement_new();
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	const char *hot, *heap, *waiting, *releasing;

	(void)state;
	assert_non_null(m);
	assert_non_null(out);
	m->locks = two_locks();
	m->run.clock_start_ns = 1000;
	m->run.clock_end_ns = 1000 + 100000000;
	assert_non_null(nw_measurement_add_thread(m, 7, 7, "main", NULL));
	assert_int_equal(nw_view_locks(out, m, NULL, false), 0);
	fclose(out);
	/* By time waited: the heap lock (6 ms) first, named by its address and first locker. */
	heap = strstr(buf, "0x7f0000001230, first locked in make_table");
	hot = strstr(buf, "lock_hot");
	assert_non_null(heap);
	assert_non_null(hot);
	assert_true(heap < hot);
	assert_non_null(strstr(buf, "Locks: 2, 0.009000 s waited in all (9.00% of the threads' "
				    "0.100 s)"));
	/* Under lock_hot: its heavier waiting path first, with its share; then the releaser. */
	waiting = strstr(hot, "waiting:");
	releasing = strstr(hot, "releasing:");
	assert_non_null(waiting);
	assert_non_null(releasing);
	assert_non_null(strstr(waiting, "66.7%  main > other > hot_section > pthread_mutex_lock"));
	assert_true(strstr(waiting, "66.7%") < strstr(waiting, "33.3%"));
	assert_non_null(strstr(releasing, "100.0%  main > worker > hot_section > "
					  "pthread_mutex_unlock"));
	/* The heap lock's releasers were not seen. */
	assert_non_null(strstr(heap, "releasing: (none seen)"));
	free(buf);
	/* Without locks recorded: -ENOENT. */
	nw_locks_free(m->locks);
	m->locks = NULL;
	assert_int_equal(nw_view_locks(stdout, m, NULL, false), -ENOENT);
	nw_measurement_free(m);
}

/* A fake source: what it was called with. */
struct fake {
	struct nw_session_source src;
	unsigned attrs[4], samples[4], execs, describes;
	int order;
};

static int describe_order;

static enum nw_source_scope fake_attr(void *arg, const struct nw_session *s, unsigned which,
				      struct perf_event_attr *a)
{
	struct fake *f = arg;

	(void)s;
	(void)a;
	f->attrs[which]++;
	return NW_SOURCE_TASK;
}

static void fake_sample(void *arg, struct nw_session *s, unsigned which,
			const struct nw_sample *smp, struct nw_thread *th,
			const struct nw_epoch *epoch)
{
	(void)s;
	(void)smp;
	(void)th;
	(void)epoch;
	((struct fake *)arg)->samples[which]++;
}

static void fake_exec(void *arg, struct nw_session *s, uint32_t pid)
{
	(void)s;
	(void)pid;
	((struct fake *)arg)->execs++;
}

static int fake_describe(void *arg, const struct nw_session *s, struct nw_measurement *m)
{
	struct fake *f = arg;

	(void)s;
	(void)m;
	f->describes++;
	f->order = describe_order++;
	return 0;
}

static void fake_init(struct fake *f, unsigned nevents, unsigned nmetrics, uint64_t regs,
		      bool bursty)
{
	memset(f, 0, sizeof(*f));
	f->src = (struct nw_session_source){ .arg = f, .nevents = nevents, .nmetrics = nmetrics,
					     .regs_mask = regs, .bursty = bursty,
					     .attr = fake_attr, .sample = fake_sample,
					     .exec = fake_exec, .describe = fake_describe };
}

static void test_sources(void **state)
{
	struct fake a, b;
	struct nw_sources m;
	struct perf_event_attr attr;

	(void)state;
	fake_init(&a, 2, 4, 1u << 3, true);
	fake_init(&b, 2, 3, 1u << 5, false);
	nw_sources_init(&m);
	/* The second source's metrics follow the first's. */
	assert_int_equal(nw_sources_add(&m, &a.src), 0);
	assert_int_equal(nw_sources_add(&m, &b.src), 4);
	assert_int_equal(nw_sources_add(&m, &b.src), -ENOSPC);
	assert_int_equal(m.source.nevents, 4);
	assert_int_equal(m.source.nmetrics, 7);
	assert_int_equal(m.source.regs_mask, (1u << 3) | (1u << 5));
	assert_true(m.source.bursty);
	/* Events 0 and 1 are the first's, 2 and 3 the second's 0 and 1. */
	for (unsigned w = 0; w < 4; w++) {
		m.source.attr(m.source.arg, NULL, w, &attr);
		m.source.sample(m.source.arg, NULL, w, NULL, NULL, NULL);
	}
	m.source.sample(m.source.arg, NULL, 3, NULL, NULL, NULL);
	assert_int_equal(a.attrs[0], 1);
	assert_int_equal(a.attrs[1], 1);
	assert_int_equal(b.attrs[0], 1);
	assert_int_equal(b.attrs[1], 1);
	assert_int_equal(a.samples[0] + a.samples[1], 2);
	assert_int_equal(b.samples[1], 2);
	/* exec and describe reach both, in order. */
	m.source.exec(m.source.arg, NULL, 12);
	assert_int_equal(a.execs, 1);
	assert_int_equal(b.execs, 1);
	assert_int_equal(m.source.describe(m.source.arg, NULL, NULL), 0);
	assert_int_equal(a.describes, 1);
	assert_int_equal(b.describes, 1);
	assert_true(a.order < b.order);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics),	       cmocka_unit_test(test_first_user),
		cmocka_unit_test(test_file_round_trip), cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_view),	       cmocka_unit_test(test_sources),
		cmocka_unit_test(test_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
