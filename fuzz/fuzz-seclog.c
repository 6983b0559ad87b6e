/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the reader of DIR/sections/ interval logs
 * (nw_seclog_parse) on arbitrary bytes.  (The time of each sample is in
 * the threads' traces: fuzz-trace.)
 *
 * A log that parses must hold what the reader promises: every interval
 * names a known section and ends at or after its start, the counts add up,
 * and reading the same file a second time into the same log (a directory
 * with two copies) interns no new name and doubles every count.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sections/seclog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed parse says why, NUL-terminated. */
static void check_err(const char *err, size_t len)
{
	if (!memchr(err, '\0', len))
		abort();
}

static void check_log(const struct nw_seclog *log)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < log->nnames; i++)
		if (!log->names[i].name || !log->names[i].name[0] || !log->names[i].file)
			abort();
	for (uint32_t t = 0; t < log->nthreads; t++) {
		const struct nw_secthread *th = &log->threads[t];

		if (th->n > th->cap)
			abort();
		if (nw_seclog_thread(log, th->pid, th->tid) != th)
			abort(); /* (pid, tid) is one entry */
		for (size_t i = 0; i < th->n; i++) {
			const struct nw_secinterval *iv = &th->v[i];

			if (iv->end < iv->start || iv->name >= log->nnames)
				abort();
			/* Sorted by (start, depth). */
			if (i && (th->v[i - 1].start > iv->start ||
				  (th->v[i - 1].start == iv->start &&
				   th->v[i - 1].depth > iv->depth)))
				abort();
		}
		n += th->n;
	}
	if (n != log->nintervals)
		abort();
}

static void fuzz_seclog(const uint8_t *data, size_t size)
{
	struct nw_seclog *log = nw_seclog_new();
	struct nw_seclog once;
	char err[256];
	int rc;

	if (!log)
		abort();
	err[0] = 0;
	rc = nw_seclog_parse(log, data, size, "fuzz.bin", err, sizeof(err));
	check_err(err, sizeof(err));
	if (rc) {
		if (rc != -EBADMSG && rc != -ENOMEM)
			abort();
		nw_seclog_free(log);
		return;
	}
	nw_seclog_sort(log);
	check_log(log);
	once = *log;
	rc = nw_seclog_parse(log, data, size, "fuzz.bin", err, sizeof(err));
	if (rc)
		abort(); /* the same bytes parsed once already */
	nw_seclog_sort(log);
	check_log(log);
	if (log->nnames != once.nnames || log->nthreads != once.nthreads ||
	    log->nintervals != 2 * once.nintervals || log->nimages != 2 * once.nimages ||
	    log->truncated != 2 * once.truncated || log->unended != 2 * once.unended ||
	    log->overflow != 2 * once.overflow || log->unbalanced != 2 * once.unbalanced ||
	    log->dropped != 2 * once.dropped || log->unregistered != 2 * once.unregistered ||
	    log->nfiles != 2 || log->start_ns != once.start_ns || log->end_ns != once.end_ns)
		abort();
	nw_seclog_free(log);
}

static void put(uint8_t *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed parse says why, NUL-terminated. */
static void check_err(const char *err, size_t len)
{
	if (!memchr(err, '\0', len))
		abort();
}

static void check_log(const struct nw_seclog *log)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < log->nnames; i++)
		if (!log->names[i].name || !log->names[i].name[0] || !log->names[i].file)
			abort();
	for (uint32_t t = 0; t < log->nthreads; t++) {
		const struct nw_secthread *th = &log->threads[t];

		if (th->n > th->cap)
			abort();
		if (nw_seclog_thread(log, th->pid, th->tid) != th)
			abort(); /* (pid, tid) is one entry */
		for (size_t i = 0; i < th->n; i++) {
			const struct nw_secinterval *iv = &th->v[i];

			if (iv->end < iv->start || iv->name >= log->nnames)
				abort();
			/* Sorted by (start, depth). */
			if (i && (th->v[i - 1].start > iv->start ||
				  (th->v[i - 1].start == iv->start &&
				   th->v[i - 1].depth > iv->depth)))
				abort();
		}
		n += th->n;
	}
	if (n != log->nintervals)
		abort();
}

static void fuzz_seclog(const uint8_t *data, size_t size)
{
	struct nw_seclog *log = nw_seclog_new();
	struct nw_seclog once;
	char err[256];
	int rc;

	if (!log)
		abort();
	err[0] = 0;
	rc = nw_seclog_parse(log, data, size, "fuzz.bin", err, sizeof(err));
	check_err(err, sizeof(err));
	if (rc) {
		if (rc != -EBADMSG && rc != -ENOMEM)
			abort();
		nw_seclog_free(log);
		return;
	}
	nw_seclog_sort(log);
	check_log(log);
	once = *log;
	rc = nw_seclog_parse(log, data, size, "fuzz.bin", err, sizeof(err));
	if (rc)
		abort(); /* the same bytes parsed once already */
	nw_seclog_sort(log);
	check_log(log);
	if (log->nnames != once.nnames || log->nthreads != once.nthreads ||
	    log->nintervals != 2 * once.nintervals || log->nimages != 2 * once.nimages ||
	    log->truncated != 2 * once.truncated || log->unended != 2 * once.unended ||
	    log->overflow != 2 * once.overflow || log->unbalanced != 2 * once.unbalanced ||
	    log->dropped != 2 * once.dropped || log->unregistered != 2 * once.unregistered ||
	    log->nfiles != 2 || log->start_ns != once.start_ns || log->end_ns != once.end_ns)
		abort();
	nw_seclog_free(log);
}

static void put(uint8_t *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void fuzz_stimes(const uint8_t *data, size_t size)
{
	struct nw_stimes *s = NULL;
	uint8_t *out;
	size_t pos = NW_STIMES_HEADER;
	char err[256];
	int rc;

	err[0] = 0;
	rc = nw_stimes_parse(data, size, &s, err, sizeof(err));
	check_err(err, sizeof(err));
	if (rc) {
		if ((rc != -EBADMSG && rc != -ENOMEM) || s)
			abort();
		return;
	}
	/* Encode it again: the same bytes, the unused u32 of thread headers aside. */
	out = malloc(size ? size : 1);
	if (!out || size < NW_STIMES_HEADER)
		abort();
	memcpy(out, NW_STIMES_MAGIC, 8);
	put(out + 8, NW_STIMES_VERSION, 4);
	put(out + 12, s->nthreads, 4);
	for (uint32_t i = 0; i < s->nthreads; i++) {
		const struct nw_stimes_thread *t = &s->threads[i];

		if (pos + NW_STIMES_THREAD + t->n * NW_STIMES_RECORD > size)
			abort();
		put(out + pos, t->pid, 4);
		put(out + pos + 4, t->tid, 4);
		put(out + pos + 8, t->occurrence, 4);
		memcpy(out + pos + 12, data + pos + 12, 4);
		put(out + pos + 16, t->n, 8);
		pos += NW_STIMES_THREAD;
		for (uint64_t k = 0; k < t->n; k++) {
			if (k && t->v[k].time < t->v[k - 1].time)
				abort();
			put(out + pos, t->v[k].time, 8);
			put(out + pos + 8, t->v[k].period, 8);
			put(out + pos + 16, t->v[k].node, 4);
			put(out + pos + 20, t->v[k].epoch, 2);
			put(out + pos + 22, t->v[k].event, 2);
			pos += NW_STIMES_RECORD;
		}
	}
	if (pos != size || memcmp(out, data, size) != 0)
		abort();
	free(out);
	nw_stimes_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_seclog(data, size);
	return 0;
}
