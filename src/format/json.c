/* SPDX-License-Identifier: MIT */
/*
 * JSON helpers for manifest.json and symbols.json: reading a file into one
 * json-c object, typed getters whose messages name the file and the key,
 * and building and writing a tree.
 */
#include "format/json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"
#include "util/strbuf.h"

int nw_json_fail(struct nw_json_in *in, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (in->err && in->errlen) {
		n = snprintf(in->err, in->errlen, "%s: ", in->path);
		if (n >= 0 && (size_t)n < in->errlen) {
			va_start(ap, fmt);
			vsnprintf(in->err + n, in->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EBADMSG;
}

int nw_json_parse_buf(struct nw_json_in *in, const char *buf, size_t len, struct json_object **ret)
{
	struct json_tokener *tok;
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t end;
	int err = 0;

	if (memchr(buf, '\0', len)) {
		err = nw_json_fail(in, "not JSON: NUL byte at offset %zu",
				   (size_t)((char *)memchr(buf, '\0', len) - buf));
		goto out;
	}
	tok = json_tokener_new();
	if (!tok) {
		err = -ENOMEM;
		goto out;
	}
	/* The terminating NUL tells the tokener the text ends there. */
	obj = json_tokener_parse_ex(tok, buf, (int)(len + 1 > INT_MAX ? INT_MAX : len + 1));
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (len >= INT_MAX) {
		json_object_put(obj);
		err = nw_json_fail(in, "not JSON: too large");
		goto out;
	}
	if (!obj || jerr != json_tokener_success) {
		json_object_put(obj);
		err = nw_json_fail(in, "not JSON: %s at offset %zu", json_tokener_error_desc(jerr),
				   end);
		goto out;
	}
	while (end < len && (buf[end] == ' ' || buf[end] == '\t' || buf[end] == '\r' ||
			      buf[end] == '\n'))
		end++;
	if (end < len) {
		json_object_put(obj);
		err = nw_json_fail(in, "not JSON: data after the end at offset %zu", end);
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		err = nw_json_fail(in, "not a JSON object");
		goto out;
	}
	*ret = obj;
out:
	return err;
}

int nw_json_parse_file(struct nw_json_in *in, struct json_object **ret)
{
	size_t len = 0;
	char *buf = NULL;
	int err = nw_read_file(in->path, &buf, &len);

	if (err) {
		if (in->err && in->errlen)
			snprintf(in->err, in->errlen, "%s: %s", in->path, strerror(-err));
		return err;
	}
	err = nw_json_parse_buf(in, buf, len, ret);
	free(buf);
	return err;
}

/* Parses @buf (or the file @path when @buf is NULL) and hands the object to @from_json. */
static int read_json(const char *path, const char *buf, size_t len, char *err, size_t errlen,
		     int (*from_json)(struct nw_json_in *in, struct json_object *root, void *ret),
		     void *ret)
{
	struct nw_json_in in = { .path = path, .err = err, .errlen = errlen };
	struct json_object *root = NULL;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	rc = buf ? nw_json_parse_buf(&in, buf, len, &root) : nw_json_parse_file(&in, &root);
	if (rc)
		return rc;
	rc = from_json(&in, root, ret);
	json_object_put(root);
	if (rc == -ENOMEM && err && errlen)
		snprintf(err, errlen, "%s: out of memory", path);
	return rc;
}

int nw_json_read_file(const char *path, char *err, size_t errlen,
		      int (*from_json)(struct nw_json_in *in, struct json_object *root, void *ret),
		      void *ret)
{
	return read_json(path, NULL, 0, err, errlen, from_json, ret);
}

int nw_json_read_buf(const char *name, const char *buf, size_t len, char *err, size_t errlen,
		     int (*from_json)(struct nw_json_in *in, struct json_object *root, void *ret),
		     void *ret)
{
	return read_json(name, buf, len, err, errlen, from_json, ret);
}

/* @where.@key, or @key at the top. */
static void key_name(char *out, size_t len, const char *where, const char *key)
{
	snprintf(out, len, "%s%s%s", where ? where : "", where ? "." : "", key);
}

int nw_json_get(struct nw_json_in *in, struct json_object *obj, const char *where,
		const char *key, enum json_type type, const char *type_name,
		struct json_object **ret)
{
	char name[128];

	key_name(name, sizeof(name), where, key);
	if (!json_object_object_get_ex(obj, key, ret))
		return nw_json_fail(in, "missing key \"%s\"", name);
	if (!json_object_is_type(*ret, type))
		return nw_json_fail(in, "key \"%s\" must be %s", name, type_name);
	return 0;
}

int nw_json_get_u64(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, uint64_t max, uint64_t *ret)
{
	struct json_object *v;
	char name[128];
	uint64_t u;
	int err;

	err = nw_json_get(in, obj, where, key, json_type_int, "an integer", &v);
	if (err)
		return err;
	/* json-c keeps values above INT64_MAX as uint64; get_int64 clamps those. */
	u = json_object_get_int64(v) < 0 ? UINT64_MAX : json_object_get_uint64(v);
	if (json_object_get_int64(v) < 0 || u > max) {
		key_name(name, sizeof(name), where, key);
		return nw_json_fail(in, "key \"%s\" must be an integer in 0..%llu", name,
				    (unsigned long long)max);
	}
	*ret = u;
	return 0;
}

int nw_json_get_u32(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, uint32_t *ret)
{
	uint64_t v = 0;
	int err = nw_json_get_u64(in, obj, where, key, UINT32_MAX, &v);

	if (!err)
		*ret = (uint32_t)v;
	return err;
}

int nw_json_get_str(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, char **ret)
{
	struct json_object *v;
	int err;

	err = nw_json_get(in, obj, where, key, json_type_string, "a string", &v);
	if (err)
		return err;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

int nw_json_get_opt_str(struct nw_json_in *in, struct json_object *obj, const char *where,
			const char *key, char **ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
		*ret = NULL;
		return 0;
	}
	return nw_json_get_str(in, obj, where, key, ret);
}

int nw_json_get_array(struct nw_json_in *in, struct json_object *obj, const char *where,
		      const char *key, struct json_object **ret, uint32_t *len)
{
	size_t n;
	int err;

	err = nw_json_get(in, obj, where, key, json_type_array, "an array", ret);
	if (err)
		return err;
	n = json_object_array_length(*ret);
	if (n > UINT32_MAX)
		return nw_json_fail(in, "key \"%s\" has too many items", key);
	*len = (uint32_t)n;
	return 0;
}

int nw_json_get_item(struct nw_json_in *in, struct json_object *array, const char *key,
		     uint32_t i, struct json_object **ret, char *where, size_t wlen)
{
	snprintf(where, wlen, "%s[%u]", key, i);
	*ret = json_object_array_get_idx(array, i);
	if (!json_object_is_type(*ret, json_type_object))
		return nw_json_fail(in, "\"%s\" must be an object", where);
	return 0;
}

void nw_json_add(struct json_object *obj, const char *key, struct json_object *val, bool *ok)
{
	if (!val || json_object_object_add(obj, key, val) != 0) {
		json_object_put(val);
		*ok = false;
	}
}

void nw_json_append(struct json_object *array, struct json_object *val, bool *ok)
{
	if (!val || json_object_array_add(array, val) != 0) {
		json_object_put(val);
		*ok = false;
	}
}

struct json_object *nw_json_str(const char *s)
{
	return json_object_new_string(s ? s : "");
}

/* The text of @root, which owns it; NULL on ENOMEM. */
static const char *json_text(struct json_object *root)
{
	return json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
						    JSON_C_TO_STRING_NOSLASHESCAPE);
}

int nw_json_write_fp(FILE *f, struct json_object *root)
{
	const char *text = root ? json_text(root) : NULL;
	int err = 0;

	errno = 0;
	if (!text)
		err = -ENOMEM;
	else if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
		err = errno ? -errno : -EIO;
	json_object_put(root);
	return err;
}

int nw_json_write_file(const char *path, struct json_object *root)
{
	FILE *f;
	int fd, err = 0;

	if (!root)
		return -ENOMEM;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		json_object_put(root);
		return -errno;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		json_object_put(root);
		return err;
	}
	err = nw_json_write_fp(f, root);
	/* Flushed and on disk before anything names the file: a full disk shows here. */
	errno = 0;
	if ((fflush(f) == EOF || fsync(fd) != 0) && !err)
		err = errno ? -errno : -EIO;
	errno = 0;
	if (fclose(f) == EOF && !err)
		err = errno ? -errno : -EIO;
	return err;
}

bool nw_json_parse_hex(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	size_t n = 0;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (s += 2; *s; s++, n++) {
		int d = nw_hex_digit(*s);

		if (d < 0 || n == 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (n == 0)
		return false;
	*ret = v;
	return true;
}

int nw_json_get_hex(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, uint64_t *ret)
{
	struct json_object *o;
	int err = nw_json_get(in, obj, where, key, json_type_string, "a string", &o);

	if (err)
		return err;
	if (!nw_json_parse_hex(json_object_get_string(o), ret))
		return nw_json_fail(in, "\"%s%s%s\" must be a hex string like \"0x1139\", not \"%s\"",
				    where ? where : "", where ? "." : "", key,
				    json_object_get_string(o));
	return 0;
}

struct json_object *nw_json_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	return json_object_new_string(buf);
}

void nw_json_put_str(FILE *f, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	putc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20) {
				fputs("\\u00", f);
				putc(hex[*p >> 4], f);
				putc(hex[*p & 15], f);
			} else {
				putc(*p, f);
			}
		}
	}
	putc('"', f);
}

