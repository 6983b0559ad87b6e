/* SPDX-License-Identifier: MIT */
/* Address maps and epochs, the module table; the task table's fork, exec and exit. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/epoch.h"
#include "model/module.h"
#include "record/tasks.h"

static void test_epochs_begin_lazily(void **state)
{
	struct nw_addrspace as;
	const struct nw_epoch *e0, *e1;

	nw_addrspace_init(&as);
	assert_int_equal(nw_addrspace_map(&as, 0x400000, 0x1000, 0, 0, 0), 0);
	assert_int_equal(nw_addrspace_map(&as, 0x7f0000000000, 0x2000, 0x1000, 0x1000, 1), 0);
	e0 = nw_addrspace_epoch(&as);
	assert_non_null(e0);
	assert_int_equal(e0->index, 0);
	assert_int_equal(e0->n, 2);
	/* No change: the same epoch. */
	assert_ptr_equal(nw_addrspace_epoch(&as), e0);
	/* dlopen: a new epoch at the next sample; the old one is untouched. */
	assert_int_equal(nw_addrspace_map(&as, 0x7e0000000000, 0x1000, 0, 0, 2), 0);
	e1 = nw_addrspace_epoch(&as);
	assert_int_equal(e1->index, 1);
	assert_int_equal(e1->n, 3);
	assert_int_equal(e0->n, 2);
	assert_null(nw_epoch_find(e0, 0x7e0000000010));
	assert_int_equal(nw_epoch_find(e1, 0x7e0000000010)->module, 2);
	assert_int_equal(nw_epoch_find(e1, 0x7f0000001fff)->module, 1);
	assert_null(nw_epoch_find(e1, 0x7f0000002000));
	assert_null(nw_epoch_find(e1, 0x3fffff));
	nw_addrspace_fini(&as);
}

static void test_overlap_replaces(void **state)
{
	struct nw_addrspace as;
	const struct nw_epoch *e;

	nw_addrspace_init(&as);
	nw_addrspace_map(&as, 0x10000, 0x10000, 0x0, 0x400000, 1);
	/* A library loaded in the middle of an old mapping cuts it in two. */
	nw_addrspace_map(&as, 0x14000, 0x2000, 0x0, 0x0, 2);
	e = nw_addrspace_epoch(&as);
	assert_int_equal(e->n, 3);
	assert_int_equal(nw_epoch_find(e, 0x13fff)->module, 1);
	assert_int_equal(nw_epoch_find(e, 0x14000)->module, 2);
	assert_int_equal(nw_epoch_find(e, 0x16000)->module, 1);
	assert_int_equal(nw_epoch_find(e, 0x16000)->pgoff, 0x6000);
	/* The piece above keeps the ELF address of its first byte too. */
	assert_int_equal(nw_epoch_find(e, 0x16000)->vaddr, 0x406000);
	assert_int_equal(nw_epoch_find(e, 0x13fff)->vaddr, 0x400000);
	for (uint32_t i = 1; i < e->n; i++)
		assert_true(e->maps[i - 1].end <= e->maps[i].start);
	/* Exact replacement (dlclose, another dlopen at the same place). */
	nw_addrspace_map(&as, 0x14000, 0x2000, 0x0, 0x0, 3);
	e = nw_addrspace_epoch(&as);
	assert_int_equal(e->index, 1);
	assert_int_equal(nw_epoch_find(e, 0x15000)->module, 3);
	nw_addrspace_fini(&as);
}

static void test_module_intern(void **state)
{
	struct nw_module_table t;
	const uint8_t b1[] = { 1, 2, 3 }, b2[] = { 1, 2, 4 };

	nw_module_table_init(&t);
	assert_int_equal(nw_module_intern(&t, "/a", b1, 3), 0);
	assert_int_equal(nw_module_intern(&t, "/b", b1, 3), 1);
	assert_int_equal(nw_module_intern(&t, "/a", b1, 3), 0);
	/* Same path, rebuilt binary: a different module. */
	assert_int_equal(nw_module_intern(&t, "/a", b2, 3), 2);
	assert_int_equal(t.n, 3);
	/* Lookup by path: the first module of that name. */
	assert_int_equal(nw_module_find(&t, "/a"), 0);
	assert_int_equal(nw_module_find(&t, "/b"), 1);
	assert_int_equal(nw_module_find(&t, "/c"), -ENOENT);
	nw_module_table_fini(&t);
}

/*
 * Regression (found by UBSan, issue 5): a module without a build-id comes
 * with build_id NULL and size 0 (/proc/PID/maps when attaching), and an
 * address space gets its first epoch before any map; neither may pass
 * NULL to memcpy/memcmp.  The sanitizer build (scripts/test.sh) checks it.
 */
