/* SPDX-License-Identifier: MIT */
#include "perf/event.h"

#include <errno.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int nw_event_parse(const char *name, struct nw_event *ev)
{
	pfm_perf_encode_arg_t arg;
	int ret;

	if (strlen(name) >= sizeof(ev->name))
		return -ENAMETOOLONG;
	if (!*name || strchr(name, ' '))
		return -EINVAL;
	/* pfm_initialize() is idempotent and keeps its own state. */
	if (pfm_initialize() != PFM_SUCCESS)
		return -EIO;
	memset(ev, 0, sizeof(*ev));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &ev->attr;
	arg.size = sizeof(arg);
	/* User and kernel by default: a modifier (":u") narrows it, as perf's do. */
	ret = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (ret == PFM_ERR_NOTFOUND)
		return -ENOENT;
	if (ret != PFM_SUCCESS)
		return -EINVAL;
	snprintf(ev->name, sizeof(ev->name), "%s", name);
	ev->attr.size = sizeof(ev->attr);
	ev->attr.exclude_hv = 1;
	return 0;
}

int nw_event_probe(const struct nw_event *ev)
{
	struct perf_event_attr attr = ev->attr;
	long fd;

	attr.disabled = 1;
	/* Whether the event exists here, not whether kernel samples are allowed. */
	attr.exclude_kernel = 1;
	attr.sample_period = 0;
	attr.freq = 0;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
}

int nw_event_foreach(int (*fn)(const char *pmu, const char *name, const char *desc, void *arg),
		     void *arg)
{
	pfm_pmu_t pmu;

	if (pfm_initialize() != PFM_SUCCESS)
		return -EIO;
	pfm_for_all_pmus(pmu) {
		pfm_pmu_info_t pinfo;

		memset(&pinfo, 0, sizeof(pinfo));
		pinfo.size = sizeof(pinfo);
		if (pfm_get_pmu_info(pmu, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
			continue;
		for (int i = pinfo.first_event; i != -1; i = pfm_get_event_next(i)) {
			pfm_event_info_t einfo;

			memset(&einfo, 0, sizeof(einfo));
			einfo.size = sizeof(einfo);
			if (pfm_get_event_info(i, PFM_OS_PERF_EVENT_EXT, &einfo) != PFM_SUCCESS)
				continue;
			if (fn(pinfo.name, einfo.name, einfo.desc ? einfo.desc : "", arg))
				return 0;
		}
	}
	return 0;
}
