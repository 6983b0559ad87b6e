/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the code file reader (format/codefile.h) on arbitrary
 * bytes, into an empty module table.
 *
 * A file that reads must give a store whose every function is in its
 * place (by module and start, none overlapping, found again by address),
 * holds no more bytes than its size, has its line entries in increasing
 * order inside it and its inlined ranges inside it, naming strings of the
 * store; written and read back it must write the same bytes again.  A
 * read that fails says why, naming the file and a byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/codefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct nw_codestore *cs, const struct nw_module_table *mods)
{
	for (uint32_t i = 0; i < cs->nfuncs; i++) {
		const struct nw_code_func *f = &cs->funcs[i];

		if (f->module >= mods->n || f->nbytes > f->size || f->status >= NW_CODE_STATUS_MAX)
			abort();
		if (i && cs->funcs[i - 1].module == f->module &&
		    f->start - cs->funcs[i - 1].start < cs->funcs[i - 1].size)
			abort();
		if (nw_codestore_find(cs, f->module, f->start) != f)
			abort();
		for (uint32_t k = 0; k < f->nlines; k++) {
			if (f->lines[k].offset >= (f->size ? f->size : 1) ||
			    (k && f->lines[k].offset <= f->lines[k - 1].offset) ||
			    (f->lines[k].file != NW_CODE_NONE && f->lines[k].file >= cs->nstrings))
				abort();
			if (nw_code_line_at(f, f->lines[k].offset) != &f->lines[k])
				abort();
		}
		for (uint32_t k = 0; k < f->ninlines; k++)
			if (f->inlines[k].lo >= f->inlines[k].hi || f->inlines[k].hi > f->size ||
			    f->inlines[k].name >= cs->nstrings)
				abort();
	}
	for (uint32_t i = 0; i < cs->nnotes; i++)
		if (cs->notes[i].module >= mods->n || cs->notes[i].reason >= NW_CODE_REASON_MAX)
			abort();
}

/* @cs written to memory: *@len bytes, malloc'd. */
static char *write_mem(const struct nw_codestore *cs, const struct nw_module_table *mods,
		       size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f || nw_codefile_write_fp(f, cs, mods) != 0 || fclose(f) != 0)
		abort();
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_module_table mods, mods2;
	struct nw_codestore *cs = NULL, *cs2 = NULL, *cs3 = NULL;
	char err[256] = "";
	char *b1, *b2, *b3;
	size_t l1, l2, l3;

	nw_module_table_init(&mods);
	nw_module_table_init(&mods2);
	if (nw_codefile_parse(data, size, "fuzz", &mods, &cs, err, sizeof(err)) != 0) {
		if (!memchr(err, '\0', sizeof(err)) || strncmp(err, "fuzz: ", 6))
			abort(); /* every failure says why, naming the file */
		if (cs)
			abort();
		goto out;
	}
	check(cs, &mods);
	/* Written, read back, written again: the same bytes. */
	b1 = write_mem(cs, &mods, &l1);
	if (nw_codefile_parse((const uint8_t *)b1, l1, "fuzz", &mods2, &cs2, err, sizeof(err))) {
		fprintf(stderr, "re-reading the written code file: %s\n", err);
		abort();
	}
	check(cs2, &mods2);
	b2 = write_mem(cs2, &mods2, &l2);
	if (nw_codefile_parse((const uint8_t *)b2, l2, "fuzz", &mods2, &cs3, err, sizeof(err)))
		abort();
	b3 = write_mem(cs3, &mods2, &l3);
	if (cs2->nfuncs != cs->nfuncs || l2 != l3 || memcmp(b2, b3, l2))
		abort();
	free(b1);
	free(b2);
	free(b3);
out:
	nw_codestore_free(cs);
	nw_codestore_free(cs2);
	nw_codestore_free(cs3);
	nw_module_table_fini(&mods);
	nw_module_table_fini(&mods2);
	return 0;
}
