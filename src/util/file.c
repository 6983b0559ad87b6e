/* SPDX-License-Identifier: MIT */
/* Whole-file reading, writing behind; see file.h. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes handed to the writing thread at a time (the stream's buffer). */
#define BEHIND_CHUNK ((size_t)1 << 20)

int nw_read_file(const char *path, char **ret, size_t *ret_len)
{
	size_t cap = 16384, len = 0;
	char *buf, *nbuf;
	ssize_t r;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
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
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- writing behind ---- */

struct behind {
	int fd;
	bool own_fd;
	bool truncate;         /* empty the file first (the thread's first job) */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *chunk;           /* the thread's while len > 0 */
	size_t len, cap;
	bool closing;
	int err;               /* the first failed write's errno */
	char *stdio_buf;       /* the stream's buffer: glibc sizes its own at 8 KiB */
};

static void *behind_run(void *arg)
{
	struct behind *b = arg;
	/*
	 * Emptying a file of tens of megabytes (an export written again)
	 * frees its pages: done here, while the caller formats.
	 */
	int trunc_err = b->truncate && ftruncate(b->fd, 0) != 0 ? errno : 0;

	pthread_mutex_lock(&b->lock);
	if (trunc_err && !b->err)
		b->err = trunc_err;
	for (;;) {
		size_t done = 0;
		int err = 0;

		while (!b->len && !b->closing)
			pthread_cond_wait(&b->cond, &b->lock);
		if (!b->len)
			break;
		pthread_mutex_unlock(&b->lock);
		while (done < b->len && !err) {
			ssize_t w = write(b->fd, b->chunk + done, b->len - done);

			if (w > 0)
				done += (size_t)w;
			else if (w < 0 && errno != EINTR)
				err = errno;
			else if (w == 0)
				err = EIO;
		}
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

static int behind_close(void *cookie)
{
	struct behind *b = cookie;
	int err;

	pthread_mutex_lock(&b->lock);
	b->closing = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	pthread_join(b->thread, NULL);
	err = b->err;
	if (b->own_fd && close(b->fd) != 0 && !err)
		err = errno;
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	free(b->chunk);
	free(b->stdio_buf);
	free(b);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

static FILE *open_behind(int fd, bool own_fd, bool truncate)
{
	cookie_io_functions_t io = { .write = behind_write, .close = behind_close };
	struct behind *b = calloc(1, sizeof(*b));
	FILE *f;

	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->fd = fd;
	b->own_fd = own_fd;
	b->truncate = truncate;
	b->stdio_buf = malloc(BEHIND_CHUNK);
	if (!b->stdio_buf) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	if (pthread_create(&b->thread, NULL, behind_run, b)) {
		pthread_mutex_destroy(&b->lock);
		pthread_cond_destroy(&b->cond);
		free(b->stdio_buf);
		free(b);
		errno = EAGAIN;
		return NULL;
	}
	f = fopencookie(b, "w", io);
	if (!f) {
		int err = errno;

		b->own_fd = false; /* the caller's still */
		behind_close(b);
		errno = err;
		return NULL;
	}
	setvbuf(f, b->stdio_buf, _IOFBF, BEHIND_CHUNK);
	return f;
}

FILE *nw_fdopen_behind(int fd, bool own_fd)
{
	return open_behind(fd, own_fd, false);
}

FILE *nw_fopen_behind(const char *path)
{
	/* Emptied by the writing thread, not by open(): see behind_run(). */
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	/* Devices and pipes are not emptied (O_TRUNC leaves them alone too). */
	f = open_behind(fd, true, fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0);
	if (!f) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
}
