/* SPDX-License-Identifier: MIT */
/* code.nwcode, the code store on disk; see codefile.h and doc/DISASSEMBLY.md. */
#include "format/codefile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/pack.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strbuf.h"
#include "util/varint.h"

#define HEADER_SIZE 48
/* A function record's fixed part. */
#define FUNC_SIZE 40
#define INLINE_SIZE 16
#define NOTE_SIZE 16
/* Byte lengths a well-formed file never exceeds. */
#define PATH_MAX_LEN 4096
#define STRING_MAX_LEN 65536

/* ---- writing ---- */

static int put(FILE *f, const void *p, size_t n)
{
	return n && fwrite(p, 1, n, f) != n ? -EIO : 0;
}

static int put_u8(FILE *f, uint8_t v)
{
	return put(f, &v, 1);
}

static int put_u16(FILE *f, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	return put(f, b, 2);
}

static int put_u32(FILE *f, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return put(f, b, 4);
}

static int put_u64(FILE *f, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return put(f, b, 8);
}

/* The line entries of @fn as the file encodes them, into @b.  -ENOMEM. */
static int encode_lines(const struct nw_code_func *fn, struct nw_strbuf *b)
{
	uint32_t offset = 0, file = NW_CODE_NONE, line = 0;

	for (uint32_t i = 0; i < fn->nlines; i++) {
		const struct nw_code_line *l = &fn->lines[i];
		char *p = nw_sb_room(b, 3 * NW_VARINT_MAX);
		bool changed = i == 0 || l->file != file;

		if (!p)
			return -ENOMEM;
		p = (char *)nw_put_varint((uint8_t *)p,
					  (uint64_t)(l->offset - offset) << 1 | changed);
		if (changed)
			p = (char *)nw_put_varint(
			    (uint8_t *)p, l->file == NW_CODE_NONE ? 0 : (uint64_t)l->file + 1);
		p = (char *)nw_put_varint((uint8_t *)p,
					  nw_zigzag((int64_t)l->line - (int64_t)line));
		nw_sb_end(b, p);
		offset = l->offset;
		file = l->file;
		line = l->line;
	}
	return b->failed ? -ENOMEM : 0;
}

