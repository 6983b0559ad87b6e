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
#include "record/tasks.h"
#include "util/log.h"

#define MAX_SECTION_ID (1u << 20)

static uint32_t get_u32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(const uint8_t *b)
{
	return (uint64_t)get_u32(b) | (uint64_t)get_u32(b + 4) << 32;
}

static void put_u16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* A LEB128 varint at *pos, before @end: 0, or -1 when it runs past it or past 64 bits. */
static int get_varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*pos >= end)
			return -1;
		b = buf[(*pos)++];
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -1;
}

static int read_file(const char *path, uint8_t **ret, size_t *ret_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			uint8_t *b = ncap > cap ? realloc(buf, ncap) : NULL;

			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*ret = buf;
	*ret_size = len;
	return 0;
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

/* The state of one program image while its blocks are read. */
struct image {
	bool started, ended;
	uint32_t pid;
	int64_t *ids;      /* section id -> name index, -1 unknown */
	uint32_t nids;
};

static int image_map(struct image *im, uint32_t id, int64_t name)
{
	if (id >= im->nids) {
		uint32_t n = id + 1 > 2 * im->nids ? id + 1 : 2 * im->nids;
		int64_t *v = realloc(im->ids, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (uint32_t i = im->nids; i < n; i++)
			v[i] = -1;
		im->ids = v;
		im->nids = n;
	}
	im->ids[id] = name;
	return 0;
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

		if (get_varint(buf, &pos, end, &id) || get_varint(buf, &pos, end, &depth) ||
		    get_varint(buf, &pos, end, &flags) || get_varint(buf, &pos, end, &zz) ||
		    get_varint(buf, &pos, end, &dur)) {
			nw_set_err(err, errlen, "%s: interval %u of the block at offset %zu runs past "
					     "it (offset %zu)",
				path, i, at - NW_SECLOG_BLOCK_HEADER, rec);
			return -EBADMSG;
		}
		if (id >= im->nids || im->ids[id] < 0 || depth > UINT16_MAX || flags > UINT16_MAX) {
			nw_set_err(err, errlen, "%s: interval at offset %zu: %s", path, rec,
				id >= im->nids || im->ids[id] < 0 ? "section id without a name"
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
		iv->name = (uint32_t)im->ids[id];
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
			for (uint32_t i = 0; i < im.nids; i++)
				im.ids[i] = -1;
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
	for (uint32_t i = 0; i < log->nthreads; i++)
		qsort(log->threads[i].v, log->threads[i].n, sizeof(struct nw_secinterval),
		      cmp_interval);
}

static bool is_log_name(const char *name)
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
		if (!is_log_name(de->d_name))
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
		rc = read_file(path, &buf, &size);
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

/* ---- sample times: collecting ---- */

struct rec_thread {
	const struct nw_thread *th;
	struct nw_stime *v;     /* node and epoch as in memory until written */
	size_t n, cap;
};

struct nw_stimes_rec {
	struct rec_thread *threads;
	uint32_t n, cap;
	uint32_t *slots;        /* pointer hash: index + 1, 0 empty */
	uint32_t nslots;
	uint32_t last;
};

struct nw_stimes_rec *nw_stimes_rec_new(void)
{
	return calloc(1, sizeof(struct nw_stimes_rec));
}

void nw_stimes_rec_free(struct nw_stimes_rec *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->n; i++)
		free(r->threads[i].v);
	free(r->threads);
	free(r->slots);
	free(r);
}

static uint32_t ptr_hash(const void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(v >> 32);
}

static int rec_grow_slots(struct nw_stimes_rec *r)
{
	uint32_t n = r->nslots ? 2 * r->nslots : 64;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t h = ptr_hash(r->threads[i].th) & (n - 1);

		while (s[h])
			h = (h + 1) & (n - 1);
		s[h] = i + 1;
	}
	free(r->slots);
	r->slots = s;
	r->nslots = n;
	return 0;
}

static struct rec_thread *rec_thread(struct nw_stimes_rec *r, const struct nw_thread *th)
{
	uint32_t h;

	if (r->n && r->threads[r->last].th == th)
		return &r->threads[r->last];
	if ((r->n + 1) * 2 > r->nslots && rec_grow_slots(r))
		return NULL;
	h = ptr_hash(th) & (r->nslots - 1);
	while (r->slots[h]) {
		if (r->threads[r->slots[h] - 1].th == th) {
			r->last = r->slots[h] - 1;
			return &r->threads[r->last];
		}
		h = (h + 1) & (r->nslots - 1);
	}
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 16;
		struct rec_thread *v = realloc(r->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->threads = v;
		r->cap = cap;
	}
	r->threads[r->n] = (struct rec_thread){ .th = th };
	r->slots[h] = r->n + 1;
	r->last = r->n++;
	return &r->threads[r->last];
}

int nw_stimes_rec_add(struct nw_stimes_rec *r, const struct nw_thread *th, uint32_t epoch,
		      uint32_t node, unsigned event, uint64_t time, uint64_t period)
{
	struct rec_thread *t = rec_thread(r, th);

	if (!t)
		return -ENOMEM;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct nw_stime *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	/* Epoch and event beyond 16 bits are kept as the maximum and skipped when written. */
	t->v[t->n++] = (struct nw_stime){ .time = time, .period = period, .node = node,
					  .epoch = epoch > UINT16_MAX ? UINT16_MAX : (uint16_t)epoch,
					  .event = event > UINT16_MAX ? UINT16_MAX : (uint16_t)event };
	return 0;
}

static int cmp_stime(const void *a, const void *b)
{
	const struct nw_stime *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

static const struct rec_thread *rec_find(const struct nw_stimes_rec *r, const struct nw_thread *th)
{
	uint32_t h;

	if (!r->nslots)
		return NULL;
	h = ptr_hash(th) & (r->nslots - 1);
	while (r->slots[h]) {
		if (r->threads[r->slots[h] - 1].th == th)
			return &r->threads[r->slots[h] - 1];
		h = (h + 1) & (r->nslots - 1);
	}
	return NULL;
}

/*
 * Writes thread @th's samples with node ids in file (preorder) numbering.
 * Returns the records written, or -ENOMEM.
 */
static int64_t write_thread_records(FILE *f, const struct nw_thread *th, struct nw_stime *v,
				    size_t n, bool count_only)
{
	uint32_t **id_of = calloc(th->nccts ? th->nccts : 1, sizeof(*id_of));
	uint32_t nepochs = th->proc->as.nepochs;
	int64_t written = 0;
	uint8_t rec[NW_STIMES_RECORD];

	if (!id_of)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t e = v[i].epoch;
		const struct nw_cct *cct = e < th->nccts ? th->ccts[e] : NULL;

		if (!cct || v[i].node >= cct->n || e >= nepochs || v[i].event == UINT16_MAX)
			continue;
		if (!id_of[e]) {
			uint32_t *order = malloc((size_t)cct->n * sizeof(*order));

			id_of[e] = malloc((size_t)cct->n * sizeof(**id_of));
			if (!order || !id_of[e]) {
				free(order);
				written = -ENOMEM;
				goto out;
			}
			nw_cct_preorder(cct, order);
			for (uint32_t k = 0; k < cct->n; k++)
				id_of[e][order[k]] = k;
			free(order);
		}
		written++;
		if (count_only)
			continue;
		put_u64(rec, v[i].time);
		put_u64(rec + 8, v[i].period);
		put_u32(rec + 16, id_of[e][v[i].node]);
		/* File epoch 0 is the newest (format/measurement.c). */
		put_u16(rec + 20, (uint16_t)(nepochs - 1 - e));
		put_u16(rec + 22, v[i].event);
		fwrite(rec, 1, sizeof(rec), f);
	}
out:
	for (uint32_t e = 0; e < th->nccts; e++)
		free(id_of[e]);
	free(id_of);
	return written;
}

int nw_stimes_write(const char *path, const struct nw_stimes_rec *r,
		    const struct nw_task_table *tasks)
{
	uint8_t hdr[NW_STIMES_THREAD];
	uint32_t nthreads = 0;
	FILE *f;
	int ret = 0;

	for (uint32_t i = 0; i < tasks->nthreads; i++)
		nthreads += tasks->threads[i]->samples && rec_find(r, tasks->threads[i]);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	memcpy(hdr, NW_STIMES_MAGIC, 8);
	put_u32(hdr + 8, NW_STIMES_VERSION);
	put_u32(hdr + 12, nthreads);
	fwrite(hdr, 1, NW_STIMES_HEADER, f);
	/*
	 * Threads as the measurement writer lists them in the manifest: every
	 * thread with samples, in order of appearance; occurrence tells apart
	 * two threads with one (pid, tid).
	 */
	for (uint32_t i = 0; i < tasks->nthreads && !ret; i++) {
		const struct nw_thread *th = tasks->threads[i];
		const struct rec_thread *t = th->samples ? rec_find(r, th) : NULL;
		uint32_t occurrence = 0;
		int64_t n;

		if (!t)
			continue;
		for (uint32_t j = 0; j < i; j++)
			occurrence += tasks->threads[j]->samples && tasks->threads[j]->pid == th->pid &&
				      tasks->threads[j]->tid == th->tid;
		qsort(t->v, t->n, sizeof(*t->v), cmp_stime);
		n = write_thread_records(NULL, th, t->v, t->n, true);
		if (n < 0) {
			ret = (int)n;
			break;
		}
		put_u32(hdr, th->pid);
		put_u32(hdr + 4, th->tid);
		put_u32(hdr + 8, occurrence);
		put_u32(hdr + 12, 0);
		put_u64(hdr + 16, (uint64_t)n);
		fwrite(hdr, 1, NW_STIMES_THREAD, f);
		n = write_thread_records(f, th, t->v, t->n, false);
		if (n < 0)
			ret = (int)n;
	}
	if (ferror(f) && !ret)
		ret = -EIO;
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
	return ret;
}

/* ---- sample times: reading ---- */

void nw_stimes_free(struct nw_stimes *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nthreads; i++)
		free(s->threads[i].v);
	free(s->threads);
	free(s);
}

int nw_stimes_parse(const void *data, size_t size, struct nw_stimes **ret, char *err,
		    size_t errlen)
{
	const uint8_t *buf = data;
	struct nw_stimes *s;
	uint32_t nthreads;
	size_t pos = NW_STIMES_HEADER;

	if (size < NW_STIMES_HEADER || memcmp(buf, NW_STIMES_MAGIC, 8) != 0) {
		nw_set_err(err, errlen, "not a sample times file");
		return -EBADMSG;
	}
	if (get_u32(buf + 8) != NW_STIMES_VERSION) {
		nw_set_err(err, errlen, "sample times version %u, this narwhal reads %u",
			get_u32(buf + 8), NW_STIMES_VERSION);
		return -EBADMSG;
	}
	nthreads = get_u32(buf + 12);
	if (nthreads > (size - pos) / NW_STIMES_THREAD) {
		nw_set_err(err, errlen, "%u threads do not fit in %zu bytes", nthreads, size - pos);
		return -EBADMSG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->threads = calloc(nthreads ? nthreads : 1, sizeof(*s->threads));
	if (!s->threads) {
		free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		struct nw_stimes_thread *t = &s->threads[i];
		uint64_t n;

		if (size - pos < NW_STIMES_THREAD) {
			nw_set_err(err, errlen, "thread %u: header cut short at offset %zu", i, pos);
			goto bad;
		}
		t->pid = get_u32(buf + pos);
		t->tid = get_u32(buf + pos + 4);
		t->occurrence = get_u32(buf + pos + 8);
		n = get_u64(buf + pos + 16);
		pos += NW_STIMES_THREAD;
		if (n > (size - pos) / NW_STIMES_RECORD) {
			nw_set_err(err, errlen, "thread %u: %llu samples do not fit in the %zu bytes left "
					     "at offset %zu",
				i, (unsigned long long)n, size - pos, pos);
			goto bad;
		}
		s->nthreads++;
		t->v = malloc((n ? n : 1) * sizeof(*t->v));
		if (!t->v) {
			nw_stimes_free(s);
			return -ENOMEM;
		}
		t->n = n;
		for (uint64_t k = 0; k < n; k++) {
			const uint8_t *r = buf + pos;

			t->v[k].time = get_u64(r);
			t->v[k].period = get_u64(r + 8);
			t->v[k].node = get_u32(r + 16);
			t->v[k].epoch = (uint16_t)(r[20] | r[21] << 8);
			t->v[k].event = (uint16_t)(r[22] | r[23] << 8);
			pos += NW_STIMES_RECORD;
			if (k && t->v[k].time < t->v[k - 1].time) {
				nw_set_err(err, errlen, "thread %u: samples out of time order at offset "
						     "%zu",
					i, pos - NW_STIMES_RECORD);
				goto bad;
			}
		}
	}
	if (pos != size) {
		nw_set_err(err, errlen, "%zu bytes after the last thread", size - pos);
		goto bad;
	}
	*ret = s;
	return 0;
bad:
	nw_stimes_free(s);
	return -EBADMSG;
}

int nw_stimes_read(const char *path, struct nw_stimes **ret, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t size;
	char msg[256] = "";
	int rc = read_file(path, &buf, &size);

	if (rc) {
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = nw_stimes_parse(buf, size, ret, msg, sizeof(msg));
	if (rc)
		nw_set_err(err, errlen, "%s: %s", path, msg[0] ? msg : strerror(-rc));
	free(buf);
	return rc;
}

/* ---- the staging directory ---- */

int nw_seclog_stage_create(const char *output, char *buf, size_t len)
{
	char cwd[PATH_MAX], out[PATH_MAX];
	size_t n;

	if (snprintf(out, sizeof(out), "%s", output) >= (int)sizeof(out))
		return -ENAMETOOLONG;
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = 0;
	if (out[0] == '/') {
		if (snprintf(buf, len, "%s.sections-XXXXXX", out) >= (int)len)
			return -ENAMETOOLONG;
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (snprintf(buf, len, "%s/%s.sections-XXXXXX", cwd, out) >= (int)len)
			return -ENAMETOOLONG;
	}
	if (!mkdtemp(buf))
		return -errno;
	return 0;
}

bool nw_seclog_stage_used(const char *stage)
{
	struct dirent *de;
	bool used = false;
	DIR *d = opendir(stage);

	if (!d)
		return false;
	while (!used && (de = readdir(d)))
		used = is_log_name(de->d_name);
	closedir(d);
	return used;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

void nw_seclog_stage_remove(const char *stage)
{
	if (stage && stage[0])
		nftw(stage, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int nw_seclog_stage_finish(const char *stage, const char *dir, const struct nw_stimes_rec *r,
			   const struct nw_task_table *tasks, char *err, size_t errlen)
{
	char target[PATH_MAX], path[PATH_MAX];
	int rc;

	if (!nw_seclog_stage_used(stage)) {
		nw_seclog_stage_remove(stage);
		return 0;
	}
	if (snprintf(target, sizeof(target), "%s/%s", dir, NW_SECLOG_SUBDIR) >=
		    (int)sizeof(target) ||
	    snprintf(path, sizeof(path), "%s/%s", target, NW_STIMES_FILE) >= (int)sizeof(path)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (rename(stage, target) < 0) {
		rc = -errno;
		nw_set_err(err, errlen, "cannot move the sections %s to %s: %s", stage, target,
			strerror(-rc));
		return rc;
	}
	if (!r)
		return 0;
	rc = nw_stimes_write(path, r, tasks);
	if (rc)
		nw_set_err(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	return rc;
}
