/* SPDX-License-Identifier: MIT */
/*
 * The recorder's side of allocation profiling (narwhal-record --alloc,
 * doc/ALLOCATIONS.md): where libnarwhal-alloc is and where uprobes go on
 * its two marker functions (alloc/abi.h), and the table of sampled
 * allocations still live, so that a free taken in any thread takes back
 * what its allocation added to the live metrics of the tree and node it
 * was sampled in; and the listener that folds the allocation samples into
 * the session's trees: a source of events of the session (session.h),
 * which opens its probes beside the sampled events and hands it their
 * samples.  This module keeps no tree of its own.
 */
#ifndef NW_RECORD_ALLOC_H
#define NW_RECORD_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc/sampler.h"
#include "model/cct.h"
#include "record/session.h"
#include "util/hash.h"

/*
 * Attached (-p/-t): the C library's allocator itself, probed at the entry
 * (arguments) and the return (the pointer) of each function, every call.
 * Defined in tracefs (uprobe_events) so that the events can be inherited
 * by the threads the targets create; see doc/ALLOCATIONS.md.
 */
enum nw_alloc_fn {
	NW_ALLOC_FN_MALLOC,          /* (size) */
	NW_ALLOC_FN_CALLOC,          /* (n, size) */
	NW_ALLOC_FN_REALLOC,         /* (ptr, size) */
	NW_ALLOC_FN_MEMALIGN,        /* (align, size): memalign, aligned_alloc */
	NW_ALLOC_FN_FREE,            /* (ptr): entry only */
	NW_ALLOC_FNS,
};

struct nw_alloc_libc {
	char *path;                  /* the C library of the targets (owned) */
	char tracefs[256];           /* tracefs's directory (perf/tracefs.h) */
	char group[48];              /* the tracefs group of its probes, "narwhal_<pid>" */
	uint64_t ids[NW_ALLOC_FNS][2]; /* tracepoint ids: [fn][0] entry, [fn][1] return; 0: none */
	bool defined;                /* probes written into uprobe_events (to remove) */
};

struct nw_alloc_opts {
	char *library;               /* libnarwhal-alloc.so's path (owned); NULL attached */
	uint64_t sample_off;         /* file offsets of narwhal_alloc_sample() */
	uint64_t free_off;           /* and narwhal_free_sample() */
	uint64_t rate;               /* mean bytes between samples; 1: every allocation */
	int uprobe_type;             /* the uprobe PMU's perf type */
	struct nw_alloc_libc libc;   /* attached: the probes on the C library */
};

/*
 * Fills @o for @library (NULL: found beside @exe, the recorder's own
 * path: in the build tree, or installed in @libdir/narwhal) and @rate:
 * the markers' offsets and the uprobe PMU.  -ENODEV: no uprobe PMU
 * (/sys/bus/event_source/devices/uprobe); -ENOENT: no library or no
 * markers in it; -ENOMEM.  @o is freed with nw_alloc_opts_fini().
 */
int nw_alloc_opts_init(struct nw_alloc_opts *o, const char *library, const char *exe,
		       const char *libdir, uint64_t rate);
void nw_alloc_opts_fini(struct nw_alloc_opts *o);

/*
 * Attached: defines the probes on the C library process @pid maps (its
 * malloc, calloc, realloc, memalign and free; entries and returns) in
 * tracefs, under a group named after this process, after removing the
 * groups of earlier recorders that are gone; tracefs is mounted first
 * when it is not (nw_tracefs_find()).  Another @pid with the same library
 * adds nothing; one with another library: -EXDEV.  -ENOENT: no C library
 * mapped; -ENODEV: no tracefs in this kernel; -EPERM/-EACCES: tracefs not
 * mounted and not mountable, or not writable (root); -errno.
 * nw_alloc_unprobe() or nw_alloc_opts_fini() removes them.
 */
int nw_alloc_probe_libc(struct nw_alloc_opts *o, int pid);
/*
 * Removes the probes of nw_alloc_probe_libc() once their events are
 * closed (waiting up to 5 s for the kernel to let them go).  0, or -EBUSY
 * when some are still defined (the next recorder removes them).
 */
int nw_alloc_unprobe(struct nw_alloc_opts *o);

/*
 * The value of LD_PRELOAD that loads the library before @old (an existing
 * value, or NULL), so that its own preloads still come after.  NULL on
 * ENOMEM; the caller frees it.
 */
char *nw_alloc_preload(const struct nw_alloc_opts *o, const char *old);

/* A sampled allocation not freed yet, and what it added to the live metrics. */
struct nw_alloc_entry {
	uint32_t pid;
	uint64_t ptr;
	struct nw_cct *cct;          /* the tree and node it was sampled in */
	uint32_t node;
	uint64_t objects, bytes;     /* its weight */
};

/*
 * Frees that matched no live allocation, the last NW_ALLOC_ORPHANS: the
 * sample of an allocation taken on one CPU can be read a round after the
 * sample of its free taken on another.
 */
