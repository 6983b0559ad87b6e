/* SPDX-License-Identifier: MIT */
/*
 * manifest.json, with json-c.  Keys are the struct fields' names.  The
 * reader requires every key the writer writes, checks each value's type and
 * range, and names the file and the key (events[1].config) in its message;
 * keys it does not know are ignored.
 */
#include "format/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

/* ---- JSON helpers (symtab.c has the same small set) ---- */

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

/* ---- writer ---- */

static struct json_object *manifest_to_json(const struct nw_manifest *m)
{
	struct json_object *root = json_object_new_object(), *arr, *o;
	bool ok = root != NULL;

	if (!ok)
		return NULL;
	jadd(root, "version", json_object_new_int64(m->version), &ok);
	jadd(root, "narwhal_version", jstr(m->narwhal_version), &ok);
	jadd(root, "arch", jstr(m->arch), &ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->argc; i++)
		jappend(arr, jstr(m->argv[i]), &ok);
	jadd(root, "argv", arr, &ok);
	jadd(root, "call_graph", jstr(m->call_graph), &ok);
	jadd(root, "stack_size", json_object_new_int64(m->stack_size), &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nevents; i++) {
		const struct nw_manifest_event *e = &m->events[i];

		o = json_object_new_object();
		if (o) {
			jadd(o, "name", jstr(e->name), &ok);
			jadd(o, "type", json_object_new_int64(e->type), &ok);
			jadd(o, "config", json_object_new_uint64(e->config), &ok);
			jadd(o, "freq", json_object_new_boolean(e->freq), &ok);
			jadd(o, "value", json_object_new_uint64(e->value), &ok);
		}
		jappend(arr, o, &ok);
	}
	jadd(root, "events", arr, &ok);

	jadd(root, "start_ns", json_object_new_uint64(m->start_ns), &ok);
	jadd(root, "end_ns", json_object_new_uint64(m->end_ns), &ok);
	jadd(root, "exit_status", json_object_new_int64(m->exit_status), &ok);
	jadd(root, "samples", json_object_new_uint64(m->samples), &ok);
	jadd(root, "lost", json_object_new_uint64(m->lost), &ok);
	jadd(root, "throttled", json_object_new_uint64(m->throttled), &ok);
	jadd(root, "unwind_errors", json_object_new_uint64(m->unwind_errors), &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nprocs; i++) {
		const struct nw_manifest_process *p = &m->procs[i];

		o = json_object_new_object();
		if (o) {
			jadd(o, "pid", json_object_new_int64(p->pid), &ok);
			jadd(o, "ppid", json_object_new_int64(p->ppid), &ok);
			jadd(o, "comm", jstr(p->comm), &ok);
		}
		jappend(arr, o, &ok);
	}
	jadd(root, "processes", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nthreads; i++) {
		const struct nw_manifest_thread *t = &m->threads[i];

		o = json_object_new_object();
		if (o) {
			jadd(o, "pid", json_object_new_int64(t->pid), &ok);
			jadd(o, "tid", json_object_new_int64(t->tid), &ok);
			jadd(o, "comm", jstr(t->comm), &ok);
			jadd(o, "file", jstr(t->file), &ok);
			jadd(o, "samples", json_object_new_uint64(t->samples), &ok);
		}
		jappend(arr, o, &ok);
	}
	jadd(root, "threads", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nmodules; i++) {
		const struct nw_manifest_module *mod = &m->modules[i];

		o = json_object_new_object();
		if (o) {
			jadd(o, "path", jstr(mod->path), &ok);
			jadd(o, "build_id", jstr(mod->build_id), &ok);
		}
		jappend(arr, o, &ok);
	}
	jadd(root, "modules", arr, &ok);

	if (!ok) {
		json_object_put(root);
		return NULL;
	}
	return root;
}

int nw_manifest_write(const char *path, const struct nw_manifest *m)
{
	struct json_object *root = manifest_to_json(m);
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

static int read_events(struct jin *c, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = jget_array(c, root, NULL, "events", &arr, &n);
	if (err)
		return err;
	if (n) {
		m->events = calloc(n, sizeof(*m->events));
		if (!m->events)
			return -ENOMEM;
	}
	m->nevents = n;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_manifest_event *e = &m->events[i];
		struct json_object *freq;

		err = jget_item(c, arr, "events", i, &o, where, sizeof(where));
		if (!err)
			err = jget_str(c, o, where, "name", &e->name);
		if (!err)
			err = jget_u32(c, o, where, "type", &e->type);
		if (!err)
			err = jget_u64(c, o, where, "config", UINT64_MAX, &e->config);
		if (!err)
			err = jget(c, o, where, "freq", json_type_boolean, "true or false", &freq);
		if (!err)
			e->freq = json_object_get_boolean(freq);
		if (!err)
			err = jget_u64(c, o, where, "value", UINT64_MAX, &e->value);
		if (err)
			return err;
	}
	return 0;
}

static int read_procs(struct jin *c, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = jget_array(c, root, NULL, "processes", &arr, &n);
	if (err)
		return err;
	if (n) {
		m->procs = calloc(n, sizeof(*m->procs));
		if (!m->procs)
			return -ENOMEM;
	}
	m->nprocs = n;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_manifest_process *p = &m->procs[i];

		err = jget_item(c, arr, "processes", i, &o, where, sizeof(where));
		if (!err)
			err = jget_u32(c, o, where, "pid", &p->pid);
		if (!err)
			err = jget_u32(c, o, where, "ppid", &p->ppid);
		if (!err)
			err = jget_str(c, o, where, "comm", &p->comm);
		if (err)
			return err;
	}
	return 0;
}