int nw_codefile_write_fp(FILE *f, const struct nw_codestore *cs,
			 const struct nw_module_table *modules)
{
	uint32_t *local = calloc(modules->n ? modules->n : 1, sizeof(*local));
	struct nw_strbuf lines = { 0 };
	uint32_t nmod = 0;
	int ret = -ENOMEM;

	if (!local)
		return -ENOMEM;
	/* The modules the functions and notes name, numbered in the file from 0. */
	for (uint32_t i = 0; i < cs->nfuncs + cs->nnotes; i++) {
		uint32_t m =
		    i < cs->nfuncs ? cs->funcs[i].module : cs->notes[i - cs->nfuncs].module;

		ret = -EINVAL;
		if (m >= modules->n)
			goto out;
		if (i < cs->nfuncs && i) {
			const struct nw_code_func *a = &cs->funcs[i - 1], *b = &cs->funcs[i];

			if (a->module > b->module ||
			    (a->module == b->module && (a->start >= b->start ||
							b->start - a->start < a->size)))
				goto out;
		}
		if (!local[m])
			local[m] = ++nmod;
	}
	ret = put(f, NW_CODEFILE_MAGIC, 8);
	ret = ret ? ret : put_u32(f, NW_CODEFILE_VERSION);
	ret = ret ? ret : put_u32(f, nmod);
	ret = ret ? ret : put_u32(f, cs->nstrings);
	ret = ret ? ret : put_u32(f, cs->nfuncs);
	ret = ret ? ret : put_u32(f, cs->nnotes);
	ret = ret ? ret : put_u32(f, 0);
	ret = ret ? ret : put_u64(f, cs->func_cap);
	ret = ret ? ret : put_u64(f, cs->total_cap);
	/* Modules in the order of their local numbers. */
	for (uint32_t k = 1; k <= nmod && !ret; k++) {
		for (uint32_t m = 0; m < modules->n && !ret; m++) {
			const struct nw_module *mo = &modules->v[m];
			size_t len = strlen(mo->path);

			if (local[m] != k)
				continue;
			ret = put_u32(f, (uint32_t)len);
			ret = ret ? ret : put(f, mo->path, len);
			ret = ret ? ret : put_u8(f, mo->build_id_size);
			ret = ret ? ret : put(f, mo->build_id, mo->build_id_size);
		}
	}
	for (uint32_t i = 0; i < cs->nstrings && !ret; i++) {
		size_t len = strlen(cs->strings[i]);

		ret = put_u32(f, (uint32_t)len);
		ret = ret ? ret : put(f, cs->strings[i], len);
	}
	for (uint32_t i = 0; i < cs->nfuncs && !ret; i++) {
		const struct nw_code_func *fn = &cs->funcs[i];

		nw_sb_reset(&lines);
		ret = encode_lines(fn, &lines);
		ret = ret ? ret : put_u32(f, local[fn->module] - 1);
		ret = ret ? ret : put_u16(f, fn->machine);
		ret = ret ? ret : put_u8(f, fn->status);
		ret = ret ? ret : put_u8(f, fn->origin);
		ret = ret ? ret : put_u64(f, fn->start);
		ret = ret ? ret : put_u64(f, fn->size);
		ret = ret ? ret : put_u32(f, fn->nbytes);
		ret = ret ? ret : put_u32(f, fn->nlines);
		ret = ret ? ret : put_u32(f, (uint32_t)lines.len);
		ret = ret ? ret : put_u32(f, fn->ninlines);
		ret = ret ? ret : put(f, fn->bytes, fn->nbytes);
		ret = ret ? ret : put(f, nw_sb_str(&lines), lines.len);
		for (uint32_t k = 0; k < fn->ninlines && !ret; k++) {
			const struct nw_code_inline *in = &fn->inlines[k];

			ret = put_u32(f, in->lo);
			ret = ret ? ret : put_u32(f, in->hi);
			ret = ret ? ret : put_u32(f, in->name);
			ret = ret ? ret : put_u32(f, in->depth);
		}
	}
	for (uint32_t i = 0; i < cs->nnotes && !ret; i++) {
		ret = put_u32(f, local[cs->notes[i].module] - 1);
		ret = ret ? ret : put_u32(f, cs->notes[i].reason);
		ret = ret ? ret : put_u64(f, cs->notes[i].count);
	}
	if (!ret && ferror(f))
		ret = -EIO;
out:
	nw_sb_fini(&lines);
	free(local);
	return ret;
}

/* ---- reading ---- */

