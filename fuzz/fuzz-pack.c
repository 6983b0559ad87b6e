/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the reader of a checkpoint's pack on arbitrary bytes.
 *
 * A pack that opens has every entry's data inside the file and a name
 * without NUL; written again entry by entry, it opens into the same names
 * and the same bytes.  A pack that does not open says why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/pack.h"
#include "memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct memfile in, out;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_pack p, q;
	struct nw_pack_writer w;
	char err[256] = "";

	if (!in.path[0]) {
		memfile_open(&in);
		memfile_open(&out);
	}
	memfile_set(&in, data, size);
	if (nw_pack_open(in.path, &p, err, sizeof(err)) != 0) {
		if (!err[0])
			abort();
		return 0;
	}
	for (uint32_t i = 0; i < p.n; i++) {
		const uint8_t *d = p.v[i].data;

		if (d < (const uint8_t *)p.map || p.v[i].size > p.size ||
		    d + p.v[i].size > (const uint8_t *)p.map + p.size || !p.v[i].name[0])
			abort();
	}
	if (nw_pack_create(&w, out.path) != 0)
		abort();
	for (uint32_t i = 0; i < p.n; i++) {
		FILE *f = nw_pack_begin(&w, p.v[i].name);

		if (!f || (p.v[i].size && fwrite(p.v[i].data, 1, p.v[i].size, f) != p.v[i].size) ||
		    nw_pack_end(&w) != 0)
			abort();
	}
	if (nw_pack_finish(&w) != 0 || nw_pack_open(out.path, &q, err, sizeof(err)) != 0)
		abort();
	if (q.n != p.n)
		abort();
	for (uint32_t i = 0; i < p.n; i++)
		if (strcmp(p.v[i].name, q.v[i].name) || p.v[i].size != q.v[i].size ||
		    memcmp(p.v[i].data, q.v[i].data, p.v[i].size))
			abort();
	nw_pack_close(&q);
	nw_pack_close(&p);
	return 0;
}
