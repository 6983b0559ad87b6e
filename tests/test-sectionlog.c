/* SPDX-License-Identifier: MIT */
/*
 * The sections files (sections/seclog.h; the recorder's side in
 * sections/record.h): interval logs built here byte
 * by byte (nested intervals, two program images in one file, a block of a
 * later version, a file cut short, corrupt fields), and the staging
 * directory.  (The time of each sample is in the traces: test-trace.)
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sections/record.h"
#include "sections/seclog.h"

/* ---- a little-endian log builder ---- */

struct buf {
	uint8_t b[8192];
	size_t n;
	size_t block; /* where the open block's header is */
};

static void u32(struct buf *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void u64(struct buf *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		b->b[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->b[b->n++] = (uint8_t)v;
}

static void open_block(struct buf *b, uint32_t type)
{
	b->block = b->n;
	u32(b, type);
	u32(b, 0);
}

static void close_block(struct buf *b)
{
	uint32_t len = (uint32_t)(b->n - b->block - NW_SECLOG_BLOCK_HEADER);

	for (int i = 0; i < 4; i++)
		b->b[b->block + 4 + i] = (uint8_t)(len >> (8 * i));
}

static void start(struct buf *b, uint32_t pid, uint64_t t)
{
	open_block(b, NW_SECLOG_START);
	memcpy(b->b + b->n, NW_SECLOG_MAGIC, 8);
	b->n += 8;
	u32(b, NW_SECLOG_VERSION);
	u32(b, pid);
	u64(b, t);
	u32(b, 1);
	u32(b, 128);
	close_block(b);
}

static void name(struct buf *b, uint32_t id, const char *n, const char *file, uint32_t line)
{
	open_block(b, NW_SECLOG_NAME);
	u32(b, id);
	u32(b, line);
	u32(b, (uint32_t)strlen(n));
	u32(b, (uint32_t)strlen(file));
	memcpy(b->b + b->n, n, strlen(n));
	b->n += strlen(n);
	memcpy(b->b + b->n, file, strlen(file));
	b->n += strlen(file);
	close_block(b);
}

struct iv {
	uint32_t id, depth, flags;
	uint64_t start, end;
};

static void intervals(struct buf *b, uint32_t tid, const struct iv *v, uint32_t n)
{
	uint64_t prev = v[0].start;

	open_block(b, NW_SECLOG_INTERVALS);
	u32(b, tid);
	u32(b, n);
	u64(b, prev);
	for (uint32_t i = 0; i < n; i++) {
		int64_t d = (int64_t)(v[i].start - prev);

		varint(b, v[i].id);
		varint(b, v[i].depth);
		varint(b, v[i].flags);
		varint(b, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		varint(b, v[i].end - v[i].start);
		prev = v[i].start;
	}
	close_block(b);
}

static void end(struct buf *b, uint64_t t, uint64_t overflow, uint64_t unbalanced)
{
	open_block(b, NW_SECLOG_END);
	u64(b, t);
	u64(b, overflow);
	u64(b, unbalanced);
	u64(b, 5);
	u64(b, 0);
	u32(b, 0);
	u32(b, 0);
	close_block(b);
}

/* A log of pid 100: "outer" [1000, 5000) holding "inner" [2000, 3000) on tid
 * 100, then, recorded by exit order (inner first), on tid 101 "inner"
 * [1500, 1600), "outer" [1400, 1700) open at the end. */
static void good_log(struct buf *b)
{
	const struct iv t100[] = { { 1, 1, 0, 2000, 3000 }, { 0, 0, 0, 1000, 5000 } };
	const struct iv t101[] = { { 1, 1, 0, 1500, 1600 }, { 0, 0, NW_SECLOG_OPEN, 1400, 1700 } };

	memset(b, 0, sizeof(*b));
	start(b, 100, 900);
	name(b, 0, "outer", "prog.c", 10);
	name(b, 1, "inner", "prog.c", 12);
	intervals(b, 100, t100, 2);
	intervals(b, 101, t101, 2);
	end(b, 6000, 2, 3);
}

static void test_parse_log(void **state)
{
	struct nw_seclog *log = nw_seclog_new();
	const struct nw_secthread *th;
	struct buf b;
	char err[256] = "";

	good_log(&b);
	assert_int_equal(nw_seclog_parse(log, b.b, b.n, "x", err, sizeof(err)), 0);
	nw_seclog_sort(log);
	assert_int_equal(log->nnames, 2);
	assert_string_equal(log->names[0].name, "outer");
	assert_string_equal(log->names[1].file, "prog.c");
	assert_int_equal(log->names[1].line, 12);
	assert_int_equal(log->nthreads, 2);
	assert_int_equal(log->nintervals, 4);
	assert_int_equal(log->overflow, 2);
	assert_int_equal(log->unbalanced, 3);
	assert_int_equal(log->dropped, 5);
	assert_int_equal(log->start_ns, 900);
	assert_int_equal(log->end_ns, 6000);
	assert_int_equal(log->unended, 0);
	assert_int_equal(log->truncated, 0);
	th = nw_seclog_thread(log, 100, 100);
	assert_non_null(th);
	assert_int_equal(th->n, 2);
	/* Sorted by start: outer first. */
	assert_int_equal(th->v[0].name, 0);
	assert_int_equal(th->v[0].start, 1000);
	assert_int_equal(th->v[0].end, 5000);
	assert_int_equal(th->v[1].name, 1);
	assert_int_equal(th->v[1].depth, 1);
	assert_int_equal(th->v[1].start, 2000);
	assert_int_equal(th->v[1].end, 3000);
	th = nw_seclog_thread(log, 100, 101);
	assert_non_null(th);
	assert_int_equal(th->v[0].start, 1400);
	assert_int_equal(th->v[0].flags, NW_SECLOG_OPEN);
	assert_int_equal(th->v[1].start, 1500);
	assert_null(nw_seclog_thread(log, 100, 102));
	nw_seclog_free(log);
}

/* Every cut of a valid log: never an error, never more than was there. */
static void test_truncated(void **state)
{
	struct buf b;

	good_log(&b);
	for (size_t cut = NW_SECLOG_BLOCK_HEADER + NW_SECLOG_START_SIZE; cut < b.n; cut++) {
		struct nw_seclog *log = nw_seclog_new();
		char err[256] = "";

		assert_int_equal(nw_seclog_parse(log, b.b, cut, "x", err, sizeof(err)), 0);
		assert_true(log->nintervals <= 4);
		assert_true(log->truncated + log->unended >= 1);
		nw_seclog_free(log);
	}
}

/* exec: a second image in the same file, with its own section ids. */
static void test_two_images(void **state)
{
	const struct iv a[] = { { 0, 0, 0, 100, 200 } };
	const struct iv c[] = { { 0, 0, 0, 300, 400 }, { 7, 0, 0, 500, 600 } };
	struct nw_seclog *log = nw_seclog_new();
	const struct nw_secthread *th;
	struct buf b = { 0 };
	char err[256] = "";

	start(&b, 5, 50);
	name(&b, 0, "before_exec", "a.c", 1);
	intervals(&b, 5, a, 1);
	/* killed image: no END; a later block of an unknown type is skipped */
	start(&b, 5, 250);
	open_block(&b, 99);
	u64(&b, 1);
	close_block(&b);
	name(&b, 0, "after_exec", "b.c", 2);
	name(&b, 7, "before_exec", "b.c", 3);
	intervals(&b, 5, c, 2);
	end(&b, 700, 0, 0);
	assert_int_equal(nw_seclog_parse(log, b.b, b.n, "x", err, sizeof(err)), 0);
	assert_int_equal(log->nimages, 2);
	assert_int_equal(log->unended, 1);
	assert_int_equal(log->nnames, 2); /* before_exec is one section in both images */
	th = nw_seclog_thread(log, 5, 5);
	assert_int_equal(th->n, 3);
	assert_string_equal(log->names[th->v[0].name].name, "before_exec");
	assert_string_equal(log->names[th->v[1].name].name, "after_exec");
	assert_string_equal(log->names[th->v[2].name].name, "before_exec");
	nw_seclog_free(log);
}

static void expect_bad(const struct buf *b, const char *what)
{
	struct nw_seclog *log = nw_seclog_new();
	char err[256] = "";

	assert_int_equal(nw_seclog_parse(log, b->b, b->n, "bad.bin", err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "bad.bin"));
	assert_non_null(strstr(err, what));
	nw_seclog_free(log);
}

static void test_corrupt(void **state)
{
	const struct iv one[] = { { 3, 0, 0, 10, 20 } };
	struct buf b;

	/* Not a log: no START first. */
	memset(&b, 0, sizeof(b));
	name(&b, 0, "x", "", 0);
	expect_bad(&b, "not a sections log");
	/* An interval of a section no NAME block introduced. */
	memset(&b, 0, sizeof(b));
	start(&b, 1, 0);
	intervals(&b, 1, one, 1);
	expect_bad(&b, "without a name");
	/* A count the block cannot hold. */
	good_log(&b);
	{
		size_t at = 0;
		uint32_t type;

		/* Find the first INTERVALS block and raise its count. */
		while (at < b.n) {
			uint32_t len = (uint32_t)b.b[at + 4] | (uint32_t)b.b[at + 5] << 8;

			type = b.b[at];
			if (type == NW_SECLOG_INTERVALS) {
				b.b[at + 8 + 4] = 0xff;
				b.b[at + 8 + 5] = 0xff;
				break;
			}
			at += NW_SECLOG_BLOCK_HEADER + len;
		}
	}
	expect_bad(&b, "claims");
	/* A wrong version. */
	good_log(&b);
	b.b[NW_SECLOG_BLOCK_HEADER + 8] = 9;
	expect_bad(&b, "version");
	/* A varint longer than 64 bits inside an interval. */
	memset(&b, 0, sizeof(b));
	start(&b, 1, 0);
	name(&b, 0, "x", "", 0);
	open_block(&b, NW_SECLOG_INTERVALS);
	u32(&b, 1);
	u32(&b, 1);
	u64(&b, 0);
	for (int i = 0; i < 11; i++)
		b.b[b.n++] = 0xff;
	b.b[b.n++] = 0;
	close_block(&b);
	expect_bad(&b, "runs past");
	/* A NAME whose lengths overrun the block. */
	memset(&b, 0, sizeof(b));
	start(&b, 1, 0);
	open_block(&b, NW_SECLOG_NAME);
	u32(&b, 0);
	u32(&b, 0);
	u32(&b, 100);
	u32(&b, 0);
	close_block(&b);
	expect_bad(&b, "bad NAME");
}

/*
 * Section ids belong to their program image: after a START (exec), an id
 * the previous image named is unknown until a NAME block names it again.
 */
static void test_ids_per_image(void **state)
{
	const struct iv one[] = { { 3, 0, 0, 100, 200 } };
	const struct iv big[] = { { (1u << 20) - 1, 0, 0, 300, 400 } };
	struct buf b = { 0 };

	start(&b, 5, 50);
	name(&b, 3, "first", "a.c", 1);
	intervals(&b, 5, one, 1);
	start(&b, 5, 250);
	intervals(&b, 5, one, 1);
	expect_bad(&b, "without a name");

	/* The largest id a NAME may carry, named in the first image only. */
	memset(&b, 0, sizeof(b));
	start(&b, 5, 50);
	name(&b, (1u << 20) - 1, "last", "a.c", 1);
	intervals(&b, 5, big, 1);
	start(&b, 5, 250);
	intervals(&b, 5, big, 1);
	expect_bad(&b, "without a name");
}

/*
 * An INTERVALS block that holds no interval (found by fuzz/fuzz-seclog.c):
 * its thread is listed with no interval array, and sorting the log -- as
 * nw_seclog_read_dir() does for narwhal-report -- gave qsort() a NULL base,
 * undefined behaviour that UBSan reports (the sanitizer build of this test).
 */
static void test_empty_intervals_block(void **state)
{
	const struct iv one[] = { { 0, 0, 0, 100, 200 } };
	char dir[] = "/tmp/narwhal-test-seclog.XXXXXX", file[64], err[256] = "";
	struct nw_seclog *log = nw_seclog_new(), *read = NULL;
	const struct nw_secthread *th;
	struct buf b = { 0 };
	FILE *f;

	start(&b, 7, 50);
	name(&b, 0, "s", "a.c", 1);
	open_block(&b, NW_SECLOG_INTERVALS);
	u32(&b, 8);   /* tid */
	u32(&b, 0);   /* no interval */
	u64(&b, 100); /* base */
	close_block(&b);
	intervals(&b, 9, one, 1);
	end(&b, 300, 0, 0);

	assert_int_equal(nw_seclog_parse(log, b.b, b.n, "x", err, sizeof(err)), 0);
	assert_int_equal(log->nthreads, 2);
	assert_int_equal(log->nintervals, 1);
	th = nw_seclog_thread(log, 7, 8);
	assert_non_null(th);
	assert_int_equal(th->n, 0);
	nw_seclog_sort(log);
	assert_int_equal(nw_seclog_thread(log, 7, 9)->n, 1);
	nw_seclog_free(log);

	/* The same through the directory reader. */
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/sections-7.bin", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(b.b, 1, b.n, f), b.n);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nw_seclog_read_dir(dir, &read, err, sizeof(err)), 0);
	assert_int_equal(read->nthreads, 2);
	assert_int_equal(nw_seclog_thread(read, 7, 8)->n, 0);
	assert_int_equal(nw_seclog_thread(read, 7, 9)->v[0].end, 200);
	nw_seclog_free(read);
	nw_seclog_stage_remove(dir);
}

/* ---- the staging directory ---- */

/* An empty file at @path. */
static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fclose(f);
}

static void test_stage(void **state)
{
	char base[] = "/tmp/narwhal-test-stage.XXXXXX", cwd[PATH_MAX], stage[PATH_MAX];
	char dir[PATH_MAX], file[PATH_MAX + 32], err[256], stale[PATH_MAX], other[PATH_MAX];
	struct stat sb;
	int lock, lock2;

	assert_non_null(mkdtemp(base));
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	/* Relative output: an absolute stage next to it. */
	assert_int_equal(nw_seclog_stage_create("m.data/", stage, sizeof(stage), &lock), 0);
	assert_true(lock >= 0);
	assert_int_equal(strncmp(stage, base, strlen(base)), 0);
	assert_non_null(strstr(stage, "/m.data.sections-"));
	assert_false(nw_seclog_stage_used(stage));
	/* Unused: removed at the end. */
	assert_int_equal(mkdir("m.data", 0777), 0);
	assert_int_equal(nw_seclog_stage_finish(stage, "m.data", err, sizeof(err)), 0);
	assert_int_equal(stat(stage, &sb), -1);
	assert_int_equal(stat("m.data/sections", &sb), -1);
	close(lock);
	/*
	 * A recorder killed with SIGKILL leaves its stage (here: its lock
	 * closed, a log in it); the next run's clean removes it, never the
	 * stage of a recorder that runs (its lock held), another output's, or
	 * a directory that is no stage.
	 */
	assert_int_equal(nw_seclog_stage_create("m.data", stale, sizeof(stale), &lock), 0);
	snprintf(file, sizeof(file), "%s/sections-7.bin", stale);
	touch(file);
	close(lock);
	assert_int_equal(nw_seclog_stage_create("m.data", stage, sizeof(stage), &lock), 0);
	assert_int_equal(nw_seclog_stage_create("other.data", other, sizeof(other), &lock2), 0);
	close(lock2);
	assert_int_equal(mkdir("m.data.sections-mine", 0777), 0);
	assert_int_equal(mkdir("m.data.sections-keepme", 0777), 0);
	touch("m.data.sections-keepme/notes.txt");
	assert_int_equal(nw_seclog_stage_clean("m.data/"), 1);
	assert_int_equal(stat(stale, &sb), -1);
	assert_int_equal(stat(stage, &sb), 0);
	assert_int_equal(stat(other, &sb), 0);
	assert_int_equal(stat("m.data.sections-mine", &sb), 0);
	assert_int_equal(stat("m.data.sections-keepme/notes.txt", &sb), 0);
	assert_int_equal(stat("m.data", &sb), 0);
	/* Once its recorder is gone, the other stage goes too. */
	close(lock);
	assert_int_equal(nw_seclog_stage_clean("m.data"), 1);
	assert_int_equal(stat(stage, &sb), -1);
	assert_int_equal(nw_seclog_stage_clean("other.data"), 1);
	assert_int_equal(stat(other, &sb), -1);
	/* Used: moved into the measurement. */
	assert_int_equal(nw_seclog_stage_create("m.data", stage, sizeof(stage), &lock), 0);
	snprintf(file, sizeof(file), "%s/sections-42.bin", stage);
	touch(file);
	assert_true(nw_seclog_stage_used(stage));
	assert_int_equal(nw_seclog_stage_finish(stage, "m.data", err, sizeof(err)), 0);
	assert_int_equal(stat(stage, &sb), -1);
	assert_int_equal(stat("m.data/sections/sections-42.bin", &sb), 0);
	close(lock);
	snprintf(dir, sizeof(dir), "%s", base);
	assert_int_equal(chdir(cwd), 0);
	nw_seclog_stage_remove(dir);
	assert_int_equal(stat(dir, &sb), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_log),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_two_images),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_empty_intervals_block),
		cmocka_unit_test(test_ids_per_image),
		cmocka_unit_test(test_stage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
