/* SPDX-License-Identifier: MIT */
/*
 * The session's record dispatch (record/session.h) on crafted record
 * streams, without opening any perf event: nw_session_init() with two
 * software events and --call-graph fp, then byte-exact records built in
 * the layout of s->fmt (tests/perfrec.h) fed to nw_session_process().
 * Checked through the task table (threads, their CCT per epoch), the
 * module table, the address maps and epochs, the statistics, the CCT API,
 * and a source of events of its own (the interface of the allocation
 * listener).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "model/cct.h"
#include "model/epoch.h"
#include "model/measurement.h"
#include "model/metric.h"
#include "record/session.h"
#include "record/tasks.h"

#include "perfrec.h"

/* Sample ids of the two events (attr ids the kernel would hand out). */
#define ID_A PERFREC_TRAILER_ID /* event 0 */
#define ID_B 0x2002 /* event 1 */
#define ID_OFF 0x3003 /* the off-cpu event, when opened with it */

#define APP_START 0x400000ull
#define APP_LEN 0x10000ull
#define LIB_START 0x7f0000000000ull
#define LIB_LEN 0x20000ull

/* ---- the session ---- */

static const struct nw_event events[2] = {
	{ .name = "cpu-clock",
	  .attr = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK } },
	{ .name = "task-clock",
	  .attr = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_TASK_CLOCK } },
};

/*
 * Files the sample ids under their events as nw_session_open() would when
 * it opens them, since no event is opened here.
 */
static void file_ids(struct nw_session *s)
{
	assert_int_equal(nw_session_file_id(s, ID_A, 0, false), 0);
	assert_int_equal(nw_session_file_id(s, ID_B, 1, false), 0);
	if (s->offcpu != UINT32_MAX)
		assert_int_equal(nw_session_file_id(s, ID_OFF, 2, false), 0);
}

static struct nw_session *session_new(bool off_cpu)
{
	struct nw_session *s = calloc(1, sizeof(*s));
	/* As narwhal-record fills them for -e cpu-clock,task-clock -c 1000 -g fp. */
	struct nw_session_opts o = {
		.events = events,
		.nevents = 2,
		.freq = false,
		.value = 1000,
		.callgraph = NW_CALLGRAPH_FP,
		.stack_size = 0,
		.mmap_pages = 128,
		.shrink_rings = true,
		.off_cpu = off_cpu,
	};

	assert_non_null(s);
	assert_int_equal(nw_session_init(s, &o), 0);
	/* fp mode: a kernel callchain, no stack copy; sample_id on every record. */
	assert_true(s->fmt.sample_type & PERF_SAMPLE_CALLCHAIN);
	assert_false(s->fmt.sample_type & PERF_SAMPLE_STACK_USER);
	assert_true(s->fmt.sample_id_all);
	assert_int_equal(s->nmetrics, off_cpu ? 6 : 4);
	file_ids(s);
	return s;
}

static int setup(void **state)
{
	*state = session_new(false);
	return 0;
}

static int teardown(void **state)
{
	nw_session_fini(*state);
	free(*state);
	return 0;
}

/* The entry of @tid that is live now (the newest with that tid). */
static struct nw_thread *thread(const struct nw_session *s, uint32_t tid)
{
	struct nw_thread *th = nw_tasks_find_thread(&s->tasks, tid);

	assert_non_null(th);
	return th;
}

static uint32_t count_tid(const struct nw_session *s, uint32_t tid)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->tasks.nthreads; i++)
		n += s->tasks.threads[i]->tid == tid;
	return n;
}

/* The node of the path @ips (leaf first, as sampled) in @cct, or NW_CCT_NONE. */
static uint32_t find_path(const struct nw_cct *cct, const uint64_t *ips, size_t n)
{
	uint32_t node = NW_CCT_ROOT;

	for (size_t i = n; i-- > 0 && node != NW_CCT_NONE;)
		node = nw_cct_find(cct, node, ips[i]);
	return node;
}

/* @th's tree of epoch @e (which must exist). */
static const struct nw_cct *tree(const struct nw_thread *th, uint32_t e)
{
	assert_true(e < th->nccts);
	assert_non_null(th->ccts[e]);
	return th->ccts[e];
}

