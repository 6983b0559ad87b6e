/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the manifest.json reader on arbitrary bytes.
 *
 * A manifest that reads must write, read back, and write the same bytes
 * again (what the reader keeps is exactly what the writer writes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/manifest.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct memfile in, out;
	static int opened;
	struct nw_manifest *m = NULL, *m2 = NULL;
	char err[256];
	char *text1, *text2;
	size_t len1, len2;

	if (!opened) {
		memfile_open(&in);
		memfile_open(&out);
		opened = 1;
	}
	memfile_set(&in, data, size);
	if (nw_manifest_read(in.path, &m, err, sizeof(err)) != 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort(); /* every failure says why */
		return 0;
	}
	if (nw_manifest_write(out.path, m) != 0)
		abort();
	text1 = memfile_get(&out, &len1);
	if (nw_manifest_read(out.path, &m2, err, sizeof(err)) != 0) {
		fprintf(stderr, "re-reading the written manifest: %s\n", err);
		abort();
	}
	if (nw_manifest_write(out.path, m2) != 0)
		abort();
	text2 = memfile_get(&out, &len2);
	if (len1 != len2 || memcmp(text1, text2, len1) != 0)
		abort();
	free(text1);
	free(text2);
	nw_manifest_free(m2);
	nw_manifest_free(m);
	return 0;
}
