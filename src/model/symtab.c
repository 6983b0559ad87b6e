/* SPDX-License-Identifier: MIT */
/*
 * The symbol table and symbols.json, with json-c:
 *   {"version":1,"modules":[{"path","build_id"}],
 *    "entries":[{"module":0,"addr":"0x1139",
 *                "frames":[{"function","file","line","decl_file","decl_line"}]}]}
 * addr is a hex string so that 64-bit addresses stay exact; file and
 * decl_file are left out when unknown.  The reader checks types, module
 * indexes and addresses and names the file and the key in its message.
 */
#include "model/symtab.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json.h"

#define NW_SYMTAB_VERSION 1

/* ---- the table ---- */

static void frames_free(struct nw_symframe *frames, uint32_t n)
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
	for (uint32_t i = 0; t->modules && i < t->nmodules; i++) {
		free(t->modules[i].path);
		free(t->modules[i].build_id);
	}
	free(t->modules);
	for (uint32_t i = 0; t->entries && i < t->nentries; i++)
		frames_free(t->entries[i].frames, t->entries[i].nframes);
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

int nw_symtab_module(struct nw_symtab *t, const char *path, const char *build_id)
{
	struct nw_symtab_module *m;

	if (!path)
		return -EINVAL;
	if (!build_id)
		build_id = "";
	for (uint32_t i = 0; i < t->nmodules; i++) {
		if (!strcmp(t->modules[i].path, path) && !strcmp(t->modules[i].build_id, build_id))
			return (int)i;
	}
	if (t->nmodules >= INT32_MAX ||
	    grow((void **)&t->modules, t->nmodules, &t->cap_modules, sizeof(*t->modules)))
		return -ENOMEM;
	m = &t->modules[t->nmodules];
	m->path = strdup(path);
	m->build_id = strdup(build_id);
	if (!m->path || !m->build_id) {
		free(m->path);
		free(m->build_id);
		return -ENOMEM;
	}
	return (int)t->nmodules++;
}

int nw_symtab_add(struct nw_symtab *t, uint32_t module, uint64_t addr,
		  struct nw_symframe *frames, uint32_t nframes)
{
	struct nw_symentry *e;

	if (module >= t->nmodules) {
		frames_free(frames, nframes);
		return -EINVAL;
	}
	if (grow((void **)&t->entries, t->nentries, &t->cap_entries, sizeof(*t->entries))) {
		frames_free(frames, nframes);
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
			frames_free(t->entries[i].frames, t->entries[i].nframes);
		else
			t->entries[out++] = t->entries[i];
	}
	t->nentries = out;
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

int nw_symtab_find_module(const struct nw_symtab *t, const char *path)
{
	for (uint32_t i = 0; i < t->nmodules; i++) {
		if (!strcmp(t->modules[i].path, path))
			return (int)i;
	}
	return -ENOENT;
}

/* ---- writer ---- */

static struct json_object *frame_to_json(const struct nw_symframe *f)
{
	struct json_object *o = json_object_new_object();
	bool ok = o != NULL;

	if (!ok)
		return NULL;
	nw_json_add(o, "function", nw_json_str(f->function), &ok);
	if (f->file)
		nw_json_add(o, "file", nw_json_str(f->file), &ok);
	nw_json_add(o, "line", json_object_new_int64(f->line), &ok);
	if (f->decl_file)
		nw_json_add(o, "decl_file", nw_json_str(f->decl_file), &ok);
	nw_json_add(o, "decl_line", json_object_new_int64(f->decl_line), &ok);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *symtab_to_json(const struct nw_symtab *t)
{
	struct json_object *root = json_object_new_object(), *arr, *o, *frames;
	bool ok = root != NULL;
	char addr[24];

	if (!ok)
		return NULL;
	nw_json_add(root, "version", json_object_new_int64(NW_SYMTAB_VERSION), &ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < t->nmodules; i++) {
		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "path", nw_json_str(t->modules[i].path), &ok);
			nw_json_add(o, "build_id", nw_json_str(t->modules[i].build_id), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "modules", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; ok && arr && i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i];

		o = json_object_new_object();
		if (o) {
			snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)e->addr);
			nw_json_add(o, "module", json_object_new_int64(e->module), &ok);
			nw_json_add(o, "addr", json_object_new_string(addr), &ok);
			frames = json_object_new_array();
			for (uint32_t k = 0; frames && k < e->nframes; k++)
				nw_json_append(frames, frame_to_json(&e->frames[k]), &ok);
			nw_json_add(o, "frames", frames, &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "entries", arr, &ok);