struct cursor {
	const uint8_t *buf;
	size_t len, pos;
	const char *path;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int bad(struct cursor *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nw_set_err(c->err, c->errlen, "%s: byte %zu: %s", c->path, c->pos, msg);
	return -EBADMSG;
}

/* Whether @n more bytes are there; a message saying what is cut short otherwise. */
static bool need(struct cursor *c, size_t n, const char *what, int *ret)
{
	if (c->len - c->pos >= n)
		return true;
	*ret = bad(c, "truncated: %s needs %zu bytes, %zu left", what, n, c->len - c->pos);
	return false;
}

static uint64_t get_le(struct cursor *c, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | c->buf[c->pos + i];
	c->pos += n;
	return v;
}

/* A u32 length and that many bytes, at most @max, none of them NUL: a malloc'd string. */
static int get_string(struct cursor *c, const char *what, size_t max, char **ret)
{
	uint64_t n;
	int rc = 0;

	if (!need(c, 4, what, &rc))
		return rc;
	n = get_le(c, 4);
	if (n > max)
		return bad(c, "%s of %llu bytes (at most %zu)", what, (unsigned long long)n, max);
	if (!need(c, (size_t)n, what, &rc))
		return rc;
	if (memchr(c->buf + c->pos, 0, (size_t)n))
		return bad(c, "%s holds a NUL byte", what);
	*ret = strndup((const char *)c->buf + c->pos, (size_t)n);
	if (!*ret)
		return -ENOMEM;
	c->pos += (size_t)n;
	return 0;
}

/* The line entries of a function: @nlines of them in the next @size bytes. */
static int parse_lines(struct cursor *c, struct nw_code_func *fn, uint32_t nlines, size_t size,
		       uint32_t nstrings)
{
	size_t end = c->pos + size;
	uint64_t offset = 0, file = NW_CODE_NONE;
	int64_t line = 0;

	/* Each entry takes 2 bytes at least: no allocation larger than the bytes allow. */
	if (nlines > size / 2)
		return bad(c, "%u line entries in %zu bytes", nlines, size);
	fn->lines = calloc(nlines ? nlines : 1, sizeof(*fn->lines));
	if (!fn->lines)
		return -ENOMEM;
	for (uint32_t i = 0; i < nlines; i++) {
		uint64_t head, v, d;

		if (nw_get_varint(c->buf, &c->pos, end, &head))
			return bad(c, "line entry %u: a varint runs past its function's lines", i);
		d = head >> 1;
		if ((i && !d) || d > fn->size || offset + d >= (fn->size ? fn->size : 1))
			return bad(c, "line entry %u: offset %llu+%llu not increasing within the "
				      "function's %llu bytes", i, (unsigned long long)offset,
				   (unsigned long long)d, (unsigned long long)fn->size);
		offset += d;
		if ((head & 1) || !i) {
			if (!(head & 1))
				return bad(c, "line entry 0 does not name its file");
			if (nw_get_varint(c->buf, &c->pos, end, &v))
				return bad(
				    c, "line entry %u: a varint runs past its function's lines", i);
			if (v > nstrings)
				return bad(c, "line entry %u: file %llu of %u strings", i,
					   (unsigned long long)v, nstrings);
			file = v ? v - 1 : NW_CODE_NONE;
		}
		if (nw_get_varint(c->buf, &c->pos, end, &v))
			return bad(c, "line entry %u: a varint runs past its function's lines", i);
		line += nw_unzigzag(v);
		if (line < 0 || line > UINT32_MAX)
			return bad(c, "line entry %u: line %lld", i, (long long)line);
		fn->lines[i] = (struct nw_code_line){ (uint32_t)offset, (uint32_t)file,
						      (uint32_t)line };
	}
	fn->nlines = nlines;
	if (c->pos != end)
		return bad(c, "%zu bytes after the line entries of the function", end - c->pos);
	return 0;
}

static int parse_func(struct cursor *c, struct nw_codestore *cs, const uint32_t *mod,
		      uint32_t nmod, uint32_t i, const struct nw_code_func *prev,
		      const uint32_t *prev_local)
{
	struct nw_code_func *fn;
	uint32_t local, nbytes, nlines, line_bytes, ninl, status, origin;
	uint16_t machine;
	uint64_t start, size;
	int rc = 0;

	if (!need(c, FUNC_SIZE, "a function record", &rc))
		return rc;
	local = (uint32_t)get_le(c, 4);
	machine = (uint16_t)get_le(c, 2);
	status = (uint32_t)get_le(c, 1);
	origin = (uint32_t)get_le(c, 1);
	start = get_le(c, 8);
	size = get_le(c, 8);
	nbytes = (uint32_t)get_le(c, 4);
	nlines = (uint32_t)get_le(c, 4);
	line_bytes = (uint32_t)get_le(c, 4);
	ninl = (uint32_t)get_le(c, 4);
	c->pos -= FUNC_SIZE;
	if (local >= nmod)
		return bad(c, "function %u: module %u of %u", i, local, nmod);
	if (status >= NW_CODE_STATUS_MAX || origin >= NW_CODE_ORIGIN_MAX)
		return bad(c, "function %u: status %u or origin %u unknown", i, status, origin);
	if (nbytes > size || (status != NW_CODE_STORED && nbytes))
		return bad(c, "function %u: %u bytes stored of %llu (status %u)", i, nbytes,
			   (unsigned long long)size, status);
	if (start + size < start)
		return bad(c, "function %u: 0x%llx+%llu wraps around", i, (unsigned long long)start,
			   (unsigned long long)size);
	if (prev && (*prev_local > local ||
		     (*prev_local == local && (prev->start >= start ||
					       start - prev->start < prev->size))))
		return bad(c, "function %u at 0x%llx: not after the one before (by module and "
			      "start, not overlapping)", i, (unsigned long long)start);
	c->pos += FUNC_SIZE;
	if (!need(c, (size_t)nbytes + line_bytes, "a function's bytes and lines", &rc))
		return rc;
	if (ninl > (c->len - c->pos - nbytes - line_bytes) / INLINE_SIZE)
		return bad(c, "function %u: %u inlined ranges past the end of the file", i, ninl);
	fn = nw_codestore_add(cs, mod[local], machine, status, origin, start, size,
			      c->buf + c->pos, nbytes, NULL, 0, NULL, 0);
	if (!fn)
		return -ENOMEM;
	c->pos += nbytes;
	rc = parse_lines(c, fn, nlines, line_bytes, cs->nstrings);
	if (rc)
		return rc;
	fn->inlines = calloc(ninl ? ninl : 1, sizeof(*fn->inlines));
	if (!fn->inlines)
		return -ENOMEM;
	for (uint32_t k = 0; k < ninl; k++) {
		struct nw_code_inline *in = &fn->inlines[k];

		in->lo = (uint32_t)get_le(c, 4);
		in->hi = (uint32_t)get_le(c, 4);
		in->name = (uint32_t)get_le(c, 4);
		in->depth = (uint32_t)get_le(c, 4);
		if (in->lo >= in->hi || in->hi > size || in->name >= cs->nstrings || !in->depth ||
		    in->depth > 1024 || (k && in->lo < fn->inlines[k - 1].lo)) {
			c->pos -= INLINE_SIZE;
			return bad(c,
				   "function %u: inlined range %u [%u, %u) name %u depth %u out of "
				   "bounds or order",
				   i, k, in->lo, in->hi, in->name, in->depth);
		}
	}
	fn->ninlines = ninl;
	return 0;
}

int nw_codefile_parse(const uint8_t *buf, size_t len, const char *path,
		      struct nw_module_table *modules, struct nw_codestore **ret, char *err,
		      size_t errlen)
{
	struct cursor c = { buf, len, 0, path, err, errlen };
	struct nw_codestore *cs = nw_codestore_new();
	uint32_t version, nmod, nstr, nfuncs, nnotes, *mod = NULL, prev_local = 0;
	int rc = 0;

	if (!cs)
		return -ENOMEM;
	if (!need(&c, HEADER_SIZE, "the header", &rc))
		goto out;
	if (memcmp(buf, NW_CODEFILE_MAGIC, 8)) {
		rc = bad(&c, "not a code file (no \"" NW_CODEFILE_MAGIC "\")");
		goto out;
	}
	c.pos = 8;
	version = (uint32_t)get_le(&c, 4);
	nmod = (uint32_t)get_le(&c, 4);
	nstr = (uint32_t)get_le(&c, 4);
	nfuncs = (uint32_t)get_le(&c, 4);
	nnotes = (uint32_t)get_le(&c, 4);
	get_le(&c, 4);
	cs->func_cap = get_le(&c, 8);
	cs->total_cap = get_le(&c, 8);
	if (version != NW_CODEFILE_VERSION) {
		c.pos = 8;
		rc = bad(&c, "version %u (this narwhal-report reads version %u)", version,
			 NW_CODEFILE_VERSION);
		goto out;
	}
	/* Each module, string, function and note takes a few bytes: bounded by the file. */
	if (nmod > len / 5 || nstr > len / 4 || nfuncs > len / FUNC_SIZE ||
	    nnotes > len / NOTE_SIZE) {
		c.pos = 12;
		rc = bad(&c, "counts (%u modules, %u strings, %u functions, %u notes) larger than "
			     "the file", nmod, nstr, nfuncs, nnotes);
		goto out;
	}
	mod = calloc(nmod ? nmod : 1, sizeof(*mod));
	if (!mod) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nmod && !rc; i++) {
		uint8_t id[NW_BUILD_ID_MAX], idlen;
		char *p = NULL;
		int idx;

		rc = get_string(&c, "a module's path", PATH_MAX_LEN, &p);
		if (!rc && need(&c, 1, "a module's build-id size", &rc)) {
			idlen = (uint8_t)get_le(&c, 1);
			if (idlen > NW_BUILD_ID_MAX) {
				c.pos--;
				rc = bad(&c, "a build-id of %u bytes (at most %d)", idlen,
					 NW_BUILD_ID_MAX);
			} else if (need(&c, idlen, "a module's build-id", &rc)) {
				memcpy(id, buf + c.pos, idlen);
				c.pos += idlen;
				idx = nw_module_intern(modules, p, id, idlen);
				if (idx < 0)
					rc = idx;
				else
					mod[i] = (uint32_t)idx;
			}
		}
		free(p);
	}
	for (uint32_t i = 0; i < nstr && !rc; i++) {
		char *s = NULL;
		int64_t k;

		rc = get_string(&c, "a string", STRING_MAX_LEN, &s);
		if (rc)
			break;
		k = nw_codestore_string(cs, s);
		free(s);
		if (k < 0)
			rc = (int)k;
		else if ((uint32_t)k != i)
			rc = bad(&c, "string %u repeats string %lld", i, (long long)k);
	}
	for (uint32_t i = 0; i < nfuncs && !rc; i++) {
		const struct nw_code_func *prev = i ? &cs->funcs[i - 1] : NULL;
		uint32_t local = 0;

		if (c.len - c.pos >= 4)
			local = (uint32_t)get_le(&c, 4), c.pos -= 4;
		rc = parse_func(&c, cs, mod, nmod, i, prev, &prev_local);
		prev_local = local;
	}
	for (uint32_t i = 0; i < nnotes && !rc; i++) {
		uint32_t local, reason;

		if (!need(&c, NOTE_SIZE, "a note", &rc))
			break;
		local = (uint32_t)get_le(&c, 4);
		reason = (uint32_t)get_le(&c, 4);
		if (local >= nmod || reason >= NW_CODE_REASON_MAX) {
			c.pos -= 8;
			rc = bad(&c, "note %u: module %u of %u, reason %u", i, local, nmod, reason);
			break;
		}
		rc = nw_codestore_note(cs, mod[local], reason, get_le(&c, 8));
	}
	if (!rc && c.pos != len)
		rc = bad(&c, "%zu bytes after the last note", len - c.pos);
	if (!rc)
		nw_codestore_sort(cs);
out:
	free(mod);
	if (rc) {
		if (rc == -ENOMEM)
			nw_set_err(err, errlen, "%s: out of memory", path);
		nw_codestore_free(cs);
		return rc;
	}
	*ret = cs;
	return 0;
}

