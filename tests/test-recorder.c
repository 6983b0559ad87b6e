/* SPDX-License-Identifier: MIT */
/*
 * The recorder's loop (record/recorder.h) on a fake clock, without a
 * terminal, a program or a perf event: a recorder of nothing (no command,
 * no targets), whose session is fed records by hand (tests/perfrec.h).
 * The clock's wait moves time on by what the recorder asked to wait and
 * feeds the samples a busy thread would have made meanwhile, one every
 * 10 ms; it raises the snapshot and stop flags at set times.  The wrote
 * callback notes every write: what, when, and the samples of its model.
 * Checked: the sequences of checkpoints, rotation intervals (and their
 * pruning), snapshots with the flight recorder's window, stop requests,
 * and writes that fail.
 */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "record/recorder.h"

#include "perfrec.h"

#define SEC 1000000000ull
#define MS 1000000ull
/* The fake CLOCK_MONOTONIC starts here; CLOCK_REALTIME is it plus REAL_OFFSET. */
#define T0 (1000 * SEC)
#define REAL_OFFSET (1700000000 * SEC)
#define EVERY (10 * MS)
#define PID 4242
#define APP_START 0x400000ull

struct write {
	enum nw_run_written what;
	uint64_t at;               /* fake CLOCK_MONOTONIC, from T0 */
	uint64_t samples;          /* the model's run.samples */
	uint64_t window;           /* its run's clock_end_ns - clock_start_ns */
	int ret;
};

struct fake {
	struct nw_recorder r;
	struct nw_recorder_clock clock; /* fake_now(), fake_wait() of this */
	uint64_t mono;
	uint64_t next_sample;      /* 0: no samples */
	uint64_t fed;              /* samples fed */
	uint64_t snapshot_at, stop_at; /* from T0; 0: never */
	volatile sig_atomic_t stop, stops, snapshot;
	struct write writes[64];
	unsigned nwrites;
	char tmp[64], dir[96];
};

static uint64_t fake_now(void *arg, clockid_t clk)
{
	struct fake *f = arg;

	return clk == CLOCK_REALTIME ? f->mono + REAL_OFFSET : f->mono;
}

/* A sample of the busy thread at @time, in main -> work. */
static void feed_sample(struct fake *f, uint64_t time)
{
	const uint64_t ips[] = { APP_START + 0x1010, APP_START + 0x2020 };

	sample(&f->r.s, PID, PID, time, 1, 1000000, ips, 2);
	f->fed++;
}

/* Time passes: what the recorder asked to wait, and the samples of that time. */
static int fake_wait(void *arg, struct pollfd *pfds, nfds_t n, int ms)
{
	struct fake *f = arg;
	uint64_t until = f->mono + (uint64_t)ms * MS;

	(void)pfds;
	(void)n;
	assert_true(ms >= 0 && ms <= 100);
	while (f->next_sample && f->next_sample <= until) {
		feed_sample(f, f->next_sample);
		f->next_sample += EVERY;
	}
	f->mono = until;
	if (f->snapshot_at && f->mono >= T0 + f->snapshot_at) {
		f->snapshot = 1;
		f->snapshot_at = 0;
	}
	if (f->stop_at && f->mono >= T0 + f->stop_at) {
		f->stop = SIGINT;
		f->stops++;
		f->stop_at = 0;
	}
	return 0;
}

static int on_write(void *arg, const struct nw_recorder_write *w)
{
	struct fake *f = arg;
	struct write *n = &f->writes[f->nwrites++];

	assert_true(f->nwrites <= 64);
	n->what = w->what;
	n->at = f->mono - T0;
	n->ret = w->ret;
	assert_non_null(w->m);
	n->samples = w->m->run.samples;
	n->window = w->m->run.clock_end_ns - w->m->run.clock_start_ns;
	assert_int_equal(w->m->run.written, w->what);
	return 0;
}

static const struct nw_event event = {
	.name = "cpu-clock",
	.attr = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK },
};

/*
 * A recorder as narwhal-record sets one up for -e cpu-clock -c 1000000
 * -g fp, of nothing, writing to @sub of a new temporary directory.
 */