static void app(struct nw_session *s, uint32_t pid)
{
	mmap2(s, pid, APP_START, APP_LEN, 0, PROT_READ | PROT_EXEC, "/usr/bin/app", NULL);
}

/* ---- tests ---- */

static void test_comm(void **state)
{
	struct nw_session *s = *state;
	struct nw_thread *th;

	comm(s, 100, 100, "app", false, 10);
	assert_int_equal(s->tasks.nthreads, 1);
	assert_int_equal(s->tasks.nprocs, 1);
	th = thread(s, 100);
	assert_string_equal(th->comm, "app");
	assert_int_equal(th->pid, 100);
	assert_string_equal(th->proc->comm, "app");

	/* prctl(PR_SET_NAME): the same thread entry, renamed; the leader names the process. */
	comm(s, 100, 100, "app-main", false, 20);
	assert_int_equal(s->tasks.nthreads, 1);
	assert_ptr_equal(thread(s, 100), th);
	assert_string_equal(th->comm, "app-main");
	assert_string_equal(th->proc->comm, "app-main");

	/* Another thread of the process names itself: the process keeps its name. */
	comm(s, 100, 101, "worker-with-a-long-name", false, 30);
	assert_int_equal(s->tasks.nthreads, 2);
	assert_int_equal(s->tasks.nprocs, 1);
	assert_string_equal(thread(s, 101)->comm, "worker-with-a-l"); /* NW_COMM_LEN - 1 bytes */
	assert_ptr_equal(thread(s, 101)->proc, th->proc);
	assert_string_equal(th->proc->comm, "app-main");
	assert_int_equal(s->stats.bad_records, 0);
	assert_int_equal(s->stats.alloc_failures, 0);
}

static void test_samples_fold(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x2020, APP_START + 0x3030 };
	const uint64_t b[] = { APP_START + 0x1050, APP_START + 0x2020, APP_START + 0x3030 };
	const struct nw_epoch *ep;
	const struct nw_cct *cct;
	struct nw_thread *th;
	uint32_t leaf, leaf_b, mid;
	uint64_t *m;

	comm(s, 100, 100, "app", false, 10);
	app(s, 100);
	assert_int_equal(s->modules.n, 1);
	assert_string_equal(s->modules.v[0].path, "/usr/bin/app");
	assert_int_equal(s->modules.v[0].build_id_size, 0);

	sample(s, 100, 100, 1000, ID_A, 1000, a, 3);
	sample(s, 100, 100, 2000, ID_A, 3000, a, 3);
	sample(s, 100, 100, 3000, ID_B, 7, a, 3);
	sample(s, 100, 100, 4000, ID_A, 500, b, 3);
	/* An id the session never opened counts as the first event. */
	sample(s, 100, 100, 5000, 0xdead, 11, b, 3);

	assert_int_equal(s->stats.samples, 5);
	assert_int_equal(s->stats.empty_stacks, 0);
	th = thread(s, 100);
	assert_int_equal(th->samples, 5);
	assert_int_equal(th->first_time, 1000);
	assert_int_equal(th->last_time, 5000);

	/* One epoch: the app's one mapping. */
	assert_int_equal(th->proc->as.nepochs, 1);
	ep = th->proc->as.epochs[0];
	assert_int_equal(ep->index, 0);
	assert_int_equal(ep->n, 1);
	assert_int_equal(ep->maps[0].start, APP_START);
	assert_int_equal(ep->maps[0].end, APP_START + APP_LEN);
	assert_int_equal(ep->maps[0].module, 0);
	assert_non_null(nw_epoch_find(ep, a[0]));

	/* One tree for (thread, epoch 0): root -> 0x403030 -> 0x402020 -> {0x401010, 0x401050}. */
	assert_int_equal(th->nccts, 1);
	cct = tree(th, 0);
	assert_int_equal(cct->nmetrics, 4);
	assert_int_equal(cct->n, 5);
	leaf = find_path(cct, a, 3);
	leaf_b = find_path(cct, b, 3);
	mid = find_path(cct, a + 1, 2);
	assert_int_not_equal(leaf, NW_CCT_NONE);
	assert_int_not_equal(leaf_b, NW_CCT_NONE);
	assert_int_not_equal(mid, NW_CCT_NONE);
	assert_int_equal(cct->nodes[leaf].parent, mid);
	assert_int_equal(cct->nodes[leaf_b].parent, mid);
	/* Leaf first means the leaf is the deepest node, not a child of the root. */
	assert_int_equal(nw_cct_find(cct, NW_CCT_ROOT, a[0]), NW_CCT_NONE);

	/* Self metrics: event e in 2e (samples) and 2e + 1 (period sum). */
	m = nw_cct_metrics(cct, leaf);
	assert_int_equal(m[0], 2);
	assert_int_equal(m[1], 4000);
	assert_int_equal(m[2], 1);
	assert_int_equal(m[3], 7);
	m = nw_cct_metrics(cct, leaf_b);
	assert_int_equal(m[0], 2);
	assert_int_equal(m[1], 511);
	assert_int_equal(m[2], 0);
	assert_int_equal(m[3], 0);
	m = nw_cct_metrics(cct, mid);
	for (int i = 0; i < 4; i++)
		assert_int_equal(m[i], 0);
	/* fp mode tags the leaf with the sampled SP only. */
	assert_int_equal(cct->nodes[leaf].sp, 0x7ffd0000 + 100);
	assert_int_equal(cct->nodes[mid].sp, 0);

	/* A second thread of the process: its own tree for the same epoch. */
	sample(s, 100, 101, 6000, ID_B, 9, a, 3);
	assert_int_equal(s->tasks.nthreads, 2);
	assert_int_equal(th->proc->as.nepochs, 1);
	assert_ptr_not_equal(tree(thread(s, 101), 0), cct);
	m = nw_cct_metrics(tree(thread(s, 101), 0), find_path(tree(thread(s, 101), 0), a, 3));
	assert_int_equal(m[0], 0);
	assert_int_equal(m[2], 1);
	assert_int_equal(m[3], 9);
	assert_int_equal(nw_cct_metrics(cct, leaf)[3], 7); /* the first thread's tree unchanged */
}