/* ---- a measurement's code ---- */

/*
 * The newest whole entry @name of the pack at @dir/@pack and the segments
 * of its journal: parsed into m->code.  0, -ENOENT when it has none.
 */
static int read_packed(struct nw_measurement *m, const char *dir, char *err, size_t errlen)
{
	struct nw_pack pack = { 0 };
	struct nw_pack_segments seg = { 0 };
	const struct nw_pack_entry *e = NULL;
	char *path = nw_strdup_printf("%s/%s", dir, m->run.pack), *shown = NULL;
	int rc;

	rc = path ? nw_pack_open(path, &pack, err, errlen) : -ENOMEM;
	free(path);
	if (rc)
		return rc;
	if (m->run.journal) {
		path = nw_strdup_printf("%s/%s", dir, m->run.journal);
		rc = path ? nw_pack_open_segments(path, m->run.segments, m->run.nsegments, &seg,
						  err, errlen)
			  : -ENOMEM;
		free(path);
		if (rc)
			goto out;
	}
	for (uint32_t i = seg.n; i-- > 0 && !e;)
		e = nw_pack_find(&seg.v[i], NW_CODEFILE_NAME);
	if (!e)
		e = nw_pack_find(&pack, NW_CODEFILE_NAME);
	if (!e) {
		rc = -ENOENT;
		goto out;
	}
	shown = nw_strdup_printf("%s/%s:%s", dir, m->run.pack, NW_CODEFILE_NAME);
	rc = shown ? nw_codefile_parse(e->data, e->size, shown, m->modules, &m->code, err, errlen)
		   : -ENOMEM;
out:
	free(shown);
	nw_pack_close_segments(&seg);
	nw_pack_close(&pack);
	return rc;
}

int nw_measurement_read_code(struct nw_measurement *m, const char *dir, char *err,
			     size_t errlen)
{
	char *path, *data = NULL;
	size_t len = 0;
	int rc;

	nw_set_err(err, errlen, "%s", "");
	if (m->code)
		return 1;
	if (m->run.pack) {
		rc = read_packed(m, dir, err, errlen);
	} else {
		path = nw_strdup_printf("%s/%s", dir, NW_CODEFILE_NAME);
		rc = path ? nw_read_file(path, &data, &len) : -ENOMEM;
		if (!rc)
			rc = nw_codefile_parse((const uint8_t *)data, len, path, m->modules,
					       &m->code, err, errlen);
		else if (rc != -ENOENT)
			nw_set_err(err, errlen, "%s: %s", path ? path : dir, strerror(-rc));
		free(data);
		free(path);
	}
	if (rc == -ENOENT) {
		nw_set_err(err, errlen, "%s", "");
		return 0;
	}
	return rc ? rc : 1;
}
