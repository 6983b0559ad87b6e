/* SPDX-License-Identifier: MIT */
#include "model/metric.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

static const char *const kind_names[NW_METRIC_KINDS] = {
	[NW_METRIC_SAMPLES] = "samples",
	[NW_METRIC_PERIOD] = "period",
	[NW_METRIC_SWITCHES] = "switches",
	[NW_METRIC_OFFCPU_TIME] = "nanoseconds",
	[NW_METRIC_ALLOC_OBJECTS] = "alloc-objects",
	[NW_METRIC_ALLOC_BYTES] = "alloc-bytes",
	[NW_METRIC_INUSE_OBJECTS] = "inuse-objects",
	[NW_METRIC_INUSE_BYTES] = "inuse-bytes",
	[NW_METRIC_LOCK_WAIT] = "lock-wait",
	[NW_METRIC_LOCK_CONTENTIONS] = "lock-contentions",
	[NW_METRIC_LOCK_DELAY] = "lock-delay",
};

static const char *const unit_names[NW_UNIT_UNITS] = {
	[NW_UNIT_COUNT] = "count",
	[NW_UNIT_EVENTS] = "events",
	[NW_UNIT_NANOSECONDS] = "nanoseconds",
	[NW_UNIT_BYTES] = "bytes",
};

const char *nw_metric_kind_name(enum nw_metric_kind kind)
{
	return (unsigned)kind < NW_METRIC_KINDS ? kind_names[kind] : "?";
}

int nw_metric_kind_parse(const char *name)
{
	for (int k = 0; k < NW_METRIC_KINDS; k++)
		if (!strcmp(kind_names[k], name))
			return k;
	return -EINVAL;
}

const char *nw_metric_unit_name(enum nw_metric_unit unit)
{
	return (unsigned)unit < NW_UNIT_UNITS ? unit_names[unit] : "?";
}

int nw_metric_unit_parse(const char *name)
{
	for (int u = 0; u < NW_UNIT_UNITS; u++)
		if (!strcmp(unit_names[u], name))
			return u;
	return -EINVAL;
}

bool nw_metric_counts_samples(const struct nw_metric *m)
{
	return m->kind == NW_METRIC_SAMPLES || m->kind == NW_METRIC_SWITCHES;
}

bool nw_metric_kind_is_alloc(enum nw_metric_kind kind)
{
	return kind >= NW_METRIC_ALLOC_OBJECTS && kind <= NW_METRIC_INUSE_BYTES;
}

bool nw_metric_kind_is_lock(enum nw_metric_kind kind)
{
	return kind >= NW_METRIC_LOCK_WAIT && kind <= NW_METRIC_LOCK_DELAY;
}

bool nw_metric_kind_is_weighed(enum nw_metric_kind kind)
{
	return nw_metric_kind_is_alloc(kind) || nw_metric_kind_is_lock(kind);
}

/* The events whose period is a time: the kernel's clock events count nanoseconds. */
static bool clock_event(const char *event)
{
	return !strcmp(event, "cpu-clock") || !strcmp(event, "task-clock");
}

int nw_metric_init(struct nw_metric *m, const char *event, enum nw_metric_kind kind,
		   uint64_t period)
{
	memset(m, 0, sizeof(*m));
	m->event = strdup(event);
	m->name = nw_metric_kind_is_weighed(kind) ? strdup(nw_metric_kind_name(kind))
						: nw_strdup_printf("%s:%s", event, nw_metric_kind_name(kind));
	if (!m->event || !m->name) {
		nw_metric_fini(m);
		return -ENOMEM;
	}
	m->kind = kind;
	m->period = period;
	switch (kind) {
	case NW_METRIC_PERIOD:
		m->unit = clock_event(event) ? NW_UNIT_NANOSECONDS : NW_UNIT_EVENTS;
		m->flags = NW_METRIC_FLAG_ASYNC;
		break;
	case NW_METRIC_OFFCPU_TIME:
		m->unit = NW_UNIT_NANOSECONDS;
		m->flags = NW_METRIC_FLAG_REAL;
		break;
	case NW_METRIC_SWITCHES:
		m->unit = NW_UNIT_COUNT;
		m->flags = NW_METRIC_FLAG_REAL;
		break;
	case NW_METRIC_ALLOC_OBJECTS:
	case NW_METRIC_INUSE_OBJECTS:
		m->unit = NW_UNIT_COUNT;
		break;
	case NW_METRIC_ALLOC_BYTES:
	case NW_METRIC_INUSE_BYTES:
		m->unit = NW_UNIT_BYTES;
		break;
	case NW_METRIC_LOCK_WAIT:
	case NW_METRIC_LOCK_DELAY:
		m->unit = NW_UNIT_NANOSECONDS;
		m->flags = NW_METRIC_FLAG_REAL;
		break;
	case NW_METRIC_LOCK_CONTENTIONS:
		m->unit = NW_UNIT_COUNT;
		m->flags = NW_METRIC_FLAG_REAL;
		break;
	default:
		m->unit = NW_UNIT_COUNT;
		m->flags = NW_METRIC_FLAG_ASYNC;
		break;
	}
	return 0;
}

int nw_metric_copy(struct nw_metric *dst, const struct nw_metric *src)
{
	*dst = *src;
	dst->name = strdup(src->name);
	dst->event = strdup(src->event);
	if (!dst->name || !dst->event) {
		nw_metric_fini(dst);
		return -ENOMEM;
	}
	return 0;
}

void nw_metric_fini(struct nw_metric *m)
{
	free(m->name);
	free(m->event);
	m->name = m->event = NULL;
}
