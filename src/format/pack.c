/* SPDX-License-Identifier: MIT */
/* A measurement's files in one file; see pack.h. */
#include "format/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/log.h"
#include "util/strbuf.h"

#define PACK_MAGIC "NWPACK01"
#define PACK_END "NWPKEND1"
#define MAGIC_LEN 8

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

struct nw_pack_index {
	char *name;
	uint64_t offset, size;
};

static void fail(struct nw_pack_writer *w)
{
	if (!w->err)
		w->err = errno ? -errno : -EIO;
}

#define OUT_BUF (1u << 20)

/* Writes what the buffer holds to the file.  -errno. */
static int drain(struct nw_pack_writer *w)
{
	int err = nw_write_all(w->fd, w->buf, w->len);

	if (!err)
		w->len = 0;
	return err;
}

/*
 * The stream's sink: counts what it is handed, so that an entry's offset
 * is known by a flush into memory, not an lseek per entry.
 */
static ssize_t out(void *cookie, const char *data, size_t n)
{
	struct nw_pack_writer *w = cookie;
	size_t done = 0;

	while (done < n) {
		size_t k = OUT_BUF - w->len < n - done ? OUT_BUF - w->len : n - done;
		int e;

		memcpy(w->buf + w->len, data + done, k);
		w->len += k;
		done += k;
		if (w->len == OUT_BUF && (e = drain(w))) {
			errno = -e;
			return -1;
		}
	}
	w->pos += n;
	return (ssize_t)n;
}

/* Where the stream is: its buffer handed on first.  -1 on error. */
static off_t position(struct nw_pack_writer *w)
{
	return fflush(w->f) == 0 ? (off_t)w->pos : -1;
}

int nw_pack_create(struct nw_pack_writer *w, const char *path)
{
	int fd;

	errno = 0;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		memset(w, 0, sizeof(*w));
		return -errno;
	}
	return nw_pack_create_fd(w, fd);
}

int nw_pack_create_fd(struct nw_pack_writer *w, int fd)
{
	int e;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->buf = malloc(OUT_BUF);
	w->f = w->buf ? fopencookie(w, "w", (cookie_io_functions_t){ .write = out }) : NULL;
	if (!w->f) {
		e = errno ? -errno : -ENOMEM;
		free(w->buf);
		close(w->fd);
		memset(w, 0, sizeof(*w));
		return e;
	}
	if (fwrite(PACK_MAGIC, 1, MAGIC_LEN, w->f) != MAGIC_LEN)
		fail(w);
	return w->err;
}

FILE *nw_pack_begin(struct nw_pack_writer *w, const char *name)
{
	off_t at;

	if (w->err || w->open || strlen(name) > UINT32_MAX)
		return NULL;
	errno = 0;
	at = position(w);
	if (at < 0) {
		fail(w);
		return NULL;
	}
	if (nw_grow(&w->v, &w->cap, w->n + 1, sizeof(*w->v)) ||
	    !(w->v[w->n].name = strdup(name))) {
		w->err = -ENOMEM;
		return NULL;
	}
	w->v[w->n].offset = (uint64_t)at;
	w->open = true;
	return w->f;
}

int nw_pack_end(struct nw_pack_writer *w)
{
	off_t end;

	if (!w->open)
		return w->err ? w->err : -EINVAL;
	errno = 0;
	end = position(w);
	if (end < 0 || ferror(w->f))
		fail(w);
	else
		w->v[w->n].size = (uint64_t)end - w->v[w->n].offset;
	w->open = false;
	if (!w->err)
		w->n++;
	else
		free(w->v[w->n].name);
	return w->err;
}

static void free_index(struct nw_pack_writer *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i].name);
	if (w->open)
		free(w->v[w->n].name);
	free(w->v);
	w->v = NULL;
	w->n = w->cap = 0;
	w->open = false;
}

int nw_pack_finish(struct nw_pack_writer *w)
{
	uint8_t buf[16];
	off_t index;

	errno = 0;
	if (!w->err && w->open)
		w->err = -EINVAL;
	index = w->err ? -1 : position(w);
	if (!w->err && index < 0)
		fail(w);
	for (size_t i = 0; i < w->n && !w->err; i++) {
		size_t len = strlen(w->v[i].name);

		put_le(buf, len, 4);
		if (fwrite(buf, 1, 4, w->f) != 4 || fwrite(w->v[i].name, 1, len, w->f) != len)
			fail(w);
		put_le(buf, w->v[i].offset, 8);
		put_le(buf + 8, w->v[i].size, 8);
		if (!w->err && fwrite(buf, 1, 16, w->f) != 16)
			fail(w);
	}
	put_le(buf, (uint64_t)index, 8);
	put_le(buf + 8, w->n, 8);
	if (!w->err && (fwrite(buf, 1, 16, w->f) != 16 ||
			fwrite(PACK_END, 1, MAGIC_LEN, w->f) != MAGIC_LEN))
		fail(w);
	errno = 0;
	if (fclose(w->f) != 0 && !w->err)
		fail(w);
	w->f = NULL;
	/* On disk before the manifest that names it: a full disk shows here. */
	if (!w->err) {
		int e = drain(w);

		if (e)
			w->err = e;
		else if (fsync(w->fd) != 0)
			fail(w);
	}
	if (close(w->fd) != 0 && !w->err)
		fail(w);
	free(w->buf);
	w->buf = NULL;
	free_index(w);
	return w->err;
}

