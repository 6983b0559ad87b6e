/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal, the sections runtime (the files of src/runtime/, compiled into
 * this test): nesting and self time, early returns, many threads, the depth
 * limit, unbalanced ends, names made at run time, sections open at a query,
 * the timer against CLOCK_MONOTONIC, a forked child, and the interval log
 * a child process writes under NARWHAL_SECTIONS_DIR, read back with the
 * profiler's reader.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <narwhal.h>

#include "sections/record.h"
#include "sections/seclog.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static struct narwhal_stats stats_of(const char *name)
{
	struct narwhal_stats st;

	assert_int_equal(narwhal_stats(name, &st), 0);
	return st;
}

static void test_nesting_self(void **state)
{
	struct narwhal_stats outer, inner;

	for (int i = 0; i < 2; i++) {
		NARWHAL_SECTION("t_outer") {
			sleep_ms(20);
			NARWHAL_SECTION("t_inner") {
				sleep_ms(30);
			}
		}
	}
	outer = stats_of("t_outer");
	inner = stats_of("t_inner");
	assert_int_equal(outer.count, 2);
	assert_int_equal(inner.count, 2);
	assert_int_equal(outer.open, 0);
	assert_true(inner.total_ns >= 60000000ull);
	assert_true(outer.total_ns >= 100000000ull);
	assert_true(outer.total_ns < 10000000000ull);
	/* Self: the total less the nested section, to rounding of the tick rate. */
	assert_true(outer.self_ns >= 40000000ull);
	assert_true(llabs((long long)(outer.total_ns - inner.total_ns) - (long long)outer.self_ns) <
		    100000);
	assert_int_equal(inner.self_ns, inner.total_ns);
	assert_true(inner.min_ns >= 30000000ull && inner.min_ns <= inner.max_ns);
	assert_true(inner.max_ns <= inner.total_ns);
	assert_int_equal(narwhal_stats("t_nonexistent", &inner), -1);
}

static volatile int sink;

__attribute__((noinline)) static int early(int i)
{
	NARWHAL_FUNC();
	if (i % 3 == 0)
		return 0;
	sink += i;
	if (i % 3 == 1)
		return 1;
	return 2;
}

static void test_early_returns(void **state)
{
	struct narwhal_stats before, after;

	narwhal_stats(NULL, &before);
	for (int i = 0; i < 30; i++)
		early(i);
	after = stats_of("early");
	assert_int_equal(after.count, 30);
	assert_int_equal(after.open, 0);
	assert_int_equal(after.unbalanced, before.unbalanced);
}

#define NTHREADS 8
#define NITER 20000

static void *worker(void *arg)
{
	for (int i = 0; i < NITER; i++) {
		NARWHAL_SECTION("t_work") {
			NARWHAL_SECTION("t_step") {
				sink++;
			}
		}
	}
	return arg;
}

static void test_threads(void **state)
{
	pthread_t t[NTHREADS];
	struct narwhal_stats w, s;

	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	/* The threads ended: their statistics were merged at their exit. */
	w = stats_of("t_work");
	s = stats_of("t_step");
	assert_int_equal(w.count, NTHREADS * NITER);
	assert_int_equal(s.count, NTHREADS * NITER);
	assert_int_equal(w.open, 0);
	assert_true(w.total_ns >= s.total_ns);
	assert_true(w.self_ns <= w.total_ns);
}

__attribute__((noinline)) static void deep(int n)
{
	NARWHAL_FUNC();
	if (n > 1)
		deep(n - 1);
	sink++;
}

static void test_overflow(void **state)
{
	struct narwhal_stats before, after, d;

	narwhal_stats(NULL, &before);
	deep(NARWHAL_MAX_DEPTH + 22);
	narwhal_stats(NULL, &after);
	d = stats_of("deep");
	assert_int_equal(after.overflow - before.overflow, 22);
	assert_int_equal(d.count, NARWHAL_MAX_DEPTH);
	assert_int_equal(d.open, 0);
	/* The stack is balanced again: a new section opens at the top. */
	NARWHAL_SECTION("after_deep") {
		struct narwhal_stats a = stats_of("after_deep");

		assert_int_equal(a.open, 1);
	}
}

static void test_unbalanced(void **state)
{
	struct narwhal_stats before, after, left;

	narwhal_stats(NULL, &before);
	narwhal_end(); /* nothing open */
	NARWHAL_SECTION("t_scope") {
		narwhal_begin("t_left_open"); /* closed by the scope's exit */
	}
	narwhal_stats(NULL, &after);
	left = stats_of("t_left_open");
	assert_int_equal(after.unbalanced - before.unbalanced, 2);
	assert_int_equal(left.count, 1);
	assert_int_equal(left.open, 0);
	assert_int_equal(stats_of("t_scope").count, 1);
}

static jmp_buf jump;

__attribute__((noinline)) static void jumper(void)
{
	NARWHAL_SECTION("t_jumped_over") {
		longjmp(jump, 1);
	}
}

static void test_longjmp(void **state)
{
	struct narwhal_stats before, after;

	narwhal_stats(NULL, &before);
	NARWHAL_SECTION("t_jump_target") {
		if (!setjmp(jump))
			jumper();
	}
	/* The section jumped out of closes with the one around it. */
	narwhal_stats(NULL, &after);
	assert_int_equal(stats_of("t_jumped_over").count, 1);
	assert_int_equal(stats_of("t_jumped_over").open, 0);
	assert_int_equal(stats_of("t_jump_target").count, 1);
	assert_int_equal(after.unbalanced - before.unbalanced, 1);
}

