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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_seclog(data, size);
	return 0;
}
