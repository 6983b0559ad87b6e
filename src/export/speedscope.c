/* SPDX-License-Identifier: MIT */
/* The speedscope export (json-c builds and escapes the JSON); see speedscope.h. */
#include "export/speedscope.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "util/strbuf.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

struct ctx {
	const struct nw_stacks *p;
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
	const struct nw_func *f = &c->p->frames.v[fi];
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

/* The stack of @node below @top, root first; -ENOMEM. */
static json_object *stack_of(struct ctx *c, const struct nw_cct *t, uint32_t top, uint32_t node)
{
	uint32_t depth = 0, k;
	json_object *a;

	for (uint32_t i = node; i != top; i = t->nodes[i].parent)
		depth++;
	a = json_object_new_array_ext((int)depth);
	if (!a)
		return NULL;
	/* Fill from the leaf backwards: put_idx with holes is allowed up front. */
	k = depth;
	for (uint32_t i = node; i != top; i = t->nodes[i].parent) {
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

/* The profile of thread @th, whose frame is node @top, or NULL on ENOMEM; *weight gets its total. */
static json_object *thread_profile(struct ctx *c, const struct nw_mthread *th, uint32_t top,
				   uint64_t *weight)
{
	const struct nw_cct *t = c->p->tree;
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	json_object *prof = json_object_new_object();
	json_object *samples = json_object_new_array(), *weights = json_object_new_array();
	char *name = NULL;
	uint64_t total = 0;
	uint32_t n;

	if (!order || !prof || !samples || !weights)
		goto fail;
	n = nw_cct_subtree_preorder(t, top, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		uint64_t w = nw_cct_metrics(t, i)[c->metric];

		/* The thread's own weight has no stack: speedscope needs one frame. */
		if (!w || i == top)
			continue;
		if (append(samples, stack_of(c, t, top, i)) ||
		    append(weights, json_object_new_int64(w > INT64_MAX ? INT64_MAX : (int64_t)w)))
			goto fail;
		total += w;
	}
	name = nw_strdup_printf("%s (pid %u, tid %u)", th->comm ? th->comm : "", th->pid, th->tid);
	if (!name)
		goto fail;
	if (add_str(prof, "type", "sampled") || add_str(prof, "name", name) ||
	    add_str(prof, "unit",
		    c->p->m->metrics[c->metric].unit == NW_UNIT_NANOSECONDS ? "nanoseconds"
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

unsigned nw_speedscope_default_metric(const struct nw_measurement *m)
{
	int s = nw_measurement_find_metric(m, NULL);

	/* The period of the default samples' event: its time or its count. */
	for (uint32_t i = 0; s >= 0 && i < m->nmetrics; i++)
		if (m->metrics[i].kind == NW_METRIC_PERIOD &&
		    !strcmp(m->metrics[i].event, m->metrics[s].event))
			return i;
	return s > 0 ? (unsigned)s : 0;
}

static int build(struct ctx *c, json_object *root)
{
	const struct nw_measurement *m = c->p->m;
	json_object *profiles, *shared;
	uint64_t best = 0;
	int64_t active = 0, nprof = 0;
	struct nw_strbuf cmd = { 0 };

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
	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *th = &m->threads[i];
		uint64_t w = 0;
		json_object *prof;

		if (c->p->thread_node[i] == NW_CCT_NONE)
			continue;
		prof = thread_profile(c, th, c->p->thread_node[i], &w);
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
	for (uint32_t i = 0; i < m->run.argc; i++)
		nw_sb_printf(&cmd, "%s%s", i ? " " : "", m->run.argv[i] ? m->run.argv[i] : "");
	if (cmd.failed ||
	    add_str(root, "name", cmd.len ? nw_sb_str(&cmd) : "narwhal measurement")) {
		nw_sb_fini(&cmd);
		return -ENOMEM;
	}
	nw_sb_fini(&cmd);
	if (add_obj(root, "activeProfileIndex", json_object_new_int64(active)))
		return -ENOMEM;
	return 0;
}

int nw_speedscope_write(FILE *out, const struct nw_stacks *p, unsigned metric)
{
	struct ctx c = { .p = p, .metric = metric };
	uint32_t nfuncs = p->frames.n;
	json_object *root;
	const char *text;
	int ret = -ENOMEM;

	if (!p->m || !p->thread_node || metric >= p->m->nmetrics || metric >= p->tree->nmetrics)
		return -EINVAL;
	for (uint32_t n = 1; n < p->tree->n; n++)
		if (p->tree->nodes[n].ip >= nfuncs)
			return -EINVAL;
	c.frame_of = malloc((nfuncs ? nfuncs : 1) * sizeof(*c.frame_of));
	root = json_object_new_object();
	if (!c.frame_of || !root)
		goto out;
	memset(c.frame_of, 0xff, (nfuncs ? nfuncs : 1) * sizeof(*c.frame_of));
	if (add_str(root, "$schema", SCHEMA_URL) ||
	    add_str(root, "exporter", "narwhal " NW_VERSION))
		goto out;
	ret = build(&c, root);
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
