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

/* "0x" and 1 to 16 hex digits. */
static bool parse_addr(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	size_t n = 0;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return false;
	for (s += 2; *s; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (n == 16)
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
	if (!parse_addr(json_object_get_string(o), ret))
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
