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
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

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
