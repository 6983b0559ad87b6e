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
#include "util/file.h"
#include "util/strbuf.h"

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

/*
 * Pulled, not parsed into a tree (format/json.h): keys in any order,
 * unknown keys skipped, the last of a repeated key kept, as json-c does.
 */
struct symbols_in {
	struct nw_json_in *in;
	struct nw_json_pull jp;
	struct nw_module_table *modules;
	struct nw_symtab *t;
	uint32_t *module_index;        /* the file's module i is the table's module_index[i] */
	uint32_t nmodules;
	bool have_modules, have_entries;
};

/* A key's name for messages: "@where.@key", or @key at the top. */
static const char *name_of(char *buf, size_t len, const char *where, const char *key)
{
	snprintf(buf, len, "%.120s%s%.30s", where ? where : "", where ? "." : "", key);
	return buf;
}

/* A string value of key @key in @where: copied into *@ret (NULL for null when @opt). */
static int read_str(struct symbols_in *si, const char *where, const char *key, bool opt,
		    char **ret)
{
	enum nw_json_kind k = nw_json_pull_kind(&si->jp);
	char name[160];
	int err;

	free(*ret);
	*ret = NULL;
	if (opt && k == NW_JSON_NULL)
		return nw_json_pull_skip(&si->jp);
	if (k != NW_JSON_STRING) {
		err = nw_json_pull_skip(&si->jp);
		return err ? err
			   : nw_json_fail(si->in, "key \"%s\" must be a string",
					  name_of(name, sizeof(name), where, key));
	}
	err = nw_json_pull_str(&si->jp);
	if (!err && !(*ret = strdup(si->jp.str)))
		err = -ENOMEM;
	return err;
}

/* An integer value of key @key in @where, in 0..@max. */
static int read_uint(struct symbols_in *si, const char *where, const char *key, uint64_t max,
		     uint64_t *ret)
{
	char name[160];
	int err;

	if (nw_json_pull_kind(&si->jp) != NW_JSON_NUMBER) {
		err = nw_json_pull_skip(&si->jp);
		return err ? err
			   : nw_json_fail(si->in, "key \"%s\" must be an integer",
					  name_of(name, sizeof(name), where, key));
	}
	err = nw_json_pull_uint(&si->jp, max, ret);
	if (err == 1)
		return nw_json_fail(si->in, "key \"%s\" must be an integer in 0..%llu",
				    name_of(name, sizeof(name), where, key), (unsigned long long)max);
	return err;
}

/* The next item of array @arr must be an object: its '{' is read. */
static int expect_object(struct symbols_in *si, const char *where)
{
	int err;

	if (nw_json_pull_kind(&si->jp) == NW_JSON_OBJECT)
		return 0;
	err = nw_json_pull_skip(&si->jp);
	return err ? err : nw_json_fail(si->in, "\"%s\" must be an object", where);
}

/* The value of key @key in @where must be an array. */
static int expect_array(struct symbols_in *si, const char *where, const char *key)
{
	char name[160];
	int err;

	if (nw_json_pull_kind(&si->jp) == NW_JSON_ARRAY)
		return 0;
	err = nw_json_pull_skip(&si->jp);
	return err ? err
		   : nw_json_fail(si->in, "key \"%s\" must be an array",
				  name_of(name, sizeof(name), where, key));
}

static int read_frame(struct symbols_in *si, const char *where, struct nw_symframe *f)
{
	bool first = true, have_line = false, have_decl = false;
	uint64_t v;
	char name[160];
	int more, err = 0;

	while (!err && (more = nw_json_pull_key(&si->jp, &first)) == 1) {
		if (!strcmp(si->jp.str, "function")) {
			err = read_str(si, where, "function", false, &f->function);
		} else if (!strcmp(si->jp.str, "file")) {
			err = read_str(si, where, "file", true, &f->file);
		} else if (!strcmp(si->jp.str, "decl_file")) {
			err = read_str(si, where, "decl_file", true, &f->decl_file);
		} else if (!strcmp(si->jp.str, "line")) {
			err = read_uint(si, where, "line", UINT32_MAX, &v);
			f->line = (uint32_t)v;
			have_line = true;
		} else if (!strcmp(si->jp.str, "decl_line")) {
			err = read_uint(si, where, "decl_line", UINT32_MAX, &v);
			f->decl_line = (uint32_t)v;
			have_decl = true;
		} else {
			err = nw_json_pull_skip(&si->jp);
		}
	}
	if (err || more < 0)
		return err ? err : more;
	if (!f->function)
		return nw_json_fail(si->in, "missing key \"%s\"",
				    name_of(name, sizeof(name), where, "function"));
	if (!have_line || !have_decl)
		return nw_json_fail(si->in, "missing key \"%s\"",
				    name_of(name, sizeof(name), where,
					    have_line ? "decl_line" : "line"));
	return 0;
}

