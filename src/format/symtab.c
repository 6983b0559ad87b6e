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
#include "format/symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#define NW_SYMTAB_VERSION 1

/* ---- JSON helpers (the same small set as manifest.c) ---- */

struct jin {
	const char *path;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int jfail(struct jin *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->err && c->errlen) {
		n = snprintf(c->err, c->errlen, "%s: ", c->path);
		if (n >= 0 && (size_t)n < c->errlen) {
			va_start(ap, fmt);
			vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EBADMSG;
}

/* Reads the whole file at @path, NUL-terminated.  -errno. */
static int slurp(const char *path, char **ret, size_t *ret_len)
{
	size_t cap = 16384, len = 0;
	char *buf, *nbuf;
	ssize_t r;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len + 1 >= cap) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = -ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Parses the file at @path, which must hold one JSON object.  -errno, -EBADMSG. */
static int jparse_file(struct jin *c, struct json_object **ret)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t len = 0, end;
	char *buf = NULL;
	int err;

	err = slurp(c->path, &buf, &len);
	if (err) {
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen, "%s: %s", c->path, strerror(-err));
		return err;
	}
	if (memchr(buf, '\0', len)) {
		err = jfail(c, "not JSON: NUL byte at offset %zu",
			    (size_t)((char *)memchr(buf, '\0', len) - buf));
		goto out;
	}
	tok = json_tokener_new();
	if (!tok) {
		err = -ENOMEM;
		goto out;
	}
	/* The terminating NUL tells the tokener the text ends there. */
	obj = json_tokener_parse_ex(tok, buf, (int)(len + 1 > INT_MAX ? INT_MAX : len + 1));
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (len >= INT_MAX) {
		json_object_put(obj);
		err = jfail(c, "not JSON: too large");
		goto out;
	}
	if (!obj || jerr != json_tokener_success) {
		json_object_put(obj);
		err = jfail(c, "not JSON: %s at offset %zu", json_tokener_error_desc(jerr), end);
		goto out;
	}
	while (end < len && (buf[end] == ' ' || buf[end] == '\t' || buf[end] == '\r' ||
			      buf[end] == '\n'))
		end++;
	if (end < len) {
		json_object_put(obj);
		err = jfail(c, "not JSON: data after the end at offset %zu", end);
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		err = jfail(c, "not a JSON object");
		goto out;
	}
	*ret = obj;
out:
	free(buf);
	return err;
}

/* @where.@key, or @key at the top. */
static void jkey(char *out, size_t len, const char *where, const char *key)
{
	snprintf(out, len, "%s%s%s", where ? where : "", where ? "." : "", key);
}

static int jget(struct jin *c, struct json_object *obj, const char *where, const char *key,
		enum json_type type, const char *type_name, struct json_object **ret)
{
	char name[128];

	jkey(name, sizeof(name), where, key);
	if (!json_object_object_get_ex(obj, key, ret))
		return jfail(c, "missing key \"%s\"", name);
	if (!json_object_is_type(*ret, type))
		return jfail(c, "key \"%s\" must be %s", name, type_name);
	return 0;
}

static int jget_u64(struct jin *c, struct json_object *obj, const char *where, const char *key,
		    uint64_t max, uint64_t *ret)
{
	struct json_object *v;
	char name[128];
	uint64_t u;
	int err;

	err = jget(c, obj, where, key, json_type_int, "an integer", &v);
	if (err)
		return err;
	/* json-c keeps values above INT64_MAX as uint64; get_int64 clamps those. */
	u = json_object_get_int64(v) < 0 ? UINT64_MAX : json_object_get_uint64(v);
	if (json_object_get_int64(v) < 0 || u > max) {
		jkey(name, sizeof(name), where, key);
		return jfail(c, "key \"%s\" must be an integer in 0..%llu", name,
			     (unsigned long long)max);
	}
	*ret = u;
	return 0;
}

static int jget_u32(struct jin *c, struct json_object *obj, const char *where, const char *key,
		    uint32_t *ret)
{
	uint64_t v = 0;
	int err = jget_u64(c, obj, where, key, UINT32_MAX, &v);

	if (!err)
		*ret = (uint32_t)v;
	return err;
}

