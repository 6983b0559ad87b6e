/* SPDX-License-Identifier: MIT */
/*
 * A recording session: the events (one per online CPU per event, inherited
 * by every thread and child of the target), their mmap rings, and the
 * dispatch of every record: MMAP2 to address maps, COMM/FORK/EXIT to the
 * task table, SAMPLE through the unwinder into the CCT of (thread, epoch),
 * LOST/THROTTLE to counters.  Records of one read round are processed in
 * time order across the rings, where they lie in the rings (only a record
 * that wraps the end of a ring is copied).
 */
#ifndef NW_SESSION_H
#define NW_SESSION_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch/arch.h"
#include "elf/facts.h"
#include "model/epoch.h"
#include "model/measurement.h"
#include "perf/event.h"
#include "perf/record.h"
#include "perf/ring.h"
#include "record/alloc.h"
#include "record/tasks.h"
#include "unwind/unwind.h"

struct nw_session_opts {
	const struct nw_event *events;
	unsigned nevents;
	bool freq;                 /* sample_freq = value, else sample_period = value */
	uint64_t value;
	enum nw_callgraph callgraph;
	uint32_t stack_size;       /* dwarf mode's stack copy */
	unsigned mmap_pages;       /* data pages per ring, a power of two */
	bool shrink_rings;         /* halve mmap_pages (down to NW_SESSION_MIN_PAGES)
				    * when the locked-memory limit refuses a ring */
	bool off_cpu;              /* add the off-cpu event: every context switch,
				    * its user stack and the time until switch-in */
	bool kernel;               /* also kernel time, with the kernel's callchain
				    * below the user stack (needs kernel samples) */
	bool idle;                 /* system-wide: keep the idle task's samples (pid 0) */
	/*
	 * Allocations (doc/ALLOCATIONS.md): uprobes on libnarwhal-alloc's
	 * markers, four more metrics; NULL: none.  The caller's, kept until
	 * nw_session_fini().  With it, @nevents may be 0.
	 */
	const struct nw_alloc_opts *alloc;
};

#define NW_SESSION_MIN_PAGES 16

struct nw_session_stats {
	uint64_t samples;          /* folded into a CCT */
	uint64_t lost;             /* records the kernel dropped (LOST) */
	uint64_t throttled;        /* THROTTLE records */
	uint64_t bad_records;      /* records that failed to decode */
	uint64_t ring_resyncs;     /* times a ring reader lost track and skipped ahead */
	uint64_t empty_stacks;     /* samples without a user frame */
	uint64_t idle;             /* system-wide: samples of the idle task, dropped */
	uint64_t alloc_failures;   /* samples dropped for lack of memory */
	uint64_t alloc_samples;    /* sampled allocations folded into a CCT */
	uint64_t alloc_frees;      /* frees of sampled allocations matched */
	uint64_t alloc_untracked;  /* sampled allocations whose free cannot be seen */
	uint64_t alloc_foreign;    /* marker samples of processes not recorded, dropped */
};

/* Per-event state of the session, for the measurement's metric table. */
struct nw_session_event {
	struct nw_event ev;
	uint64_t samples, period;  /* totals, for the mean period of -F */
};

/*
 * Who else listens to the recording (perf's struct perf_tool); the session
 * does not know what a listener keeps.  Either callback may be NULL; a
 * nonzero return counts as an allocation failure.
 *
 *  - sample: every on-CPU sample once it is folded into node @node of the
 *    tree of thread @th for epoch @epoch (nw_epoch.index), with the event
 *    index, time (CLOCK_MONOTONIC ns) and period;
 *  - offcpu: every interval a thread spent off the CPU (--off-cpu), once
 *    it is over: where it blocked, from @start for @ns nanoseconds.
 */
struct nw_session_hooks {
	void *arg;
	int (*sample)(void *arg, const struct nw_thread *th, uint32_t epoch, uint32_t node,
		      unsigned event, uint64_t time, uint64_t period);
	int (*offcpu)(void *arg, const struct nw_thread *th, uint32_t epoch, uint32_t node,
		      unsigned event, uint64_t start, uint64_t ns);
};

#define NW_SESSION_MAX_HOOKS 4