/* An entry's "frames": an array of frames. */
static int read_frames(struct symbols_in *si, const char *ewhere, struct nw_symframe **ret,
		       uint32_t *ret_n)
{
	struct nw_symframe *frames = NULL;
	size_t n = 0, cap = 0;
	bool first = true;
	char where[160];
	int more, err = expect_array(si, ewhere, "frames");

	while (!err && (more = nw_json_pull_item(&si->jp, &first)) == 1) {
		snprintf(where, sizeof(where), "%s.frames[%zu]", ewhere, n);
		err = expect_object(si, where);
		if (!err && nw_grow(&frames, &cap, n + 1, sizeof(*frames)))
			err = -ENOMEM;
		if (err)
			break;
		memset(&frames[n], 0, sizeof(*frames));
		err = read_frame(si, where, &frames[n]);
		n++;
		if (n > UINT32_MAX)
			err = nw_json_fail(si->in, "key \"%s.frames\" has too many items", ewhere);
	}
	if (!err && more < 0)
		err = more;
	if (err) {
		nw_symframes_free(frames, (uint32_t)n);
		return err;
	}
	/* Most entries have one frame: trimmed, 40 bytes, not the 640 grown. */
	if (n < cap) {
		struct nw_symframe *fit = realloc(frames, n * sizeof(*frames));

		if (fit)
			frames = fit;
	}
	*ret = frames;
	*ret_n = (uint32_t)n;
	return 0;
}

/* One entry, added with the file's module index (mapped at the end). */
static int read_entry(struct symbols_in *si, const char *where)
{
	bool first = true, have_module = false, have_addr = false, have_frames = false;
	struct nw_symframe *frames = NULL;
	uint32_t nframes = 0;
	uint64_t module = 0, addr = 0;
	char name[160];
	int more, err = 0;

	while (!err && (more = nw_json_pull_key(&si->jp, &first)) == 1) {
		if (!strcmp(si->jp.str, "module")) {
			err = read_uint(si, where, "module", UINT32_MAX, &module);
			have_module = true;
		} else if (!strcmp(si->jp.str, "addr")) {
			have_addr = true;
			if (nw_json_pull_kind(&si->jp) != NW_JSON_STRING) {
				err = nw_json_pull_skip(&si->jp);
				if (!err)
					err = nw_json_fail(si->in, "key \"%s\" must be a string",
							   name_of(name, sizeof(name), where, "addr"));
			} else if (!(err = nw_json_pull_str(&si->jp)) &&
				   !nw_json_parse_hex(si->jp.str, &addr)) {
				err = nw_json_fail(si->in,
						   "\"%s.addr\" must be a hex string like \"0x1139\", "
						   "not \"%s\"",
						   where, si->jp.str);
			}
		} else if (!strcmp(si->jp.str, "frames")) {
			nw_symframes_free(frames, nframes);
			frames = NULL;
			nframes = 0;
			err = read_frames(si, where, &frames, &nframes);
			have_frames = !err;
		} else {
			err = nw_json_pull_skip(&si->jp);
		}
	}
	if (!err && more < 0)
		err = more;
	if (!err && (!have_module || !have_addr || !have_frames))
		err = nw_json_fail(si->in, "missing key \"%s\"",
				   name_of(name, sizeof(name), where,
					   !have_module ? "module" : !have_addr ? "addr" : "frames"));
	if (err) {
		nw_symframes_free(frames, nframes);
		return err;
	}
	return nw_symtab_add(si->t, (uint32_t)module, addr, frames, nframes);
}

static int read_entries(struct symbols_in *si)
{
	bool first = true;
	char where[48];
	uint32_t i = 0;
	int more, err = expect_array(si, NULL, "entries");

	/* The last "entries" counts. */
	nw_symtab_clear(si->t);
	si->have_entries = true;
	while (!err && (more = nw_json_pull_item(&si->jp, &first)) == 1) {
		snprintf(where, sizeof(where), "entries[%u]", i++);
		err = expect_object(si, where);
		if (!err)
			err = read_entry(si, where);
	}
	return err ? err : more < 0 ? more : 0;
}

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

