/* SPDX-License-Identifier: MIT */
/* The symbol table in memory; symbols.json is format/symbols.c. */
#include "model/symtab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ---- */

void nw_symframes_free(struct nw_symframe *frames, uint32_t n)
{
	for (uint32_t i = 0; frames && i < n; i++) {
		free(frames[i].function);
		free(frames[i].file);
		free(frames[i].decl_file);
	}
	free(frames);
}

struct nw_symtab *nw_symtab_new(void)
{
	return calloc(1, sizeof(struct nw_symtab));
}

void nw_symtab_free(struct nw_symtab *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; t->entries && i < t->nentries; i++)
		nw_symframes_free(t->entries[i].frames, t->entries[i].nframes);
	free(t->entries);
	free(t);
}

/* Room for one more of @size bytes at *@arr holding @n of @cap. */
static int grow(void **arr, uint32_t n, uint32_t *cap, size_t size)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	if (*cap >= INT32_MAX)
		return -ENOMEM;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t)ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int nw_symtab_add(struct nw_symtab *t, uint32_t module, uint64_t addr,
		  struct nw_symframe *frames, uint32_t nframes)
{
	struct nw_symentry *e;

	if (grow((void **)&t->entries, t->nentries, &t->cap_entries, sizeof(*t->entries))) {
		nw_symframes_free(frames, nframes);
		return -ENOMEM;
	}
	e = &t->entries[t->nentries++];
	e->module = module;
	e->addr = addr;
	e->nframes = nframes;
	e->frames = frames;
	return 0;
}

static int entry_cmp(const struct nw_symentry *a, const struct nw_symentry *b)
{
	if (a->module != b->module)
		return a->module < b->module ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return 0;
}

/* Stable merge sort of @n entries at @a, with @tmp room for @n. */
static void merge_sort(struct nw_symentry *a, struct nw_symentry *tmp, uint32_t n)
{
	uint32_t mid = n / 2, i = 0, j = mid, k = 0;

	if (n < 2)
		return;
	merge_sort(a, tmp, mid);
	merge_sort(a + mid, tmp, n - mid);
	while (i < mid && j < n)
		tmp[k++] = entry_cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
	while (i < mid)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, (size_t)n * sizeof(*a));
}

void nw_symtab_sort(struct nw_symtab *t)
{
	struct nw_symentry *tmp, e;
	uint32_t out;

	if (t->nentries < 2)
		return;
	tmp = malloc((size_t)t->nentries * sizeof(*tmp));
	if (tmp) {
		merge_sort(t->entries, tmp, t->nentries);
		free(tmp);
	} else {
		/* No memory for the merge: insertion sort, also stable. */
		for (uint32_t i = 1; i < t->nentries; i++) {
			uint32_t j = i;

			e = t->entries[i];
			for (; j > 0 && entry_cmp(&e, &t->entries[j - 1]) < 0; j--)
				t->entries[j] = t->entries[j - 1];
			t->entries[j] = e;
		}
	}
	/* Of equal keys, the first added stays. */
	out = 1;
	for (uint32_t i = 1; i < t->nentries; i++) {
		if (entry_cmp(&t->entries[i], &t->entries[out - 1]) == 0)
			nw_symframes_free(t->entries[i].frames, t->entries[i].nframes);
		else
			t->entries[out++] = t->entries[i];
	}
	t->nentries = out;
	/* A sorted table is read, not added to: without the doubling's slack. */
	if (out < t->cap_entries) {
		struct nw_symentry *fit = realloc(t->entries, (size_t)out * sizeof(*fit));

		if (fit) {
			t->entries = fit;
			t->cap_entries = out;
		}
	}
}

const struct nw_symentry *nw_symtab_lookup(const struct nw_symtab *t, uint32_t module,
					   uint64_t addr)
{
	struct nw_symentry key = { .module = module, .addr = addr };
	uint32_t lo = 0, hi = t->nentries;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = entry_cmp(&t->entries[mid], &key);

		if (c == 0)
			return &t->entries[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void nw_symtab_clear(struct nw_symtab *t)
{
	for (uint32_t i = 0; i < t->nentries; i++)
		nw_symframes_free(t->entries[i].frames, t->entries[i].nframes);
	t->nentries = 0;
}
