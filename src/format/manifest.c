/* SPDX-License-Identifier: MIT */
/*
 * manifest.json, with json-c.  Keys are the struct fields' names.  The
 * reader requires every key the writer writes, checks each value's type and
 * range, and names the file and the key (events[1].config) in its message;
 * keys it does not know are ignored.
 */
#include "format/manifest.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "format/json.h"

/* ---- writer ---- */

static struct json_object *manifest_to_json(const struct nw_manifest *m)
{
	struct json_object *root = json_object_new_object(), *arr, *o;
	bool ok = root != NULL;

	if (!ok)
		return NULL;
	nw_json_add(root, "version", json_object_new_int64(m->version), &ok);
	nw_json_add(root, "narwhal_version", nw_json_str(m->narwhal_version), &ok);
	nw_json_add(root, "arch", nw_json_str(m->arch), &ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->argc; i++)
		nw_json_append(arr, nw_json_str(m->argv[i]), &ok);
	nw_json_add(root, "argv", arr, &ok);
	nw_json_add(root, "call_graph", nw_json_str(m->call_graph), &ok);
	nw_json_add(root, "stack_size", json_object_new_int64(m->stack_size), &ok);
	if (m->max_stack)
		nw_json_add(root, "max_stack", json_object_new_int64(m->max_stack), &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nevents; i++) {
		const struct nw_manifest_event *e = &m->events[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "name", nw_json_str(e->name), &ok);
			nw_json_add(o, "type", json_object_new_int64(e->type), &ok);
			nw_json_add(o, "config", json_object_new_uint64(e->config), &ok);
			nw_json_add(o, "freq", json_object_new_boolean(e->freq), &ok);
			nw_json_add(o, "value", json_object_new_uint64(e->value), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "events", arr, &ok);

	nw_json_add(root, "start_ns", json_object_new_uint64(m->start_ns), &ok);
	nw_json_add(root, "end_ns", json_object_new_uint64(m->end_ns), &ok);
	nw_json_add(root, "exit_status", json_object_new_int64(m->exit_status), &ok);
	nw_json_add(root, "samples", json_object_new_uint64(m->samples), &ok);
	nw_json_add(root, "lost", json_object_new_uint64(m->lost), &ok);
	nw_json_add(root, "throttled", json_object_new_uint64(m->throttled), &ok);
	nw_json_add(root, "unwind_errors", json_object_new_uint64(m->unwind_errors), &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nprocs; i++) {
		const struct nw_manifest_process *p = &m->procs[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "pid", json_object_new_int64(p->pid), &ok);
			nw_json_add(o, "ppid", json_object_new_int64(p->ppid), &ok);
			nw_json_add(o, "comm", nw_json_str(p->comm), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "processes", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nthreads; i++) {
		const struct nw_manifest_thread *t = &m->threads[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "pid", json_object_new_int64(t->pid), &ok);
			nw_json_add(o, "tid", json_object_new_int64(t->tid), &ok);
			nw_json_add(o, "comm", nw_json_str(t->comm), &ok);
			nw_json_add(o, "file", nw_json_str(t->file), &ok);
			nw_json_add(o, "samples", json_object_new_uint64(t->samples), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "threads", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nmodules; i++) {
		const struct nw_manifest_module *mod = &m->modules[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "path", nw_json_str(mod->path), &ok);
			nw_json_add(o, "build_id", nw_json_str(mod->build_id), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "modules", arr, &ok);

	if (!ok) {
		json_object_put(root);
		return NULL;
	}
	return root;
}

int nw_manifest_write(const char *path, const struct nw_manifest *m)
{
	return nw_json_write_file(path, manifest_to_json(m));
}

/* ---- reader ---- */

static int read_events(struct nw_json_in *in, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "events", &arr, &n);
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
		struct json_object *freq = NULL;

		err = nw_json_get_item(in, arr, "events", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "name", &e->name);
		if (!err)
			err = nw_json_get_u32(in, o, where, "type", &e->type);
		if (!err)
			err = nw_json_get_u64(in, o, where, "config", UINT64_MAX, &e->config);
		if (!err)
			err = nw_json_get(in, o, where, "freq", json_type_boolean, "true or false",
					  &freq);
		if (!err)
			e->freq = json_object_get_boolean(freq);
		if (!err)
			err = nw_json_get_u64(in, o, where, "value", UINT64_MAX, &e->value);
		if (err)
			return err;
	}
	return 0;
}

static int read_procs(struct nw_json_in *in, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "processes", &arr, &n);
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

		err = nw_json_get_item(in, arr, "processes", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u32(in, o, where, "pid", &p->pid);
		if (!err)
			err = nw_json_get_u32(in, o, where, "ppid", &p->ppid);
		if (!err)
			err = nw_json_get_str(in, o, where, "comm", &p->comm);
		if (err)
			return err;
	}
	return 0;
}

static int read_threads(struct nw_json_in *in, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "threads", &arr, &n);
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

