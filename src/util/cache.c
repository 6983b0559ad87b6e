/* SPDX-License-Identifier: MIT */
/* The run cache's directory; see cache.h. */
#include "util/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/strbuf.h"

/* mkdir -p @path (0700 for what it makes).  0 or -errno. */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;

		*p = 0;
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			int err = -errno;

			*p = c;
			return err;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

int nw_cache_open(struct nw_cache *c, const char *dir, bool off)
{
	const char *env = getenv("NARWHAL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	struct stat st;
	int n, ret;

	memset(c, 0, sizeof(*c));
	c->max_bytes = NW_CACHE_MAX_BYTES;
	if (off)
		return 0;
	if (dir && *dir)
		n = snprintf(c->dir, sizeof(c->dir), "%s", dir);
	else if (env && *env)
		n = snprintf(c->dir, sizeof(c->dir), "%s", env);
	else if (xdg && *xdg == '/')
		n = snprintf(c->dir, sizeof(c->dir), "%s/narwhal", xdg);
	else if (home && *home == '/')
		n = snprintf(c->dir, sizeof(c->dir), "%s/.cache/narwhal", home);
	else
		n = -1;
	if (n < 0 || (size_t)n >= sizeof(c->dir) - 64) {
		c->dir[0] = 0;
		return n < 0 ? -ENOENT : -ENAMETOOLONG;
	}
	ret = make_dirs(c->dir);
	if (!ret && (stat(c->dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(c->dir, W_OK) != 0))
		ret = -EACCES;
	if (ret)
		c->dir[0] = 0;
	return ret;
}

int nw_cache_read(const struct nw_cache *c, const char *name, char **ret, size_t *ret_len)
{
	char path[PATH_MAX + 256];
	int err;

	if (!nw_cache_on(c))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	err = nw_read_file(path, ret, ret_len);
	if (!err)
		utimensat(AT_FDCWD, path, NULL, 0); /* used now: the last to go */
	return err;
}

int nw_cache_map(const struct nw_cache *c, const char *name, void **ret, size_t *ret_len)
{
	char path[PATH_MAX + 256];
	struct stat st;
	void *p;
	int fd, err = 0;

	if (!nw_cache_on(c))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0)
		err = -errno;
	else if (st.st_size <= 0)
		err = -EINVAL;
	if (!err) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			err = -errno;
	}
	if (!err) {
		futimens(fd, NULL); /* used now: the last to go */
		*ret = p;
		*ret_len = (size_t)st.st_size;
	}
	close(fd);
	return err;
}

bool nw_cache_has(const struct nw_cache *c, const char *name)
{
	char path[PATH_MAX + 256];

	if (!nw_cache_on(c))
		return false;
	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	return access(path, R_OK) == 0;
}

struct entry {
	char name[256];
	off_t size;
	struct timespec mtime;
};

static int by_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	return (x->mtime.tv_nsec > y->mtime.tv_nsec) - (x->mtime.tv_nsec < y->mtime.tv_nsec);
}

/* Removes the oldest files until the cache holds at most 3/4 of its bound, when over it. */
void nw_cache_prune(const struct nw_cache *c)
{
	DIR *d = opendir(c->dir);
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(v->name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (nw_grow(&v, &cap, n + 1, sizeof(*v)))
			break;
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n].size = st.st_size;
		v[n].mtime = st.st_mtim;
		total += (uint64_t)st.st_size;
		n++;
	}
	if (total > c->max_bytes) {
		qsort(v, n, sizeof(*v), by_age);
		for (size_t i = 0; i < n && total > c->max_bytes / 4 * 3; i++)
			if (unlinkat(dirfd(d), v[i].name, 0) == 0)
				total -= (uint64_t)v[i].size;
	}
	closedir(d);
	free(v);
}

struct bytes {
	const void *buf;
	size_t len;
};

static int write_bytes(void *arg, int fd)
{
	const struct bytes *b = arg;

	return nw_write_all(fd, b->buf, b->len);
}

int nw_cache_write(const struct nw_cache *c, const char *name, const void *buf, size_t len)
{
	struct bytes b = { buf, len };

	if (!nw_cache_on(c))
		return -ENOENT;
	/* Dot-named while written: pruning and readers pass over it. */
	return nw_replace_file(c->dir, name, write_bytes, &b);
}