static void test_dynamic_names(void **state)
{
	char name[32];

	/* One buffer, two texts: the pointer alone must not decide the section. */
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "dyn_%c", i % 3 ? 'a' : 'b');
		(narwhal_begin)(name);
		narwhal_end();
	}
	assert_int_equal(stats_of("dyn_a").count, 4);
	assert_int_equal(stats_of("dyn_b").count, 2);
}

static void test_open_and_timer(void **state)
{
	uint64_t t0, t1;
	struct narwhal_stats st;

	t0 = mono_ns();
	NARWHAL_SECTION("t_timed") {
		sleep_ms(50);
		st = stats_of("t_timed");
		assert_int_equal(st.open, 1);
		assert_int_equal(st.count, 1);
	}
	t1 = mono_ns();
	st = stats_of("t_timed");
	assert_int_equal(st.open, 0);
	/* Ticks turned into ns agree with CLOCK_MONOTONIC around the section. */
	assert_true(st.total_ns >= 50000000ull);
	assert_true(st.total_ns <= t1 - t0 + 20000);
}

static void test_fork_child(void **state)
{
	pid_t pid;
	int status;

	NARWHAL_SECTION("t_forked") {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct narwhal_stats st;

			/* The child starts over: none of the parent's t_work counts. */
			if (narwhal_stats("t_work", &st) == 0 && st.count != 0)
				_exit(10);
			NARWHAL_SECTION("t_child_only") {
				sink++;
			}
			if (narwhal_stats("t_child_only", &st) || st.count != 1)
				_exit(11);
			if (narwhal_stats("t_forked", &st) || st.open != 1)
				_exit(12);
			_exit(0);
		}
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(narwhal_stats("t_child_only", &(struct narwhal_stats){ 0 }), -1);
}

/* ---- the interval log, written by a child process ---- */

static const char *self_exe;

/* In the child (NARWHAL_SECTIONS_DIR set): a known pattern, ending open. */
static int child_log(void)
{
	for (int i = 0; i < 3; i++) {
		NARWHAL_SECTION("log_outer") {
			sleep_ms(2);
			NARWHAL_SECTION("log_inner") {
				sleep_ms(3);
			}
		}
	}
	narwhal_begin("log_open_at_exit");
	exit(0);
}

static void test_interval_log(void **state)
{
	char dir[] = "/tmp/narwhal-test-runtime.XXXXXX";
	struct nw_seclog *log = NULL;
	const struct nw_secthread *th;
	char err[256];
	uint64_t t0, t1;
	int status, outer = -1, inner = -1, open = -1, nouter = 0, ninner = 0;
	pid_t pid;

	assert_non_null(mkdtemp(dir));
	t0 = mono_ns();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv(NW_SECLOG_ENV, dir, 1);
		setenv("NARWHAL_REPORT", "off", 1);
		execl(self_exe, self_exe, "--child-log", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	t1 = mono_ns();
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(nw_seclog_read_dir(dir, &log, err, sizeof(err)), 0);
	assert_int_equal(log->nfiles, 1);
	assert_int_equal(log->nimages, 1);
	assert_int_equal(log->unended, 0);
	assert_int_equal(log->truncated, 0);
	assert_int_equal(log->nnames, 3);
	for (uint32_t i = 0; i < log->nnames; i++) {
		if (!strcmp(log->names[i].name, "log_outer"))
			outer = (int)i;
		else if (!strcmp(log->names[i].name, "log_inner"))
			inner = (int)i;
		else if (!strcmp(log->names[i].name, "log_open_at_exit"))
			open = (int)i;
	}
	assert_true(outer >= 0 && inner >= 0 && open >= 0);
	assert_non_null(strstr(log->names[outer].file, "test-runtime.c"));
	assert_true(log->names[outer].line > 0);
	th = nw_seclog_thread(log, (uint32_t)pid, (uint32_t)pid);
	assert_non_null(th);
	assert_int_equal(th->n, 7);
	for (size_t k = 0; k < th->n; k++) {
		const struct nw_secinterval *iv = &th->v[k];

		/* CLOCK_MONOTONIC: inside the parent's readings around the child. */
		assert_true(iv->start >= t0 && iv->end <= t1 && iv->start <= iv->end);
		if (k)
			assert_true(iv->start >= th->v[k - 1].start);
		if ((int)iv->name == outer) {
			nouter++;
			assert_int_equal(iv->depth, 0);
			assert_true(iv->end - iv->start >= 5000000ull);
			/* The next interval is its inner one, nested inside it. */
			assert_true(k + 1 < th->n);
			assert_int_equal(th->v[k + 1].name, (uint32_t)inner);
			assert_true(th->v[k + 1].start >= iv->start && th->v[k + 1].end <= iv->end);
		} else if ((int)iv->name == inner) {
			ninner++;
			assert_int_equal(iv->depth, 1);
			assert_true(iv->end - iv->start >= 3000000ull);
			assert_int_equal(iv->flags, 0);
		} else {
			assert_int_equal(iv->name, (uint32_t)open);
			assert_int_equal(iv->flags & NW_SECLOG_OPEN, NW_SECLOG_OPEN);
		}
	}
	assert_int_equal(nouter, 3);
	assert_int_equal(ninner, 3);
	nw_seclog_free(log);
	nw_seclog_stage_remove(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting_self),
		cmocka_unit_test(test_early_returns),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_unbalanced),
		cmocka_unit_test(test_longjmp),
		cmocka_unit_test(test_dynamic_names),
		cmocka_unit_test(test_open_and_timer),
		cmocka_unit_test(test_fork_child),
		cmocka_unit_test(test_interval_log),
	};

	if (argc > 1 && !strcmp(argv[1], "--child-log"))
		return child_log();
	self_exe = "/proc/self/exe";
	return cmocka_run_group_tests(tests, NULL, NULL);
}