#define NW_ALLOC_ORPHANS 64

struct nw_alloc_live {
	struct nw_alloc_entry *v;
	size_t n, cap;
	uint32_t *free_list;         /* entry numbers to reuse */
	size_t nfree, cap_free;
	struct nw_index index;       /* (pid, ptr) -> entry */
	struct {
		uint32_t pid;
		uint64_t ptr, time;
	} orphans[NW_ALLOC_ORPHANS];
	unsigned next_orphan;
};

void nw_alloc_live_init(struct nw_alloc_live *l);
void nw_alloc_live_fini(struct nw_alloc_live *l);
/*
 * Adds @e.  An entry with the same (pid, ptr) (whose free was never seen)
 * is replaced and copied to @ret_old, returning 1; else 0.  -ENOMEM.
 */
int nw_alloc_live_add(struct nw_alloc_live *l, const struct nw_alloc_entry *e,
		      struct nw_alloc_entry *ret_old);
/* Removes the entry of (@pid, @ptr) into @ret: true, or false when there is none. */
bool nw_alloc_live_remove(struct nw_alloc_live *l, uint32_t pid, uint64_t ptr,
			  struct nw_alloc_entry *ret);
/* Notes a free of (@pid, @ptr) at @time that matched no live allocation. */
void nw_alloc_live_orphan(struct nw_alloc_live *l, uint32_t pid, uint64_t ptr, uint64_t time);
/*
 * Was (@pid, @ptr), allocated at @time, freed already (a free noted by
 * nw_alloc_live_orphan() after @time)?  The note is used up.
 */
bool nw_alloc_live_freed(struct nw_alloc_live *l, uint32_t pid, uint64_t ptr, uint64_t time);
/* Removes every entry of process @pid (its image was replaced: exec), each passed to @fn. */
void nw_alloc_live_drop_pid(struct nw_alloc_live *l, uint32_t pid,
			    void (*fn)(void *arg, const struct nw_alloc_entry *e), void *arg);
/*
 * Attached: a thread's allocator calls under way (entry seen, return not
 * yet), innermost last, and its byte sampler (the recorder samples what
 * the probes report).
 */
#define NW_ALLOC_PENDING 8
struct nw_alloc_thread {
	struct {
		uint64_t sp;          /* stack pointer at the entry */
		uint64_t size, old;   /* bytes asked for; realloc's old pointer */
		uint32_t fn;
	} pending[NW_ALLOC_PENDING];
	uint32_t npending;
	struct nw_alloc_sampler sampler; /* rng 0: not seeded yet */
};

/* Live entries. */
static inline size_t nw_alloc_live_count(const struct nw_alloc_live *l)
{
	return l->index.n;
}

/* What the listener's events are: the interposer's markers, or a C library function's probe. */
enum nw_alloc_event_kind {
	NW_ALLOC_EV_SAMPLE,          /* narwhal_alloc_sample(): a sampled allocation */
	NW_ALLOC_EV_FREE,            /* narwhal_free_sample(): a sampled block freed */
	NW_ALLOC_EV_LIBC,            /* attached: the entry or return of a C library function */
};

struct nw_alloc_event {
	enum nw_alloc_event_kind kind;
	enum nw_alloc_fn fn;         /* NW_ALLOC_EV_LIBC: the function */
	bool ret;                    /* NW_ALLOC_EV_LIBC: its return, else its entry */
};

struct nw_alloc_stats {
	uint64_t samples;            /* sampled allocations folded into a CCT */
	uint64_t frees;              /* frees of sampled allocations matched */
	uint64_t untracked;          /* sampled allocations whose free cannot be seen */
};

/*
 * The allocation listener (doc/ALLOCATIONS.md): the session's source of
 * allocation events.  Each sampled allocation is unwound, the
 * interposer's own frames cut, and weighed into the alloc-* and inuse-*
 * metrics of its node (the session's four source metrics); its free takes
 * the inuse-* back through the live table.  Attached, it samples the C
 * library's calls by bytes itself.
 */
struct nw_alloc_listener {
	struct nw_session_source source; /* give it to the session: nw_session_opts.source */
	const struct nw_alloc_opts *o;
	struct nw_alloc_live live;   /* sampled allocations not freed yet */
	struct nw_alloc_stats stats;
	unsigned nevents;
	struct nw_alloc_event events[2 * NW_ALLOC_FNS];
	unsigned metric_offset;      /* its metrics from s->source_metric + this (record/sources.h) */
};

/*
 * Readies @l for the allocations @o describes (borrowed until
 * nw_alloc_listener_fini()): its events are the markers' uprobes, or
 * attached (o->libc.path) the C library's probes defined so far.
 */
void nw_alloc_listener_init(struct nw_alloc_listener *l, const struct nw_alloc_opts *o);
void nw_alloc_listener_fini(struct nw_alloc_listener *l);

#endif
