/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the HPC_CSPROF reader on arbitrary bytes.
 *
 * A file that reads must also write, the written bytes must read again,
 * and writing those gives the same bytes once more (the first read may
 * merge siblings with the same ip; after that the format is a fixed point).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/csprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes @p into a malloc'ed buffer; aborts on a write error. */
static char *write_mem(const struct nw_csprof *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		abort();
	if (nw_csprof_write(f, p) != 0)
		abort();
	if (fclose(f) != 0)
		abort();
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_csprof *p = NULL, *q = NULL;
	struct nw_csprof_error err;
	size_t len1, len2;
	char *out1, *out2;
	int rc;

	rc = nw_csprof_read(data, size, &p, &err);
	if (rc) {
		/* A failed read says where and why, inside the input. */
		if (err.offset > size || !memchr(err.msg, '\0', sizeof(err.msg)))
			abort();
		return 0;
	}
	out1 = write_mem(p, &len1);
	if (nw_csprof_read(out1, len1, &q, &err) != 0)
		abort();
	out2 = write_mem(q, &len2);
	if (len1 != len2 || memcmp(out1, out2, len1) != 0)
		abort();
	free(out1);
	free(out2);
	nw_csprof_free(q);
	nw_csprof_free(p);
	return 0;
}
