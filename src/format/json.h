/* SPDX-License-Identifier: MIT */
/*
 * JSON helpers shared by manifest.json and symbols.json, on top of json-c.
 *
 * Reading: nw_json_parse_file() loads a file that must hold one JSON
 * object; the nw_json_get_*() getters fetch a key of a given type and, when
 * it is missing or wrong, write "PATH: what is wrong" naming the key
 * (events[1].config) into the caller's message buffer and return -EBADMSG.
 * @where is the dotted name of the object the key is in, NULL at the top.
 *
 * Writing: nw_json_add() and nw_json_append() build a tree and record any
 * allocation failure in one flag, so that a writer checks once at the end;
 * nw_json_write_file() writes the tree.
 */
#ifndef NW_JSON_H
#define NW_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/* The file being read and where its error message goes. */
struct nw_json_in {
	const char *path;   /* named at the start of every message */
	char *err;          /* the caller's buffer, or NULL for no message */
	size_t errlen;
};

/*
 * Writes "@in->path: " and the printf-style message into @in->err (cut to
 * @in->errlen).  Returns -EBADMSG, for `return nw_json_fail(...)`.
 */
__attribute__((format(printf, 2, 3))) int nw_json_fail(struct nw_json_in *in, const char *fmt,
							...);

/*
 * Reads and parses the file at @in->path, which must hold one JSON object
 * and nothing after it but white space.  -errno when the file cannot be
 * read (message: the file and strerror), -ENOMEM, -EBADMSG when it is not
 * one JSON object (message: what and at which byte offset).  On success
 * *ret holds a reference the caller drops with json_object_put().
 */
int nw_json_parse_file(struct nw_json_in *in, struct json_object **ret);
/* The same for the @len bytes at @buf (followed by a NUL), named @in->path in messages. */
int nw_json_parse_buf(struct nw_json_in *in, const char *buf, size_t len, struct json_object **ret);
/*
 * Clears @err, parses @path with nw_json_parse_file() and hands the object
 * to @from_json(in, root, ret), which reads it with the getters and, only
 * on success, stores what it built in @ret.  Returns what either returned;
 * when @from_json fails with -ENOMEM, the message is "PATH: out of memory".
 * The object is dropped before returning.
 */
int nw_json_read_file(const char *path, char *err, size_t errlen,
		      int (*from_json)(struct nw_json_in *in, struct json_object *root, void *ret),
		      void *ret);
/* The same for @len bytes at @buf (followed by a NUL), called @name in messages. */
int nw_json_read_buf(const char *name, const char *buf, size_t len, char *err, size_t errlen,
		     int (*from_json)(struct nw_json_in *in, struct json_object *root, void *ret),
		     void *ret);

/*
 * The value of @key in @obj, which must be of @type (@type_name, such as
 * "an integer", says so in the message).  -EBADMSG.  *ret is borrowed from
 * @obj.
 */
int nw_json_get(struct nw_json_in *in, struct json_object *obj, const char *where,
		const char *key, enum json_type type, const char *type_name,
		struct json_object **ret);
/* An integer in 0..@max.  -EBADMSG. */
int nw_json_get_u64(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, uint64_t max, uint64_t *ret);
/* An integer in 0..UINT32_MAX.  -EBADMSG. */
int nw_json_get_u32(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, uint32_t *ret);
/* A string; *ret is the caller's copy, to free().  -EBADMSG, -ENOMEM. */
int nw_json_get_str(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, char **ret);
/*
 * Like nw_json_get_str(), but an absent key or null gives *ret = NULL and
 * 0.  -EBADMSG, -ENOMEM.
 */
int nw_json_get_opt_str(struct nw_json_in *in, struct json_object *obj, const char *where,
			const char *key, char **ret);
/*
 * The array at @key, borrowed from @obj, and its length (at most
 * UINT32_MAX) in *len.  -EBADMSG.
 */
int nw_json_get_array(struct nw_json_in *in, struct json_object *obj, const char *where,
		      const char *key, struct json_object **ret, uint32_t *len);
/*
 * Item @i (less than the array's length) of @array, named @key, which must
 * be an object.  Writes its name, "@key[@i]", into @where (@wlen bytes) for
 * the getters of its keys.  -EBADMSG.  *ret is borrowed from @array.
 */
