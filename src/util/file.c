/* SPDX-License-Identifier: MIT */
/* Whole-file reading, writing behind (gzipped or not); see file.h. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Bytes handed to the writing thread at a time (the stream's buffer). */
#define BEHIND_CHUNK ((size_t)1 << 20)
/* Deflate's output, passed on a piece at a time. */
#define DEFLATE_OUT ((size_t)256 << 10)

int nw_read_fd(int fd, size_t hint, char **ret, size_t *ret_len)
{
	/* Room for @hint bytes, the NUL and one more, to see the end in a second read. */
	size_t cap = hint ? hint + 2 : 16384, len = 0;
	char *buf, *nbuf;
	ssize_t r;
	int err = 0;

	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len + 1 >= cap) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = -ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

int nw_read_file(const char *path, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = nw_read_fd(fd, 0, ret, ret_len);
	close(fd);
	return err;
}

int nw_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int nw_replace_file(const char *dir, const char *name, int (*fill)(void *arg, int fd),
		    void *arg)
{
	char path[PATH_MAX + 256], tmp[PATH_MAX + 256];
	int fd, err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fill(arg, fd);
	if (close(fd) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) != 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* ---- writing behind ---- */

struct behind {
	int fd;
	bool own_fd;
	bool truncate;         /* empty the file first (the thread's first job) */
	/* Where the bytes go instead of fd, when set. */
	nw_behind_sink_fn sink;
	void *sink_arg;
	bool gzip;
	z_stream z;
	unsigned char *zout;   /* deflate's output */
	bool threaded;         /* false: the caller's writes do the thread's work */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *chunk;           /* the thread's while len > 0 */
	size_t len, cap;
	bool closing;
	int err;               /* the first failed write's errno */
	char *stdio_buf;       /* the stream's buffer: glibc sizes its own at 8 KiB */
};

/* Passes @len bytes on, to the sink or the fd.  0 or an errno. */
static int behind_put(struct behind *b, const void *buf, size_t len)
{
	int e;

	if (b->sink)
		e = len ? b->sink(b->sink_arg, buf, len) : 0;
	else
		e = nw_write_all(b->fd, buf, len);
	return e < 0 ? -e : 0;
}

/*
 * Deflates @len bytes at @buf, then, with @flush Z_FINISH, ends the gzip
 * stream; its output is passed on as it fills.  0 or an errno.
 */
static int behind_deflate(struct behind *b, const void *buf, size_t len, int flush)
{
	const unsigned char *p = buf;
	int ret, err;

	do {
		uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;

		b->z.next_in = (Bytef *)p;
		b->z.avail_in = n;
		p += n;
		len -= n;
		do {
			b->z.next_out = b->zout;
			b->z.avail_out = DEFLATE_OUT;
			ret = deflate(&b->z, len ? Z_NO_FLUSH : flush);
			if (ret == Z_STREAM_ERROR)
				return EIO;
			err = behind_put(b, b->zout, DEFLATE_OUT - b->z.avail_out);
			if (err)
				return err;
		} while (b->z.avail_out == 0 ||
			 (flush == Z_FINISH && !len && ret != Z_STREAM_END));
	} while (len);
	return 0;
}

/* One chunk of the stream, deflated first when it gzips.  0 or an errno. */
static int behind_pass(struct behind *b, const char *buf, size_t len)
{
	return b->gzip ? behind_deflate(b, buf, len, Z_NO_FLUSH) : behind_put(b, buf, len);
}

/* Empties the file when asked: 0 or an errno. */
static int behind_truncate(struct behind *b)
{
	return b->truncate && ftruncate(b->fd, 0) != 0 ? errno : 0;
}

static void *behind_run(void *arg)
{
	struct behind *b = arg;
	/*
	 * Emptying a file of tens of megabytes (an export written again)
	 * frees its pages: done here, while the caller formats.
	 */
	int trunc_err = behind_truncate(b);

	pthread_mutex_lock(&b->lock);
	if (trunc_err && !b->err)
		b->err = trunc_err;
	for (;;) {
		int err;

		while (!b->len && !b->closing)
			pthread_cond_wait(&b->cond, &b->lock);
		if (!b->len)
			break;
		pthread_mutex_unlock(&b->lock);
		err = behind_pass(b, b->chunk, b->len);
		pthread_mutex_lock(&b->lock);
		if (err && !b->err)
			b->err = err;
		b->len = 0;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static ssize_t behind_write(void *cookie, const char *buf, size_t size)
{
	struct behind *b = cookie;
	ssize_t ret = (ssize_t)size;

	if (!b->threaded) {
		if (!b->err)
			b->err = behind_pass(b, buf, size);
		if (b->err) {
			errno = b->err;
			return -1;
		}
		return ret;
	}
	pthread_mutex_lock(&b->lock);
	while (b->len && !b->err)
		pthread_cond_wait(&b->cond, &b->lock);
	if (b->err) {
		errno = b->err;
		ret = -1;
	} else if (size > b->cap) {
		char *c = realloc(b->chunk, size);

		if (c) {
			b->chunk = c;
			b->cap = size;
		} else {
			errno = ENOMEM;
			ret = -1;
		}
	}
	if (ret > 0) {
		memcpy(b->chunk, buf, size);
		b->len = size;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

/* Lets the thread pass its last chunk and stops it. */
static void behind_stop(struct behind *b)
{
	if (!b->threaded)
		return;
	pthread_mutex_lock(&b->lock);
	b->closing = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	pthread_join(b->thread, NULL);
	b->threaded = false;
}

/* Frees @b (the thread stopped), leaving its fd alone. */
static void behind_free(struct behind *b)
{
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	if (b->gzip)
		deflateEnd(&b->z);
	free(b->zout);
	free(b->chunk);
	free(b->stdio_buf);
	free(b);
}

static int behind_close(void *cookie)
{
	struct behind *b = cookie;
	int err;

	behind_stop(b);
	err = b->err;
	/* The gzip stream's end, after every chunk. */
	if (b->gzip && !err)
		err = behind_deflate(b, NULL, 0, Z_FINISH);
	if (b->own_fd && close(b->fd) != 0 && !err)
		err = errno;
	behind_free(b);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

FILE *nw_open_behind(const struct nw_behind_opts *o)
{
	cookie_io_functions_t io = { .write = behind_write, .close = behind_close };
	struct behind *b = calloc(1, sizeof(*b));
	int err = ENOMEM;
	FILE *f;

	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->fd = o->fd;
	b->own_fd = o->own_fd;
	b->truncate = o->truncate;
	b->sink = o->sink;
	b->sink_arg = o->sink_arg;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->stdio_buf = malloc(BEHIND_CHUNK);
	if (!b->stdio_buf)
		goto out_free;
	if (o->gzip) {
		/* windowBits 15 + 16: a gzip stream (no name, no time), as gzopen() writes it. */
		b->zout = malloc(DEFLATE_OUT);
		if (!b->zout)
			goto out_free;
		if (deflateInit2(&b->z, o->gzip, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
			err = o->gzip < 0 || o->gzip > 9 ? EINVAL : ENOMEM;
			goto out_free;
		}
		b->gzip = true;
	}
	/* Without a thread, the caller's writes do its work (its first job now). */
	b->threaded = pthread_create(&b->thread, NULL, behind_run, b) == 0;
	if (!b->threaded)
		b->err = behind_truncate(b);
	f = fopencookie(b, "w", io);
	if (!f) {
		err = errno;
		behind_stop(b);
		goto out_free;
	}
	setvbuf(f, b->stdio_buf, _IOFBF, BEHIND_CHUNK);
	return f;

out_free:
	behind_free(b);
	errno = err;
	return NULL;
}

FILE *nw_fdopen_behind(int fd, bool own_fd)
{
	struct nw_behind_opts o = { .fd = fd, .own_fd = own_fd };

	return nw_open_behind(&o);
}

static FILE *fopen_behind(const char *path, int gzip)
{
	/* Emptied by the writing thread, not by open(): see behind_run(). */
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	struct nw_behind_opts o = { .fd = fd, .own_fd = true, .gzip = gzip };
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	/* Devices and pipes are not emptied (O_TRUNC leaves them alone too). */
	o.truncate = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
	f = nw_open_behind(&o);
	if (!f) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
}

FILE *nw_fopen_behind(const char *path)
{
	return fopen_behind(path, 0);
}

FILE *nw_fopen_behind_gz(const char *path, int level)
{
	return fopen_behind(path, level);
}