	if (!ok) {
		json_object_put(root);
		return NULL;
	}
	return root;
}

int nw_symtab_write(const char *path, const struct nw_symtab *t)
{
	return nw_json_write_file(path, symtab_to_json(t));
}

/* ---- reader ---- */

/* "0x" and 1 to 16 hex digits. */
static bool parse_addr(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	size_t n = 0;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (s += 2; *s; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (n == 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (n == 0)
		return false;
	*ret = v;
	return true;
}

static int read_frames(struct nw_json_in *in, struct json_object *entry, const char *ewhere,
		       struct nw_symframe **ret, uint32_t *ret_n)
{
	struct json_object *arr, *o;
	struct nw_symframe *frames = NULL;
	char akey[64], where[96];
	uint32_t n = 0;
	int err;

	snprintf(akey, sizeof(akey), "%s.frames", ewhere);
	err = nw_json_get_array(in, entry, ewhere, "frames", &arr, &n);
	if (err)
		return err;
	if (n) {
		frames = calloc(n, sizeof(*frames));
		if (!frames)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct nw_symframe *f = &frames[i];

		err = nw_json_get_item(in, arr, akey, i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "function", &f->function);
		if (!err)
			err = nw_json_get_opt_str(in, o, where, "file", &f->file);
		if (!err)
			err = nw_json_get_u32(in, o, where, "line", &f->line);
		if (!err)
			err = nw_json_get_opt_str(in, o, where, "decl_file", &f->decl_file);
		if (!err)
			err = nw_json_get_u32(in, o, where, "decl_line", &f->decl_line);
		if (err) {
			frames_free(frames, n);
			return err;
		}
	}
	*ret = frames;
	*ret_n = n;
	return 0;
}

static int read_symtab(struct nw_json_in *in, struct json_object *root, struct nw_symtab *t)
{
	struct json_object *arr, *o, *addr_o = NULL;
	char where[48];
	uint32_t version = 0, n = 0;
	int err;

	err = nw_json_get_u32(in, root, NULL, "version", &version);
	if (err)
		return err;
	if (version != NW_SYMTAB_VERSION)
		return nw_json_fail(in,
				    "unsupported symbol table version %u (this Narwhal reads %d)",
				    version, NW_SYMTAB_VERSION);

	err = nw_json_get_array(in, root, NULL, "modules", &arr, &n);
	if (err)
		return err;
	for (uint32_t i = 0; i < n; i++) {
		char *path = NULL, *build_id = NULL;
		int idx;

		err = nw_json_get_item(in, arr, "modules", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "path", &path);
		if (!err)
			err = nw_json_get_str(in, o, where, "build_id", &build_id);
		if (!err) {
			idx = nw_symtab_module(t, path, build_id);
			if (idx < 0)
				err = idx;
			else if ((uint32_t)idx != i)
				err = nw_json_fail(in, "\"%s\" repeats module %d", where, idx);
		}
		free(path);
		free(build_id);
		if (err)
			return err;
	}

	err = nw_json_get_array(in, root, NULL, "entries", &arr, &n);
	if (err)
		return err;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_symframe *frames = NULL;
		uint32_t module = 0, nframes = 0;
		uint64_t addr = 0;

		err = nw_json_get_item(in, arr, "entries", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u32(in, o, where, "module", &module);
		if (!err && module >= t->nmodules)
			err = nw_json_fail(in, "\"%s.module\" is %u, but there are %u modules",
					   where, module, t->nmodules);
		if (!err)
			err = nw_json_get(in, o, where, "addr", json_type_string, "a string",
					  &addr_o);
		if (!err && !parse_addr(json_object_get_string(addr_o), &addr))
			err = nw_json_fail(in,
					   "\"%s.addr\" must be a hex string like \"0x1139\", not \"%s\"",
					   where, json_object_get_string(addr_o));
		if (!err)
			err = read_frames(in, o, where, &frames, &nframes);
		if (!err)
			err = nw_symtab_add(t, module, addr, frames, nframes);
		if (err)
			return err;
	}
	nw_symtab_sort(t);
	return 0;
}

/* nw_json_read_file()'s hook: @ret is a struct nw_symtab **. */
static int symtab_from_json(struct nw_json_in *in, struct json_object *root, void *ret)
{
	struct nw_symtab *t = nw_symtab_new();
	int err;

	if (!t)
		return -ENOMEM;
	err = read_symtab(in, root, t);
	if (err) {
		nw_symtab_free(t);
		return err;
	}
	*(struct nw_symtab **)ret = t;
	return 0;
}

int nw_symtab_read(const char *path, struct nw_symtab **ret, char *err, size_t errlen)
{
	return nw_json_read_file(path, err, errlen, symtab_from_json, ret);
}
