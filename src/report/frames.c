/* SPDX-License-Identifier: MIT */
#include "report/frames.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/names.h"
#include "util/strbuf.h"

void nw_frames_init(struct nw_frames *f)
{
	memset(f, 0, sizeof(*f));
}

void nw_frames_fini(struct nw_frames *f)
{
	for (uint32_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].short_name);
		free(f->v[i].file);
		free(f->v[i].module);
	}
	free(f->v);
	nw_index_fini(&f->ix);
	memset(f, 0, sizeof(*f));
}

struct key {
	enum nw_frame_kind kind;
	const char *name, *module;
};

static uint64_t key_hash(enum nw_frame_kind kind, const char *name, const char *module)
{
	return nw_hash_add(nw_hash_str(nw_hash_str(NW_HASH_SEED, name), module), kind);
}

static uint64_t frame_hash(const void *ctx, uint32_t i)
{
	const struct nw_func *fn = &((const struct nw_frames *)ctx)->v[i];

	return key_hash(fn->kind, fn->name, fn->module);
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool frame_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_func *fn = &((const struct nw_frames *)ctx)->v[i];
	const struct key *k = key;

	return fn->kind == k->kind && !strcmp(fn->name, k->name) && str_eq(fn->module, k->module);
}

static char *dup_or_null(const char *s, bool *failed)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*failed = true;
	return d;
}

int64_t nw_frames_intern(struct nw_frames *f, enum nw_frame_kind kind, const char *name,
			 const char *file, uint32_t line, const char *module)
{
	struct key k = { kind, name, module };
	struct nw_func *fn;
	bool failed = false;
	uint32_t *slot;

	if (!name)
		return -EINVAL;
	slot = nw_index_slot(&f->ix, key_hash(kind, name, module), frame_eq, frame_hash, f, &k);
	if (!slot)
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE) {
		fn = &f->v[*slot];
		if (!fn->file && file) {
			fn->file = strdup(file);
			if (!fn->file)
				return -ENOMEM;
		}
		if (!fn->line)
			fn->line = line;
		return *slot;
	}
	if (f->n == NW_INDEX_NONE - 1 || nw_grow(&f->v, &f->cap, (size_t)f->n + 1, sizeof(*f->v)))
		return -ENOMEM;
	fn = &f->v[f->n];
	fn->kind = kind;
	fn->name = dup_or_null(name, &failed);
	fn->file = dup_or_null(file, &failed);
	fn->module = dup_or_null(module, &failed);
	fn->line = line;
	fn->short_name = NULL;
	if (kind == NW_FRAME_FUNCTION && !failed) {
		size_t n = strlen(name) + 1;
		char *buf = malloc(n);

		if (buf && strcmp(nw_short_name(name, buf, n), name))
			fn->short_name = buf;
		else
			free(buf);
		failed |= !buf;
	}
	if (failed) {
		free(fn->name);
		free(fn->short_name);
		free(fn->file);
		free(fn->module);
		return -ENOMEM;
	}
	nw_index_fill(&f->ix, slot, f->n);
	return f->n++;
}
