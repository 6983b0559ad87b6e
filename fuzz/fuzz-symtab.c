/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the symbols.json reader on arbitrary bytes.
 *
 * A table that reads must find each of its entries and modules by lookup,
 * write, read back, and write the same bytes again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/symtab.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_lookups(const struct nw_symtab *t)
{
	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i], *found;

		if (e->module >= t->nmodules)
			abort();
		found = nw_symtab_lookup(t, e->module, e->addr);
		if (!found || found->module != e->module || found->addr != e->addr)
			abort();
		for (uint32_t f = 0; f < e->nframes; f++) {
			if (!e->frames[f].function)
				abort();
		}
	}
	for (uint32_t m = 0; m < t->nmodules; m++) {
		if (nw_symtab_find_module(t, t->modules[m].path) < 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct memfile in, out;
	static int opened;
	struct nw_symtab *t = NULL, *t2 = NULL;
	char err[256];
	char *text1, *text2;
	size_t len1, len2;

	if (!opened) {
		memfile_open(&in);
		memfile_open(&out);
		opened = 1;
	}
	memfile_set(&in, data, size);
	if (nw_symtab_read(in.path, &t, err, sizeof(err)) != 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort(); /* every failure says why */
		return 0;
	}
	check_lookups(t);
	if (nw_symtab_write(out.path, t) != 0)
		abort();
	text1 = memfile_get(&out, &len1);
	if (nw_symtab_read(out.path, &t2, err, sizeof(err)) != 0) {
		fprintf(stderr, "re-reading the written symbol table: %s\n", err);
		abort();
	}
	check_lookups(t2);
	if (nw_symtab_write(out.path, t2) != 0)
		abort();
	text2 = memfile_get(&out, &len2);
	if (len1 != len2 || memcmp(text1, text2, len1) != 0)
		abort();
	free(text1);
	free(text2);
	nw_symtab_free(t2);
	nw_symtab_free(t);
	return 0;
}