/* ---- the pull reader ---- */

/* Recursion of nw_json_pull_skip(), as deep as json-c's default. */
#define PULL_MAX_DEPTH 32

void nw_json_pull_init(struct nw_json_pull *jp, struct nw_json_in *in, const char *buf,
		       size_t len)
{
	memset(jp, 0, sizeof(*jp));
	jp->in = in;
	jp->buf = jp->p = buf;
	jp->end = buf + len;
}

void nw_json_pull_fini(struct nw_json_pull *jp)
{
	free(jp->str);
	jp->str = NULL;
}

static int pull_fail(struct nw_json_pull *jp, const char *what)
{
	return nw_json_fail(jp->in, "not JSON: %s at offset %zu", what,
			    (size_t)(jp->p - jp->buf));
}

static void pull_ws(struct nw_json_pull *jp)
{
	while (jp->p < jp->end &&
	       (*jp->p == ' ' || *jp->p == '\n' || *jp->p == '\r' || *jp->p == '\t'))
		jp->p++;
}

enum nw_json_kind nw_json_pull_kind(struct nw_json_pull *jp)
{
	pull_ws(jp);
	if (jp->p == jp->end)
		return NW_JSON_END;
	switch (*jp->p) {
	case '{':
		return NW_JSON_OBJECT;
	case '[':
		return NW_JSON_ARRAY;
	case '"':
		return NW_JSON_STRING;
	case 't':
	case 'f':
		return NW_JSON_BOOL;
	case 'n':
		return NW_JSON_NULL;
	default:
		return NW_JSON_NUMBER; /* or not JSON: the number's reader says so */
	}
}

