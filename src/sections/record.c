/* SPDX-License-Identifier: MIT */
/*
 * The recorder's side of instrumented sections (doc/SECTIONS.md): the
 * staging directory the program writes its interval logs into, moved into
 * the measurement at the end.  The time of each sample, which the join
 * needs, is in the threads' traces (model/trace.h).
 */
#include "sections/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* ---- the staging directory ---- */

#define STAGE_INFIX ".sections-"
#define STAGE_SUFFIX "XXXXXX"

/* @output as an absolute path without trailing slashes, into @buf.  -errno. */
static int absolute(const char *output, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	size_t n;
	int w;

	if (output[0] == '/') {
		w = snprintf(buf, len, "%s", output);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		w = snprintf(buf, len, "%s/%s", cwd, output);
	}
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	return 0;
}

/* Takes the lock of the directory @fd without waiting: 0, or -errno (EWOULDBLOCK: held). */
static int lock_stage(int fd)
{
	return flock(fd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
}

int nw_seclog_stage_create(const char *output, char *buf, size_t len, int *ret_lock)
{
	char out[PATH_MAX];
	int ret = absolute(output, out, sizeof(out));

	if (ret)
		return ret;
	/*
	 * Between mkdtemp() and the lock another recorder's clean could take
	 * the new directory for a dead one's: then it is gone (or another),
	 * and a new one is made.
	 */
	for (int tries = 0; tries < 8; tries++) {
		struct stat made, here;
		int fd;

		if (snprintf(buf, len, "%s" STAGE_INFIX STAGE_SUFFIX, out) >= (int)len)
			return -ENAMETOOLONG;
		if (!mkdtemp(buf))
			return -errno;
		fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		ret = lock_stage(fd);
		if (ret == 0 && fstat(fd, &made) == 0 && stat(buf, &here) == 0 &&
		    made.st_dev == here.st_dev && made.st_ino == here.st_ino) {
			*ret_lock = fd;
			return 0;
		}
		close(fd);
		/* A file system without flock (NFS): a stage all the same, never cleaned. */
		if (ret && ret != -EWOULDBLOCK) {
			*ret_lock = -1;
			return 0;
		}
	}
	return -EEXIST;
}

/* Does the directory @fd hold interval logs only (or nothing), as a stage does? */
static bool only_logs(int fd)
{
	int fd2 = dup(fd);
	DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
	struct dirent *de;
	bool only = d != NULL;

	if (!d) {
		if (fd2 >= 0)
			close(fd2);
		return false;
	}
	while (only && (de = readdir(d)))
		only = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		       nw_seclog_is_log_name(de->d_name);
	closedir(d);
	return only;
}

unsigned nw_seclog_stage_clean(const char *output)
{
	char out[PATH_MAX], *slash, path[PATH_MAX + 256];
	const char *parent, *base;
	unsigned removed = 0;
	struct dirent *de;
	size_t baselen;
	DIR *d;

	if (absolute(output, out, sizeof(out)))
		return 0;
	slash = strrchr(out, '/');
	*slash = 0;
	parent = slash == out ? "/" : out;
	base = slash + 1;
	baselen = strlen(base);
	d = opendir(parent);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		int fd;

		/* Exactly "<base>.sections-" and mkdtemp's six characters. */
		if (strlen(name) != baselen + strlen(STAGE_INFIX STAGE_SUFFIX) ||
		    strncmp(name, base, baselen) ||
		    strncmp(name + baselen, STAGE_INFIX, strlen(STAGE_INFIX)))
			continue;
		fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/*
		 * Held: a recorder that runs.  Taken: removed before it is let
		 * go, unless it holds what a stage never does (not a stage).
		 */
		if (lock_stage(fd) == 0 && only_logs(fd) &&
		    snprintf(path, sizeof(path), "%s/%s", parent, name) < (int)sizeof(path)) {
			nw_seclog_stage_remove(path);
			nw_debug("removed %s, left by a recorder killed before its end", path);
			removed++;
		}
		close(fd);
	}
	closedir(d);
	return removed;
}

bool nw_seclog_stage_used(const char *stage)
{
	struct dirent *de;
	bool used = false;
	DIR *d = opendir(stage);

	if (!d)
		return false;
	while (!used && (de = readdir(d)))
		used = nw_seclog_is_log_name(de->d_name);
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

int nw_seclog_stage_finish(const char *stage, const char *dir, char *err, size_t errlen)
{
	char target[PATH_MAX];
	int rc;

	if (!nw_seclog_stage_used(stage)) {
		nw_seclog_stage_remove(stage);
		return 0;
	}
	if (snprintf(target, sizeof(target), "%s/%s", dir, NW_SECLOG_SUBDIR) >=
	    (int)sizeof(target)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (rename(stage, target) < 0) {
		rc = -errno;
		nw_set_err(err, errlen, "cannot move the sections %s to %s: %s", stage, target,
			   strerror(-rc));
		return rc;
	}
	return 0;
}
