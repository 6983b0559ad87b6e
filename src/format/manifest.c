/* SPDX-License-Identifier: MIT */
/*
 * manifest.json, with json-c.  Keys are the model's field names.  The
 * reader requires every key the writer writes (those added by later
 * versions only from those versions on), checks each value's type and
 * range, and names the file and the key (events[1].config) in its message;
 * keys it does not know are ignored.
 */
#include "format/manifest.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/json.h"

/* ---- writer ---- */

static struct json_object *facts_to_json(const struct nw_module_facts *f)
{
	struct json_object *o = json_object_new_object(), *segs, *s;
	char id[2 * NW_BUILD_ID_MAX + 1];
	bool ok = o != NULL;

	if (!ok)
		return NULL;
	nw_build_id_hex(f->build_id, f->build_id_size, id, sizeof(id));
	nw_json_add(o, "build_id", nw_json_str(id), &ok);
	nw_json_add(o, "type", nw_json_str(f->dyn ? "dyn" : "exec"), &ok);
	nw_json_add(o, "machine", json_object_new_int64(f->machine), &ok);
	nw_json_add(o, "entry", nw_json_hex(f->entry), &ok);
	nw_json_add(o, "cfi", json_object_new_boolean(f->has_cfi), &ok);
	segs = json_object_new_array();
	for (uint32_t i = 0; segs && i < f->nsegs; i++) {
		const struct nw_segment *g = &f->segs[i];

		s = json_object_new_object();
		if (s) {
			nw_json_add(s, "vaddr", nw_json_hex(g->vaddr), &ok);
			nw_json_add(s, "memsz", nw_json_hex(g->memsz), &ok);
			nw_json_add(s, "offset", nw_json_hex(g->offset), &ok);
			nw_json_add(s, "filesz", nw_json_hex(g->filesz), &ok);
			nw_json_add(s, "exec", json_object_new_boolean(g->exec), &ok);
		}
		nw_json_append(segs, s, &ok);
	}
	nw_json_add(o, "segments", segs, &ok);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static void add_run(struct json_object *root, const struct nw_run *r, bool *ok)
{
	struct json_object *arr, *o;

	nw_json_add(root, "narwhal_version", nw_json_str(r->narwhal_version), ok);
	nw_json_add(root, "arch", nw_json_str(r->arch), ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < r->argc; i++)
		nw_json_append(arr, nw_json_str(r->argv[i]), ok);
	nw_json_add(root, "argv", arr, ok);
	nw_json_add(root, "call_graph", nw_json_str(r->call_graph), ok);
	nw_json_add(root, "stack_size", json_object_new_int64(r->stack_size), ok);
	if (r->max_stack)
		nw_json_add(root, "max_stack", json_object_new_int64(r->max_stack), ok);
	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < r->nevents; i++) {
		const struct nw_event_info *e = &r->events[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "name", nw_json_str(e->name), ok);
			nw_json_add(o, "type", json_object_new_int64(e->type), ok);
			nw_json_add(o, "config", json_object_new_uint64(e->config), ok);
			nw_json_add(o, "freq", json_object_new_boolean(e->freq), ok);
			nw_json_add(o, "value", json_object_new_uint64(e->value), ok);
		}
		nw_json_append(arr, o, ok);
	}
	nw_json_add(root, "events", arr, ok);
	nw_json_add(root, "start_ns", json_object_new_uint64(r->start_ns), ok);
	nw_json_add(root, "end_ns", json_object_new_uint64(r->end_ns), ok);
	nw_json_add(root, "traced", json_object_new_boolean(r->traced), ok);
	nw_json_add(root, "kernel", json_object_new_boolean(r->kernel), ok);
	nw_json_add(root, "written", nw_json_str(nw_run_written_name(r->written)), ok);
	if (r->window_ns)
		nw_json_add(root, "window_ns", json_object_new_uint64(r->window_ns), ok);
	if (r->pack)
		nw_json_add(root, "pack", nw_json_str(r->pack), ok);
	if (r->journal) {
		struct json_object *segs = json_object_new_array();

		nw_json_add(root, "journal", nw_json_str(r->journal), ok);
		for (uint32_t i = 0; segs && i < r->nsegments; i++) {
			struct json_object *o = json_object_new_object();

			if (o)
				nw_json_add(o, "bytes", json_object_new_uint64(r->segments[i]), ok);
			nw_json_append(segs, o, ok);
		}
		nw_json_add(root, "segments", segs, ok);
	}
	if (r->clock_start_ns) {
		nw_json_add(root, "clock_start_ns", json_object_new_uint64(r->clock_start_ns), ok);
		nw_json_add(root, "clock_end_ns", json_object_new_uint64(r->clock_end_ns), ok);
	}
	nw_json_add(root, "exit_status", json_object_new_int64(r->exit_status), ok);
	nw_json_add(root, "samples", json_object_new_uint64(r->samples), ok);
	nw_json_add(root, "lost", json_object_new_uint64(r->lost), ok);
	nw_json_add(root, "throttled", json_object_new_uint64(r->throttled), ok);
	nw_json_add(root, "unwind_errors", json_object_new_uint64(r->unwind_errors), ok);
	if (r->bpf_frames || r->bpf_copies) {
		nw_json_add(root, "bpf_frames", json_object_new_uint64(r->bpf_frames), ok);
		nw_json_add(root, "bpf_fp_frames", json_object_new_uint64(r->bpf_fp_frames), ok);
		nw_json_add(root, "bpf_copies", json_object_new_uint64(r->bpf_copies), ok);
	}
}

