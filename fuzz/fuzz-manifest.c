/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the manifest.json reader on arbitrary bytes, read into
 * a model (model/measurement.h).
 *
 * A manifest that reads must give a model whose descriptors the model's
 * lookups accept, and must write, read back, and write the same bytes
 * again (what the reader keeps is exactly what the writer writes; a
 * version-1 manifest comes back as version 2 with its two metrics per
 * event).  A read that fails says why, and leaves a model that frees.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/manifest.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the views rely on in a model read from a manifest. */
static void check_model(const struct nw_measurement *m)
{
	if (m->run.argc && !m->run.argv)
		abort();
	if (m->run.argv && m->run.argv[m->run.argc])
		abort();
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		const struct nw_metric *d = &m->metrics[i];

		if (!d->name || !d->event || (unsigned)d->kind >= NW_METRIC_KINDS ||
		    (unsigned)d->unit >= NW_UNIT_UNITS)
			abort();
		if (nw_measurement_find_metric(m, d->name) < 0)
			abort();
		(void)nw_measurement_samples_metric(m, i);
	}
	(void)nw_measurement_find_metric(m, NULL);
	for (uint32_t i = 0; i < m->modules->n; i++) {
		const struct nw_module *mod = &m->modules->v[i];

		if (!mod->path || mod->build_id_size > NW_BUILD_ID_MAX)
			abort();
		/* Interned by (path, build-id): each module is its own. */
		if (nw_module_intern(m->modules, mod->path, mod->build_id, mod->build_id_size) !=
		    (int)i)
			abort();
		if (mod->facts.nsegs && (!mod->facts.known || !mod->facts.segs))
			abort();
	}
	for (uint32_t i = 0; i < m->nthreads; i++)
		if (!m->threads[i].comm || m->threads[i].ntrees || (m->threads[i].file &&
								     !m->threads[i].file[0]))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct memfile in, out;
	static int opened;
	struct nw_measurement *m, *m2;
	char err[256];
	char *text1, *text2;
	size_t len1, len2;

	if (!opened) {
		memfile_open(&in);
		memfile_open(&out);
		opened = 1;
	}
	memfile_set(&in, data, size);
	m = nw_measurement_new();
	m2 = nw_measurement_new();
	if (!m || !m2)
		abort();
	if (nw_manifest_read(in.path, m, err, sizeof(err)) != 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort(); /* every failure says why */
		/* What was read before the error is freed with the model (LeakSanitizer). */
		nw_measurement_free(m2);
		nw_measurement_free(m);
		return 0;
	}
	check_model(m);
	if (nw_manifest_write(out.path, m) != 0)
		abort();
	text1 = memfile_get(&out, &len1);
	if (nw_manifest_read(out.path, m2, err, sizeof(err)) != 0) {
		fprintf(stderr, "re-reading the written manifest: %s\n", err);
		abort();
	}
	check_model(m2);
	if (m2->nmetrics != m->nmetrics || m2->modules->n != m->modules->n ||
	    m2->nthreads != m->nthreads || m2->nprocs != m->nprocs)
		abort();
	if (nw_manifest_write(out.path, m2) != 0)
		abort();
	text2 = memfile_get(&out, &len2);
	if (len1 != len2 || memcmp(text1, text2, len1) != 0)
		abort();
	free(text1);
	free(text2);
	nw_measurement_free(m2);
	nw_measurement_free(m);
	return 0;
}
