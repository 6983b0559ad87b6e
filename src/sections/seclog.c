/* SPDX-License-Identifier: MIT */
/*
 * The sections part of a measurement: reading the interval logs libnarwhal
 * writes, collecting and writing the sample times, and the staging
 * directory (format/sectionlog.h).  Both files are untrusted input to the
 * readers here: every field is checked against the bytes left before it is
 * read, and every count against the bytes its items need before anything
 * is allocated from it.
 */
#include "sections/seclog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/cct.h"
#include "util/file.h"
#include "util/log.h"
#include "util/varint.h"

#define MAX_SECTION_ID (1u << 20)

static uint32_t get_u32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(const uint8_t *b)
{
	return (uint64_t)get_u32(b) | (uint64_t)get_u32(b + 4) << 32;
}

/* ---- the interval logs ---- */

struct nw_seclog *nw_seclog_new(void)
{
	return calloc(1, sizeof(struct nw_seclog));
}

void nw_seclog_free(struct nw_seclog *log)
{
	if (!log)
		return;
	for (uint32_t i = 0; i < log->nnames; i++) {
		free(log->names[i].name);
		free(log->names[i].file);
	}
	free(log->names);
	for (uint32_t i = 0; i < log->nthreads; i++)
		free(log->threads[i].v);
	free(log->threads);
	free(log);
}