static struct json_object *manifest_to_json(const struct nw_measurement *m)
{
	struct json_object *root = json_object_new_object(), *arr, *o;
	bool ok = root != NULL;

	if (!ok)
		return NULL;
	nw_json_add(root, "version", json_object_new_int64(NW_MANIFEST_VERSION), &ok);
	add_run(root, &m->run, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nmetrics; i++) {
		const struct nw_metric *d = &m->metrics[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "name", nw_json_str(d->name), &ok);
			nw_json_add(o, "event", nw_json_str(d->event), &ok);
			nw_json_add(o, "kind", nw_json_str(nw_metric_kind_name(d->kind)), &ok);
			nw_json_add(o, "unit", nw_json_str(nw_metric_unit_name(d->unit)), &ok);
			nw_json_add(o, "period", json_object_new_uint64(d->period), &ok);
			nw_json_add(o, "flags", json_object_new_int64(d->flags), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "metrics", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nprocs; i++) {
		const struct nw_mprocess *p = &m->procs[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "pid", json_object_new_int64(p->pid), &ok);
			nw_json_add(o, "ppid", json_object_new_int64(p->ppid), &ok);
			nw_json_add(o, "comm", nw_json_str(p->comm), &ok);
			if (p->nspid)
				nw_json_add(o, "nspid", json_object_new_int64(p->nspid), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "processes", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->nthreads; i++) {
		const struct nw_mthread *t = &m->threads[i];

		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "pid", json_object_new_int64(t->pid), &ok);
			nw_json_add(o, "tid", json_object_new_int64(t->tid), &ok);
			nw_json_add(o, "comm", nw_json_str(t->comm), &ok);
			nw_json_add(o, "file", nw_json_str(t->file), &ok);
			nw_json_add(o, "samples", json_object_new_uint64(t->samples), &ok);
			if (t->first_ns && t->last_ns >= t->first_ns) {
				nw_json_add(o, "first_ns", json_object_new_uint64(t->first_ns), &ok);
				nw_json_add(o, "last_ns", json_object_new_uint64(t->last_ns), &ok);
			}
			if (t->trace_file)
				nw_json_add(o, "trace", nw_json_str(t->trace_file), &ok);
		}
		nw_json_append(arr, o, &ok);
	}
	nw_json_add(root, "threads", arr, &ok);

	arr = json_object_new_array();
	for (uint32_t i = 0; arr && i < m->modules->n; i++) {
		const struct nw_module *mod = &m->modules->v[i];
		char id[2 * NW_BUILD_ID_MAX + 1];

		nw_build_id_hex(mod->build_id, mod->build_id_size, id, sizeof(id));
		o = json_object_new_object();
		if (o) {
			nw_json_add(o, "path", nw_json_str(mod->path), &ok);
			nw_json_add(o, "build_id", nw_json_str(id), &ok);
			if (mod->facts.known)
				nw_json_add(o, "elf", facts_to_json(&mod->facts), &ok);
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

int nw_manifest_write(const char *path, const struct nw_measurement *m)
{
	return nw_json_write_file(path, manifest_to_json(m));
}

int nw_manifest_write_fp(FILE *f, const struct nw_measurement *m)
{
	return nw_json_write_fp(f, manifest_to_json(m));
}

/* ---- reader ---- */

static int get_bool(struct nw_json_in *in, struct json_object *o, const char *where,
		    const char *key, bool *ret)
{
	struct json_object *v;
	int err = nw_json_get(in, o, where, key, json_type_boolean, "true or false", &v);

	if (!err)
		*ret = json_object_get_boolean(v);
	return err;
}

static int read_events(struct nw_json_in *in, struct json_object *root, struct nw_run *r)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "events", &arr, &n);
	if (err)
		return err;
	if (n) {
		r->events = calloc(n, sizeof(*r->events));
		if (!r->events)
			return -ENOMEM;
	}
	r->nevents = n;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_event_info *e = &r->events[i];

		err = nw_json_get_item(in, arr, "events", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "name", &e->name);
		if (!err)
			err = nw_json_get_u32(in, o, where, "type", &e->type);
		if (!err)
			err = nw_json_get_u64(in, o, where, "config", UINT64_MAX, &e->config);
		if (!err)
			err = get_bool(in, o, where, "freq", &e->freq);
		if (!err)
			err = nw_json_get_u64(in, o, where, "value", UINT64_MAX, &e->value);
		if (err)
			return err;
	}
	return 0;
}

