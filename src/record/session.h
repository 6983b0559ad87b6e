/* SPDX-License-Identifier: MIT */
/*
 * A recording session: the events (one per online CPU per event, inherited
 * by every thread and child of the target) and their mmap rings
 * (session.c); the dispatch of every record (dispatch.c): MMAP2 to address
 * maps, COMM/FORK/EXIT to the task table, SAMPLE through the unwinder into
 * the CCT of (thread, epoch) and to the listeners, SWITCH (a thread running
 * again) to the time off the CPU of the stack it blocked in, LOST/THROTTLE
 * to counters; the tables seeded from /proc when attaching or recording
 * the whole machine (procfs.c).  Records of one read round are processed in
 * time order across the rings (record/ordered.h).  A source of events of
 * its own, the allocation listener (record/alloc.h), has its events opened
 * beside the sampled ones and gets their samples.
 */
#ifndef NW_SESSION_H
#define NW_SESSION_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch/arch.h"
#include "bpf/unwinder.h"
#include "elf/facts.h"
#include "model/epoch.h"
#include "model/measurement.h"
#include "perf/event.h"
#include "perf/record.h"
#include "perf/ring.h"
#include "record/ordered.h"
#include "record/tasks.h"
#include "unwind/unwind.h"

struct nw_session_opts {
	const struct nw_event *events;
	unsigned nevents;
	bool freq;                 /* sample_freq = value, else sample_period = value */
	uint64_t value;
	enum nw_callgraph callgraph;
	uint32_t stack_size;       /* dwarf mode's stack copy (bpf: of the samples it hands back) */
	uint32_t max_frames;       /* bpf: user frames per sample (0: NW_UNWIND_MAX_FRAMES) */
	unsigned mmap_pages;       /* data pages per ring, a power of two */
	bool shrink_rings;         /* halve mmap_pages (down to NW_SESSION_MIN_PAGES)
				    * when the locked-memory limit refuses a ring */
	bool off_cpu;              /* add the off-cpu event: every context switch,
				    * its user stack and the time until switch-in */
	bool kernel;               /* also kernel time, with the kernel's callchain
				    * below the user stack (needs kernel samples) */
	bool idle;                 /* system-wide: keep the idle task's samples (pid 0) */
	/*
	 * A source of events of its own (the allocation listener); NULL: none.
	 * The caller's, kept until nw_session_fini().  With it, @nevents may
	 * be 0.
	 */
	const struct nw_session_source *source;
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
	uint64_t alloc_failures;   /* records dropped for lack of memory */
	uint64_t foreign;          /* a source's samples of processes not recorded, dropped */
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
#define NW_SESSION_MAX_PROBES 16   /* a source's uprobes unwound in the kernel */

struct nw_session;

/*
 * Where a source opens one of its events: on each task as the sampled
 * events are (on every CPU, inherited, enabled with them); or once per
 * CPU for every task, at the session's first open, enabled at once (it
 * fires in processes the session does not follow: their samples are
 * dropped and counted in stats.foreign).
 */
enum nw_source_scope {
	NW_SOURCE_TASK,
	NW_SOURCE_CPU,
};

/*
 * A listener with events of its own (perf's struct perf_tool for events
 * the session does not fold itself): the allocation listener of --alloc
 * (record/alloc.h).  Its events are numbered from 0 to nevents - 1; the
 * session opens them beside the sampled ones and calls it back with their
 * samples, without knowing what they mean.
 *
 *  - attr: makes @a, filled as for a sampled event that does not bring
 *    the side-band records (sample format, registers, stack copy, clock,
 *    enable at exec when launching), into its event @which; returns where
 *    it is opened;
 *  - sample: a sample of its event @which, by thread @th of a process the
 *    session follows, whose address space is at @epoch;
 *  - exec: process @pid replaced its image (NULL: nothing to do);
 *  - in_kernel: whether -g bpf unwinds its event @which in the kernel: a
 *    uprobe (of the uprobe PMU, or tracefs's) whose samples need the
 *    stack of the task that hit it (NULL: none is);
 *  - describe: adds the descriptors of its metrics to @m, after the
 *    events' (-ENOMEM).
 */
struct nw_session_source {
	void *arg;
	unsigned nevents;
	unsigned nmetrics;         /* its metrics in every tree, from s->source_metric on */
	uint64_t regs_mask;        /* user registers its samples need beyond the unwinder's */
	bool bursty;               /* its samples come in bursts: the reader wakes sooner */
	enum nw_source_scope (*attr)(void *arg, const struct nw_session *s, unsigned which,
				     struct perf_event_attr *a);
	void (*sample)(void *arg, struct nw_session *s, unsigned which,
		       const struct nw_sample *smp, struct nw_thread *th,
		       const struct nw_epoch *epoch);
	void (*exec)(void *arg, struct nw_session *s, uint32_t pid);
	bool (*in_kernel)(void *arg, unsigned which);
	int (*describe)(void *arg, const struct nw_session *s, struct nw_measurement *m);
};

/* Which event a sample id was opened for: a sampled one, or the source's. */
struct nw_session_id {
	uint64_t id;
	uint32_t event;            /* index into events, or the source's own number */
	bool source;
};

struct nw_session {
	struct nw_session_opts opts;
	const struct nw_arch_ops *arch;
	struct nw_sample_format fmt;
	unsigned nevents;          /* opts.nevents, plus the off-cpu event */
	unsigned offcpu;           /* index of the off-cpu event, UINT32_MAX: none */
	/*
	 * 2 metrics per event: samples and period sum; for the off-cpu event,
	 * context switches and nanoseconds off the CPU.  Then the source's,
	 * from source_metric on.
	 */
	unsigned nmetrics;
	unsigned source_metric;    /* UINT32_MAX: no source */
	bool source_open;          /* the source's per-CPU events are open */
	struct nw_session_event *events;
	int ncpus;
	int *fds;                  /* every event fd, all CPUs and tasks */
	size_t nfds, cap_fds;
	struct nw_session_id *ids; /* the fds' sample ids, sorted by id */
	size_t nids, cap_ids;
	int *ring_fd;              /* per CPU: the fd that owns its ring (to poll), -1: none */
	struct nw_ring *rings;     /* one per CPU; meta NULL: not mapped */
	void **maps;
	size_t map_len;
	struct nw_task_table tasks;
	struct nw_module_table modules;
	struct nw_elf_cache *elf;  /* the ELF facts of every module mapped */
	struct nw_unwinder unwinder;
	struct nw_session_stats stats;
	struct nw_ordered order;   /* the rings read in time order */
	struct nw_frame *frames;   /* the sample being processed, unwound */
	/* listeners (nw_session_listen()), owned by the caller */
	const struct nw_session_hooks *hooks[NW_SESSION_MAX_HOOKS];
	unsigned nhooks;
	bool system_wide;          /* nw_session_open_system() */
	int *kept_fds;             /* files of modules read through an fd (containers, deleted) */
	size_t nkept, cap_kept;
	struct nw_bpf_unwinder *bpf;  /* -g bpf: the in-kernel unwinder */
	char bpf_err[160];         /* why it could not be loaded */
	unsigned probes[NW_SESSION_MAX_PROBES];  /* the source's events it unwinds (uprobes) */
	unsigned nprobes;
	int probe_fd[NW_SESSION_MAX_PROBES];  /* a tracefs uprobe's event holding the program, -1 */
	bool source_in_kernel;     /* the source's sample being handled is the program's */
	struct nw_cache *cache;    /* where unwind tables are kept between runs (NULL: none) */
	uint64_t bpf_table_ns;     /* time spent compiling unwind tables */
	uint64_t bpf_tables_failed;
	uint64_t bpf_refused;      /* tables the kernel's maps did not take */
	char bpf_refused_why[PATH_MAX + 64];  /* the first: its file, and why */
	char bpf_cmd[PATH_MAX];    /* the launched program, as execvp() found it ("": none) */
	uint32_t *bpf_seen;        /* the modules whose tables were loaded while recording */
	size_t nseen, cap_seen;
	struct nw_bpf_vma *bpf_keys;  /* per module: how the program knows its file (kind NONE: not yet) */
	size_t nkeys, cap_keys;
};

/* ---- session.c: the events and their rings ---- */

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
 * System-wide (-a): opens every event on every CPU @cpus selects (NULL:
 * every online one), for every task, and enables them.  -errno from
 * perf_event_open (EACCES/EPERM: not allowed) or mmap.
 */
int nw_session_open_system(struct nw_session *s, const bool *cpus);
/*
 * Files sample id @id under @event (the source's own number when @source):
 * what opening an event does, for tests that open none.  -ENOMEM.
 */
int nw_session_file_id(struct nw_session *s, uint64_t id, unsigned event, bool source);
/* Whether the in-kernel unwinder serves the source's event @which (-g bpf). */
bool nw_session_probe(const struct nw_session *s, unsigned which);
/* Reads every ring once and processes what it held.  Returns records processed or -errno. */
int nw_session_read(struct nw_session *s);
/* Disables the events so nothing more arrives (ends an attach or a stopped run). */
void nw_session_disable(struct nw_session *s);
/* Unmaps, closes, frees.  Works on a half-opened session. */
void nw_session_fini(struct nw_session *s);

/* ---- dispatch.c: records into the tables and trees ---- */

/* Processes one record: -EBADMSG when it does not decode. */
int nw_session_process(struct nw_session *s, const void *rec, size_t size);
/*
 * Unwinds @smp of thread @th at @epoch into s->frames: the frame count
 * (0: no frame).
 */
size_t nw_session_unwind(struct nw_session *s, const struct nw_thread *th,
			 const struct nw_epoch *epoch, const struct nw_sample *smp);
/* User register @reg (perf's number) of @smp: false when the sample has no such register. */
bool nw_session_reg(const struct nw_session *s, const struct nw_sample *smp, int reg,
		    uint64_t *ret);
/* Ends the recording at CLOCK_MONOTONIC @now: threads still off the CPU are charged until then. */
void nw_session_finish(struct nw_session *s, uint64_t now);
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
/*
 * Adds the descriptors of the session's metrics to @m: per event, samples
 * (metric 2e) and period sum (2e + 1); for the off-CPU event, switches and
 * nanoseconds off the CPU; then the source's.  The period of a -F event is
 * the mean sampled so far.  -ENOMEM.
 */
int nw_session_describe_metrics(const struct nw_session *s, struct nw_measurement *m);

/* ---- procfs.c: what /proc says ---- */

/*
 * Seeds the tables from /proc for an attach: the process's executable
 * mappings (its first epoch) and its threads' names.  -ESRCH when the
 * process is gone, -ENOMEM.
 */
int nw_session_synthesize(struct nw_session *s, pid_t pid);
/*
 * Seeds the tables from /proc with every process running now (their
 * mappings, names and threads), for a system-wide recording.  Processes
 * that end meanwhile are skipped.  -ENOMEM.
 */
int nw_session_synthesize_all(struct nw_session *s);
/*
 * The module of (@path, @build_id) mapped by @p at [@start, @end), with
 * its file kept open when it is first seen (so that a file deleted or
 * replaced later, or a container's, is still the one read) and its ELF
 * facts read, and in *@ret_vaddr the ELF address of file offset @pgoff in
 * it (@pgoff itself without facts).  "PATH (deleted)" is module PATH.
 * The module's index, or -ENOMEM.
 */
int nw_session_map_module(struct nw_session *s, struct nw_process *p, const char *path,
			  const uint8_t *build_id, size_t build_id_size, uint64_t pgoff,
			  uint64_t start, uint64_t end, uint64_t *ret_vaddr);
/* ---- tables.c: -g bpf's unwind tables ---- */

/* Loads the unwind table of module @module into s->bpf, once per file. */
void nw_session_load_table(struct nw_session *s, uint32_t module);
/*
 * Process @p mapped @m (its module's table loaded): what the program knew
 * of that space is stale, and @m is one of the mappings it is told.
 */
void nw_session_bpf_map(struct nw_session *s, struct nw_process *p, const struct nw_map *m);
/*
 * @p's mappings are all new (fork: its parent's; exec: none): the program
 * is told them.  @p NULL: nothing to tell.
 */
void nw_session_bpf_mappings(struct nw_session *s, struct nw_process *p);
/*
 * Loads, before the program @cmd starts (as execvp() finds it), the tables
 * of what it maps first: itself, its interpreter, the libraries it names
 * and those of @preload (its LD_PRELOAD, NULL: none), the vdso; they are
 * compiled once and then come from the cache.
 */
void nw_session_preload_tables(struct nw_session *s, const char *cmd, const char *preload);
/*
 * Keeps in the run cache the files whose tables the launched program's
 * processes needed once it started, for nw_session_preload_tables() to
 * load before the next run of the same program (rustc execs a compiler
 * whose 2.6 million rows would otherwise take its first 50 ms).
 */
void nw_session_save_preload(struct nw_session *s);
struct nw_strbuf;
/* What the in-kernel unwinder did, in lines (narwhal-record -v). */
void nw_session_bpf_note(const struct nw_session *s, struct nw_strbuf *out);

/* Notes @p's pid in its own PID namespace when it differs (a container); @p may be NULL. */
void nw_session_read_nspid(struct nw_process *p);

#endif