/* The index of section @name (len bytes), added when new.  -ENOMEM. */
static int64_t intern_name(struct nw_seclog *log, const uint8_t *name, size_t len,
			   const uint8_t *file, size_t flen, uint32_t line)
{
	struct nw_secname *n;

	for (uint32_t i = 0; i < log->nnames; i++) {
		n = &log->names[i];
		if (strlen(n->name) == len && memcmp(n->name, name, len) == 0) {
			if (!n->file[0] && flen) {
				char *f = strndup((const char *)file, flen);

				if (!f)
					return -ENOMEM;
				free(n->file);
				n->file = f;
				n->line = line;
			}
			return i;
		}
	}
	if (log->nnames == log->cap_names) {
		uint32_t cap = log->cap_names ? 2 * log->cap_names : 64;
		struct nw_secname *v = realloc(log->names, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		log->names = v;
		log->cap_names = cap;
	}
	n = &log->names[log->nnames];
	n->name = strndup((const char *)name, len);
	n->file = strndup((const char *)file, flen);
	n->line = line;
	if (!n->name || !n->file) {
		free(n->name);
		free(n->file);
		return -ENOMEM;
	}
	return log->nnames++;
}

static struct nw_secthread *thread_get(struct nw_seclog *log, uint32_t pid, uint32_t tid)
{
	struct nw_secthread *th;

	for (uint32_t i = log->nthreads; i-- > 0;)
		if (log->threads[i].pid == pid && log->threads[i].tid == tid)
			return &log->threads[i];
	if (log->nthreads == log->cap_threads) {
		uint32_t cap = log->cap_threads ? 2 * log->cap_threads : 16;
		struct nw_secthread *v = realloc(log->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		log->threads = v;
		log->cap_threads = cap;
	}
	th = &log->threads[log->nthreads++];
	memset(th, 0, sizeof(*th));
	th->pid = pid;
	th->tid = tid;
	return th;
}

const struct nw_secthread *nw_seclog_thread(const struct nw_seclog *log, uint32_t pid,
					    uint32_t tid)
{
	for (uint32_t i = 0; i < log->nthreads; i++)
		if (log->threads[i].pid == pid && log->threads[i].tid == tid)
			return &log->threads[i];
	return NULL;
}

/* A section id's name in the image numbered @image; stale for other images. */
struct image_id {
	uint32_t image;
	uint32_t name;     /* index into nw_seclog.names */
};

/*
 * The state of one program image while its blocks are read.  Ids are per
 * image: a START numbers a new image instead of clearing ids[], which would
 * cost up to MAX_SECTION_ID stores per 40-byte block.
 */
struct image {
	bool started, ended;
	uint32_t pid;
	uint32_t number;       /* 1 for the file's first image; 0: none yet */
	struct image_id *ids;  /* section id -> name, where ids[id].image == number */
	uint32_t nids;
};

static int image_map(struct image *im, uint32_t id, int64_t name)
{
	if (id >= im->nids) {
		uint32_t n = id + 1 > 2 * im->nids ? id + 1 : 2 * im->nids;
		struct image_id *v = realloc(im->ids, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + im->nids, 0, (n - im->nids) * sizeof(*v));
		im->ids = v;
		im->nids = n;
	}
	im->ids[id] = (struct image_id){ .image = im->number, .name = (uint32_t)name };
	return 0;
}

/* Whether section @id has a name in the current image. */
static bool image_named(const struct image *im, uint64_t id)
{
	return id < im->nids && im->ids[id].image == im->number;
}

static int parse_intervals(struct nw_seclog *log, const struct image *im, const uint8_t *buf,
			   size_t pos, size_t end, const char *path, char *err, size_t errlen)
{
	uint32_t tid = get_u32(buf + pos), count = get_u32(buf + pos + 4);
	uint64_t prev = get_u64(buf + pos + 8);
	struct nw_secthread *th;
	size_t at = pos;

	pos += NW_SECLOG_INTERVALS_FIXED;
	/* Five varints of at least one byte each per record. */
	if (count > (end - pos) / 5) {
		nw_set_err(err, errlen, "%s: interval block at offset %zu claims %u intervals in %zu "
				     "bytes",
			path, at - NW_SECLOG_BLOCK_HEADER, count, end - pos);
		return -EBADMSG;
	}
	th = thread_get(log, im->pid, tid);
	if (!th)
		return -ENOMEM;
	if (th->n + count > th->cap) {
		size_t cap = th->cap ? th->cap : 256;
		struct nw_secinterval *v;

		while (cap < th->n + count)
			cap *= 2;
		v = realloc(th->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		th->v = v;
		th->cap = cap;
	}
	for (uint32_t i = 0; i < count; i++) {
		uint64_t id, depth, flags, zz, dur;
		struct nw_secinterval *iv = &th->v[th->n];
		size_t rec = pos;

		if (nw_get_varint(buf, &pos, end, &id) || nw_get_varint(buf, &pos, end, &depth) ||
		    nw_get_varint(buf, &pos, end, &flags) || nw_get_varint(buf, &pos, end, &zz) ||
		    nw_get_varint(buf, &pos, end, &dur)) {
			nw_set_err(err, errlen, "%s: interval %u of the block at offset %zu runs past "
					     "it (offset %zu)",
				path, i, at - NW_SECLOG_BLOCK_HEADER, rec);
			return -EBADMSG;
		}
		if (!image_named(im, id) || depth > UINT16_MAX || flags > UINT16_MAX) {
			nw_set_err(err, errlen, "%s: interval at offset %zu: %s", path, rec,
				!image_named(im, id) ? "section id without a name"
						     : "depth or flags out of range");
			return -EBADMSG;
		}
		iv->start = prev + (uint64_t)((int64_t)(zz >> 1) ^ -(int64_t)(zz & 1));
		if (iv->start + dur < iv->start) {
			nw_set_err(err, errlen, "%s: interval at offset %zu ends past 2^64 ns", path,
				rec);
			return -EBADMSG;
		}
		iv->end = iv->start + dur;
		iv->name = im->ids[id].name;
		iv->depth = (uint16_t)depth;
		iv->flags = (uint16_t)flags;
		prev = iv->start;
		th->n++;
	}
	log->nintervals += count;
	return 0;
}

int nw_seclog_parse(struct nw_seclog *log, const void *data, size_t size, const char *path,
		    char *err, size_t errlen)
{
	const uint8_t *buf = data;
	struct image im = { 0 };
	size_t pos = 0;
	int ret = 0;

	log->nfiles++;
	while (pos < size) {
		uint32_t type, len;
		size_t at = pos, body;

		if (size - pos < NW_SECLOG_BLOCK_HEADER) {
			log->truncated++;
			break;
		}
		type = get_u32(buf + pos);
		len = get_u32(buf + pos + 4);
		body = pos + NW_SECLOG_BLOCK_HEADER;
		if (len > size - body) {
			/* The program died inside a write: keep what came before. */
			log->truncated++;
			break;
		}
		if (!im.started && type != NW_SECLOG_START) {
			nw_set_err(err, errlen, "%s: not a sections log (no START block at offset %zu)",
				path, at);
			ret = -EBADMSG;
			goto out;
		}
		switch (type) {
		case NW_SECLOG_START:
			if (len < NW_SECLOG_START_SIZE ||
			    memcmp(buf + body, NW_SECLOG_MAGIC, 8) != 0) {
				nw_set_err(err, errlen, "%s: bad START block at offset %zu", path, at);
				ret = -EBADMSG;
				goto out;
			}
			if (get_u32(buf + body + 8) != NW_SECLOG_VERSION) {
				nw_set_err(err, errlen, "%s: sections log version %u, this narwhal reads %u",
					path, get_u32(buf + body + 8), NW_SECLOG_VERSION);
				ret = -EBADMSG;
				goto out;
			}
			if (im.started && !im.ended)
				log->unended++;
			im.started = true;
			im.ended = false;
			im.pid = get_u32(buf + body + 12);
			/* The previous image's ids go stale; 2^32 images wrap only in theory. */
			if (++im.number == 0) {
				if (im.nids)
					memset(im.ids, 0, im.nids * sizeof(*im.ids));
				im.number = 1;
			}
			log->nimages++;
			if (!log->start_ns || get_u64(buf + body + 16) < log->start_ns)
				log->start_ns = get_u64(buf + body + 16);
			break;
		case NW_SECLOG_NAME: {
			uint32_t id, line, nl, fl;
			int64_t name;

			if (len < NW_SECLOG_NAME_FIXED) {
				nw_set_err(err, errlen, "%s: NAME block at offset %zu too short", path, at);
				ret = -EBADMSG;
				goto out;
			}
			id = get_u32(buf + body);
			line = get_u32(buf + body + 4);
			nl = get_u32(buf + body + 8);
			fl = get_u32(buf + body + 12);
			if ((uint64_t)nl + fl > len - NW_SECLOG_NAME_FIXED || id >= MAX_SECTION_ID ||
			    !nl || memchr(buf + body + 16, 0, (size_t)nl + fl)) {
				nw_set_err(err, errlen, "%s: bad NAME block at offset %zu", path, at);
				ret = -EBADMSG;
				goto out;
			}
			name = intern_name(log, buf + body + 16, nl, buf + body + 16 + nl, fl, line);
			if (name < 0 || image_map(&im, id, name)) {
				ret = -ENOMEM;
				goto out;
			}
			break;
		}
		case NW_SECLOG_INTERVALS:
			if (len < NW_SECLOG_INTERVALS_FIXED) {
				nw_set_err(err, errlen, "%s: INTERVALS block at offset %zu too short", path,
					at);
				ret = -EBADMSG;
				goto out;
			}
			ret = parse_intervals(log, &im, buf, body, body + len, path, err, errlen);
			if (ret)
				goto out;
			break;
		case NW_SECLOG_END:
			if (len < NW_SECLOG_END_SIZE) {
				nw_set_err(err, errlen, "%s: END block at offset %zu too short", path, at);
				ret = -EBADMSG;
				goto out;
			}
			if (get_u64(buf + body) > log->end_ns)
				log->end_ns = get_u64(buf + body);
			log->overflow += get_u64(buf + body + 8);
			log->unbalanced += get_u64(buf + body + 16);
			log->dropped += get_u64(buf + body + 24);
			log->unregistered += get_u64(buf + body + 32);
			im.ended = true;
			break;
		default:
			/* A block of a later version: skipped. */
			break;
		}
		pos = body + len;
	}
	if (im.started && !im.ended)
		log->unended++;
out:
	free(im.ids);
	return ret;
}

static int cmp_interval(const void *a, const void *b)
{
	const struct nw_secinterval *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

void nw_seclog_sort(struct nw_seclog *log)
{
	/*
	 * An INTERVALS block may hold no interval: its thread then has no
	 * array (v NULL), and qsort() must not be given a NULL base.
	 */
	for (uint32_t i = 0; i < log->nthreads; i++)
		if (log->threads[i].n > 1)
			qsort(log->threads[i].v, log->threads[i].n,
			      sizeof(struct nw_secinterval), cmp_interval);
}

bool nw_seclog_is_log_name(const char *name)
{
	size_t n = strlen(name), p = strlen(NW_SECLOG_PREFIX);

	return n > p + 4 && strncmp(name, NW_SECLOG_PREFIX, p) == 0 &&
	       strcmp(name + n - 4, ".bin") == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int nw_seclog_read_dir(const char *dir, struct nw_seclog **ret, char *err, size_t errlen)
{
	struct nw_seclog *log;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	DIR *d;
	int rc = 0;

	d = opendir(dir);
	if (!d) {
		rc = -errno;
		nw_set_err(err, errlen, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	while ((de = readdir(d))) {
		if (!nw_seclog_is_log_name(de->d_name))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 16;
			char **v = realloc(names, c * sizeof(*v));

			if (!v) {
				rc = -ENOMEM;
				goto out_names;
			}
			names = v;
			cap = c;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = -ENOMEM;
			goto out_names;
		}
		n++;
	}
	if (!n) {
		nw_set_err(err, errlen, "%s: no sections-*.bin", dir);
		rc = -ENOENT;
		goto out_names;
	}
	qsort(names, n, sizeof(*names), cmp_str);
	log = nw_seclog_new();
	if (!log) {
		rc = -ENOMEM;
		goto out_names;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		char path[PATH_MAX];
		uint8_t *buf;
		size_t size;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc = nw_read_file(path, (char **)&buf, &size);
		if (rc) {
			nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
			break;
		}
		rc = nw_seclog_parse(log, buf, size, path, err, errlen);
		free(buf);
	}
	if (rc) {
		if (rc == -ENOMEM)
			nw_set_err(err, errlen, "%s: out of memory", dir);
		nw_seclog_free(log);
	} else {
		nw_seclog_sort(log);
		*ret = log;
	}
out_names:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}
