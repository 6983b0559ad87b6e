/* SPDX-License-Identifier: MIT */
#include "model/module.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/strbuf.h"

void nw_module_table_init(struct nw_module_table *t)
{
	memset(t, 0, sizeof(*t));
}

void nw_module_table_fini(struct nw_module_table *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->v[i].path);
		free(t->v[i].source);
		nw_module_facts_fini(&t->v[i].facts);
	}
	free(t->v);
	memset(t, 0, sizeof(*t));
}

int nw_module_intern(struct nw_module_table *t, const char *path, const uint8_t *build_id,
		     size_t build_id_size)
{
	struct nw_module *m;

	if (build_id_size > NW_BUILD_ID_MAX)
		build_id_size = NW_BUILD_ID_MAX;
	/* Modules number in the tens to hundreds: a scan is cheap, and this
	 * runs per MMAP2 record, never per sample. */
	for (uint32_t i = 0; i < t->n; i++) {
		m = &t->v[i];
		/* build_id may be NULL when build_id_size is 0: no memcmp then. */
		if (m->build_id_size == build_id_size &&
		    (!build_id_size || !memcmp(m->build_id, build_id, build_id_size)) &&
		    !strcmp(m->path, path))
			return (int)i;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		struct nw_module *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	m = &t->v[t->n];
	memset(m, 0, sizeof(*m));
	m->path = strdup(path);
	if (!m->path)
		return -ENOMEM;
	if (build_id_size)
		memcpy(m->build_id, build_id, build_id_size);
	m->build_id_size = (uint8_t)build_id_size;
	return (int)t->n++;
}

int nw_module_find(const struct nw_module_table *t, const char *path)
{
	for (uint32_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].path, path))
			return (int)i;
	return -ENOENT;
}

int nw_module_facts_copy(struct nw_module_facts *dst, const struct nw_module_facts *src)
{
	*dst = *src;
	dst->segs = NULL;
	if (src->nsegs) {
		dst->segs = malloc(src->nsegs * sizeof(*dst->segs));
		if (!dst->segs) {
			memset(dst, 0, sizeof(*dst));
			return -ENOMEM;
		}
		memcpy(dst->segs, src->segs, src->nsegs * sizeof(*dst->segs));
	}
	return 0;
}

void nw_module_facts_fini(struct nw_module_facts *f)
{
	free(f->segs);
	memset(f, 0, sizeof(*f));
}

int nw_facts_offset_to_vaddr(const struct nw_module_facts *f, uint64_t offset,
			     uint64_t *ret_vaddr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct nw_segment *best = NULL;

	if (page == 0 || (page & (page - 1)))
		page = 4096;
	/*
	 * The kernel maps a segment from its offset rounded down to a page,
	 * so a mapping's offset can lie in the page an earlier segment ends
	 * in (lld packs segments so).  Mappings here are executable: among
	 * the segments the offset can belong to, the PF_X one wins.
	 */
	for (uint32_t i = 0; i < f->nsegs; i++) {
		const struct nw_segment *s = &f->segs[i];
		uint64_t first = s->offset & ~(page - 1);

		if (offset < first || offset - first >= s->filesz + (s->offset - first))
			continue;
		if (!best || (s->exec && !best->exec))
			best = s;
	}
	if (!best)
		return -ERANGE;
	/* Wraps as intended when the offset precedes the segment's first byte. */
	*ret_vaddr = offset - best->offset + best->vaddr;
	return 0;
}

int nw_facts_segment_of(const struct nw_module_facts *f, uint64_t vaddr)
{
	for (uint32_t i = 0; i < f->nsegs; i++)
		if (vaddr >= f->segs[i].vaddr && vaddr - f->segs[i].vaddr < f->segs[i].memsz)
			return (int)i;
	return -1;
}

int nw_facts_vaddr_to_offset(const struct nw_module_facts *f, uint64_t vaddr,
			     uint64_t *ret_offset)
{
	int i = nw_facts_segment_of(f, vaddr);

	if (i < 0)
		return -ERANGE;
	*ret_offset = vaddr - f->segs[i].vaddr + f->segs[i].offset;
	return 0;
}

void nw_build_id_hex(const uint8_t *id, size_t size, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!len)
		return;
	for (i = 0; i < size && 2 * i + 2 < len; i++) {
		buf[2 * i] = hex[id[i] >> 4];
		buf[2 * i + 1] = hex[id[i] & 0xf];
	}
	buf[2 * i] = '\0';
}

int nw_build_id_parse(const char *hex, uint8_t *id, uint8_t *ret_size)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 > NW_BUILD_ID_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = nw_hex_digit(hex[2 * i]), lo = nw_hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		id[i] = (uint8_t)(hi << 4 | lo);
	}
	*ret_size = (uint8_t)(n / 2);
	return 0;
}
