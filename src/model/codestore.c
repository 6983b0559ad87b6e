/* SPDX-License-Identifier: MIT */
/* The code store in memory; code.nwcode is format/codefile.c.  See codestore.h. */
#include "model/codestore.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

struct nw_codestore *nw_codestore_new(void)
{
	return calloc(1, sizeof(struct nw_codestore));
}

void nw_codestore_free(struct nw_codestore *cs)
{
	if (!cs)
		return;
	for (uint32_t i = 0; i < cs->nfuncs; i++) {
		free(cs->funcs[i].bytes);
		free(cs->funcs[i].lines);
		free(cs->funcs[i].inlines);
	}
	free(cs->funcs);
	for (uint32_t i = 0; i < cs->nstrings; i++)
		free(cs->strings[i]);
	free(cs->strings);
	free(cs->notes);
	nw_index_fini(&cs->ix);
	free(cs);
}

static uint64_t string_hash(const void *ctx, uint32_t i)
{
	return nw_hash_str(NW_HASH_SEED, ((const struct nw_codestore *)ctx)->strings[i]);
}

static bool string_eq(const void *ctx, uint32_t i, const void *key)
{
	return !strcmp(((const struct nw_codestore *)ctx)->strings[i], key);
}

int64_t nw_codestore_string(struct nw_codestore *cs, const char *s)
{
	uint32_t *slot = nw_index_slot(&cs->ix, nw_hash_str(NW_HASH_SEED, s), string_eq,
				       string_hash, cs, s);
	char *copy;

	if (!slot)
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	if (cs->nstrings >= INT32_MAX ||
	    nw_grow(&cs->strings, &cs->cap_strings, (size_t)cs->nstrings + 1, sizeof(*cs->strings)))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	cs->strings[cs->nstrings] = copy;
	nw_index_fill(&cs->ix, slot, cs->nstrings);
	return cs->nstrings++;
}

/* A malloc'd copy of @n items of @size at @p (NULL for none); false on ENOMEM. */
static bool dup_array(void **dst, const void *p, size_t n, size_t size)
{
	*dst = NULL;
	if (!n)
		return true;
	*dst = malloc(n * size);
	if (!*dst)
		return false;
	memcpy(*dst, p, n * size);
	return true;
}

struct nw_code_func *nw_codestore_add(struct nw_codestore *cs, uint32_t module, uint16_t machine,
				      enum nw_code_status status, enum nw_code_origin origin,
				      uint64_t start, uint64_t size, const uint8_t *bytes,
				      uint32_t nbytes, const struct nw_code_line *lines,
				      uint32_t nlines, const struct nw_code_inline *inlines,
				      uint32_t ninlines)
{
	struct nw_code_func *fn;

	if (nbytes > size || cs->nfuncs >= INT32_MAX ||
	    nw_grow(&cs->funcs, &cs->cap_funcs, (size_t)cs->nfuncs + 1, sizeof(*cs->funcs)))
		return NULL;
	fn = &cs->funcs[cs->nfuncs];
	memset(fn, 0, sizeof(*fn));
	if (!dup_array((void **)&fn->bytes, bytes, nbytes, 1) ||
	    !dup_array((void **)&fn->lines, lines, nlines, sizeof(*lines)) ||
	    !dup_array((void **)&fn->inlines, inlines, ninlines, sizeof(*inlines))) {
		free(fn->bytes);
		free(fn->lines);
		return NULL;
	}
	fn->module = module;
	fn->machine = machine;
	fn->status = (uint8_t)status;
	fn->origin = (uint8_t)origin;
	fn->start = start;
	fn->size = size;
	fn->nbytes = nbytes;
	fn->nlines = nlines;
	fn->ninlines = ninlines;
	cs->nfuncs++;
	return fn;
}

int nw_codestore_note(struct nw_codestore *cs, uint32_t module, enum nw_code_reason reason,
		      uint64_t count)
{
	for (uint32_t i = 0; i < cs->nnotes; i++) {
		if (cs->notes[i].module == module && cs->notes[i].reason == (uint32_t)reason) {
			cs->notes[i].count += count;
			return 0;
		}
	}
	if (nw_grow(&cs->notes, &cs->cap_notes, (size_t)cs->nnotes + 1, sizeof(*cs->notes)))
		return -ENOMEM;
	cs->notes[cs->nnotes++] = (struct nw_code_note){ module, (uint32_t)reason, count };
	return 0;
}