static void test_dlopen_new_epoch(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x3030 };
	const uint64_t l[] = { LIB_START + 0x1100, APP_START + 0x1010, APP_START + 0x3030 };
	const struct nw_cct *old, *cur;
	struct nw_thread *th;
	uint32_t old_n;

	comm(s, 100, 100, "app", false, 10);
	app(s, 100);
	sample(s, 100, 100, 1000, ID_A, 1000, a, 2);
	th = thread(s, 100);
	assert_int_equal(th->proc->as.nepochs, 1);
	old = tree(th, 0);
	old_n = old->n;

	/* dlopen: the mapping is noted, but no epoch begins until a sample needs one. */
	mmap2(s, 100, LIB_START, LIB_LEN, 0x1000, PROT_READ | PROT_EXEC, "/usr/lib/libplug.so",
	      NULL);
	assert_int_equal(s->modules.n, 2);
	assert_int_equal(th->proc->as.n, 2);
	assert_true(th->proc->as.changed);
	assert_int_equal(th->proc->as.nepochs, 1);
	assert_int_equal(th->nccts, 1);

	/* The next sample begins epoch 1 and lands in its tree. */
	sample(s, 100, 100, 2000, ID_A, 1000, l, 3);
	assert_int_equal(th->proc->as.nepochs, 2);
	assert_false(th->proc->as.changed);
	assert_int_equal(th->proc->as.epochs[1]->index, 1);
	assert_int_equal(th->proc->as.epochs[1]->n, 2);
	assert_int_equal(th->proc->as.epochs[1]->maps[1].pgoff, 0x1000);
	assert_int_equal(th->proc->as.epochs[1]->maps[1].module, 1);
	/* The old epoch still knows only the app. */
	assert_int_equal(th->proc->as.epochs[0]->n, 1);
	assert_null(nw_epoch_find(th->proc->as.epochs[0], l[0]));
	assert_non_null(nw_epoch_find(th->proc->as.epochs[1], l[0]));

	assert_int_equal(th->nccts, 2);
	assert_ptr_equal(tree(th, 0), old); /* the old tree stays, unchanged */
	assert_int_equal(old->n, old_n);
	assert_int_equal(find_path(old, l, 3), NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(old, find_path(old, a, 2))[0], 1);
	cur = tree(th, 1);
	assert_int_equal(nw_cct_metrics(cur, find_path(cur, l, 3))[0], 1);
	assert_int_equal(nw_cct_metrics(cur, find_path(cur, l, 3))[1], 1000);
	/* The app's frames are the library frame's callers there: no self samples yet. */
	assert_int_equal(nw_cct_metrics(cur, find_path(cur, a, 2))[0], 0);

	/* Later samples, in the app again, stay in epoch 1. */
	sample(s, 100, 100, 3000, ID_A, 1000, a, 2);
	assert_int_equal(th->proc->as.nepochs, 2);
	assert_int_equal(th->nccts, 2);
	assert_int_equal(nw_cct_metrics(cur, find_path(cur, a, 2))[0], 1);
	assert_int_equal(nw_cct_metrics(old, find_path(old, a, 2))[0], 1);
	assert_int_equal(s->stats.samples, 3);
}

