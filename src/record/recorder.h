/* SPDX-License-Identifier: MIT */
/*
 * The recorder: one recording from start to end, for narwhal-record and
 * the tests.  It owns the session and everything around it:
 *
 *  - opening: the program launched at its gate (with libnarwhal-alloc
 *    preloaded for --alloc), or the targets attached to, or every CPU;
 *    the events opened with the fallbacks when the kernel refuses kernel
 *    samples (user space only) or off-CPU sampling (on-CPU only);
 *  - the poll set: the rings, and a pidfd that wakes the loop when the
 *    launched program ends;
 *  - the loop: rings read, writes when due (record/output.h: checkpoints,
 *    the end of a rotation interval), a snapshot when asked for, the
 *    flight recorder's traces cut to its window, --duration, stop
 *    requests forwarded to a launched program;
 *  - finishing: the recording stopped, the end's measurement written and
 *    kept for the caller's summary and exports.
 *
 * Time comes from a clock the caller may inject (struct
 * nw_recorder_clock), so that tests drive the checkpoints, rotation,
 * snapshots and the flight recorder without waiting.  The recorder never
 * prints: failures come back as -errno with a message, the rest through
 * the wrote callback and the fields the caller reads.
 */
#ifndef NW_RECORDER_H
#define NW_RECORDER_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "model/measurement.h"
#include "record/alloc.h"
#include "record/locks.h"
#include "record/measure.h"
#include "record/output.h"
#include "record/session.h"
#include "record/sources.h"
#include "record/target.h"
#include "record/tracer.h"
#include "util/cache.h"

/*
 * Two metrics per event; HPC_CSPROF readers take 2..15 metrics (the old
 * reader mistakes a count whose low four bits are 0 or 1 for a tag), so
 * at most 7 events, the off-cpu event included.
 */
#define NW_RECORDER_MAX_EVENTS 7
/* All the metrics a tree may have: the events' two each and the sources' (--alloc 4, --locks 3). */
#define NW_RECORDER_MAX_METRICS 15

/*
 * Where the recorder's time comes from: now on @clk (CLOCK_MONOTONIC,
 * the clock of samples, or CLOCK_REALTIME), and a wait of up to @ms for
 * the poll set (poll(2): -1 with errno, or the fds ready).
 */
struct nw_recorder_clock {
	void *arg;
	uint64_t (*now)(void *arg, clockid_t clk);
	int (*wait)(void *arg, struct pollfd *pfds, nfds_t n, int ms);
};

/* One write, as the wrote callback hears of it. */
struct nw_recorder_write {
	enum nw_run_written what;
	int ret;                       /* 0, or -errno */
	const char *err;               /* ret < 0: why, a message */
	const struct nw_measurement *m; /* the model written; NULL: it could not be built */
	double wall;                   /* seconds since the write began */
	double cpu_model, cpu_write;   /* CPU seconds building the model, and writing it */
	uint64_t nodes;                /* in the model's trees */
	uint64_t trace_events, trace_bytes;
	uint64_t bytes;                /* a checkpoint's or snapshot's pack or journal segment */
	bool segment;                  /* that was a journal segment (what changed), not a pack */
};