		err = nw_json_get_item(in, arr, "threads", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u32(in, o, where, "pid", &t->pid);
		if (!err)
			err = nw_json_get_u32(in, o, where, "tid", &t->tid);
		if (!err)
			err = nw_json_get_str(in, o, where, "comm", &t->comm);
		if (!err)
			err = nw_json_get_str(in, o, where, "file", &t->file);
		if (!err)
			err = nw_json_get_u64(in, o, where, "samples", UINT64_MAX, &t->samples);
		if (err)
			return err;
	}
	return 0;
}

static int read_modules(struct nw_json_in *in, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "modules", &arr, &n);
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

		err = nw_json_get_item(in, arr, "modules", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "path", &mod->path);
		if (!err)
			err = nw_json_get_str(in, o, where, "build_id", &mod->build_id);
		if (err)
			return err;
	}
	return 0;
}

static int read_argv(struct nw_json_in *in, struct json_object *root, struct nw_manifest *m)
{
	struct json_object *arr, *s;
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "argv", &arr, &n);
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
			return nw_json_fail(in, "\"argv[%u]\" must be a string", i);
		m->argv[i] = strdup(json_object_get_string(s));
		if (!m->argv[i])
			return -ENOMEM;
	}
	return 0;
}

static int read_manifest(struct nw_json_in *in, struct json_object *root, struct nw_manifest *m)
{
	int err;

	err = nw_json_get_u32(in, root, NULL, "version", &m->version);
	if (err)
		return err;
	if (m->version != NW_MANIFEST_VERSION)
		return nw_json_fail(in, "unsupported manifest version %u (this Narwhal reads %d)",
				    m->version, NW_MANIFEST_VERSION);
	err = nw_json_get_str(in, root, NULL, "narwhal_version", &m->narwhal_version);
	if (!err)
		err = nw_json_get_str(in, root, NULL, "arch", &m->arch);
	if (!err)
		err = read_argv(in, root, m);
	if (!err)
		err = nw_json_get_str(in, root, NULL, "call_graph", &m->call_graph);
	if (!err)
		err = nw_json_get_u32(in, root, NULL, "stack_size", &m->stack_size);
	/* Optional: older manifests lack it. */
	if (!err && json_object_object_get_ex(root, "max_stack", NULL))
		err = nw_json_get_u32(in, root, NULL, "max_stack", &m->max_stack);
	if (!err)
		err = read_events(in, root, m);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "start_ns", UINT64_MAX, &m->start_ns);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "end_ns", UINT64_MAX, &m->end_ns);
	if (!err) {
		struct json_object *o;
		int64_t s;

		err = nw_json_get(in, root, NULL, "exit_status", json_type_int, "an integer", &o);
		if (!err) {
			s = json_object_get_int64(o);
			if (s < INT_MIN || s > INT_MAX)
				err = nw_json_fail(in, "key \"exit_status\" is out of range");
			else
				m->exit_status = (int)s;
		}
	}
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "samples", UINT64_MAX, &m->samples);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "lost", UINT64_MAX, &m->lost);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "throttled", UINT64_MAX, &m->throttled);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "unwind_errors", UINT64_MAX,
				      &m->unwind_errors);
	if (!err)
		err = read_procs(in, root, m);
	if (!err)
		err = read_threads(in, root, m);
	if (!err)
		err = read_modules(in, root, m);
	return err;
}

/* nw_json_read_file()'s hook: @ret is a struct nw_manifest **. */
static int manifest_from_json(struct nw_json_in *in, struct json_object *root, void *ret)
{
	struct nw_manifest *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	err = read_manifest(in, root, m);
	if (err) {
		nw_manifest_free(m);
		return err;
	}
	*(struct nw_manifest **)ret = m;
	return 0;
}

int nw_manifest_read(const char *path, struct nw_manifest **ret, char *err, size_t errlen)
{
	return nw_json_read_file(path, err, errlen, manifest_from_json, ret);
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