struct nw_session {
	struct nw_session_opts opts;
	const struct nw_arch_ops *arch;
	struct nw_sample_format fmt;
	unsigned nevents;          /* opts.nevents, plus the off-cpu event */
	unsigned offcpu;           /* index of the off-cpu event, UINT32_MAX: none */
	/*
	 * 2 metrics per event: samples and period sum; for the off-cpu event,
	 * context switches and nanoseconds off the CPU.  Then, with
	 * allocations, from alloc_metric on: alloc-objects, alloc-bytes,
	 * inuse-objects, inuse-bytes.
	 */
	unsigned nmetrics;
	unsigned alloc_metric;     /* UINT32_MAX: no allocations */
	struct nw_alloc_live live; /* sampled allocations not freed yet */
	bool alloc_open;           /* the markers' uprobes are open (once, on every CPU) */
	struct nw_session_event *events;
	int ncpus;
	int *fds;                  /* every event fd, all CPUs and tasks */
	size_t nfds, cap_fds;
	int *ring_fd;              /* per CPU: the fd that owns its ring, -1: none */
	struct nw_ring *rings;     /* one per CPU */
	void **maps;
	size_t map_len;
	/*
	 * To poll: one per CPU (its ring's fd), then one more, pfds[ncpus],
	 * that the owner may set (a pidfd of the launched program); -1: none.
	 */
	struct pollfd *pfds;
	struct nw_task_table tasks;
	struct nw_module_table modules;
	struct nw_elf_cache *elf;  /* the ELF facts of every module mapped */
	struct nw_unwinder unwinder;
	struct nw_session_stats stats;
	/* One read round's records, copied out of the rings and sorted by time. */
	unsigned char *batch;
	size_t batch_len, batch_cap;
	struct nw_batch_ref *refs;
	size_t nrefs, cap_refs;
	uint64_t *held;            /* per CPU: the ring's read position, released after the round */
	struct nw_frame *frames;
	uint64_t *id_to_event;     /* sorted pairs (id, event index) */
	size_t nid_to_event;
	/* listeners (nw_session_listen()), owned by the caller */
	const struct nw_session_hooks *hooks[NW_SESSION_MAX_HOOKS];
	unsigned nhooks;
	bool system_wide;          /* nw_session_open_system() */
	int *kept_fds;             /* files of modules read through an fd (containers, deleted) */
	size_t nkept, cap_kept;
};

/* Fills @s and checks @opts.  -EINVAL, -ENOMEM. */
int nw_session_init(struct nw_session *s, const struct nw_session_opts *opts);
/* Adds the listener @h (the caller's, kept until nw_session_fini()).  -ENOSPC when full. */
int nw_session_listen(struct nw_session *s, const struct nw_session_hooks *h);
/*
 * Opens every event on @pid (which has not exec'd yet) on every online
 * CPU, inherited, enabled at exec, and maps the rings.  -errno from
 * perf_event_open (EACCES/EPERM: not allowed; ENOENT: no such event here)
 * or mmap (EPERM/ENOMEM: the ring is larger than perf_event_mlock_kb allows;
 * with shrink_rings, only once rings of NW_SESSION_MIN_PAGES are refused
 * too; s->opts.mmap_pages then holds the size used).
 */
int nw_session_open(struct nw_session *s, pid_t pid);
/*
 * Opens the events on the existing thread @tid (attach: -p/-t), inherited
 * by the threads it creates, and enables them.  -ESRCH when the thread is
 * gone, -errno from perf_event_open or mmap as for nw_session_open().
 */
int nw_session_attach(struct nw_session *s, pid_t tid);
/*
 * Seeds the tables from /proc for an attach: the process's executable
 * mappings (its first epoch) and its threads' names.  -ESRCH when the
 * process is gone, -ENOMEM.
 */
int nw_session_synthesize(struct nw_session *s, pid_t pid);
/*
 * System-wide (-a): opens every event on every CPU @cpus selects (NULL:
 * every online one), for every task, and enables them.  -errno from
 * perf_event_open (EACCES/EPERM: not allowed) or mmap.
 */
int nw_session_open_system(struct nw_session *s, const bool *cpus);
/*
 * Seeds the tables from /proc with every process running now (their
 * mappings, names and threads), for a system-wide recording.  Processes
 * that end meanwhile are skipped.  -ENOMEM.
 */
int nw_session_synthesize_all(struct nw_session *s);
/*
 * Takes back what one event of a trace added (the flight recorder forgets
 * what is older than its window): a sample of @event with @period, or an
 * off-CPU interval of @ns, at node @node of @th's tree for epoch @epoch.
 */
void nw_session_forget(struct nw_session *s, struct nw_thread *th, uint32_t epoch, uint32_t node,
		       unsigned event, bool offcpu, uint64_t value);
/*
 * Starts a new interval of a rotating recording: every tree's metrics and
 * every sample count back to zero (trees keep their nodes, so a thread
 * blocked now still finds the node it blocked in).
 */
void nw_session_restart(struct nw_session *s);
/*
 * Every tree's metrics as written: called once a checkpoint holds them,
 * so that the next writes only the nodes changed after (nw_cct changed).
 */
void nw_session_clear_changes(struct nw_session *s);

/* Ends the recording at CLOCK_MONOTONIC @now: threads still off the CPU are charged until then. */
void nw_session_finish(struct nw_session *s, uint64_t now);
/* Reads every ring once and processes what it held.  Returns records processed or -errno. */
int nw_session_read(struct nw_session *s);
/* Disables the events so nothing more arrives (ends an attach or a stopped run). */
void nw_session_disable(struct nw_session *s);
/* Unmaps, closes, frees.  Works on a half-opened session. */
void nw_session_fini(struct nw_session *s);

/*
 * Adds the descriptors of the session's metrics to @m: per event, samples
 * (metric 2e) and period sum (2e + 1); for the off-CPU event, switches and
 * nanoseconds off the CPU; then the four allocation metrics (their period:
 * the sampling rate in bytes).  The period of a -F event is the mean
 * sampled so far.  -ENOMEM.
 */
int nw_session_describe_metrics(const struct nw_session *s, struct nw_measurement *m);

/* Processes one record (exposed for tests): -EBADMSG when it does not decode. */
int nw_session_process(struct nw_session *s, const void *rec, size_t size);

#endif