struct nw_recorder_opts {
	/*
	 * What to sample: events, rate, call graph, rings (mmap_pages 0: the
	 * default for the mode, shrunk to what the locked-memory limit
	 * allows), off-CPU, kernel, idle.  The source is the recorder's own.
	 */
	struct nw_session_opts session;
	bool alloc;                    /* --alloc: allocations (doc/ALLOCATIONS.md) */
	uint64_t alloc_rate;           /* bytes per sample on average; 0: the default */
	const char *alloc_library;     /* NULL: libnarwhal-alloc.so beside @exe or in @libdir */
	bool locks;                    /* --locks: lock contention (doc/LOCKS.md) */
	uint64_t lock_rate;            /* ns of waiting per sample on average; 0: the default */
	const char *exe, *libdir;
	/* What to record: a command to launch (argc 0: none), targets, or every CPU. */
	char **argv;
	int argc;
	const struct nw_targets *targets; /* NULL or none: not attaching */
	bool system;                   /* every process, on @cpus (NULL: every CPU) */
	const bool *cpus;
	uint64_t duration_ns;          /* stop after this; 0: at the end of the program */
	/* Where and when to write (record/output.h). */
	const char *dir;
	uint64_t checkpoint_ns, rotate_ns, max_bytes;
	uint32_t max_files;
	uint64_t flight_ns;            /* --flight-recorder: the window kept; 0: everything */
	bool trace;                    /* each thread's trace (not --no-trace) */
	bool cache;                    /* the run cache (util/cache.h; not --no-cache) */
	struct nw_codecap_opts code;   /* --code-cap, --no-code (doc/DISASSEMBLY.md) */
	/*
	 * Flags the caller's signal handlers set (NULL: none): a stop asked
	 * for (the signal, forwarded to a launched program, and how many
	 * came: a second kills it), and a snapshot asked for (cleared here).
	 */
	volatile sig_atomic_t *stop_signal, *stop_count, *snapshot;
	/*
	 * Called after each write, failed or not (NULL: none).  Its nonzero
	 * return (an export of its own that failed) becomes the result of a
	 * write that succeeded: nw_recorder_finish() returns it for the end's.
	 */
	int (*wrote)(void *arg, const struct nw_recorder_write *w);
	void *arg;
	const struct nw_recorder_clock *clock; /* NULL: the system's clocks and poll(2) */
};

/* What the recorder did differently from what was asked, for the caller to say. */
struct nw_recorder_notes {
	bool no_kernel;                /* kernel samples refused: user space only */
	bool no_offcpu;                /* off-CPU sampling refused: on-CPU only */
	unsigned pages_asked;          /* ring pages asked for (s.opts.mmap_pages: used) */
	char no_bpf[160];              /* why no mode was asked for and dwarf, not bpf, was used */
};

struct nw_recorder {
	struct nw_recorder_opts o;
	struct nw_recorder_clock clock;
	struct nw_recorder_notes notes;
	struct nw_alloc_opts alloc;    /* --alloc: the interposer and its markers, or the probes */
	struct nw_alloc_listener allocs;
	bool alloc_ready;
	struct nw_lock_opts lock;      /* --locks: the futex tracepoints */
	struct nw_lock_listener locks;
	bool locks_ready;
	struct nw_sources sources;     /* --alloc and --locks in one run */
	struct nw_session s;
	bool session_ready;
	struct nw_launch l;            /* the launched program; pid -1: none (or reaped) */
	int status;                    /* waitpid's, for a launched program */
	struct nw_targets attached;    /* the threads attached to */
	int attached_argc;             /* the command line of what was attached to */
	char **attached_argv;
	struct nw_tracer tracer;
	bool tracing;
	struct nw_cache cache;
	struct nw_measure ms;
	bool measure_ready;
	struct nw_output out;
	/* The rings' fds, then the launched program's pidfd (-1: none): the last. */
	struct pollfd *pfds;
	nfds_t npfds;
	uint64_t start_ns, clock_start_ns; /* the run's start (CLOCK_REALTIME, CLOCK_MONOTONIC) */
	uint64_t stopped_ns;           /* CLOCK_MONOTONIC: the end of the recording */
	bool looping;                  /* the loop's first turn is over */
	uint64_t deadline;             /* CLOCK_MONOTONIC: --duration's; 0: none */
	int forwarded;                 /* stop requests forwarded to the launched program */
	uint64_t rotated_samples;      /* samples of the rotation intervals before this one */
	struct nw_measurement *model;  /* the end's, after nw_recorder_finish() */
	int exit_status;               /* the run's, after nw_recorder_finish() */
	double cpu_start, cpu_loop;    /* CPU seconds at the loop's start and end */
	double cpu_writes;             /* CPU seconds of the writes while recording */
	double cpu_end;                /* CPU seconds once the end is written */
};

/*
 * The events to sample, into @evs (NW_RECORDER_MAX_EVENTS): those of
 * @list ("cycles,instructions"), at most NW_RECORDER_MAX_EVENTS with the
 * off-CPU one, fewer beside @source_metrics more metrics (--alloc 4,
 * --locks 3: NW_RECORDER_MAX_METRICS in all); without a list cycles where
 * this machine can count it, else cpu-clock (a virtual machine without a
 * PMU: *@ret_fell_back set), or none beside a source's metrics (allocations
 * or locks alone).  The count, or -errno with a message in @err.
 */