static void test_fork(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x3030 };
	const uint64_t c[] = { LIB_START + 0x10, APP_START + 0x3030 };
	struct nw_thread *parent, *th, *child;

	comm(s, 100, 100, "app", false, 10);
	app(s, 100);

	/* pthread_create: a thread of the same process, named after its creator. */
	task(s, PERF_RECORD_FORK, 100, 100, 101, 100, 50);
	assert_int_equal(s->tasks.nprocs, 1);
	parent = thread(s, 100);
	th = thread(s, 101);
	assert_ptr_equal(th->proc, parent->proc);
	assert_string_equal(th->comm, "app");
	assert_int_equal(th->first_time, 50);

	/* fork: a new process that inherits the name and the address map. */
	task(s, PERF_RECORD_FORK, 200, 100, 200, 100, 60);
	assert_int_equal(s->tasks.nprocs, 2);
	child = thread(s, 200);
	assert_ptr_not_equal(child->proc, parent->proc);
	assert_int_equal(child->proc->pid, 200);
	assert_int_equal(child->proc->ppid, 100);
	assert_string_equal(child->proc->comm, "app");
	assert_string_equal(child->comm, "app");
	assert_int_equal(child->proc->as.n, 1);
	assert_int_equal(child->proc->as.cur[0].start, APP_START);

	sample(s, 100, 101, 1000, ID_A, 1000, a, 2);
	sample(s, 200, 200, 1100, ID_A, 2000, a, 2);
	/* The child maps a library of its own: the parent's map does not change. */
	mmap2(s, 200, LIB_START, LIB_LEN, 0, PROT_READ | PROT_EXEC, "/usr/lib/libc.so.6", NULL);
	sample(s, 200, 200, 1200, ID_A, 3000, c, 2);
	assert_int_equal(parent->proc->as.n, 1);
	assert_int_equal(child->proc->as.n, 2);

	/* Each thread its own trees, each process its own epochs. */
	assert_int_equal(parent->nccts, 0);
	assert_int_equal(parent->samples, 0);
	assert_int_equal(th->samples, 1);
	assert_int_equal(th->nccts, 1);
	assert_int_equal(nw_cct_metrics(tree(th, 0), find_path(tree(th, 0), a, 2))[1], 1000);
	assert_int_equal(parent->proc->as.nepochs, 1);
	assert_int_equal(child->samples, 2);
	assert_int_equal(child->proc->as.nepochs, 2);
	assert_int_equal(child->proc->as.epochs[0]->n, 1); /* the map it inherited */
	assert_int_equal(child->proc->as.epochs[0]->maps[0].start, APP_START);
	assert_int_equal(nw_cct_metrics(tree(child, 0), find_path(tree(child, 0), a, 2))[1], 2000);
	assert_int_equal(nw_cct_metrics(tree(child, 1), find_path(tree(child, 1), c, 2))[1], 3000);
	assert_int_equal(s->stats.samples, 3);
	assert_int_equal(s->stats.alloc_failures, 0);
}