/* Reads @c (after white space). */
static int pull_char(struct nw_json_pull *jp, char c, const char *what)
{
	pull_ws(jp);
	if (jp->p == jp->end || *jp->p != c)
		return pull_fail(jp, what);
	jp->p++;
	return 0;
}

/* A ',' before the next member or item, or @close.  1: another follows, 0: closed. */
static int pull_next(struct nw_json_pull *jp, bool *first, char open, char close)
{
	int err;

	if (*first) {
		*first = false;
		err = pull_char(jp, open, open == '{' ? "expected an object" : "expected an array");
		if (err)
			return err;
		pull_ws(jp);
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			return 0;
		}
		return 1;
	}
	pull_ws(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		return 0;
	}
	err = pull_char(jp, ',', close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
	return err ? err : 1;
}

int nw_json_pull_key(struct nw_json_pull *jp, bool *first)
{
	int more = pull_next(jp, first, '{', '}');

	if (more <= 0)
		return more;
	if (nw_json_pull_kind(jp) != NW_JSON_STRING)
		return pull_fail(jp, "expected a key");
	more = nw_json_pull_str(jp);
	if (!more)
		more = pull_char(jp, ':', "expected ':'");
	return more ? more : 1;
}

int nw_json_pull_item(struct nw_json_pull *jp, bool *first)
{
	return pull_next(jp, first, '[', ']');
}