int nw_recorder_events(const char *list, bool off_cpu, unsigned source_metrics,
		       struct nw_event *evs, bool *ret_fell_back, char *err, size_t errlen);

/*
 * Readies @r for @o (copied; what it points to is the caller's, kept
 * until nw_recorder_fini()): --alloc's library and markers found or the C
 * library's probes defined, the session set up.  Opens nothing.  -errno
 * with a message in @err.
 */
int nw_recorder_init(struct nw_recorder *r, const struct nw_recorder_opts *o, char *err,
		     size_t errlen);
/*
 * Launches the program and holds it at its gate, or attaches, or opens
 * every CPU; opens the events on it, without kernel samples or off-CPU
 * when the kernel refuses them (r->notes says so).  -errno with a message
 * in @err saying what to do about it.
 */
int nw_recorder_open(struct nw_recorder *r, char *err, size_t errlen);
/*
 * Readies what the recording writes: the traces, the symbolizer (and the
 * kernel's symbols), the output directory, the poll set.  Call after
 * nw_recorder_open(), or alone (tests: records fed to r->s by hand).
 * -errno with a message in @err.
 */
int nw_recorder_begin(struct nw_recorder *r, char *err, size_t errlen);
/*
 * Lets the launched program go: the run starts now.  0, or the errno of
 * its failed exec (the program is then reaped).
 */
int nw_recorder_release(struct nw_recorder *r);
/*
 * One turn of the loop: waits for records or for what is due, reads the
 * rings, writes a snapshot when asked for and what output.h says is due,
 * cuts the flight recorder's traces, forwards a stop.  True when the
 * recording is over: the launched program ended, or attached or
 * system-wide a stop was asked for, --duration passed or the targets are
 * gone.
 */
bool nw_recorder_step(struct nw_recorder *r);
/* Ends the recording: the events disabled, the rings read a last time, the end noted. */
void nw_recorder_stop(struct nw_recorder *r);
/* Steps until the recording is over, then stops it. */
void nw_recorder_record(struct nw_recorder *r);
/*
 * Writes the end's measurement, kept in r->model; r->exit_status is the
 * launched program's as a shell reports it (0 otherwise).  0, or -errno
 * (the wrote callback heard why).
 */
int nw_recorder_finish(struct nw_recorder *r);
/*
 * Kills a launched program not reaped yet, closes and frees everything.
 * 0, or -EBUSY with a message in @err when the kernel still holds the C
 * library's probes.  Works on a half-built @r: zeroed, or after any step
 * failed.
 */
int nw_recorder_fini(struct nw_recorder *r, char *err, size_t errlen);

/*
 * Asks the narwhal-record of process @pid to write its measurement now
 * (SIGUSR2, as its nw_recorder_opts.snapshot flag says).  -ESRCH (no such
 * process), -EINVAL (not a narwhal-record), -errno from kill(2); with a
 * message in @err.
 */
int nw_recorder_ask_snapshot(pid_t pid, char *err, size_t errlen);

/* ---- notes.c: what the recorder tells of a run ---- */

/*
 * The recorder's own costs (-v), lines ending in '\n' into @buf: its CPU
 * time setting up, sampling and writing; the unwinder's counts; the unwind
 * check's, when it ran.
 */
void nw_recorder_costs(const struct nw_recorder *rec, char *buf, size_t len);
/*
 * A sentence a line into @buf on what the sources recorded (allocation
 * samples, lock waits): false when there is no source.
 */
bool nw_recorder_source_note(const struct nw_recorder *rec, char *buf, size_t len);

/* kernel.perf_event_paranoid, INT_MIN when unreadable. */
int nw_recorder_paranoid(void);
/* Does /proc/kallsyms hide the kernel's addresses (kptr_restrict, its value in *@ret_restrict)? */
bool nw_recorder_kernel_hidden(int *ret_restrict);

#endif