static void test_exec(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x3030 };
	const struct nw_epoch *e1;
	struct nw_thread *th;

	comm(s, 100, 100, "sh", false, 10);
	app(s, 100);
	sample(s, 100, 100, 1000, ID_A, 1000, a, 2);
	th = thread(s, 100);

	/* execve: the name changes and every mapping of the old image is gone. */
	comm(s, 100, 100, "newprog", true, 2000);
	assert_int_equal(s->tasks.nthreads, 1);
	assert_ptr_equal(thread(s, 100), th);
	assert_string_equal(th->comm, "newprog");
	assert_string_equal(th->proc->comm, "newprog");
	assert_int_equal(th->proc->as.n, 0);
	assert_true(th->proc->as.changed);
	mmap2(s, 100, 0x500000, 0x8000, 0, PROT_READ | PROT_EXEC, "/usr/bin/newprog", NULL);

	/* An old address after the exec resolves against the new image's epoch. */
	sample(s, 100, 100, 3000, ID_A, 1000, a, 2);
	assert_int_equal(th->proc->as.nepochs, 2);
	e1 = th->proc->as.epochs[1];
	assert_int_equal(e1->n, 1);
	assert_int_equal(e1->maps[0].start, 0x500000);
	assert_string_equal(s->modules.v[e1->maps[0].module].path, "/usr/bin/newprog");
	assert_null(nw_epoch_find(e1, a[0]));
	assert_non_null(nw_epoch_find(th->proc->as.epochs[0], a[0]));
	assert_int_equal(th->nccts, 2);
	assert_int_equal(nw_cct_metrics(tree(th, 0), find_path(tree(th, 0), a, 2))[0], 1);
	assert_int_equal(nw_cct_metrics(tree(th, 1), find_path(tree(th, 1), a, 2))[0], 1);
}

static void test_exit_and_reuse(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x3030 };
	struct nw_thread *old, *cur;

	comm(s, 100, 100, "app", false, 10);
	app(s, 100);
	task(s, PERF_RECORD_FORK, 100, 100, 101, 100, 20);
	sample(s, 100, 101, 1000, ID_A, 1000, a, 2);
	old = thread(s, 101);
	task(s, PERF_RECORD_EXIT, 100, 100, 101, 101, 1500);
	assert_true(old->exited);
	assert_int_equal(old->last_time, 1500);
	assert_null(nw_tasks_find_thread(&s->tasks, 101));
	assert_false(thread(s, 100)->exited);

	/* The tid comes back in a new thread: a new entry; the old keeps its tree. */
	task(s, PERF_RECORD_FORK, 100, 100, 101, 100, 2000);
	cur = thread(s, 101);
	assert_ptr_not_equal(cur, old);
	assert_int_equal(count_tid(s, 101), 2);
	assert_int_equal(cur->samples, 0);
	sample(s, 100, 101, 2100, ID_A, 700, a, 2);
	assert_int_equal(cur->samples, 1);
	assert_int_equal(old->samples, 1);
	assert_ptr_not_equal(tree(cur, 0), tree(old, 0));
	assert_int_equal(nw_cct_metrics(tree(old, 0), find_path(tree(old, 0), a, 2))[1], 1000);
	assert_int_equal(nw_cct_metrics(tree(cur, 0), find_path(tree(cur, 0), a, 2))[1], 700);

	/* Without a FORK record (missed), a sample of a dead tid makes a new entry too. */
	task(s, PERF_RECORD_EXIT, 100, 100, 101, 101, 2500);
	sample(s, 100, 101, 2600, ID_A, 300, a, 2);
	assert_int_equal(count_tid(s, 101), 3);
	assert_int_equal(thread(s, 101)->samples, 1);
	assert_int_equal(cur->samples, 1);

	/* The leader exits: the process ends; a new process with that pid starts empty. */
	task(s, PERF_RECORD_EXIT, 100, 100, 100, 100, 3000);
	assert_true(old->proc->exited);
	sample(s, 100, 100, 3100, ID_A, 1, a, 2);
	assert_int_equal(s->tasks.nprocs, 2);
	assert_ptr_not_equal(thread(s, 100)->proc, old->proc);
	assert_int_equal(thread(s, 100)->proc->as.nepochs, 1);
	assert_int_equal(thread(s, 100)->proc->as.epochs[0]->n, 0);
	assert_int_equal(s->stats.samples, 4);
}

