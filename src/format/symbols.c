/* SPDX-License-Identifier: MIT */
/*
 * symbols.json, the symbol table on disk (streamed out, read with json-c):
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
#include <unistd.h>

#include "format/json.h"

#define NW_SYMTAB_VERSION 1

/* ---- writer ---- */

/*
 * symbols.json is streamed, an entry a line: a build's table of 100 K
 * entries took 18 % of the recorder's CPU as a json-c tree built, printed
 * and freed.
 */
int nw_symbols_write_fp(FILE *f, const struct nw_module_table *mods, const struct nw_symtab *t)
{
	errno = 0;
	fprintf(f, "{\n  \"version\":%d,\n  \"modules\":[", NW_SYMTAB_VERSION);
	for (uint32_t i = 0; i < mods->n; i++) {
		char id[2 * NW_BUILD_ID_MAX + 1];

		nw_build_id_hex(mods->v[i].build_id, mods->v[i].build_id_size, id, sizeof(id));
		fputs(i ? ",\n    {\"path\":" : "\n    {\"path\":", f);
		nw_json_put_str(f, mods->v[i].path);
		fprintf(f, ",\"build_id\":\"%s\"}", id);
	}
	fputs("\n  ],\n  \"entries\":[", f);
	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i];

		fprintf(f, "%s    {\"module\":%u,\"addr\":\"0x%llx\",\"frames\":[",
			i ? ",\n" : "\n", e->module, (unsigned long long)e->addr);
		for (uint32_t k = 0; k < e->nframes; k++) {
			const struct nw_symframe *fr = &e->frames[k];

			fputs(k ? ",{\"function\":" : "{\"function\":", f);
			nw_json_put_str(f, fr->function);
			if (fr->file) {
				fputs(",\"file\":", f);
				nw_json_put_str(f, fr->file);
			}
			fprintf(f, ",\"line\":%u", fr->line);
			if (fr->decl_file) {
				fputs(",\"decl_file\":", f);
				nw_json_put_str(f, fr->decl_file);
			}
			fprintf(f, ",\"decl_line\":%u}", fr->decl_line);
		}
		fputs("]}", f);
	}
	fputs("\n  ]\n}\n", f);
	if (ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int nw_symbols_write(const char *path, const struct nw_module_table *modules,
		     const struct nw_symtab *t)
{
	FILE *f = fopen(path, "we");
	int err;

	if (!f)
		return -errno;
	err = nw_symbols_write_fp(f, modules, t);
	/* Flushed and on disk before anything names the file: a full disk shows here. */
	errno = 0;
	if ((fflush(f) == EOF || fsync(fileno(f)) != 0) && !err)
		err = errno ? -errno : -EIO;
	errno = 0;
	if (fclose(f) == EOF && !err)
		err = errno ? -errno : -EIO;
	return err;
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