static void test_no_build_id_empty_epoch(void **state)
{
	struct nw_module_table t;
	struct nw_addrspace as;
	const struct nw_epoch *e;

	nw_module_table_init(&t);
	assert_int_equal(nw_module_intern(&t, "//anon", NULL, 0), 0);
	assert_int_equal(nw_module_intern(&t, "/a", NULL, 0), 1);
	assert_int_equal(nw_module_intern(&t, "//anon", NULL, 0), 0);
	assert_int_equal(t.v[1].build_id_size, 0);
	nw_module_table_fini(&t);

	nw_addrspace_init(&as);
	e = nw_addrspace_epoch(&as);
	assert_non_null(e);
	assert_int_equal(e->n, 0);
	assert_null(nw_epoch_find(e, 0x1000));
	nw_addrspace_fini(&as);
}

static void test_fork_exec_exit(void **state)
{
	struct nw_task_table t;
	struct nw_thread *th, *child;
	struct nw_process *p;
	const struct nw_epoch *e;

	nw_tasks_init(&t);
	assert_int_equal(nw_tasks_comm(&t, 100, 100, "sh", true), 0);
	th = nw_tasks_find_thread(&t, 100);
	assert_non_null(th);
	assert_string_equal(th->proc->comm, "sh");
	nw_addrspace_map(&th->proc->as, 0x1000, 0x1000, 0, 0, 0);

	/* A thread of the same process. */
	assert_int_equal(nw_tasks_fork(&t, 100, 100, 101, 100, 5), 0);
	assert_ptr_equal(nw_tasks_find_thread(&t, 101)->proc, th->proc);
	assert_int_equal(nw_tasks_comm(&t, 100, 101, "worker", false), 0);
	assert_string_equal(nw_tasks_find_thread(&t, 101)->comm, "worker");
	assert_string_equal(th->proc->comm, "sh");

	/* A child process inherits the parent's map, then exec forgets it. */
	assert_int_equal(nw_tasks_fork(&t, 200, 100, 200, 100, 6), 0);
	child = nw_tasks_find_thread(&t, 200);
	assert_ptr_not_equal(child->proc, th->proc);
	e = nw_addrspace_epoch(&child->proc->as);
	assert_int_equal(e->n, 1);
	assert_int_equal(nw_tasks_comm(&t, 200, 200, "burn", true), 0);
	assert_string_equal(child->proc->comm, "burn");
	e = nw_addrspace_epoch(&child->proc->as);
	assert_int_equal(e->n, 0);
	assert_int_equal(e->index, 1);
	/* The parent's map is its own. */
	assert_int_equal(nw_addrspace_epoch(&th->proc->as)->n, 1);

	/* Exit keeps the thread; a reused tid is a new thread. */
	nw_tasks_exit(&t, 200, 200, 9);
	assert_null(nw_tasks_find_thread(&t, 200));
	assert_int_equal(nw_tasks_fork(&t, 200, 100, 200, 100, 10), 0);
	assert_ptr_not_equal(nw_tasks_find_thread(&t, 200), child);
	assert_int_equal(t.nthreads, 4);
	assert_true(child->exited);

	/* Samples from an unseen task create it. */
	p = nw_tasks_process(&t, 300);
	assert_non_null(p);
	assert_non_null(nw_tasks_thread(&t, 300, 301));
	assert_int_equal(t.nthreads, 5);
	nw_tasks_fini(&t);
}

static void test_thread_cct_per_epoch(void **state)
{
	struct nw_task_table t;
	struct nw_thread *th;
	const struct nw_epoch *e0, *e1;

	nw_tasks_init(&t);
	th = nw_tasks_thread(&t, 1, 1);
	e0 = nw_addrspace_epoch(&th->proc->as);
	nw_addrspace_map(&th->proc->as, 0x1000, 0x1000, 0, 0, 0);
	e1 = nw_addrspace_epoch(&th->proc->as);
	assert_ptr_not_equal(nw_thread_cct(th, e0, 2), nw_thread_cct(th, e1, 2));
	assert_ptr_equal(nw_thread_cct(th, e1, 2), th->ccts[1]);
	assert_int_equal(th->nccts, 2);
	nw_tasks_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_epochs_begin_lazily),
		cmocka_unit_test(test_overlap_replaces),
		cmocka_unit_test(test_module_intern),
		cmocka_unit_test(test_no_build_id_empty_epoch),
		cmocka_unit_test(test_fork_exec_exit),
		cmocka_unit_test(test_thread_cct_per_epoch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
