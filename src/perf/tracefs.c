/* SPDX-License-Identifier: MIT */
#include "perf/tracefs.h"

#include <errno.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/* The mount point of the first file system of type @type, with @sub appended. */
static int mounted(const char *type, const char *sub, char *dir, size_t size)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret == -ENOENT && (m = getmntent(f))) {
		char path[4096];

		if (strcmp(m->mnt_type, type))
			continue;
		snprintf(path, sizeof(path), "%s%s", m->mnt_dir, sub);
		if (access(path, F_OK) != 0)
			continue;
		ret = (size_t)snprintf(dir, size, "%s", path) < size ? 0 : -ENAMETOOLONG;
	}
	endmntent(f);
	return ret;
}

int nw_tracefs_find(char *dir, size_t size)
{
	int ret = mounted("tracefs", "", dir, size);

	if (ret != -ENOENT)
		return ret;
	ret = mounted("debugfs", "/tracing/uprobe_events", dir, size);
	if (!ret) {
		dir[strlen(dir) - strlen("/uprobe_events")] = 0;
		return 0;
	}
	if (mount("nodev", NW_TRACEFS_DIR, "tracefs", 0, NULL) != 0)
		return errno == ENODEV ? -ENODEV : -errno;
	return (size_t)snprintf(dir, size, "%s", NW_TRACEFS_DIR) < size ? 0 : -ENAMETOOLONG;
}
