/* SPDX-License-Identifier: MIT */
/* locks.json; see locksfile.h. */
#include "format/locksfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "format/json.h"

static struct json_object *paths_json(const struct nw_lock_path *p, uint32_t n, bool *ok)
{
	struct json_object *a = json_object_new_array();

	for (uint32_t i = 0; a && i < n; i++) {
		struct json_object *o = json_object_new_object(), *fr = json_object_new_array();

		for (uint32_t f = 0; fr && f < p[i].nframes; f++)
			nw_json_append(fr, nw_json_str(p[i].frames[f]), ok);
		nw_json_add(o, "contentions", json_object_new_int64((int64_t)p[i].contentions), ok);
		nw_json_add(o, "ns", json_object_new_int64((int64_t)p[i].ns), ok);
		nw_json_add(o, "frames", fr, ok);
		nw_json_append(a, o, ok);
	}
	if (!a)
		*ok = false;
	return a;
}

static struct json_object *lock_json(const struct nw_lock *k, bool *ok)
{
	struct json_object *o = json_object_new_object();

	if (!o) {
		*ok = false;
		return NULL;
	}
	nw_json_add(o, "pid", json_object_new_int64(k->pid), ok);
	nw_json_add(o, "addr", nw_json_hex(k->addr), ok);
	if (k->name)
		nw_json_add(o, "name", nw_json_str(k->name), ok);
	else
		json_object_object_add(o, "name", NULL);
	nw_json_add(o, "contentions", json_object_new_int64((int64_t)k->contentions), ok);
	nw_json_add(o, "wait_ns", json_object_new_int64((int64_t)k->wait_ns), ok);
	nw_json_add(o, "max_ns", json_object_new_int64((int64_t)k->max_ns), ok);
	nw_json_add(o, "waiters", paths_json(k->waiters, k->nwaiters, ok), ok);
	nw_json_add(o, "releasers", paths_json(k->releasers, k->nreleasers, ok), ok);
	return o;
}

char *nw_locks_to_json(const struct nw_locks *l, size_t *ret_len)
{
	struct json_object *root = json_object_new_object(), *a = json_object_new_array();
	bool ok = root && a;
	char *text = NULL;

	nw_json_add(root, "rate", json_object_new_int64((int64_t)l->rate), &ok);
	nw_json_add(root, "unknown_releaser_ns",
		    json_object_new_int64((int64_t)l->unknown_releaser_ns), &ok);
	for (uint32_t i = 0; a && i < l->n; i++)
		nw_json_append(a, lock_json(&l->v[i], &ok), &ok);
	nw_json_add(root, "locks", a, &ok);
	if (ok) {
		const char *s = json_object_to_json_string_ext(
			root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);

		text = s ? strdup(s) : NULL;
		if (text)
			*ret_len = strlen(text);
	}
	json_object_put(root);
	return text;
}

static int read_paths(struct nw_json_in *in, struct json_object *o, const char *where,
		      const char *key, struct nw_lock_path **ret_v, uint32_t *ret_n)
{
	struct json_object *a;
	uint32_t n;
	int ret = nw_json_get_array(in, o, where, key, &a, &n);

	if (ret)
		return ret;
	*ret_v = calloc(n ? n : 1, sizeof(**ret_v));
	if (!*ret_v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_lock_path *p = &(*ret_v)[i];
		struct json_object *it, *fr;
		char w[160];
		uint32_t nf;

		ret = nw_json_get_item(in, a, key, i, &it, w, sizeof(w));
		if (!ret)
			ret = nw_json_get_u64(in, it, w, "contentions", UINT64_MAX, &p->contentions);
		if (!ret)
			ret = nw_json_get_u64(in, it, w, "ns", UINT64_MAX, &p->ns);
		if (!ret)
			ret = nw_json_get_array(in, it, w, "frames", &fr, &nf);
		if (!ret && !(p->frames = calloc(nf ? nf : 1, sizeof(*p->frames))))
			ret = -ENOMEM;
		*ret_n = i + 1;
		for (uint32_t f = 0; !ret && f < nf; f++) {
			const char *s = json_object_get_string(json_object_array_get_idx(fr, f));

			p->frames[f] = strdup(s ? s : "");
			if (!p->frames[f])
				ret = -ENOMEM;
			p->nframes = f + 1;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int read_lock(struct nw_json_in *in, struct json_object *o, const char *w,
		     struct nw_lock *k)
{
	uint64_t pid;
	int ret = nw_json_get_u64(in, o, w, "pid", UINT32_MAX, &pid);

	k->pid = (uint32_t)pid;
	if (!ret)
		ret = nw_json_get_hex(in, o, w, "addr", &k->addr);
	if (!ret)
		ret = nw_json_get_opt_str(in, o, w, "name", &k->name);
	if (!ret)
		ret = nw_json_get_u64(in, o, w, "contentions", UINT64_MAX, &k->contentions);
	if (!ret)
		ret = nw_json_get_u64(in, o, w, "wait_ns", UINT64_MAX, &k->wait_ns);
	if (!ret)
		ret = nw_json_get_u64(in, o, w, "max_ns", UINT64_MAX, &k->max_ns);
	if (!ret)
		ret = read_paths(in, o, w, "waiters", &k->waiters, &k->nwaiters);
	if (!ret)
		ret = read_paths(in, o, w, "releasers", &k->releasers, &k->nreleasers);
	return ret;
}

static int from_json(struct nw_json_in *in, struct json_object *root, void *arg)
{
	struct nw_locks *l = arg;
	struct json_object *a;
	uint32_t n;
	int ret = nw_json_get_u64(in, root, NULL, "rate", UINT64_MAX, &l->rate);

	if (!ret)
		ret = nw_json_get_u64(in, root, NULL, "unknown_releaser_ns", UINT64_MAX,
				      &l->unknown_releaser_ns);
	if (!ret)
		ret = nw_json_get_array(in, root, NULL, "locks", &a, &n);
	if (!ret && !(l->v = calloc(n ? n : 1, sizeof(*l->v))))
		ret = -ENOMEM;
	for (uint32_t i = 0; !ret && i < n; i++) {
		struct json_object *o;
		char w[64];

		ret = nw_json_get_item(in, a, "locks", i, &o, w, sizeof(w));
		l->n = i + 1;
		if (!ret)
			ret = read_lock(in, o, w, &l->v[i]);
	}
	return ret;
}

int nw_locks_read_buf(const char *name, const char *buf, size_t len, struct nw_locks **ret,
		      char *err, size_t errlen)
{
	struct nw_locks *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return -ENOMEM;
	rc = nw_json_read_buf(name, buf, len, err, errlen, from_json, l);
	if (rc) {
		nw_locks_free(l);
		return rc;
	}
	*ret = l;
	return 0;
}
