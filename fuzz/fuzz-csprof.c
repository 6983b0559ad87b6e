/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the HPC_CSPROF reader on arbitrary bytes.
 *
 * A file that reads keeps every node of the file, node i being file node i
 * (siblings with one ip stay apart), with each parent an earlier node.  It
 * must also write, the written bytes must read again into trees of the
 * same sizes, and writing those gives the same bytes once more (the first
 * write numbers nodes in preorder, which a file need not; after that the
 * format is a fixed point).
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

/* Every tree: parents before children, and the same node counts in @q as in @p. */
static void check_trees(const struct nw_csprof *p, const struct nw_csprof *q)
{
	if (p->ntrees != q->ntrees || p->nmetrics != q->nmetrics)
		abort();
	for (uint32_t t = 0; t < p->ntrees; t++) {
		const struct nw_cct *a = p->trees[t].cct, *b = q->trees[t].cct;

		if (a->n != b->n || a->nmetrics != p->nmetrics || p->trees[t].epoch >= p->nepochs)
			abort();
		if (a->nodes[NW_CCT_ROOT].parent != NW_CCT_NONE)
			abort();
		for (uint32_t i = 1; i < a->n; i++)
			if (a->nodes[i].parent >= i)
				abort();
	}
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
	check_trees(p, q);
	check_trees(q, q);
	out2 = write_mem(q, &len2);
	if (len1 != len2 || memcmp(out1, out2, len1) != 0)
		abort();
	free(out1);
	free(out2);
	nw_csprof_free(q);
	nw_csprof_free(p);
	return 0;
}
