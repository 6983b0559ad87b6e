/* SPDX-License-Identifier: MIT */
/*
 * Event names to perf_event_attr through libpfm4 (generic names such as
 * cycles or cpu-clock, and PMU names such as INST_RETIRED:ANY_P).
 */
#ifndef NW_EVENT_H
#define NW_EVENT_H

#include <linux/perf_event.h>
#include <stddef.h>

#define NW_EVENT_NAME_MAX 96

struct nw_event {
	char name[NW_EVENT_NAME_MAX];  /* as the user wrote it */
	/* type and config filled; exclude_kernel set when a modifier asks for user space only */
	struct perf_event_attr attr;
};

/*
 * Resolves @name.  -ENOENT for a name libpfm4 does not know, -EINVAL for a
 * malformed one, -ENAMETOOLONG; -EIO when libpfm4 cannot initialize.
 */
int nw_event_parse(const char *name, struct nw_event *ev);

/*
 * Whether this machine can count @ev: opens it on the calling thread and
 * closes it.  0, or -errno from perf_event_open (ENOENT/EOPNOTSUPP/ENODEV:
 * no such PMU here; EACCES/EPERM: not allowed).
 */
int nw_event_probe(const struct nw_event *ev);

/*
 * Calls @fn with the name and description of every event of every PMU
 * libpfm4 finds on this machine (the generic perf events first), until
 * @fn returns non-zero.  -EIO when libpfm4 cannot initialize.
 */
int nw_event_foreach(int (*fn)(const char *pmu, const char *name, const char *desc, void *arg),
		     void *arg);

#endif
