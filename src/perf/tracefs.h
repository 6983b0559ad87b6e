/* SPDX-License-Identifier: MIT */
/*
 * Where tracefs is (the kernel's tracing file system: uprobe_events and
 * the tracepoints' ids).  A fresh machine often has it unmounted; as perf
 * does, it is then mounted at /sys/kernel/tracing when this process may.
 */
#ifndef NW_TRACEFS_H
#define NW_TRACEFS_H

#include <stddef.h>

#define NW_TRACEFS_DIR "/sys/kernel/tracing"

/*
 * Writes tracefs's directory into @dir (@size bytes): the first tracefs
 * in /proc/self/mounts, else debugfs's tracing/ directory, else
 * NW_TRACEFS_DIR after mounting tracefs there.  -ENODEV when the kernel
 * has no tracefs; -EPERM/-EACCES when it is not mounted and this process
 * may not mount it; -ENAMETOOLONG; -errno of mount(2).
 */
int nw_tracefs_find(char *dir, size_t size);

#endif
