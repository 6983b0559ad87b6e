/* SPDX-License-Identifier: MIT */
/*
 * Metric descriptors: what each u64 of a CCT node counts.  They are data
 * of the measurement (manifest.json "metrics", read back as written), so
 * no view guesses a metric's meaning from its name or position.  Every
 * sampled event has a metric counting its samples and one summing their
 * periods; the off-CPU event counts context switches and the nanoseconds
 * off the CPU after them.  Allocations (narwhal-record --alloc, event
 * "alloc") have four metrics named by their kind alone: the objects and
 * bytes allocated at each calling context and those still live at the end
 * (estimates weighed from byte-sampled allocations; doc/ALLOCATIONS.md).
 * Lock contention (narwhal-record --locks, event "lock") has three, named
 * by their kind alone too: the time waited for locks on the waiters'
 * stacks, the contended acquisitions there, and the same waiting charged
 * to the stacks that released the locks (estimates weighed from waits
 * sampled by time; doc/LOCKS.md).
 */
#ifndef NW_METRIC_H
#define NW_METRIC_H

#include <stdbool.h>
#include <stdint.h>

enum nw_metric_kind {
	NW_METRIC_SAMPLES,       /* samples taken (count) */
	NW_METRIC_PERIOD,        /* sum of the samples' periods (events; ns for clock events) */
	NW_METRIC_SWITCHES,      /* off-CPU: switches away from the CPU (count) */
	NW_METRIC_OFFCPU_TIME,   /* off-CPU: time until the thread ran again (ns) */
	NW_METRIC_ALLOC_OBJECTS, /* allocations made here (count) */
	NW_METRIC_ALLOC_BYTES,   /* bytes allocated here */
	NW_METRIC_INUSE_OBJECTS, /* allocations made here and not freed (count) */
	NW_METRIC_INUSE_BYTES,   /* bytes allocated here and not freed */
	NW_METRIC_LOCK_WAIT,     /* locks: time waited for a lock here, on the waiter's stack (ns) */
	NW_METRIC_LOCK_CONTENTIONS, /* locks: contended acquisitions here (count) */
	NW_METRIC_LOCK_DELAY,    /* locks: time others waited for a lock released here (ns) */
	NW_METRIC_KINDS,
};

enum nw_metric_unit {
	NW_UNIT_COUNT,           /* things counted: samples, switches */
	NW_UNIT_EVENTS,          /* hardware or software events */
	NW_UNIT_NANOSECONDS,
	NW_UNIT_BYTES,
	NW_UNIT_UNITS,
};

/* HPC_CSPROF metric flags (DESIGN.md): sampled asynchronously, or real time. */
#define NW_METRIC_FLAG_ASYNC (1u << 1)
#define NW_METRIC_FLAG_REAL  (1u << 2)

/* The event of the allocation metrics. */
#define NW_ALLOC_EVENT "alloc"
/* The event of the lock metrics. */
#define NW_LOCK_EVENT "lock"

struct nw_metric {
	char *name;               /* "cpu-clock:samples": event ':' kind, the csprof name;
				   * an allocation metric: its kind ("alloc-bytes") */
	char *event;              /* "cpu-clock", "off-cpu" */
	enum nw_metric_kind kind;
	enum nw_metric_unit unit;
	uint64_t period;          /* sample period: fixed (-c), else the mean sampled (-F); 0 unknown */
	uint32_t flags;           /* NW_METRIC_FLAG_* */
};

/* "samples", "period", "switches", "nanoseconds", "alloc-objects", ... "inuse-bytes". */
const char *nw_metric_kind_name(enum nw_metric_kind kind);
/* The kind called @name, or -EINVAL. */
int nw_metric_kind_parse(const char *name);
/* "count", "events", "nanoseconds", "bytes". */
const char *nw_metric_unit_name(enum nw_metric_unit unit);
/* The unit called @name, or -EINVAL. */
int nw_metric_unit_parse(const char *name);
/* Does the metric count samples (one per sample: samples, switches)? */
bool nw_metric_counts_samples(const struct nw_metric *m);
/* Is @kind one of the four allocation metrics? */
bool nw_metric_kind_is_alloc(enum nw_metric_kind kind);
/* Is @kind one of the three lock metrics? */
bool nw_metric_kind_is_lock(enum nw_metric_kind kind);
/*
 * Is @kind weighed from sampled events (allocations, locks) and named by
 * its kind alone?
 */
bool nw_metric_kind_is_weighed(enum nw_metric_kind kind);

/*
 * Fills @m (owning copies of the strings) for @event and @kind: the name
 * "event:kind" (an allocation or lock metric: the kind alone), the unit
 * (nanoseconds for the period of cpu-clock and task-clock, for off-CPU
 * and lock time, events for other periods, bytes for allocated and live bytes, else
 * count) and the csprof flags (none for allocations: synchronous; REAL for
 * lock time).  -ENOMEM.
 */
int nw_metric_init(struct nw_metric *m, const char *event, enum nw_metric_kind kind,
		   uint64_t period);
int nw_metric_copy(struct nw_metric *dst, const struct nw_metric *src);
void nw_metric_fini(struct nw_metric *m);

#endif