/* Appends byte @c to jp->str.  -ENOMEM. */
static int pull_put(struct nw_json_pull *jp, char c)
{
	if (jp->len + 2 > jp->cap) {
		size_t cap = jp->cap ? 2 * jp->cap : 256;
		char *s = realloc(jp->str, cap);

		if (!s)
			return -ENOMEM;
		jp->str = s;
		jp->cap = cap;
	}
	jp->str[jp->len++] = c;
	return 0;
}

/* Four hex digits at jp->p into *@ret. */
static bool pull_hex4(struct nw_json_pull *jp, unsigned *ret)
{
	unsigned v = 0;

	if (jp->end - jp->p < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		int d = nw_hex_digit(jp->p[i]);

		if (d < 0)
			return false;
		v = v << 4 | (unsigned)d;
	}
	jp->p += 4;
	*ret = v;
	return true;
}

/* Code point @u as UTF-8 into jp->str.  -ENOMEM. */
static int pull_utf8(struct nw_json_pull *jp, unsigned u)
{
	int err = 0;

	if (u < 0x80)
		return pull_put(jp, (char)u);
	if (u < 0x800)
		return (err = pull_put(jp, (char)(0xc0 | u >> 6))) ? err
								      : pull_put(jp, (char)(0x80 | (u & 63)));
	if (u < 0x10000) {
		err = pull_put(jp, (char)(0xe0 | u >> 12));
		err = err ? err : pull_put(jp, (char)(0x80 | (u >> 6 & 63)));
		return err ? err : pull_put(jp, (char)(0x80 | (u & 63)));
	}
	err = pull_put(jp, (char)(0xf0 | u >> 18));
	err = err ? err : pull_put(jp, (char)(0x80 | (u >> 12 & 63)));
	err = err ? err : pull_put(jp, (char)(0x80 | (u >> 6 & 63)));
	return err ? err : pull_put(jp, (char)(0x80 | (u & 63)));
}

int nw_json_pull_str(struct nw_json_pull *jp)
{
	bool cut = false;
	int err = pull_char(jp, '"', "expected a string");

	if (err)
		return err;
	jp->len = 0;
	for (;;) {
		const char *q = jp->p;
		char c;

		/* A run of plain bytes at once. */
		while (q < jp->end && *q != '"' && *q != '\\')
			q++;
		if (q == jp->end)
			return pull_fail(jp, "unterminated string");
		if (!cut) {
			size_t n = (size_t)(q - jp->p);

			if (jp->len + n + 2 > jp->cap) {
				size_t cap = jp->cap ? jp->cap : 256;
				char *s;

				while (jp->len + n + 2 > cap)
					cap *= 2;
				s = realloc(jp->str, cap);
				if (!s)
					return -ENOMEM;
				jp->str = s;
				jp->cap = cap;
			}
			memcpy(jp->str + jp->len, jp->p, n);
			jp->len += n;
		}
		jp->p = q + 1;
		if (*q == '"')
			break;
		if (jp->p == jp->end)
			return pull_fail(jp, "unterminated string");
		c = *jp->p++;
		switch (c) {
		case '"': case '\\': case '/':
			err = cut ? 0 : pull_put(jp, c);
			break;
		case 'b':
			err = cut ? 0 : pull_put(jp, '\b');
			break;
		case 'f':
			err = cut ? 0 : pull_put(jp, '\f');
			break;
		case 'n':
			err = cut ? 0 : pull_put(jp, '\n');
			break;
		case 'r':
			err = cut ? 0 : pull_put(jp, '\r');
			break;
		case 't':
			err = cut ? 0 : pull_put(jp, '\t');
			break;
		case 'u': {
			unsigned u, lo;

			if (!pull_hex4(jp, &u))
				return pull_fail(jp, "bad \\u escape");
			/* A surrogate pair is one code point; a lone surrogate, U+FFFD. */
			if (u >= 0xd800 && u < 0xdc00 && jp->end - jp->p >= 6 && jp->p[0] == '\\' &&
			    jp->p[1] == 'u') {
				const char *save = jp->p;

				jp->p += 2;
				if (pull_hex4(jp, &lo) && lo >= 0xdc00 && lo < 0xe000)
					u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
				else
					jp->p = save;
			}
			if (u >= 0xd800 && u < 0xe000)
				u = 0xfffd;
			if (!u)
				cut = true; /* C strings end at NUL */
			else if (!cut)
				err = pull_utf8(jp, u);
			break;
		}
		default:
			return pull_fail(jp, "bad escape");
		}
		if (err)
			return err;
	}
	if (!jp->str) {
		jp->str = malloc(jp->cap = 256);
		if (!jp->str)
			return -ENOMEM;
	}
	jp->str[jp->len] = 0;
	return 0;
}