static int read_threads(struct jin *c, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = jget_array(c, root, NULL, "threads", &arr, &n);
	if (err)
		return err;
	if (n) {
		m->threads = calloc(n, sizeof(*m->threads));
		if (!m->threads)
			return -ENOMEM;
	}
	m->nthreads = n;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_manifest_thread *t = &m->threads[i];

		err = jget_item(c, arr, "threads", i, &o, where, sizeof(where));
		if (!err)
			err = jget_u32(c, o, where, "pid", &t->pid);
		if (!err)
			err = jget_u32(c, o, where, "tid", &t->tid);
		if (!err)
			err = jget_str(c, o, where, "comm", &t->comm);
		if (!err)
			err = jget_str(c, o, where, "file", &t->file);
		if (!err)
			err = jget_u64(c, o, where, "samples", UINT64_MAX, &t->samples);
		if (err)
			return err;
	}
	return 0;
}

static int read_modules(struct jin *c, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = jget_array(c, root, NULL, "modules", &arr, &n);
	if (err)
		return err;
	if (n) {
		m->modules = calloc(n, sizeof(*m->modules));
		if (!m->modules)
			return -ENOMEM;
	}
	m->nmodules = n;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_manifest_module *mod = &m->modules[i];

		err = jget_item(c, arr, "modules", i, &o, where, sizeof(where));
		if (!err)
			err = jget_str(c, o, where, "path", &mod->path);
		if (!err)
			err = jget_str(c, o, where, "build_id", &mod->build_id);
		if (err)
			return err;
	}
	return 0;
}

static int read_argv(struct jin *c, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *s;
	uint32_t n = 0;
	int err;

	err = jget_array(c, root, NULL, "argv", &arr, &n);
	if (err)
		return err;
	/* NULL-terminated, like main's argv. */
	m->argv = calloc((size_t)n + 1, sizeof(*m->argv));
	if (!m->argv)
		return -ENOMEM;
	m->argc = n;
	for (uint32_t i = 0; i < n; i++) {
		s = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(s, json_type_string))
			return jfail(c, "\"argv[%u]\" must be a string", i);
		m->argv[i] = strdup(json_object_get_string(s));
		if (!m->argv[i])
			return -ENOMEM;
	}
	return 0;
}

static int manifest_from_json(struct jin *c, struct json_object *root, struct nw_manifest *m)
{
	int err;

	err = jget_u32(c, root, NULL, "version", &m->version);
	if (err)
		return err;
	if (m->version != NW_MANIFEST_VERSION)
		return jfail(c, "unsupported manifest version %u (this Narwhal reads %d)",
			     m->version, NW_MANIFEST_VERSION);
	err = jget_str(c, root, NULL, "narwhal_version", &m->narwhal_version);
	if (!err)
		err = jget_str(c, root, NULL, "arch", &m->arch);
	if (!err)
		err = read_argv(c, root, m);
	if (!err)
		err = jget_str(c, root, NULL, "call_graph", &m->call_graph);
	if (!err)
		err = jget_u32(c, root, NULL, "stack_size", &m->stack_size);
	if (!err)
		err = read_events(c, root, m);
	if (!err)
		err = jget_u64(c, root, NULL, "start_ns", UINT64_MAX, &m->start_ns);
	if (!err)
		err = jget_u64(c, root, NULL, "end_ns", UINT64_MAX, &m->end_ns);
	if (!err) {
		struct json_object *o;
		int64_t s;

		err = jget(c, root, NULL, "exit_status", json_type_int, "an integer", &o);
		if (!err) {
			s = json_object_get_int64(o);
			if (s < INT_MIN || s > INT_MAX)
				err = jfail(c, "key \"exit_status\" is out of range");
			else
				m->exit_status = (int)s;
		}
	}
	if (!err)
		err = jget_u64(c, root, NULL, "samples", UINT64_MAX, &m->samples);
	if (!err)
		err = jget_u64(c, root, NULL, "lost", UINT64_MAX, &m->lost);
	if (!err)
		err = jget_u64(c, root, NULL, "throttled", UINT64_MAX, &m->throttled);
	if (!err)
		err = jget_u64(c, root, NULL, "unwind_errors", UINT64_MAX, &m->unwind_errors);
	if (!err)
		err = read_procs(c, root, m);
	if (!err)
		err = read_threads(c, root, m);
	if (!err)
		err = read_modules(c, root, m);
	return err;
}

int nw_manifest_read(const char *path, struct nw_manifest **ret, char *err, size_t errlen)
{
	struct jin c = { .path = path, .err = err, .errlen = errlen };
	struct json_object *root = NULL;
	struct nw_manifest *m;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	rc = jparse_file(&c, &root);
	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m) {
		json_object_put(root);
		return -ENOMEM;
	}
	rc = manifest_from_json(&c, root, m);
	json_object_put(root);
	if (rc) {
		if (rc == -ENOMEM && err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		nw_manifest_free(m);
		return rc;
	}
	*ret = m;
	return 0;
}

void nw_manifest_free(struct nw_manifest *m)
{
	if (!m)
		return;
	free(m->narwhal_version);
	free(m->arch);
	for (uint32_t i = 0; m->argv && i < m->argc; i++)
		free(m->argv[i]);
	free(m->argv);
	free(m->call_graph);
	for (uint32_t i = 0; m->events && i < m->nevents; i++)
		free(m->events[i].name);
	free(m->events);
	for (uint32_t i = 0; m->procs && i < m->nprocs; i++)
		free(m->procs[i].comm);
	free(m->procs);
	for (uint32_t i = 0; m->threads && i < m->nthreads; i++) {
		free(m->threads[i].comm);
		free(m->threads[i].file);
	}
	free(m->threads);
	for (uint32_t i = 0; m->modules && i < m->nmodules; i++) {
		free(m->modules[i].path);
		free(m->modules[i].build_id);
	}
	free(m->modules);
	free(m);
}