static int read_metrics(struct nw_json_in *in, struct json_object *root,
			struct nw_measurement *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "metrics", &arr, &n);
	if (err)
		return err;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_metric d = { 0 };
		char *kind = NULL, *unit = NULL;
		int k = 0, u = 0;

		err = nw_json_get_item(in, arr, "metrics", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "name", &d.name);
		if (!err)
			err = nw_json_get_str(in, o, where, "event", &d.event);
		if (!err)
			err = nw_json_get_str(in, o, where, "kind", &kind);
		if (!err && (k = nw_metric_kind_parse(kind)) < 0)
			err = nw_json_fail(in, "\"%s.kind\" is \"%s\", which this Narwhal does not "
					   "know", where, kind);
		if (!err)
			err = nw_json_get_str(in, o, where, "unit", &unit);
		if (!err && (u = nw_metric_unit_parse(unit)) < 0)
			err = nw_json_fail(in, "\"%s.unit\" is \"%s\", which this Narwhal does not "
					   "know", where, unit);
		if (!err)
			err = nw_json_get_u64(in, o, where, "period", UINT64_MAX, &d.period);
		if (!err)
			err = nw_json_get_u32(in, o, where, "flags", &d.flags);
		d.kind = (enum nw_metric_kind)k;
		d.unit = (enum nw_metric_unit)u;
		if (!err) {
			err = nw_measurement_copy_metric(m, &d);
			err = err < 0 ? err : 0;
		}
		free(kind);
		free(unit);
		nw_metric_fini(&d);
		if (err)
			return err;
	}
	return 0;
}