static int jget_str(struct jin *c, struct json_object *obj, const char *where, const char *key,
		    char **ret)
{
	struct json_object *v;
	int err;

	err = jget(c, obj, where, key, json_type_string, "a string", &v);
	if (err)
		return err;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

/* The array at @key; its length, at most UINT32_MAX, in *len. */
static int jget_array(struct jin *c, struct json_object *obj, const char *where, const char *key,
		      struct json_object **ret, uint32_t *len)
{
	size_t n;
	int err;

	err = jget(c, obj, where, key, json_type_array, "an array", ret);
	if (err)
		return err;
	n = json_object_array_length(*ret);
	if (n > UINT32_MAX)
		return jfail(c, "key \"%s\" has too many items", key);
	*len = (uint32_t)n;
	return 0;
}

/* Item @i of @array (named @key), which must be an object. */
static int jget_item(struct jin *c, struct json_object *array, const char *key, uint32_t i,
		     struct json_object **ret, char *where, size_t wlen)
{
	snprintf(where, wlen, "%s[%u]", key, i);
	*ret = json_object_array_get_idx(array, i);
	if (!json_object_is_type(*ret, json_type_object))
		return jfail(c, "\"%s\" must be an object", where);
	return 0;
}

/* Adds @val under @key; on NULL (allocation failure) marks @ok false. */
static void jadd(struct json_object *obj, const char *key, struct json_object *val, bool *ok)
{
	if (!val || json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		*ok = false;
	}
}

static void jappend(struct json_object *array, struct json_object *val, bool *ok)
{
	if (!val || json_object_array_add(array, val) != 0) {
		json_object_put(val);
		*ok = false;
	}
}

static struct json_object *jstr(const char *s)
{
	return json_object_new_string(s ? s : "");
}

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
	jadd(o, "function", jstr(f->function), &ok);
	if (f->file)
		jadd(o, "file", jstr(f->file), &ok);
	jadd(o, "line", json_object_new_int64(f->line), &ok);
	if (f->decl_file)
		jadd(o, "decl_file", jstr(f->decl_file), &ok);
	jadd(o, "decl_line", json_object_new_int64(f->decl_line), &ok);
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
	jadd(root, "version", json_object_new_int64(NW_SYMTAB_VERSION), &ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < t->nmodules; i++) {
		o = json_object_new_object();
		if (o) {
			jadd(o, "path", jstr(t->modules[i].path), &ok);
			jadd(o, "build_id", jstr(t->modules[i].build_id), &ok);
		}
		jappend(arr, o, &ok);
	}
	jadd(root, "modules", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; ok && arr && i < t->nentries; i++) {
		const struct nw_symentry *e = &t->entries[i];

		o = json_object_new_object();
		if (o) {
			snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)e->addr);
			jadd(o, "module", json_object_new_int64(e->module), &ok);
			jadd(o, "addr", json_object_new_string(addr), &ok);
			frames = json_object_new_array();
			for (uint32_t k = 0; frames && k < e->nframes; k++)
				jappend(frames, frame_to_json(&e->frames[k]), &ok);
			jadd(o, "frames", frames, &ok);
		}
		jappend(arr, o, &ok);
	}
	jadd(root, "entries", arr, &ok);

	if (!ok) {
		json_object_put(root);
		return NULL;
	}
	return root;
}

int nw_symtab_write(const char *path, const struct nw_symtab *t)
{
	struct json_object *root = symtab_to_json(t);
	int err = 0;

	if (!root)
		return -ENOMEM;
	errno = 0;
	if (json_object_to_file_ext(path, root,
				    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) < 0)
		err = errno ? -errno : -EIO;
	json_object_put(root);
	return err;
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

/* An optional string: absent or null gives NULL. */
static int jget_opt_str(struct jin *c, struct json_object *obj, const char *where,
			const char *key, char **ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
		*ret = NULL;
		return 0;
	}
	return jget_str(c, obj, where, key, ret);
}

static int read_frames(struct jin *c, struct json_object *entry, const char *ewhere,
		       struct nw_symframe **ret, uint32_t *ret_n)
{
	struct json_object *arr, *o;
	struct nw_symframe *frames = NULL;
	char akey[64], where[96];
	uint32_t n = 0;
	int err;