static int read_modules(struct symbols_in *si)
{
	bool first = true;
	size_t cap = 0;
	char where[48];
	int more, err = expect_array(si, NULL, "modules");

	si->nmodules = 0;
	si->have_modules = true;
	while (!err && (more = nw_json_pull_item(&si->jp, &first)) == 1) {
		char *path = NULL, *build_id = NULL;
		bool mfirst = true;
		int mmore, idx;

		snprintf(where, sizeof(where), "modules[%u]", si->nmodules);
		err = expect_object(si, where);
		while (!err && (mmore = nw_json_pull_key(&si->jp, &mfirst)) == 1) {
			if (!strcmp(si->jp.str, "path"))
				err = read_str(si, where, "path", false, &path);
			else if (!strcmp(si->jp.str, "build_id"))
				err = read_str(si, where, "build_id", false, &build_id);
			else
				err = nw_json_pull_skip(&si->jp);
		}
		if (!err && mmore < 0)
			err = mmore;
		if (!err && (!path || !build_id))
			err = nw_json_fail(si->in, "missing key \"%s.%s\"", where,
					   !path ? "path" : "build_id");
		if (!err && nw_grow(&si->module_index, &cap, si->nmodules + 1,
				    sizeof(*si->module_index)))
			err = -ENOMEM;
		if (!err) {
			idx = module_of(si->in, si->modules, where, path, build_id);
			if (idx < 0)
				err = idx;
			else
				si->module_index[si->nmodules++] = (uint32_t)idx;
		}
		free(path);
		free(build_id);
	}
	return err ? err : more < 0 ? more : 0;
}

static int read_symtab(struct symbols_in *si)
{
	bool first = true, have_version = false;
	uint64_t version = 0;
	int more, err = 0;

	if (nw_json_pull_kind(&si->jp) != NW_JSON_OBJECT)
		return nw_json_pull_kind(&si->jp) == NW_JSON_END ||
				       (err = nw_json_pull_skip(&si->jp)) != 0
			       ? (err ? err : nw_json_fail(si->in, "not JSON: empty"))
			       : nw_json_fail(si->in, "not a JSON object");
	while (!err && (more = nw_json_pull_key(&si->jp, &first)) == 1) {
		if (!strcmp(si->jp.str, "version")) {
			err = read_uint(si, NULL, "version", UINT32_MAX, &version);
			have_version = true;
		} else if (!strcmp(si->jp.str, "modules")) {
			err = read_modules(si);
		} else if (!strcmp(si->jp.str, "entries")) {
			err = read_entries(si);
		} else {
			err = nw_json_pull_skip(&si->jp);
		}
	}
	if (!err && more < 0)
		err = more;
	if (!err)
		err = nw_json_pull_end(&si->jp);
	if (err)
		return err;
	if (!have_version)
		return nw_json_fail(si->in, "missing key \"version\"");
	if (version != NW_SYMTAB_VERSION)
		return nw_json_fail(si->in,
				    "unsupported symbol table version %llu (this Narwhal reads %d)",
				    (unsigned long long)version, NW_SYMTAB_VERSION);
	if (!si->have_modules || !si->have_entries)
		return nw_json_fail(si->in, "missing key \"%s\"",
				    si->have_modules ? "entries" : "modules");
	/* The file's module numbers, now that its module list is known. */
	for (uint32_t i = 0; i < si->t->nentries; i++) {
		struct nw_symentry *e = &si->t->entries[i];

		if (e->module >= si->nmodules)
			return nw_json_fail(si->in,
					    "\"entries[%u].module\" is %u, but there are %u modules",
					    i, e->module, si->nmodules);
		e->module = si->module_index[e->module];
	}
	nw_symtab_sort(si->t);
	return 0;
}

static int read_buf(const char *name, const char *buf, size_t len,
		    struct nw_module_table *modules, struct nw_symtab *t, char *err, size_t errlen)
{
	struct nw_json_in in = { .path = name, .err = err, .errlen = errlen };
	struct symbols_in si = { .in = &in, .modules = modules, .t = t };
	const char *nul = memchr(buf, '\0', len);
	int ret;

	if (err && errlen)
		err[0] = '\0';
	nw_json_pull_init(&si.jp, &in, buf, len);
	ret = nul ? nw_json_fail(&in, "not JSON: NUL byte at offset %zu", (size_t)(nul - buf))
		  : read_symtab(&si);
	nw_json_pull_fini(&si.jp);
	free(si.module_index);
	if (ret == -ENOMEM && err && errlen)
		snprintf(err, errlen, "%s: out of memory", name);
	if (ret)
		nw_symtab_clear(t);
	return ret;
}

int nw_symbols_read(const char *path, struct nw_module_table *modules, struct nw_symtab *t,
		    char *err, size_t errlen)
{
	size_t len = 0;
	char *buf = NULL;
	int ret = nw_read_file(path, &buf, &len);

	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = read_buf(path, buf, len, modules, t, err, errlen);
	free(buf);
	return ret;
}

int nw_symbols_read_buf(const char *name, const char *buf, size_t len,
			struct nw_module_table *modules, struct nw_symtab *t, char *err,
			size_t errlen)
{
	return read_buf(name, buf, len, modules, t, err, errlen);
}
