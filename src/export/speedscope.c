/* SPDX-License-Identifier: MIT */
/* The speedscope export (json-c builds and escapes the JSON); see speedscope.h. */
#include "export/speedscope.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

struct ctx {
	const struct nw_profile *p;
	unsigned metric;
	int64_t *frame_of; /* per func: index in shared.frames, or -1 */
	json_object *frames;
	int64_t nframes;
};

/* Adds a string member made valid UTF-8; -ENOMEM. */
static int add_str(json_object *o, const char *key, const char *s)
{
	int failed = 0;
	char *c = nw_export_clean(s, &failed);
	json_object *v;

	if (!c)
		return -ENOMEM;
	v = json_object_new_string(c);
	free(c);
	if (!v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int add_obj(json_object *o, const char *key, json_object *v)
{
	if (!v || json_object_object_add(o, key, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int append(json_object *a, json_object *v)
{
	if (!v || json_object_array_add(a, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* The shared frame of func @fi, added on first use; -ENOMEM. */
static int64_t frame_of(struct ctx *c, uint32_t fi)
{
	const struct nw_func *f = &c->p->funcs[fi];
	json_object *fr;

	if (c->frame_of[fi] >= 0)
		return c->frame_of[fi];
	fr = json_object_new_object();
	if (!fr)
		return -ENOMEM;
	if (add_str(fr, "name", f->name) || (f->file && add_str(fr, "file", f->file)) ||
	    (f->line && add_obj(fr, "line", json_object_new_int64(f->line))) ||
	    append(c->frames, fr)) {
		json_object_put(fr);
		return -ENOMEM;
	}
	c->frame_of[fi] = c->nframes++;
	return c->frame_of[fi];
}

/* The stack of @node, root first; -ENOMEM. */
static json_object *stack_of(struct ctx *c, const struct nw_cct *t, uint32_t node)
{
	uint32_t depth = 0, k;
	json_object *a;

	for (uint32_t i = node; i != NW_CCT_ROOT; i = t->nodes[i].parent)
		depth++;
	a = json_object_new_array_ext((int)depth);
	if (!a)
		return NULL;
	/* Fill from the leaf backwards: put_idx with holes is allowed up front. */
	k = depth;
	for (uint32_t i = node; i != NW_CCT_ROOT; i = t->nodes[i].parent) {
		int64_t fr = frame_of(c, (uint32_t)t->nodes[i].ip);
		json_object *v = fr >= 0 ? json_object_new_int64(fr) : NULL;

		if (!v || json_object_array_put_idx(a, --k, v)) {
			json_object_put(v);
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

/* The profile of thread @th, or NULL on ENOMEM; *weight gets its total. */
static json_object *thread_profile(struct ctx *c, const struct nw_prof_thread *th,
				   uint64_t *weight)
{
	const struct nw_cct *t = th->tree;
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	json_object *prof = json_object_new_object();
	json_object *samples = json_object_new_array(), *weights = json_object_new_array();
	char *name = NULL;
	uint64_t total = 0;
	uint32_t n;

	if (!order || !prof || !samples || !weights)
		goto fail;
	n = nw_cct_preorder(t, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		uint64_t w = nw_cct_metrics(t, i)[c->metric];

		/* The root's own weight has no stack: speedscope needs one frame. */
		if (!w || i == NW_CCT_ROOT)
			continue;
		if (append(samples, stack_of(c, t, i)) ||
		    append(weights, json_object_new_int64(w > INT64_MAX ? INT64_MAX : (int64_t)w)))
			goto fail;
		total += w;
	}
	if (asprintf(&name, "%s (pid %u, tid %u)", th->comm ? th->comm : "", th->pid, th->tid) <
	    0) {
		name = NULL;
		goto fail;
	}
	if (add_str(prof, "type", "sampled") || add_str(prof, "name", name) ||
	    add_str(prof, "unit",
		    nw_export_metric_is_ns(c->p->metric_names[c->metric]) ? "nanoseconds"
									  : "none") ||
	    add_obj(prof, "startValue", json_object_new_int64(0)) ||
	    add_obj(prof, "endValue",
		    json_object_new_int64(total > INT64_MAX ? INT64_MAX : (int64_t)total)))
		goto fail;
	if (add_obj(prof, "samples", samples)) {
		samples = NULL;
		goto fail;
	}
	samples = NULL;
	if (add_obj(prof, "weights", weights)) {
		weights = NULL;
		goto fail;
	}
	free(name);
	free(order);
	*weight = total;
	return prof;
fail:
	free(name);
	free(order);
	json_object_put(samples);
	json_object_put(weights);
	json_object_put(prof);
	return NULL;
}

unsigned nw_speedscope_default_metric(const struct nw_profile *p)
{
	int m;

	if (p->nmetrics >= 2) {
		const char *k = strrchr(p->metric_names[1], ':');

		if (k && strcmp(k + 1, "period") == 0)
			return 1;
	}
	m = nw_profile_find_metric(p, NULL);
	return m > 0 ? (unsigned)m : 0;
}

static int build(struct ctx *c, json_object *root, const struct nw_filter *f)
{
	const struct nw_manifest *mf = c->p->manifest;
	json_object *profiles, *shared;
	uint64_t best = 0;
	int64_t active = 0, nprof = 0;
	char *cmd = NULL;
	size_t len = 0;
	FILE *s;

	/* Each object belongs to its parent as soon as it is made. */
	profiles = json_object_new_array();
	if (add_obj(root, "profiles", profiles))
		return -ENOMEM;
	shared = json_object_new_object();
	if (add_obj(root, "shared", shared))
		return -ENOMEM;
	c->frames = json_object_new_array();
	if (add_obj(shared, "frames", c->frames))
		return -ENOMEM;
	for (uint32_t i = 0; i < c->p->nthreads; i++) {
		const struct nw_prof_thread *th = &c->p->threads[i];
		uint64_t w = 0;
		json_object *prof;

		if (!th->tree || !nw_filter_match(f, th))
			continue;
		prof = thread_profile(c, th, &w);
		if (!prof)
			return -ENOMEM;
		/* A thread without weight would be an empty, useless tab. */
		if (!w) {
			json_object_put(prof);
			continue;
		}
		if (append(profiles, prof))
			return -ENOMEM;
		if (w > best) {
			best = w;
			active = nprof;
		}
		nprof++;
	}
	s = open_memstream(&cmd, &len);
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; mf && i < mf->argc; i++)
		fprintf(s, "%s%s", i ? " " : "", mf->argv[i] ? mf->argv[i] : "");
	if (fclose(s) || !cmd) {
		free(cmd);
		return -ENOMEM;
	}
	if (add_str(root, "name", cmd[0] ? cmd : "narwhal measurement")) {
		free(cmd);
		return -ENOMEM;
	}
	free(cmd);
	if (add_obj(root, "activeProfileIndex", json_object_new_int64(active)))
		return -ENOMEM;
	return 0;
}

int nw_speedscope_write(FILE *out, const struct nw_profile *p, const struct nw_filter *f,
			unsigned metric)
{
	struct ctx c = { .p = p, .metric = metric };
	json_object *root;
	const char *text;
	int ret = -ENOMEM;

	if (metric >= p->nmetrics)
		return -EINVAL;
	for (uint32_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tree && p->threads[i].tree->nmetrics <= metric)
			return -EINVAL;
	for (uint32_t i = 0; i < p->nthreads; i++)
		for (uint32_t n = 1; p->threads[i].tree && n < p->threads[i].tree->n; n++)
			if (p->threads[i].tree->nodes[n].ip >= p->nfuncs)
				return -EINVAL;
	c.frame_of = malloc((p->nfuncs ? p->nfuncs : 1) * sizeof(*c.frame_of));
	root = json_object_new_object();
	if (!c.frame_of || !root)
		goto out;
	memset(c.frame_of, 0xff, (p->nfuncs ? p->nfuncs : 1) * sizeof(*c.frame_of));
	if (add_str(root, "$schema", SCHEMA_URL) ||
	    add_str(root, "exporter", "narwhal " NW_VERSION))
		goto out;
	ret = build(&c, root, f);
	if (ret)
		goto out;
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
							    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	fputs(text, out);
	fputc('\n', out);
	ret = fflush(out) != 0 || ferror(out) ? -EIO : 0;
out:
	json_object_put(root);
	free(c.frame_of);
	return ret;
}