static void test_lost_throttle(void **state)
{
	struct nw_session *s = *state;
	struct rec r;

	for (uint64_t lost = 12; lost <= 30; lost += 18) {
		begin(&r, PERF_RECORD_LOST, 0);
		p64(&r, ID_A);
		p64(&r, lost);
		trailer(s, &r, 100, 100, 5);
		end(&r);
		feed(s, &r);
	}
	assert_int_equal(s->stats.lost, 42);
	begin(&r, PERF_RECORD_THROTTLE, 0);
	p64(&r, 7);
	p64(&r, ID_A);
	p64(&r, ID_A);
	trailer(s, &r, 100, 100, 7);
	end(&r);
	feed(s, &r);
	assert_int_equal(s->stats.throttled, 1);
	assert_int_equal(s->stats.samples, 0);
	assert_int_equal(s->stats.bad_records, 0);
}

static void bad(struct nw_session *s, const void *buf, size_t n, uint64_t bad_before)
{
	assert_int_equal(nw_session_process(s, buf, n), -EBADMSG);
	assert_int_equal(s->stats.bad_records, bad_before + 1);
}

static void test_bad_records(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x3030 };
	unsigned char garbage[64];
	uint16_t size;
	struct rec r;

	make_sample(s, &r, 100, 100, 1000, ID_A, 1000, a, 2, 0x7ffd0000);
	/* Cut short, with the header saying so: the registers are missing. */
	size = (uint16_t)(r.n - 8);
	memcpy(r.b + 6, &size, 2);
	bad(s, r.b, r.n - 8, 0);
	/* The header's size disagrees with the bytes given. */
	make_sample(s, &r, 100, 100, 1000, ID_A, 1000, a, 2, 0x7ffd0000);
	bad(s, r.b, r.n - 8, 1);
	/* A callchain count far beyond the record. */
	make_sample(s, &r, 100, 100, 1000, ID_A, 1000, a, 2, 0x7ffd0000);
	memset(r.b + 8 + 5 * 8, 0xff, 8);
	bad(s, r.b, r.n, 2);
	/* Less than a header. */
	bad(s, r.b, 4, 3);
	/* A COMM whose name is not terminated. */
	begin(&r, PERF_RECORD_COMM, 0);
	p32(&r, 100);
	p32(&r, 100);
	put(&r, "abcdefgh", 8);
	trailer(s, &r, 100, 100, 1);
	end(&r);
	bad(s, r.b, r.n, 4);
	/* An MMAP2 too short for its fields. */
	begin(&r, PERF_RECORD_MMAP2, 0);
	p32(&r, 100);
	p32(&r, 100);
	p64(&r, APP_START);
	trailer(s, &r, 100, 100, 1);
	end(&r);
	bad(s, r.b, r.n, 5);
	/* Garbage that claims to be a sample of its size. */
	memset(garbage, 0xa5, sizeof(garbage));
	memcpy(garbage, &(struct perf_event_header){ .type = PERF_RECORD_SAMPLE,
						     .size = sizeof(garbage) },
	       sizeof(struct perf_event_header));
	bad(s, garbage, sizeof(garbage), 6);

	/* None of them reached the tables. */
	assert_int_equal(s->tasks.nthreads, 0);
	assert_int_equal(s->tasks.nprocs, 0);
	assert_int_equal(s->modules.n, 0);
	assert_int_equal(s->stats.samples, 0);

	/* A record type the session does not use is no error. */
	begin(&r, PERF_RECORD_NAMESPACES, 0);
	p64(&r, 0);
	end(&r);
	feed(s, &r);
	assert_int_equal(s->stats.bad_records, 7);

	/* And the session goes on after them. */
	sample(s, 100, 100, 1000, ID_A, 1000, a, 2);
	assert_int_equal(s->stats.samples, 1);
}

