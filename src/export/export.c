/* SPDX-License-Identifier: MIT */
/* What the exports share; see export.h. */
#include "export/export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/flamegraph.h"
#include "export/html.h"
#include "export/pprof.h"
#include "util/log.h"
#include "util/strbuf.h"

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

int nw_export_json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;

	/*
	 * What nw_export_clean() would make of @s, escaped, written in runs:
	 * a trace export writes millions of names (no copy, no lock per byte).
	 */
	putc_unlocked('"', out);
	while (*p) {
		size_t l = utf8_len(p);

		if (l > 1 || (l == 1 && *p >= 0x20 && *p != 0x7f && *p != '"' && *p != '\\')) {
			p += l;
			continue;
		}
		fwrite_unlocked(run, 1, (size_t)(p - run), out);
		if (l == 1 && (*p == '"' || *p == '\\')) {
			putc_unlocked('\\', out);
			putc_unlocked(*p, out);
		} else {
			putc_unlocked('?', out);
		}
		run = ++p;
	}
	fwrite_unlocked(run, 1, (size_t)(p - run), out);
	putc_unlocked('"', out);
	return 0;
}

const char *nw_export_unit(const struct nw_metric *d)
{
	if (nw_metric_counts_samples(d))
		return d->kind == NW_METRIC_SAMPLES ? "samples" : "switches";
	switch (d->unit) {
	case NW_UNIT_NANOSECONDS:
		return "ns";
	case NW_UNIT_BYTES:
		return "bytes";
	default:
		return "events";
	}
}

char *nw_export_subtitle(const struct nw_stacks *s, unsigned metric)
{
	const struct nw_measurement *m = s->m;
	struct nw_strbuf b = { 0 };
	uint64_t total = 0;

	for (uint32_t i = 0; metric < s->tree->nmetrics && i < s->tree->n; i++)
		total += nw_cct_metrics(s->tree, i)[metric];
	for (uint32_t i = 0; m && i < m->run.argc; i++)
		nw_sb_printf(&b, "%s%s", i ? " " : "", m->run.argv[i] ? m->run.argv[i] : "");
	if (m && metric < m->nmetrics)
		nw_sb_printf(&b, "%s%s - %llu %s", m->run.argc ? " - " : "", m->metrics[metric].name,
			     (unsigned long long)total, nw_export_unit(&m->metrics[metric]));
	return nw_sb_take(&b);
}

static int write_svg(const char *path, const struct nw_measurement *m)
{
	struct nw_flamegraph_opts o = { .title = "Flame Graph", .base_metric = -1 };
	struct nw_stacks_opts so = { 0 };
	struct nw_stacks *s = NULL;
	char *subtitle = NULL;
	int metric, ret;
	FILE *f;

	metric = nw_measurement_find_metric(m, NULL);
	if (metric < 0)
		return metric;
	o.metric = (unsigned)metric;
	o.unit = nw_export_unit(&m->metrics[metric]);
	/* Frames too narrow to draw are not built. */
	so.prune_share = nw_flamegraph_min_share(&o);
	so.prune_metric = o.metric;
	s = nw_stacks_new(m, m->nmetrics);
	ret = s ? nw_stacks_build(s, &so) : -ENOMEM;
	if (ret)
		goto out;
	subtitle = nw_export_subtitle(s, o.metric);
	o.subtitle = subtitle;
	f = subtitle ? fopen(path, "w") : NULL;
	if (!f) {
		ret = subtitle ? -errno : -ENOMEM;
		goto out;
	}
	ret = nw_flamegraph_write(f, s, &o);
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
out:
	free(subtitle);
	nw_stacks_free(s);
	return ret;
}

int nw_export_measurement(const struct nw_measurement *m, const char *pprof_path,
			  const char *svg_path, const char *html_path, char *err, size_t errlen)
{
	int ret = 0;

	nw_set_err(err, errlen, "%s", "");
	if (pprof_path) {
		ret = nw_pprof_export(pprof_path, m, NULL, err, errlen);
		if (ret)
			return ret;
	}
	if (svg_path) {
		ret = write_svg(svg_path, m);
		if (ret)
			nw_set_err(err, errlen, "%s: %s", svg_path,
				   ret == -ENOENT ? "the measurement has no metric" : strerror(-ret));
	}
	if (!ret && html_path) {
		int metric = nw_measurement_find_metric(m, NULL);
		struct nw_html_opts o = { .metric = metric < 0 ? 0 : (unsigned)metric };

		ret = metric < 0 ? metric : nw_html_export(html_path, m, &o);
		if (ret)
			nw_set_err(err, errlen, "%s: %s", html_path,
				   ret == -ENOENT ? "the measurement has no metric" : strerror(-ret));
	}
	return ret;
}
