/* SPDX-License-Identifier: MIT */
/*
 * What this machine allows and offers a recording (record/machine.h):
 * perf_event_paranoid, hidden kernel addresses, the events asked for or
 * the default one, ring sizes, the depth of a chain.
 */
#include "record/machine.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/recorder.h"
#include "util/log.h"

/* The integer in @path, @fallback when unreadable. */
static int read_int_file(const char *path, int fallback)
{
	FILE *f = fopen(path, "r");
	int v = fallback;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = fallback;
		fclose(f);
	}
	return v;
}

int nw_recorder_paranoid(void)
{
	return read_int_file("/proc/sys/kernel/perf_event_paranoid", INT_MIN);
}

bool nw_recorder_kernel_hidden(int *ret_restrict)
{
	char line[256];
	bool hidden = false;
	FILE *f = fopen("/proc/kallsyms", "r");

	/*
	 * Hidden: every address reads 0.  The first line alone does not say
	 * (up to 6.1 it is the per-CPU area's fixed_percpu_data, at 0).
	 */
	if (f) {
		int n = 0, zero = 0;

		for (; n < 16 && fgets(line, sizeof(line), f); n++)
			zero += strtoull(line, NULL, 16) == 0;
		hidden = n && zero == n;
		fclose(f);
	}
	*ret_restrict = read_int_file("/proc/sys/kernel/kptr_restrict", -1);
	return hidden;
}

/* Cycles where this machine can count them, else cpu-clock (*@ret_fell_back set). */
static int default_event(struct nw_event *ret, bool *ret_fell_back, char *err, size_t errlen)
{
	int e = nw_event_parse("cycles", ret);

	if (!e)
		e = nw_event_probe(ret);
	/* No PMU (a virtual machine, often): the kernel's timer instead. */
	if (e == -ENOENT || e == -EOPNOTSUPP || e == -ENODEV || e == -EINVAL) {
		*ret_fell_back = true;
		e = nw_event_parse("cpu-clock", ret);
	}
	if (e)
		nw_set_err(err, errlen, "cannot set up the default event: %s", strerror(-e));
	return e ? e : 1;
}

int nw_recorder_events(const char *list, bool off_cpu, unsigned source_metrics,
		       struct nw_event *evs, bool *ret_fell_back, char *err, size_t errlen)
{
	int n = 0, max = (int)(NW_RECORDER_MAX_METRICS - source_metrics) / 2;
	char *copy, *save = NULL, *name;

	*ret_fell_back = false;
	if (max > NW_RECORDER_MAX_EVENTS)
		max = NW_RECORDER_MAX_EVENTS;
	/* Allocations or locks alone unless events are named. */
	if (!list && source_metrics && !off_cpu)
		return 0;
	if (!list)
		return default_event(&evs[0], ret_fell_back, err, errlen);
	copy = strdup(list);
	if (!copy) {
		nw_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		if (n == max - (off_cpu ? 1 : 0)) {
			nw_set_err(err, errlen, "at most %d events at once (%d with --off-cpu)%s",
				   max, max - 1, source_metrics ? " with --alloc or --locks" : "");
			n = -E2BIG;
			break;
		}
		if (nw_event_parse(name, &evs[n])) {
			nw_set_err(err, errlen, "unknown event '%s'; list the names this machine "
						"knows with 'narwhal-record --list-events'", name);
			n = -ENOENT;
			break;
		}
		n++;
	}
	free(copy);
	if (n == 0) {
		nw_set_err(err, errlen, "-e names no event");
		n = -EINVAL;
	}
	return n;
}

unsigned nw_recorder_ring_pages(enum nw_callgraph mode, bool alloc)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);
	unsigned pages = mode == NW_CALLGRAPH_FP ? 128 : (8u << 20) / (unsigned)page;

	if (alloc)
		pages *= 4;
	if (ncpus < 1)
		ncpus = 1;
	while (pages > 128 && (uint64_t)pages * (uint64_t)page * (uint64_t)ncpus > (64ull << 20))
		pages /= 2;
	return pages;
}

uint32_t nw_recorder_max_stack(enum nw_callgraph mode)
{
	int v;

	if (mode != NW_CALLGRAPH_FP)
		return NW_UNWIND_MAX_FRAMES;
	v = read_int_file("/proc/sys/kernel/perf_event_max_stack", 0);
	return v > 0 && v < NW_UNWIND_MAX_FRAMES ? (uint32_t)v : NW_UNWIND_MAX_FRAMES;
}
