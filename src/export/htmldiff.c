/* SPDX-License-Identifier: MIT */
/* The HTML report's differential numbers; see htmldiff.h. */
#include "export/htmldiff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "export/export.h"

/* A number of the JSON: infinite as 1e999, which JSON's grammar holds (and parsers read so). */
static void put_real(FILE *out, double v)
{
	if (isinf(v))
		fputs(v > 0 ? ",1e999" : ",-1e999", out);
	else
		fprintf(out, ",%.6g", isnan(v) ? 0 : v);
}

/* ',"contexts":[[parent, name, delta, z, beyond], ...]': what the flame graph can draw. */
static int write_contexts(FILE *out, const struct nw_diff *d)
{
	struct nw_diff_context *v;
	uint32_t n;
	int ret = nw_diff_contexts(d, false, NW_HTML_DIFF_MIN_SHARE, &v, &n);

	if (ret)
		return ret;
	fputs(",\"contexts\":[", out);
	for (uint32_t i = 0; i < n && !ret; i++) {
		long parent = v[i].parent == UINT32_MAX ? -1L : (long)v[i].parent;

		fprintf(out, "%s[%ld,", i ? "," : "", parent);
		ret = nw_export_json_str(out, v[i].name);
		put_real(out, v[i].c.delta);
		put_real(out, v[i].c.z);
		fprintf(out, ",%d]", v[i].beyond);
	}
	fputc(']', out);
	free(v);
	return ret;
}

int nw_html_write_diff(FILE *out, const struct nw_diff *d)
{
	struct nw_diff_entry *v;
	char noise[128];
	uint32_t n;
	int ret = nw_diff_flat_entries(d, false, &v, &n);

	if (ret)
		return ret;
	nw_diff_noise(d, false, noise, sizeof(noise));
	fputs(",\"diff\":{\"noise\":", out);
	ret = nw_export_json_str(out, noise);
	fprintf(out, ",\"z\":%g,\"rows\":[", NW_DIFF_Z);
	for (uint32_t i = 0; i < n && !ret; i++) {
		const struct nw_diff_entry *e = &v[i];

		fputs(i ? ",[" : "[", out);
		ret = nw_export_json_str(out, e->name);
		put_real(out, e->c.delta);
		put_real(out, e->c.se);
		put_real(out, e->c.z);
		fprintf(out, ",%d", e->beyond);
		put_real(out, e->bself);
		put_real(out, e->nself);
		put_real(out, e->bcum);
		put_real(out, e->ncum);
		fputc(']', out);
	}
	fputs("]", out);
	free(v);
	if (!ret)
		ret = write_contexts(out, d);
	fputs("}", out);
	if (!ret && ferror(out))
		ret = -EIO;
	return ret;
}
