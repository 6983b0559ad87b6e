/* SPDX-License-Identifier: MIT */
/* What the exports share; see export.h. */
#include "export/export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/flamegraph.h"
#include "export/pprof.h"
#include "util/log.h"

struct nw_cct *nw_export_thread_tree(struct nw_profile *p, const struct nw_filter *f)
{
	struct nw_cct *dst = nw_cct_new(p->nmetrics);

	if (!dst)
		return NULL;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct nw_prof_thread *th = &p->threads[i];
		uint32_t node;
		int64_t fi;
		char *name;

		if (!th->tree || !nw_filter_match(f, th))
			continue;
		if (asprintf(&name, "%s-%u", th->comm ? th->comm : "", th->tid) < 0)
			goto fail;
		for (char *c = name; *c; c++)
			if (*c == ' ' || *c == ';')
				*c = '_';
		fi = nw_profile_intern(p, name, NULL, 0, NW_EXPORT_THREAD_MODULE);
		free(name);
		if (fi < 0)
			goto fail;
		/* p->threads may not move: nw_profile_intern only touches funcs. */
		node = nw_cct_child(dst, NW_CCT_ROOT, (uint64_t)fi, 0);
		if (node == NW_CCT_NONE || nw_cct_merge_at(dst, node, th->tree, NULL, NULL))
			goto fail;
	}
	return dst;
fail:
	nw_cct_free(dst);
	return NULL;
}

/* Length of the valid UTF-8 sequence at @s, or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		/* U+FFFE and U+FFFF are not characters XML allows. */
		if (c == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

char *nw_export_clean(const char *s, int *failed)
{
	size_t n, i = 0;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s);
	d = malloc(n + 1);
	if (!d) {
		if (failed)
			*failed = 1;
		return NULL;
	}
	/* A NUL ends the string, so the checks above never read past it. */
	while (i < n) {
		const unsigned char *u = (const unsigned char *)s + i;
		size_t l = utf8_len(u);

		if (l == 1 && (u[0] < 0x20 || u[0] == 0x7f))
			l = 0;
		if (!l) {
			d[i++] = '?';
			continue;
		}
		memcpy(d + i, u, l);
		i += l;
	}
	d[n] = '\0';
	return d;
}

const char *nw_export_event_of(const char *metric, char *buf, size_t len)
{
	const char *c = strrchr(metric, ':');
	size_t n = c ? (size_t)(c - metric) : strlen(metric);

	if (!len)
		return buf;
	if (n >= len)
		n = len - 1;
	memcpy(buf, metric, n);
	buf[n] = '\0';
	return buf;
}

int nw_export_metric_is_ns(const char *metric)
{
	const char *c = strrchr(metric, ':');
	char ev[64];

	if (c && strcmp(c + 1, "nanoseconds") == 0)
		return 1; /* off-cpu: time until the thread ran again */
	if (!c || strcmp(c + 1, "period") != 0)
		return 0;
	nw_export_event_of(metric, ev, sizeof(ev));
	return strcmp(ev, "cpu-clock") == 0 || strcmp(ev, "task-clock") == 0;
}

const char *nw_export_unit(const char *metric)
{
	const char *c = strrchr(metric, ':');

	if (nw_export_metric_is_ns(metric))
		return "ns";
	return c && strcmp(c + 1, "samples") == 0 ? "samples" : "events";
}

char *nw_export_subtitle(const struct nw_profile *p, const struct nw_cct *tree, unsigned metric)
{
	const struct nw_manifest *mf = p->manifest;
	uint64_t total = 0;
	char *s = NULL;
	size_t len = 0;
	FILE *f;

	for (uint32_t i = 0; metric < tree->nmetrics && i < tree->n; i++)
		total += nw_cct_metrics(tree, i)[metric];
	f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	for (uint32_t i = 0; mf && i < mf->argc; i++)
		fprintf(f, "%s%s", i ? " " : "", mf->argv[i] ? mf->argv[i] : "");
	if (metric < p->nmetrics)
		fprintf(f, "%s%s - %llu %s", mf && mf->argc ? " - " : "", p->metric_names[metric],
			(unsigned long long)total, nw_export_unit(p->metric_names[metric]));
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

static int write_svg(const char *path, struct nw_profile *p)
{
	struct nw_flamegraph_opts o = { .title = "Flame Graph", .base_metric = -1 };
	struct nw_cct *tree;
	char *subtitle;
	int metric, ret;
	FILE *f;

	metric = nw_profile_find_metric(p, NULL);
	if (metric < 0)
		return metric;
	o.metric = (unsigned)metric;
	tree = nw_profile_merge(p, NULL);
	if (!tree)
		return -ENOMEM;
	o.unit = nw_export_unit(p->metric_names[o.metric]);
	subtitle = nw_export_subtitle(p, tree, o.metric);
	o.subtitle = subtitle;
	f = subtitle ? fopen(path, "w") : NULL;
	if (!f) {
		ret = subtitle ? -errno : -ENOMEM;
		goto out;
	}
	ret = nw_flamegraph_write(f, p, tree, &o);
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
out:
	free(subtitle);
	nw_cct_free(tree);
	return ret;
}

int nw_export_measurement(const char *dir, const char *pprof_path, const char *svg_path,
			  char *err, size_t errlen)
{
	struct nw_profile *p = NULL;
	int ret;

	nw_set_err(err, errlen, "%s", "");
	if (!pprof_path && !svg_path)
		return 0;
	ret = nw_profile_load(dir, &p, err, errlen);
	if (ret)
		return ret;
	if (pprof_path) {
		ret = nw_pprof_export(pprof_path, dir, p, NULL, err, errlen);
		if (ret)
			goto out;
	}
	if (svg_path) {
		ret = write_svg(svg_path, p);
		if (ret)
			nw_set_err(err, errlen, "%s: %s", svg_path,
				ret == -ENOENT ? "the measurement has no metric" : strerror(-ret));
	}
out:
	nw_profile_free(p);
	return ret;
}
