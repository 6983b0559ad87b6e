/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a checkpoint journal's deltas on arbitrary bytes.
 * Input: u32 n (little-endian), n bytes of a file, then a delta of it.
 *
 * As a csprof file and its delta: a delta that applies leaves trees whose
 * parents come before their children, which write and read back with the
 * same node counts; one that does not says why.  As a trace file and its
 * delta: one that applies adds exactly its events' bytes and says so in
 * the header.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/csprof.h"
#include "format/tracefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void csprof_delta(const uint8_t *file, size_t n, const uint8_t *delta, size_t dn)
{
	struct nw_csprof_error err = { 0 };
	struct nw_csprof *p = NULL, *q = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	if (nw_csprof_read(file, n, &p, &err) != 0)
		return;
	rc = nw_csprof_apply_delta(p, delta, dn, &err);
	if (rc == -EBADMSG && !err.msg[0])
		abort();
	if (rc) {
		nw_csprof_free(p);
		return;
	}
	for (uint32_t t = 0; t < p->ntrees; t++)
		for (uint32_t i = 1; i < p->trees[t].cct->n; i++)
			if (p->trees[t].cct->nodes[i].parent >= i)
				abort();
	p->index_order = true;
	f = open_memstream(&buf, &len);
	if (!f || nw_csprof_write(f, p) != 0 || fclose(f) != 0)
		abort();
	if (nw_csprof_read(buf, len, &q, &err) != 0 || q->ntrees != p->ntrees)
		abort();
	for (uint32_t t = 0; t < p->ntrees; t++)
		if (q->trees[t].cct->n != p->trees[t].cct->n)
			abort();
	nw_csprof_free(q);
	nw_csprof_free(p);
	free(buf);
}

static void trace_delta(const uint8_t *file, size_t n, const uint8_t *delta, size_t dn)
{
	uint8_t *copy = malloc(n ? n : 1);
	size_t size = n;
	char err[256] = "";
	int rc;

	if (!copy)
		return;
	memcpy(copy, file, n);
	rc = nw_tracefile_apply_delta(&copy, &size, delta, dn, "fuzz", err, sizeof(err));
	if (rc == -EBADMSG && !err[0])
		abort();
	if (!rc && (dn < 40 || size != n + dn - 40 || memcmp(copy, file, 32) ||
		    memcmp(copy + n, delta + 40, dn - 40)))
		abort();
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t n;

	if (size < 4)
		return 0;
	n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
	    (uint32_t)data[3] << 24;
	if (n > size - 4)
		return 0;
	csprof_delta(data + 4, n, data + 4 + n, size - 4 - n);
	trace_delta(data + 4, n, data + 4 + n, size - 4 - n);
	return 0;
}