	snprintf(akey, sizeof(akey), "%s.frames", ewhere);
	err = jget_array(c, entry, ewhere, "frames", &arr, &n);
	if (err)
		return err;
	if (n) {
		frames = calloc(n, sizeof(*frames));
		if (!frames)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct nw_symframe *f = &frames[i];

		err = jget_item(c, arr, akey, i, &o, where, sizeof(where));
		if (!err)
			err = jget_str(c, o, where, "function", &f->function);
		if (!err)
			err = jget_opt_str(c, o, where, "file", &f->file);
		if (!err)
			err = jget_u32(c, o, where, "line", &f->line);
		if (!err)
			err = jget_opt_str(c, o, where, "decl_file", &f->decl_file);
		if (!err)
			err = jget_u32(c, o, where, "decl_line", &f->decl_line);
		if (err) {
			frames_free(frames, n);
			return err;
		}
	}
	*ret = frames;
	*ret_n = n;
	return 0;
}

static int symtab_from_json(struct jin *c, struct json_object *root, struct nw_symtab *t)
{
	struct json_object *arr, *o, *addr_o;
	char where[48];
	uint32_t version = 0, n = 0;
	int err;

	err = jget_u32(c, root, NULL, "version", &version);
	if (err)
		return err;
	if (version != NW_SYMTAB_VERSION)
		return jfail(c, "unsupported symbol table version %u (this Narwhal reads %d)",
			     version, NW_SYMTAB_VERSION);

	err = jget_array(c, root, NULL, "modules", &arr, &n);
	if (err)
		return err;
	for (uint32_t i = 0; i < n; i++) {
		char *path = NULL, *build_id = NULL;
		int idx;

		err = jget_item(c, arr, "modules", i, &o, where, sizeof(where));
		if (!err)
			err = jget_str(c, o, where, "path", &path);
		if (!err)
			err = jget_str(c, o, where, "build_id", &build_id);
		if (!err) {
			idx = nw_symtab_module(t, path, build_id);
			if (idx < 0)
				err = idx;
			else if ((uint32_t)idx != i)
				err = jfail(c, "\"%s\" repeats module %d", where, idx);
		}
		free(path);
		free(build_id);
		if (err)
			return err;
	}

	err = jget_array(c, root, NULL, "entries", &arr, &n);
	if (err)
		return err;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_symframe *frames = NULL;
		uint32_t module, nframes = 0;
		uint64_t addr = 0;

		err = jget_item(c, arr, "entries", i, &o, where, sizeof(where));
		if (!err)
			err = jget_u32(c, o, where, "module", &module);
		if (!err && module >= t->nmodules)
			err = jfail(c, "\"%s.module\" is %u, but there are %u modules", where,
				    module, t->nmodules);
		if (!err)
			err = jget(c, o, where, "addr", json_type_string, "a string", &addr_o);
		if (!err && !parse_addr(json_object_get_string(addr_o), &addr))
			err = jfail(c, "\"%s.addr\" must be a hex string like \"0x1139\", not \"%s\"",
				    where, json_object_get_string(addr_o));
		if (!err)
			err = read_frames(c, o, where, &frames, &nframes);
		if (!err)
			err = nw_symtab_add(t, module, addr, frames, nframes);
		if (err)
			return err;
	}
	nw_symtab_sort(t);
	return 0;
}

int nw_symtab_read(const char *path, struct nw_symtab **ret, char *err, size_t errlen)
{
	struct jin c = { .path = path, .err = err, .errlen = errlen };
	struct json_object *root = NULL;
	struct nw_symtab *t;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	rc = jparse_file(&c, &root);
	if (rc)
		return rc;
	t = nw_symtab_new();
	if (!t) {
		json_object_put(root);
		return -ENOMEM;
	}
	rc = symtab_from_json(&c, root, t);
	json_object_put(root);
	if (rc) {
		if (rc == -ENOMEM && err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		nw_symtab_free(t);
		return rc;
	}
	*ret = t;
	return 0;
}
