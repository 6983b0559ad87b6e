/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the symbols.json reader (format/symbols.h) on
 * arbitrary bytes, into an empty module table and symbol table.
 *
 * A table that reads must key every entry by a module of the table and
 * find it by lookup, intern each module as itself, and write, read back,
 * and write the same bytes again.  A read that fails says why and leaves
 * the symbol table empty.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/symbols.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_lookups(struct nw_module_table *mods, const struct nw_symtab *t)
{
	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i], *found;

		if (e->module >= mods->n)
			abort();
		/* Sorted, without duplicates. */
		if (i && (t->entries[i - 1].module > e->module ||
			  (t->entries[i - 1].module == e->module && t->entries[i - 1].addr >= e->addr)))
			abort();
		found = nw_symtab_lookup(t, e->module, e->addr);
		if (found != e)
			abort();
		for (uint32_t f = 0; f < e->nframes; f++) {
			if (!e->frames[f].function)
				abort();
		}
	}
	for (uint32_t m = 0; m < mods->n; m++) {
		const struct nw_module *mod = &mods->v[m];

		if (nw_module_find(mods, mod->path) < 0)
			abort();
		if (nw_module_intern(mods, mod->path, mod->build_id, mod->build_id_size) != (int)m)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct memfile in, out;
	static int opened;
	struct nw_module_table mods, mods2;
	struct nw_symtab *t = nw_symtab_new(), *t2 = nw_symtab_new();
	char err[256];
	char *text1, *text2;
	size_t len1, len2;

	if (!t || !t2)
		abort();
	if (!opened) {
		memfile_open(&in);
		memfile_open(&out);
		opened = 1;
	}
	nw_module_table_init(&mods);
	nw_module_table_init(&mods2);
	memfile_set(&in, data, size);
	if (nw_symbols_read(in.path, &mods, t, err, sizeof(err)) != 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort(); /* every failure says why */
		if (t->nentries)
			abort(); /* and leaves the table empty */
		goto out;
	}
	check_lookups(&mods, t);
	if (nw_symbols_write(out.path, &mods, t) != 0)
		abort();
	text1 = memfile_get(&out, &len1);
	if (nw_symbols_read(out.path, &mods2, t2, err, sizeof(err)) != 0) {
		fprintf(stderr, "re-reading the written symbol table: %s\n", err);
		abort();
	}
	check_lookups(&mods2, t2);
	if (mods2.n != mods.n || t2->nentries != t->nentries)
		abort();
	if (nw_symbols_write(out.path, &mods2, t2) != 0)
		abort();
	text2 = memfile_get(&out, &len2);
	if (len1 != len2 || memcmp(text1, text2, len1) != 0)
		abort();
	free(text1);
	free(text2);
out:
	nw_symtab_free(t2);
	nw_symtab_free(t);
	nw_module_table_fini(&mods2);
	nw_module_table_fini(&mods);
	return 0;
}