/* Version 1 wrote no descriptors: two metrics per event, the layout of its writer. */
static int metrics_of_v1(struct nw_measurement *m)
{
	for (uint32_t e = 0; e < m->run.nevents; e++) {
		const struct nw_event_info *ev = &m->run.events[e];
		bool off = !strcmp(ev->name, "off-cpu");
		uint64_t period = off ? 1 : ev->freq ? 0 : ev->value;
		int ret;

		ret = nw_measurement_add_metric(m, ev->name,
						off ? NW_METRIC_SWITCHES : NW_METRIC_SAMPLES, period);
		if (ret >= 0)
			ret = nw_measurement_add_metric(m, ev->name,
							off ? NW_METRIC_OFFCPU_TIME
							    : NW_METRIC_PERIOD,
							period);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int read_procs(struct nw_json_in *in, struct json_object *root, struct nw_measurement *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "processes", &arr, &n);
	for (uint32_t i = 0; !err && i < n; i++) {
		uint32_t pid = 0, ppid = 0, nspid = 0;
		char *comm = NULL;

		err = nw_json_get_item(in, arr, "processes", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u32(in, o, where, "pid", &pid);
		if (!err)
			err = nw_json_get_u32(in, o, where, "ppid", &ppid);
		if (!err)
			err = nw_json_get_str(in, o, where, "comm", &comm);
		/* Optional: a process in a PID namespace of its own. */
		if (!err && json_object_object_get_ex(o, "nspid", NULL))
			err = nw_json_get_u32(in, o, where, "nspid", &nspid);
		if (!err) {
			err = nw_measurement_add_process(m, pid, ppid, comm);
			if (err >= 0)
				m->procs[err].nspid = nspid;
			err = err < 0 ? err : 0;
		}
		free(comm);
	}
	return err;
}

static int read_threads(struct nw_json_in *in, struct json_object *root,
			struct nw_measurement *m)
{
	struct json_object *arr, *o;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "threads", &arr, &n);
	for (uint32_t i = 0; !err && i < n; i++) {
		uint32_t pid = 0, tid = 0;
		char *comm = NULL, *file = NULL, *trace = NULL;
		uint64_t samples = 0, first_ns = 0, last_ns = 0;
		struct nw_mthread *th;

		err = nw_json_get_item(in, arr, "threads", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u32(in, o, where, "pid", &pid);
		if (!err)
			err = nw_json_get_u32(in, o, where, "tid", &tid);
		if (!err)
			err = nw_json_get_str(in, o, where, "comm", &comm);
		if (!err)
			err = nw_json_get_str(in, o, where, "file", &file);
		if (!err)
			err = nw_json_get_u64(in, o, where, "samples", UINT64_MAX, &samples);
		/* Optional: written since thread lifetimes were kept. */
		if (!err && json_object_object_get_ex(o, "first_ns", NULL))
			err = nw_json_get_u64(in, o, where, "first_ns", UINT64_MAX, &first_ns);
		if (!err && json_object_object_get_ex(o, "last_ns", NULL))
			err = nw_json_get_u64(in, o, where, "last_ns", UINT64_MAX, &last_ns);
		if (!err && last_ns < first_ns)
			err = nw_json_fail(in, "%s.last_ns is before its first_ns", where);
		/* Optional: recorded with --no-trace, or before traces existed. */
		if (!err && json_object_object_get_ex(o, "trace", NULL))
			err = nw_json_get_str(in, o, where, "trace", &trace);
		if (!err && trace && (!trace[0] || strchr(trace, '/')))
			err = nw_json_fail(in, "\"%s.trace\" must name a file of the directory",
					   where);
		if (!err) {
			th = nw_measurement_add_thread(m, pid, tid, comm, file[0] ? file : NULL);
			if (!th) {
				err = -ENOMEM;
			} else {
				th->samples = samples;
				th->first_ns = first_ns;
				th->last_ns = last_ns;
				th->trace_file = trace;
				trace = NULL;
			}
		}
		free(comm);
		free(file);
		free(trace);
	}
	return err;
}

static int read_facts(struct nw_json_in *in, struct json_object *o, const char *where,
		      struct nw_module_facts *f)
{
	struct json_object *segs, *s;
	char fwhere[64], swhere[96], *id = NULL, *type = NULL;
	uint32_t n = 0, machine = 0;
	int err;

	snprintf(fwhere, sizeof(fwhere), "%s.elf", where);
	err = nw_json_get_str(in, o, fwhere, "build_id", &id);
	if (!err && nw_build_id_parse(id, f->build_id, &f->build_id_size))
		err = nw_json_fail(in, "\"%s.build_id\" is not a hex build-id", fwhere);
	if (!err)
		err = nw_json_get_str(in, o, fwhere, "type", &type);
	if (!err && strcmp(type, "dyn") && strcmp(type, "exec"))
		err = nw_json_fail(in, "\"%s.type\" must be \"dyn\" or \"exec\"", fwhere);
	if (!err) {
		f->dyn = !strcmp(type, "dyn");
		err = nw_json_get_u32(in, o, fwhere, "machine", &machine);
		f->machine = (uint16_t)machine;
	}
	if (!err)
		err = nw_json_get_hex(in, o, fwhere, "entry", &f->entry);
	if (!err)
		err = get_bool(in, o, fwhere, "cfi", &f->has_cfi);
	if (!err)
		err = nw_json_get_array(in, o, fwhere, "segments", &segs, &n);
	free(id);
	free(type);
	if (err)
		return err;
	f->segs = calloc(n ? n : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_segment *g = &f->segs[i];
		char akey[80];

		snprintf(akey, sizeof(akey), "%s.segments", fwhere);
		err = nw_json_get_item(in, segs, akey, i, &s, swhere, sizeof(swhere));
		if (!err)
			err = nw_json_get_hex(in, s, swhere, "vaddr", &g->vaddr);
		if (!err)
			err = nw_json_get_hex(in, s, swhere, "memsz", &g->memsz);
		if (!err)
			err = nw_json_get_hex(in, s, swhere, "offset", &g->offset);
		if (!err)
			err = nw_json_get_hex(in, s, swhere, "filesz", &g->filesz);
		if (!err)
			err = get_bool(in, s, swhere, "exec", &g->exec);
		if (err)
			return err;
		f->nsegs++;
	}
	f->known = true;
	return 0;
}

static int read_modules(struct nw_json_in *in, struct json_object *root,
			struct nw_measurement *m)
{
	struct json_object *arr, *o, *elf;
	char where[48];
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "modules", &arr, &n);
	for (uint32_t i = 0; !err && i < n; i++) {
		char *path = NULL, *build_id = NULL;
		uint8_t id[NW_BUILD_ID_MAX], size = 0;
		int idx;

		err = nw_json_get_item(in, arr, "modules", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_str(in, o, where, "path", &path);
		if (!err)
			err = nw_json_get_str(in, o, where, "build_id", &build_id);
		if (!err && nw_build_id_parse(build_id, id, &size))
			err = nw_json_fail(in, "\"%s.build_id\" is not a hex build-id", where);
		if (!err) {
			idx = nw_module_intern(m->modules, path, id, size);
			if (idx < 0)
				err = idx;
			else if ((uint32_t)idx != i)
				err = nw_json_fail(in, "\"%s\" repeats module %d", where, idx);
		}
		if (!err && json_object_object_get_ex(o, "elf", &elf))
			err = read_facts(in, elf, where, &m->modules->v[i].facts);
		free(path);
		free(build_id);
	}
	return err;
}

static int read_argv(struct nw_json_in *in, struct json_object *root, struct nw_run *r)
{
	struct json_object *arr, *s;
	uint32_t n = 0;
	int err;

	err = nw_json_get_array(in, root, NULL, "argv", &arr, &n);
	if (err)
		return err;
	/* NULL-terminated, like main's argv. */
	r->argv = calloc((size_t)n + 1, sizeof(*r->argv));
	if (!r->argv)
		return -ENOMEM;
	r->argc = n;
	for (uint32_t i = 0; i < n; i++) {
		s = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(s, json_type_string))
			return nw_json_fail(in, "\"argv[%u]\" must be a string", i);
		r->argv[i] = strdup(json_object_get_string(s));
		if (!r->argv[i])
			return -ENOMEM;
	}
	return 0;
}

static int read_exit_status(struct nw_json_in *in, struct json_object *root, int *ret)
{
	struct json_object *o;
	int64_t s;
	int err = nw_json_get(in, root, NULL, "exit_status", json_type_int, "an integer", &o);

	if (err)
		return err;
	s = json_object_get_int64(o);
	if (s < INT_MIN || s > INT_MAX)
		return nw_json_fail(in, "key \"exit_status\" is out of range");
	*ret = (int)s;
	return 0;
}


/* The journal's segments: "segments": [{"bytes": N}, ...], none empty.  -EBADMSG, -ENOMEM. */
static int read_segments(struct nw_json_in *in, struct json_object *root, struct nw_run *r)
{
	struct json_object *arr, *o;
	char where[64];
	uint32_t n;
	int err;

	err = nw_json_get_array(in, root, NULL, "segments", &arr, &n);
	if (err)
		return err;
	r->segments = calloc(n ? n : 1, sizeof(*r->segments));
	if (!r->segments)
		return -ENOMEM;
	r->nsegments = n;
	for (uint32_t i = 0; i < n && !err; i++) {
		err = nw_json_get_item(in, arr, "segments", i, &o, where, sizeof(where));
		if (!err)
			err = nw_json_get_u64(in, o, where, "bytes", UINT64_MAX, &r->segments[i]);
		if (!err && !r->segments[i])
			err = nw_json_fail(in, "%s: an empty segment", where);
	}
	return err;
}

static int read_manifest(struct nw_json_in *in, struct json_object *root,
			 struct nw_measurement *m)
{
	struct nw_run *r = &m->run;
	uint32_t version = 0;
	int err;

	err = nw_json_get_u32(in, root, NULL, "version", &version);
	if (err)
		return err;
	if (version < 1 || version > NW_MANIFEST_VERSION)
		return nw_json_fail(in, "unsupported manifest version %u (this Narwhal reads 1 to %d)",
				    version, NW_MANIFEST_VERSION);
	err = nw_json_get_str(in, root, NULL, "narwhal_version", &r->narwhal_version);
	if (!err)
		err = nw_json_get_str(in, root, NULL, "arch", &r->arch);
	if (!err)
		err = read_argv(in, root, r);
	if (!err)
		err = nw_json_get_str(in, root, NULL, "call_graph", &r->call_graph);
	if (!err)
		err = nw_json_get_u32(in, root, NULL, "stack_size", &r->stack_size);
	/* Optional: older manifests lack it. */
	if (!err && json_object_object_get_ex(root, "max_stack", NULL))
		err = nw_json_get_u32(in, root, NULL, "max_stack", &r->max_stack);
	if (!err)
		err = read_events(in, root, r);
	if (!err)
		err = version >= 2 ? read_metrics(in, root, m) : metrics_of_v1(m);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "start_ns", UINT64_MAX, &r->start_ns);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "end_ns", UINT64_MAX, &r->end_ns);
	/* Optional: the monotonic clock of traces, and whether there are traces. */
	if (!err && json_object_object_get_ex(root, "traced", NULL))
		err = get_bool(in, root, NULL, "traced", &r->traced);
	if (!err && json_object_object_get_ex(root, "kernel", NULL))
		err = get_bool(in, root, NULL, "kernel", &r->kernel);
	/* Optional: when it was written (older manifests: at the end), the flight window. */
	if (!err && json_object_object_get_ex(root, "written", NULL)) {
		char *w = NULL;

		err = nw_json_get_str(in, root, NULL, "written", &w);
		if (!err && nw_run_written_parse(w) < 0)
			err = nw_json_fail(in, "\"written\" must be end, checkpoint, snapshot or "
					       "rotation, not \"%s\"", w);
		if (!err)
			r->written = (enum nw_run_written)nw_run_written_parse(w);
		free(w);
	}
	if (!err && json_object_object_get_ex(root, "window_ns", NULL))
		err = nw_json_get_u64(in, root, NULL, "window_ns", UINT64_MAX, &r->window_ns);
	if (!err)
		err = nw_json_get_opt_str(in, root, NULL, "pack", &r->pack);
	/* A plain name in the directory: nothing else is read through it. */
	if (!err && r->pack && (!r->pack[0] || strchr(r->pack, '/') || r->pack[0] == '.'))
		err = nw_json_fail(in, "\"pack\" must name a file of the directory, not \"%s\"",
				   r->pack);
	if (!err && r->pack)
		err = nw_json_get_opt_str(in, root, NULL, "journal", &r->journal);
	if (!err && r->journal &&
	    (!r->journal[0] || strchr(r->journal, '/') || r->journal[0] == '.'))
		err = nw_json_fail(in, "\"journal\" must name a file of the directory, not \"%s\"",
				   r->journal);
	if (!err && r->journal)
		err = read_segments(in, root, r);
	if (!err && json_object_object_get_ex(root, "clock_start_ns", NULL))
		err = nw_json_get_u64(in, root, NULL, "clock_start_ns", UINT64_MAX,
				      &r->clock_start_ns);
	if (!err && json_object_object_get_ex(root, "clock_end_ns", NULL))
		err = nw_json_get_u64(in, root, NULL, "clock_end_ns", UINT64_MAX,
				      &r->clock_end_ns);
	if (!err)
		err = read_exit_status(in, root, &r->exit_status);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "samples", UINT64_MAX, &r->samples);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "lost", UINT64_MAX, &r->lost);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "throttled", UINT64_MAX, &r->throttled);
	if (!err)
		err = nw_json_get_u64(in, root, NULL, "unwind_errors", UINT64_MAX,
				      &r->unwind_errors);
	/* -g bpf's counts, in measurements made in bpf mode only. */
	if (!err && json_object_object_get_ex(root, "bpf_frames", NULL))
		err = nw_json_get_u64(in, root, NULL, "bpf_frames", UINT64_MAX, &r->bpf_frames);
	if (!err && json_object_object_get_ex(root, "bpf_fp_frames", NULL))
		err = nw_json_get_u64(in, root, NULL, "bpf_fp_frames", UINT64_MAX,
				      &r->bpf_fp_frames);
	if (!err && json_object_object_get_ex(root, "bpf_copies", NULL))
		err = nw_json_get_u64(in, root, NULL, "bpf_copies", UINT64_MAX, &r->bpf_copies);
	if (!err)
		err = read_procs(in, root, m);
	if (!err)
		err = read_threads(in, root, m);
	if (!err)
		err = read_modules(in, root, m);
	return err;
}

/* nw_json_read_file()'s hook: @ret is the struct nw_measurement * to fill. */
static int manifest_from_json(struct nw_json_in *in, struct json_object *root, void *ret)
{
	return read_manifest(in, root, ret);
}

int nw_manifest_read(const char *path, struct nw_measurement *m, char *err, size_t errlen)
{
	return nw_json_read_file(path, err, errlen, manifest_from_json, m);
}