int nw_json_get_item(struct nw_json_in *in, struct json_object *array, const char *key,
		     uint32_t i, struct json_object **ret, char *where, size_t wlen);

/* A hex string "0x1139" (1 to 16 digits) as a number.  -EBADMSG. */
int nw_json_get_hex(struct nw_json_in *in, struct json_object *obj, const char *where,
		    const char *key, uint64_t *ret);

/*
 * Adds @val, whose reference it takes, under @key of @obj.  When @val is
 * NULL (a failed json_object_new_*()) or the add fails, drops @val and sets
 * *ok to false; *ok is never set to true.
 */
void nw_json_add(struct json_object *obj, const char *key, struct json_object *val, bool *ok);
/* Appends @val to @array, like nw_json_add(). */
void nw_json_append(struct json_object *array, struct json_object *val, bool *ok);
/* A new JSON string "0x..." of @v (exact for 64-bit values); NULL on allocation failure. */
struct json_object *nw_json_hex(uint64_t v);
/* A new JSON string of @s, "" for NULL; NULL on allocation failure. */
struct json_object *nw_json_str(const char *s);

/*
 * Writes @root, pretty and with "/" unescaped, to @path (created with mode
 * 0644 or truncated), ending with a newline, and drops @root.  A NULL @root
 * (a tree that could not be built) gives -ENOMEM and writes nothing.
 * -errno, -ENOMEM.
 */
int nw_json_write_file(const char *path, struct json_object *root);
/* The same to @f, which is left open and unsynced (a pack's entry). */
int nw_json_write_fp(FILE *f, struct json_object *root);
/*
 * Writes @s (NULL: "") as a JSON string literal, byte for byte: '"', '\\'
 * and control characters escaped, every other byte as it is (json-c reads
 * it back the same), for writers that stream a large file without
 * building its tree.  Errors show in ferror(@f).
 */
void nw_json_put_str(FILE *f, const char *s);

/*
 * A pull reader for a file too big for a tree (symbols.json: a build's
 * 40 K entries took json-c 0.16 s and 52 MB, a tree built and freed).
 * Values are read in file order, keys in any order; every error is
 * -EBADMSG with "PATH: not JSON: ... at offset N" in @in's buffer.
 */
struct nw_json_pull {
	struct nw_json_in *in;
	const char *buf, *p, *end;
	char *str;             /* the last string read, unescaped, NUL-terminated */
	size_t len, cap;       /* its length, its buffer's size */
};

enum nw_json_kind {
	NW_JSON_OBJECT, NW_JSON_ARRAY, NW_JSON_STRING, NW_JSON_NUMBER, NW_JSON_BOOL,
	NW_JSON_NULL, NW_JSON_END,
};

void nw_json_pull_init(struct nw_json_pull *jp, struct nw_json_in *in, const char *buf,
		       size_t len);
void nw_json_pull_fini(struct nw_json_pull *jp);
/* The kind of the next value (NW_JSON_END: nothing but white space is left). */
enum nw_json_kind nw_json_pull_kind(struct nw_json_pull *jp);
/*
 * Inside an object: 1 with the next key in jp->str (its ':' read), 0
 * after its '}'.  @first is true before the first key: the '{' is read.
 */
int nw_json_pull_key(struct nw_json_pull *jp, bool *first);
/* Inside an array: 1 when another item follows, 0 after its ']'; @first as above. */
int nw_json_pull_item(struct nw_json_pull *jp, bool *first);
/* A string value into jp->str (a \u0000 ends it). */
int nw_json_pull_str(struct nw_json_pull *jp);
/*
 * A number value: 0 with *@ret when it is an integer in 0..@max, 1 when
 * it is a number but not that (the caller names the key), -EBADMSG.
 */
int nw_json_pull_uint(struct nw_json_pull *jp, uint64_t max, uint64_t *ret);
/* Skips one value, whatever it is. */
int nw_json_pull_skip(struct nw_json_pull *jp);
/* After the top value: only white space may follow. */
int nw_json_pull_end(struct nw_json_pull *jp);
/* "0x" and 1 to 16 hex digits into *@ret. */
bool nw_json_parse_hex(const char *s, uint64_t *ret);

#endif