static int func_cmp(const void *a, const void *b)
{
	const struct nw_code_func *x = a, *y = b;

	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

void nw_codestore_sort(struct nw_codestore *cs)
{
	if (cs->nfuncs > 1)
		qsort(cs->funcs, cs->nfuncs, sizeof(*cs->funcs), func_cmp);
}

const struct nw_code_func *nw_codestore_find(const struct nw_codestore *cs, uint32_t module,
					     uint64_t addr)
{
	size_t lo = 0, hi = cs ? cs->nfuncs : 0;
	const struct nw_code_func *fn;

	/* lo: the first function after (module, addr). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct nw_code_func *f = &cs->funcs[mid];

		if (f->module < module || (f->module == module && f->start <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	fn = &cs->funcs[lo - 1];
	if (fn->module != module || addr - fn->start >= (fn->size ? fn->size : 1))
		return NULL;
	return fn;
}

const struct nw_code_line *nw_code_line_at(const struct nw_code_func *fn, uint64_t offset)
{
	size_t lo = 0, hi = fn->nlines;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fn->lines[mid].offset <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &fn->lines[lo - 1] : NULL;
}

int nw_codestore_merge(struct nw_codestore **dst, const struct nw_codestore *src,
		       const uint32_t *mod)
{
	struct nw_codestore *d = *dst;
	uint32_t *str = NULL;
	uint32_t n0;
	int ret = -ENOMEM;

	if (!src || (!src->nfuncs && !src->nnotes))
		return 0;
	if (!d && !(d = *dst = nw_codestore_new()))
		return -ENOMEM;
	if (!d->func_cap) {
		d->func_cap = src->func_cap;
		d->total_cap = src->total_cap;
	}
	str = malloc((src->nstrings ? src->nstrings : 1) * sizeof(*str));
	if (!str)
		return -ENOMEM;
	for (uint32_t i = 0; i < src->nstrings; i++) {
		int64_t k = nw_codestore_string(d, src->strings[i]);

		if (k < 0)
			goto out;
		str[i] = (uint32_t)k;
	}
	n0 = d->nfuncs;
	for (uint32_t i = 0; i < src->nfuncs; i++) {
		const struct nw_code_func *f = &src->funcs[i];
		struct nw_codestore old = { .funcs = d->funcs, .nfuncs = n0 };
		const struct nw_code_func *have = nw_codestore_find(&old, mod[f->module], f->start);
		struct nw_code_func *g;

		/* @d's own functions are sorted (read so, or merged so before). */
		if (have && have->start == f->start)
			continue;
		g = nw_codestore_add(d, mod[f->module], f->machine, f->status, f->origin, f->start,
				     f->size, f->bytes, f->nbytes, f->lines, f->nlines, f->inlines,
				     f->ninlines);
		if (!g)
			goto out;
		for (uint32_t k = 0; k < g->nlines; k++)
			if (g->lines[k].file != NW_CODE_NONE)
				g->lines[k].file = str[g->lines[k].file];
		for (uint32_t k = 0; k < g->ninlines; k++)
			g->inlines[k].name = str[g->inlines[k].name];
	}
	for (uint32_t i = 0; i < src->nnotes; i++)
		if (nw_codestore_note(d, mod[src->notes[i].module], src->notes[i].reason,
				      src->notes[i].count))
			goto out;
	nw_codestore_sort(d);
	ret = 0;
out:
	free(str);
	return ret;
}

uint64_t nw_code_func_cost(const struct nw_code_func *fn)
{
	/* The record's fixed part, its bytes, about 3 bytes a line entry, 16 an inline range. */
	return 40 + (uint64_t)fn->nbytes + 3 * (uint64_t)fn->nlines + 16 * (uint64_t)fn->ninlines;
}

const char *nw_code_status_name(enum nw_code_status s)
{
	switch (s) {
	case NW_CODE_STORED:
		return "stored";
	case NW_CODE_CAPPED:
		return "left out: the total cap was reached by hotter functions";
	case NW_CODE_NO_KCORE:
		return "kernel code left out: /proc/kcore was not readable";
	case NW_CODE_JIT_GONE:
		return "JIT code left out: the process's memory was not readable";
	case NW_CODE_UNREADABLE:
		return "left out: the module's file was not readable";
	default:
		return "unknown";
	}
}

const char *nw_code_reason_name(enum nw_code_reason r)
{
	switch (r) {
	case NW_CODE_NO_EXTENT:
		return "no symbol or unwind entry gives its function's extent";
	case NW_CODE_NO_PERFMAP:
		return "JIT code that no perf-map entry names";
	default:
		return "unknown";
	}
}