void nw_pack_abort(struct nw_pack_writer *w)
{
	if (w->f)
		fclose(w->f);
	if (w->f || w->buf)
		close(w->fd);
	w->f = NULL;
	free(w->buf);
	w->buf = NULL;
	free_index(w);
}

static int bad(char *err, size_t errlen, const char *path, size_t off, const char *why)
{
	nw_set_err(err, errlen, "%s: corrupt pack at byte %zu: %s", path, off, why);
	return -EBADMSG;
}

/*
 * The index of the pack in @size bytes at @b (@at bytes into the file
 * @path, for messages) into p->v.  -EBADMSG, -ENOMEM, with a message.
 */
static int parse(struct nw_pack *p, const uint8_t *b, size_t size, const char *path, size_t at,
		 char *err, size_t errlen)
{
	const size_t tail = 16 + MAGIC_LEN;
	uint64_t index, count;
	size_t off;

	if (size < MAGIC_LEN + tail)
		return bad(err, errlen, path, at, "too short for a pack");
	if (memcmp(b, PACK_MAGIC, MAGIC_LEN))
		return bad(err, errlen, path, at, "no NWPACK01 magic");
	if (memcmp(b + size - MAGIC_LEN, PACK_END, MAGIC_LEN))
		return bad(err, errlen, path, at + size - MAGIC_LEN, "no trailer (cut short?)");
	index = get_le(b + size - tail, 8);
	count = get_le(b + size - tail + 8, 8);
	if (index < MAGIC_LEN || index > size - tail || count > (size - tail - index) / 20)
		return bad(err, errlen, path, at + size - tail,
			   "the trailer points outside the pack");
	p->v = calloc(count ? count : 1, sizeof(*p->v));
	if (!p->v) {
		nw_set_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (off = index; p->n < count;) {
		uint64_t nlen, data, len;
		char *name;

		if (size - tail - off < 4 || (nlen = get_le(b + off, 4)) > size - tail - off - 4 ||
		    size - tail - off - 4 - nlen < 16)
			return bad(err, errlen, path, at + off, "an index entry runs past the index");
		data = get_le(b + off + 4 + nlen, 8);
		len = get_le(b + off + 12 + nlen, 8);
		if (data < MAGIC_LEN || data > index || len > index - data)
			return bad(err, errlen, path, at + off,
				   "an entry's data lies outside the pack");
		if (!nlen || memchr(b + off + 4, '\0', nlen))
			return bad(err, errlen, path, at + off, "an entry without a name");
		name = strndup((const char *)b + off + 4, nlen);
		if (!name) {
			nw_set_err(err, errlen, "%s: out of memory", path);
			return -ENOMEM;
		}
		p->v[p->n++] = (struct nw_pack_entry){ name, b + data, len };
		off += 20 + nlen;
	}
	if (off != size - tail)
		return bad(err, errlen, path, at + off, "the index does not end at the trailer");
	return 0;
}

/* Maps the file @path read-only into *@map (*@size bytes).  -errno with a message. */
static int map_file(const char *path, void **map, size_t *size, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	*map = NULL;
	*size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	*map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	rc = -errno;
	close(fd);
	if (*map == MAP_FAILED) {
		*map = NULL;
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	*size = (size_t)st.st_size;
	return 0;
}

int nw_pack_open(const char *path, struct nw_pack *p, char *err, size_t errlen)
{
	int rc;

	memset(p, 0, sizeof(*p));
	rc = map_file(path, &p->map, &p->size, err, errlen);
	if (!rc)
		rc = parse(p, p->map, p->size, path, 0, err, errlen);
	if (rc)
		nw_pack_close(p);
	return rc;
}

int nw_pack_open_segments(const char *path, const uint64_t *sizes, uint32_t n,
			  struct nw_pack_segments *s, char *err, size_t errlen)
{
	uint64_t at = 0;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = map_file(path, &s->map, &s->size, err, errlen);
	if (!rc && !(s->v = calloc(n ? n : 1, sizeof(*s->v)))) {
		nw_set_err(err, errlen, "%s: out of memory", path);
		rc = -ENOMEM;
	}
	for (uint32_t i = 0; i < n && !rc; i++) {
		if (sizes[i] > s->size - at) {
			rc = bad(err, errlen, path, s->size,
				 "cut short: the manifest names more segments than it holds");
			break;
		}
		s->n++;
		rc = parse(&s->v[i], (const uint8_t *)s->map + at, sizes[i], path, at, err, errlen);
		at += sizes[i];
	}
	if (rc)
		nw_pack_close_segments(s);
	return rc;
}

void nw_pack_close_segments(struct nw_pack_segments *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		nw_pack_close(&s->v[i]);
	free(s->v);
	if (s->map)
		munmap(s->map, s->size);
	memset(s, 0, sizeof(*s));
}

const struct nw_pack_entry *nw_pack_find(const struct nw_pack *p, const char *name)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].name, name))
			return &p->v[i];
	return NULL;
}

void nw_pack_close(struct nw_pack *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		free((char *)p->v[i].name);
	free(p->v);
	if (p->map)
		munmap(p->map, p->size);
	memset(p, 0, sizeof(*p));
}