static struct fake *fake_new(const char *sub, uint64_t checkpoint_ns, uint64_t rotate_ns,
			     uint64_t flight_ns, uint64_t duration_ns, uint32_t max_files)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct nw_recorder_opts o = {
		.session = { .events = &event, .nevents = 1, .value = 1000000,
			     .callgraph = NW_CALLGRAPH_FP, .mmap_pages = 16 },
		.duration_ns = duration_ns,
		.checkpoint_ns = checkpoint_ns,
		.rotate_ns = rotate_ns,
		.max_files = max_files,
		.flight_ns = flight_ns,
		.trace = true,
	};
	char err[256];

	assert_non_null(f);
	f->mono = T0;
	f->clock = (struct nw_recorder_clock){ .arg = f, .now = fake_now, .wait = fake_wait };
	o.clock = &f->clock;
	snprintf(f->tmp, sizeof(f->tmp), "/tmp/test-recorder-XXXXXX");
	assert_non_null(mkdtemp(f->tmp));
	snprintf(f->dir, sizeof(f->dir), "%s/%s", f->tmp, sub);
	o.dir = f->dir;
	o.stop_signal = &f->stop;
	o.stop_count = &f->stops;
	o.snapshot = &f->snapshot;
	o.wrote = on_write;
	o.arg = f;
	assert_int_equal(nw_recorder_init(&f->r, &o, err, sizeof(err)), 0);
	assert_int_equal(nw_recorder_begin(&f->r, err, sizeof(err)), 0);
	assert_int_equal(f->r.clock_start_ns, T0);
	/* The busy thread: its name and its program, mapped before it samples. */
	comm(&f->r.s, PID, PID, "busy", false, T0);
	mmap2(&f->r.s, PID, APP_START, 0x10000, 0, PROT_READ | PROT_EXEC, "/nonexistent/busy",
	      NULL);
	f->next_sample = T0 + EVERY;
	return f;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void fake_free(struct fake *f)
{
	char err[256];

	assert_int_equal(nw_recorder_fini(&f->r, err, sizeof(err)), 0);
	nftw(f->tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
}

/* Runs the recording to its end and writes the end's measurement: the finish's return. */
static int run(struct fake *f)
{
	nw_recorder_record(&f->r);
	return nw_recorder_finish(&f->r);
}

/* Write @i is @what at @at (from T0), give or take a turn of the loop. */
static void expect(const struct fake *f, unsigned i, enum nw_run_written what, uint64_t at)
{
	assert_true(i < f->nwrites);
	if (f->writes[i].what != what || f->writes[i].at < at || f->writes[i].at > at + 110 * MS)
		fail_msg("write %u: %s at %.3f s, expected %s at %.3f s", i,
			 nw_run_written_name(f->writes[i].what), (double)f->writes[i].at / SEC,
			 nw_run_written_name(what), (double)at / SEC);
}

static bool exists(const struct fake *f, const char *sub)
{
	char path[192];

	snprintf(path, sizeof(path), "%s/%s", f->dir, sub);
	return access(path, F_OK) == 0;
}

/* The samples a busy thread makes from @from to @to (from T0), one every 10 ms. */
static uint64_t made(uint64_t from, uint64_t to)
{
	return to / EVERY - from / EVERY;
}

/* Every 10 s, the first after 1 s; the end at --duration's 35 s, with every sample. */
static void test_checkpoints(void **state)
{
	struct fake *f = fake_new("m", 10 * SEC, 0, 0, 35 * SEC, 0);

	(void)state;
	assert_int_equal(run(f), 0);
	assert_int_equal(f->nwrites, 5);
	expect(f, 0, NW_RUN_CHECKPOINT, 1 * SEC);
	expect(f, 1, NW_RUN_CHECKPOINT, 11 * SEC);
	expect(f, 2, NW_RUN_CHECKPOINT, 21 * SEC);
	expect(f, 3, NW_RUN_CHECKPOINT, 31 * SEC);
	expect(f, 4, NW_RUN_END, 35 * SEC);
	/* Each write holds everything up to it. */
	for (unsigned i = 0; i < f->nwrites; i++) {
		assert_int_equal(f->writes[i].ret, 0);
		assert_int_equal(f->writes[i].samples, made(0, f->writes[i].at));
	}
	assert_int_equal(f->writes[4].samples, f->fed);
	assert_int_equal(f->r.s.stats.samples, f->fed);
	assert_int_equal(f->r.out.checkpoints, 4);
	assert_int_equal(f->r.out.failures, 0);
	assert_string_equal(f->r.out.last, f->dir);
	assert_true(exists(f, "manifest.json"));
	assert_non_null(f->r.model);
	assert_int_equal(f->r.exit_status, 0);
	fake_free(f);
}

/*
 * Intervals of 10 s with checkpoints every 4 s, each interval's first
 * after 1 s; each interval holds its own samples only, and beyond two
 * intervals the oldest goes.
 */
static void test_rotation(void **state)
{
	static const struct { enum nw_run_written what; uint64_t at; } want[] = {
		{ NW_RUN_CHECKPOINT, 1 * SEC },  { NW_RUN_CHECKPOINT, 5 * SEC },
		{ NW_RUN_CHECKPOINT, 9 * SEC },  { NW_RUN_ROTATION, 10 * SEC },
		{ NW_RUN_CHECKPOINT, 11 * SEC }, { NW_RUN_CHECKPOINT, 15 * SEC },
		{ NW_RUN_CHECKPOINT, 19 * SEC }, { NW_RUN_ROTATION, 20 * SEC },
		{ NW_RUN_CHECKPOINT, 21 * SEC }, { NW_RUN_END, 24500 * MS },
	};
	struct fake *f = fake_new("m", 4 * SEC, 10 * SEC, 0, 24500 * MS, 2);
	uint64_t first, second, third;

	(void)state;
	assert_int_equal(run(f), 0);
	assert_int_equal(f->nwrites, 10);
	for (unsigned i = 0; i < 10; i++)
		expect(f, i, want[i].what, want[i].at);
	first = f->writes[3].samples;
	second = f->writes[7].samples;
	third = f->writes[9].samples;
	assert_int_equal(first, made(0, f->writes[3].at));
	assert_int_equal(second, made(f->writes[3].at, f->writes[7].at));
	assert_int_equal(third, made(f->writes[7].at, f->writes[9].at));
	/* A checkpoint in the second interval holds the second's samples only. */
	assert_int_equal(f->writes[5].samples, made(f->writes[3].at, f->writes[5].at));
	assert_int_equal(first + second + third, f->fed);
	assert_int_equal(f->r.rotated_samples, first + second);
	assert_int_equal(f->r.out.rotations, 3);
	/* --max-files 2: the first interval went at the end's write. */
	assert_false(exists(f, "0001"));
	assert_true(exists(f, "0002/manifest.json"));
	assert_true(exists(f, "0003/manifest.json"));
	assert_false(exists(f, "0004"));
	fake_free(f);
}

/*
 * The flight recorder keeps its last 5 s: a snapshot asked for at 12 s
 * and the end at 20 s each hold that window's samples, no checkpoint in
 * between; the snapshot flag is taken.
 */
static void test_snapshot(void **state)
{
	struct fake *f = fake_new("m", 0, 0, 5 * SEC, 20 * SEC, 0);

	(void)state;
	f->snapshot_at = 12 * SEC;
	assert_int_equal(run(f), 0);
	assert_int_equal(f->nwrites, 2);
	expect(f, 0, NW_RUN_SNAPSHOT, 12 * SEC);
	expect(f, 1, NW_RUN_END, 20 * SEC);
	assert_int_equal(f->snapshot, 0);
	for (unsigned i = 0; i < 2; i++) {
		uint64_t at = f->writes[i].at;

		assert_int_equal(f->writes[i].window, 5 * SEC);
		/* The samples at or after at - 5 s. */
		assert_int_equal(f->writes[i].samples, made(at - 5 * SEC - 1, at));
	}
	assert_int_equal(f->r.out.snapshots, 1);
	assert_int_equal(f->r.out.checkpoints, 0);
	assert_true(f->fed > 1900);
	fake_free(f);
}

/* Without --duration a recording of what runs on ends when a stop is asked for. */
static void test_stop(void **state)
{
	struct fake *f = fake_new("m", 10 * SEC, 0, 0, 0, 0);

	(void)state;
	f->stop_at = 3 * SEC;
	f->snapshot_at = 2 * SEC;
	assert_int_equal(run(f), 0);
	assert_int_equal(f->nwrites, 3);
	expect(f, 0, NW_RUN_CHECKPOINT, 1 * SEC);
	expect(f, 1, NW_RUN_SNAPSHOT, 2 * SEC);
	expect(f, 2, NW_RUN_END, 3 * SEC);
	assert_int_equal(f->writes[2].samples, f->fed);
	/* The end of the run is when the recording stopped. */
	assert_int_equal(f->r.stopped_ns, f->mono);
	fake_free(f);
}

/*
 * Writes that fail (the directory cannot be made) are tried again at
 * the next checkpoint, not at once; the end's failure is the finish's.
 */
static void test_failures(void **state)
{
	struct fake *f = fake_new("missing/m", 2 * SEC, 0, 0, 6500 * MS, 0);

	(void)state;
	assert_int_equal(run(f), -ENOENT);
	assert_int_equal(f->nwrites, 4);
	expect(f, 0, NW_RUN_CHECKPOINT, 1 * SEC);
	expect(f, 1, NW_RUN_CHECKPOINT, 3 * SEC);
	expect(f, 2, NW_RUN_CHECKPOINT, 5 * SEC);
	expect(f, 3, NW_RUN_END, 6500 * MS);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(f->writes[i].ret, -ENOENT);
	assert_int_equal(f->r.out.failures, 4);
	assert_int_equal(f->r.out.last[0], 0);
	fake_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoints),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