int nw_json_pull_uint(struct nw_json_pull *jp, uint64_t max, uint64_t *ret)
{
	const char *start;
	bool neg = false, integer = true, digits = false;
	uint64_t v = 0;

	pull_ws(jp);
	start = jp->p;
	if (jp->p < jp->end && *jp->p == '-') {
		neg = true;
		jp->p++;
	}
	while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9') {
		unsigned d = (unsigned)(*jp->p++ - '0');

		digits = true;
		if (v > (UINT64_MAX - d) / 10)
			integer = false; /* past u64 */
		else
			v = v * 10 + d;
	}
	if (!digits)
		return pull_fail(jp, "expected a value");
	if (jp->p < jp->end && *jp->p == '.') {
		integer = false;
		for (jp->p++, digits = false; jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9';
		     jp->p++)
			digits = true;
		if (!digits)
			return pull_fail(jp, "bad number");
	}
	if (jp->p < jp->end && (*jp->p == 'e' || *jp->p == 'E')) {
		integer = false;
		jp->p++;
		if (jp->p < jp->end && (*jp->p == '+' || *jp->p == '-'))
			jp->p++;
		for (digits = false; jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9'; jp->p++)
			digits = true;
		if (!digits)
			return pull_fail(jp, "bad number");
	}
	(void)start;
	if (!integer || (neg && v) || v > max)
		return 1;
	*ret = v;
	return 0;
}

/* true, false or null. */
static int pull_word(struct nw_json_pull *jp)
{
	static const char *const words[] = { "true", "false", "null" };

	for (int i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);

		if ((size_t)(jp->end - jp->p) >= n && !memcmp(jp->p, words[i], n)) {
			jp->p += n;
			return 0;
		}
	}
	return pull_fail(jp, "expected a value");
}

static int pull_skip(struct nw_json_pull *jp, unsigned depth)
{
	bool first = true;
	uint64_t v;
	int more;

	if (depth > PULL_MAX_DEPTH)
		return pull_fail(jp, "nested too deep");
	switch (nw_json_pull_kind(jp)) {
	case NW_JSON_OBJECT:
		while ((more = nw_json_pull_key(jp, &first)) == 1)
			if ((more = pull_skip(jp, depth + 1)) < 0)
				return more;
		return more;
	case NW_JSON_ARRAY:
		while ((more = nw_json_pull_item(jp, &first)) == 1)
			if ((more = pull_skip(jp, depth + 1)) < 0)
				return more;
		return more;
	case NW_JSON_STRING:
		return nw_json_pull_str(jp);
	case NW_JSON_NUMBER:
		more = nw_json_pull_uint(jp, UINT64_MAX, &v);
		return more < 0 ? more : 0;
	case NW_JSON_END:
		return pull_fail(jp, "expected a value");
	default:
		return pull_word(jp);
	}
}

int nw_json_pull_skip(struct nw_json_pull *jp)
{
	return pull_skip(jp, 0);
}

int nw_json_pull_end(struct nw_json_pull *jp)
{
	return nw_json_pull_kind(jp) == NW_JSON_END ? 0 : pull_fail(jp, "data after the end");
}