static void test_mmap2_kinds(void **state)
{
	struct nw_session *s = *state;
	const uint64_t a[] = { APP_START + 0x1010 };
	uint8_t id[20];
	struct nw_process *p;

	/* Data and stacks are not code: ignored, no module, no process. */
	mmap2(s, 100, 0x600000, 0x1000, 0, PROT_READ | PROT_WRITE, "/usr/bin/app", NULL);
	mmap2(s, 100, 0x7ffd0000, 0x21000, 0, PROT_READ | PROT_WRITE, "[stack]", NULL);
	assert_int_equal(s->modules.n, 0);
	assert_int_equal(s->tasks.nprocs, 0);

	/* Two code segments of one file are one module; a build-id is kept. */
	for (int i = 0; i < 20; i++)
		id[i] = (uint8_t)(0xb0 + i);
	mmap2(s, 100, LIB_START, 0x1000, 0, PROT_READ | PROT_EXEC, "/usr/lib/libx.so", id);
	mmap2(s, 100, LIB_START + 0x3000, 0x1000, 0x3000, PROT_READ | PROT_EXEC,
	      "/usr/lib/libx.so", id);
	app(s, 100);
	assert_int_equal(s->modules.n, 2);
	assert_int_equal(s->modules.v[0].build_id_size, 20);
	assert_memory_equal(s->modules.v[0].build_id, id, 20);
	assert_int_equal(s->modules.v[1].build_id_size, 0);
	p = nw_tasks_process(&s->tasks, 100);
	assert_int_equal(p->as.n, 3);
	assert_int_equal(p->as.cur[0].start, APP_START);
	assert_int_equal(p->as.cur[1].module, 0);
	assert_int_equal(p->as.cur[2].module, 0);
	assert_int_equal(p->as.cur[2].pgoff, 0x3000);

	/* A later data mapping over nothing of it changes no epoch. */
	sample(s, 100, 100, 1000, ID_A, 1, a, 1);
	mmap2(s, 100, 0x600000, 0x1000, 0, PROT_READ | PROT_WRITE, "/usr/lib/libx.so", id);
	sample(s, 100, 100, 2000, ID_A, 1, a, 1);
	assert_int_equal(p->as.nepochs, 1);
	assert_int_equal(p->as.epochs[0]->n, 3);
}

