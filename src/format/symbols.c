/* SPDX-License-Identifier: MIT */
/*
 * symbols.json, the symbol table on disk, with json-c:
 *   {"version":1,"modules":[{"path","build_id"}],
 *    "entries":[{"module":0,"addr":"0x1139",
 *                "frames":[{"function","file","line","decl_file","decl_line"}]}]}
 * addr is a hex string so that 64-bit addresses stay exact; file and
 * decl_file are left out when unknown.  The module list is the
 * measurement's (manifest.json lists the same modules in the same order).
 * The reader checks types, module indexes and addresses and names the file
 * and the key in its message.
 */
#include "format/symbols.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json.h"

#define NW_SYMTAB_VERSION 1

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

static struct json_object *symtab_to_json(const struct nw_module_table *mods,
					  const struct nw_symtab *t)
{
	struct json_object *root = json_object_new_object(), *arr, *o, *frames;
	bool ok = root != NULL;
	if (!ok)
		return NULL;
	nw_json_add(root, "version", json_object_new_int64(NW_SYMTAB_VERSION), &ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < mods->n; i++) {
		char id[2 * NW_BUILD_ID_MAX + 1];

		nw_build_id_hex(mods->v[i].build_id, mods->v[i].build_id_size, id, sizeof(id));
		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "path", nw_json_str(mods->v[i].path), &ok);
			nw_json_add(o, "build_id", nw_json_str(id), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "modules", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; ok && arr && i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "module", json_object_new_int64(e->module), &ok);
			nw_json_add(o, "addr", nw_json_hex(e->addr), &ok);
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

int nw_symbols_write(const char *path, const struct nw_module_table *modules,
		     const struct nw_symtab *t)
{
	return nw_json_write_file(path, symtab_to_json(modules, t));
}

int nw_symbols_write_fp(FILE *f, const struct nw_module_table *modules, const struct nw_symtab *t)
{
	return nw_json_write_fp(f, symtab_to_json(modules, t));
}

/* ---- reader ---- */

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
			nw_symframes_free(frames, n);
			return err;
		}
	}
	*ret = frames;
	*ret_n = n;
	return 0;
}

struct symbols_in {
	struct nw_module_table *modules;
	struct nw_symtab *t;
};

/* The measurement's module (@path, @build_id hex): found or added.  -EBADMSG, -ENOMEM. */
static int module_of(struct nw_json_in *in, struct nw_module_table *mods, const char *where,
		     const char *path, const char *build_id)
{
	uint8_t id[NW_BUILD_ID_MAX];
	uint8_t size = 0;

	if (nw_build_id_parse(build_id, id, &size))
		return nw_json_fail(in, "\"%s.build_id\" is not a hex build-id: \"%s\"", where,
				    build_id);
	return nw_module_intern(mods, path, id, size);
}

static int read_symtab(struct nw_json_in *in, struct json_object *root, struct symbols_in *si)
{
	struct nw_symtab *t = si->t;
	uint32_t *module_index = NULL, nmodules = 0;
	struct json_object *arr, *o;
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
	module_index = calloc(n ? n : 1, sizeof(*module_index));
	if (!module_index)
		return -ENOMEM;
	nmodules = n;
	for (uint32_t i = 0; i < n; i++) {
		char *path = NULL, *build_id = NULL;
		int idx;

		err = nw_json_get_item(in, arr, "modules", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "path", &path);
		if (!err)
			err = nw_json_get_str(in, o, where, "build_id", &build_id);
		if (!err) {
			idx = module_of(in, si->modules, where, path, build_id);
			if (idx < 0)
				err = idx;
			else
				module_index[i] = (uint32_t)idx;
		}
		free(path);
		free(build_id);
		if (err)
			goto out;
	}

	err = nw_json_get_array(in, root, NULL, "entries", &arr, &n);
	if (err)
		goto out;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_symframe *frames = NULL;
		uint32_t module = 0, nframes = 0;
		uint64_t addr = 0;

		err = nw_json_get_item(in, arr, "entries", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u32(in, o, where, "module", &module);
		if (!err && module >= nmodules)
			err = nw_json_fail(in, "\"%s.module\" is %u, but there are %u modules",
					   where, module, nmodules);
		if (!err)
			err = nw_json_get_hex(in, o, where, "addr", &addr);
		if (!err)
			err = read_frames(in, o, where, &frames, &nframes);
		if (!err)
			err = nw_symtab_add(t, module_index[module], addr, frames, nframes);
		if (err)
			goto out;
	}
	nw_symtab_sort(t);
out:
	free(module_index);
	return err;
}

/* nw_json_read_file()'s hook: @ret is a struct symbols_in *. */
static int symtab_from_json(struct nw_json_in *in, struct json_object *root, void *ret)
{
	return read_symtab(in, root, ret);
}

int nw_symbols_read(const char *path, struct nw_module_table *modules, struct nw_symtab *t,
		    char *err, size_t errlen)
{
	struct symbols_in si = { .modules = modules, .t = t };
	int ret = nw_json_read_file(path, err, errlen, symtab_from_json, &si);

	if (ret)
		nw_symtab_clear(t);
	return ret;
}

int nw_symbols_read_buf(const char *name, const char *buf, size_t len,
			struct nw_module_table *modules, struct nw_symtab *t, char *err,
			size_t errlen)
{
	struct symbols_in si = { .modules = modules, .t = t };
	int ret = nw_json_read_buf(name, buf, len, err, errlen, symtab_from_json, &si);

	if (ret)
		nw_symtab_clear(t);
	return ret;
}