static void test_empty_stack(void **state)
{
	struct nw_session *s = *state;
	struct rec r;

	/* Only a kernel part: nothing of user space to fold. */
	begin(&r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	p64(&r, ID_A);
	p64(&r, 0xffffffff81000000ull);
	p32(&r, 100);
	p32(&r, 100);
	p64(&r, 1000);
	p64(&r, 1000);
	p64(&r, 2);
	p64(&r, (uint64_t)PERF_CONTEXT_KERNEL);
	p64(&r, 0xffffffff81000000ull);
	p64(&r, PERF_SAMPLE_REGS_ABI_NONE);
	end(&r);
	assert_int_equal(s->fmt.sample_type,
			 PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				 PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
				 PERF_SAMPLE_REGS_USER);
	feed(s, &r);
	assert_int_equal(s->stats.empty_stacks, 1);
	assert_int_equal(s->stats.samples, 0);
	assert_int_equal(thread(s, 100)->samples, 0);
	assert_int_equal(thread(s, 100)->nccts, 0);
}

static void test_off_cpu(void **state)
{
	struct nw_session *s = session_new(true);
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x3030 };
	const struct nw_cct *cct;
	uint64_t *m;
	struct rec r;

	assert_int_equal(s->offcpu, 2);
	app(s, 100);
	/* A switch-out sample: counted once, its time known at switch-in. */
	sample(s, 100, 100, 10000, ID_OFF, 1, a, 2);
	cct = tree(thread(s, 100), 0);
	m = nw_cct_metrics(cct, find_path(cct, a, 2));
	assert_int_equal(m[4], 1);
	assert_int_equal(m[5], 0);
	/* A switch-out record changes nothing; the switch-in adds the time off the CPU. */
	begin(&r, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
	trailer(s, &r, 100, 100, 10001);
	end(&r);
	feed(s, &r);
	assert_int_equal(m[5], 0);
	begin(&r, PERF_RECORD_SWITCH, 0);
	trailer(s, &r, 100, 100, 12500);
	end(&r);
	feed(s, &r);
	assert_int_equal(m[5], 2500);
	/* On-CPU samples of the same stack do not touch the off-CPU metrics. */
	sample(s, 100, 100, 13000, ID_A, 1000, a, 2);
	assert_int_equal(m[0], 1);
	assert_int_equal(m[1], 1000);
	assert_int_equal(m[4], 1);
	assert_int_equal(m[5], 2500);
	/* Blocked when the recording ends: charged until then. */
	sample(s, 100, 100, 20000, ID_OFF, 1, a, 2);
	nw_session_finish(s, 20300);
	assert_int_equal(m[4], 2);
	assert_int_equal(m[5], 2800);
	nw_session_fini(s);
	free(s);
}

/* A source of events of its own, as the allocation listener is one. */
struct source {
	struct nw_session_source src;
	unsigned samples[2];       /* by its event */
	uint32_t tid;              /* of the last sample */
	uint32_t execs;
};

static enum nw_source_scope source_attr(void *arg, const struct nw_session *s, unsigned which,
					struct perf_event_attr *a)
{
	return NW_SOURCE_TASK;
}

static void source_sample(void *arg, struct nw_session *s, unsigned which,
			  const struct nw_sample *smp, struct nw_thread *th,
			  const struct nw_epoch *epoch)
{
	struct source *src = arg;

	assert_true(which < 2);
	assert_non_null(epoch);
	src->samples[which]++;
	src->tid = th->tid;
}

static void source_exec(void *arg, struct nw_session *s, uint32_t pid)
{
	((struct source *)arg)->execs++;
}

static int source_describe(void *arg, const struct nw_session *s, struct nw_measurement *m)
{
	for (int i = 0; i < 3; i++)
		if (nw_measurement_add_metric(m, "source", NW_METRIC_SAMPLES, 1) < 0)
			return -ENOMEM;
	return 0;
}

/*
 * A source's samples go to it, by its own event numbers, those of
 * processes the session does not follow are dropped; its metrics come
 * after the events', its registers are in every sample, it hears of
 * execs.
 */
static void test_source(void **state)
{
	struct source src = {
		.src = { .arg = &src, .nevents = 2, .nmetrics = 3, .regs_mask = 1ull << 1,
			 .attr = source_attr, .sample = source_sample, .exec = source_exec,
			 .describe = source_describe },
	};
	struct nw_session_opts o = { .events = events, .nevents = 1, .value = 1000,
				     .callgraph = NW_CALLGRAPH_FP, .mmap_pages = 128,
				     .source = &src.src };
	const uint64_t a[] = { APP_START + 0x1010, APP_START + 0x2020 };
	struct nw_session *s = calloc(1, sizeof(*s));
	struct nw_measurement *m = nw_measurement_new();

	assert_non_null(s);
	assert_non_null(m);
	assert_int_equal(nw_session_init(s, &o), 0);
	assert_int_equal(s->nmetrics, 2 + 3);
	assert_int_equal(s->source_metric, 2);
	assert_true(s->fmt.regs_mask & (1ull << 1));
	assert_int_equal(nw_session_file_id(s, ID_A, 0, false), 0);
	assert_int_equal(nw_session_file_id(s, 0x5002, 1, true), 0);
	assert_int_equal(nw_session_file_id(s, 0x5001, 0, true), 0);
	comm(s, 100, 101, "app", false, 10);
	app(s, 100);

	sample(s, 100, 101, 1000, 0x5001, 1, a, 2);
	sample(s, 100, 101, 1100, 0x5002, 1, a, 2);
	sample(s, 100, 101, 1200, 0x5002, 1, a, 2);
	assert_int_equal(src.samples[0], 1);
	assert_int_equal(src.samples[1], 2);
	assert_int_equal(src.tid, 101);
	/* Folded by the source, not by the session. */
	assert_int_equal(s->stats.samples, 0);
	/* Another process's: dropped before the source hears of it. */
	sample(s, 900, 900, 1300, 0x5001, 1, a, 2);
	assert_int_equal(src.samples[0], 1);
	assert_int_equal(s->stats.foreign, 1);
	assert_null(nw_tasks_find_process(&s->tasks, 900));
	/* The sampled event's samples are the session's. */
	sample(s, 100, 101, 1400, ID_A, 1000, a, 2);
	assert_int_equal(s->stats.samples, 1);
	assert_int_equal(src.samples[0] + src.samples[1], 3);

	comm(s, 100, 100, "app2", true, 1500);
	assert_int_equal(src.execs, 1);
	assert_int_equal(nw_session_describe_metrics(s, m), 0);
	assert_int_equal(m->nmetrics, 2 + 3);
	nw_measurement_free(m);
	nw_session_fini(s);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_comm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_samples_fold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dlopen_new_epoch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_and_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_throttle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mmap2_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_stack, setup, teardown),
		cmocka_unit_test(test_off_cpu),
		cmocka_unit_test(test_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
