/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal: the runtime of narwhal.h and of the GCC plugin.
 *
 * Fast path: each thread owns a stack of open sections and its own
 * statistics (count, total, self, min, max per nesting path), so threads
 * never contend; the timer is the CPU's cycle counter where it is
 * invariant (calibrated against CLOCK_MONOTONIC), else clock_gettime
 * (CLOCK_MONOTONIC).  A site remembers the last nesting it was entered in,
 * so entering a section is a few loads and stores and one timer read.
 *
 * Slow paths (first use of a site, a new nesting, a new thread) take one
 * process-wide lock.  At exit, on a fatal signal or on narwhal_report(), the
 * statistics of all threads are merged and printed (Narwhalyzer's flat
 * summary, hierarchy and details); under narwhal-record every closed
 * interval is also logged to $NARWHAL_SECTIONS_DIR/sections-<pid>.bin
 * (format: src/sections/seclog.h) in CLOCK_MONOTONIC nanoseconds, the
 * clock of the samples.
 *
 * Unlike src/, the runtime must keep process-wide state (one struct
 * rt_state): a library called from anywhere in a program has no context to
 * pass down.  It links nothing of the profiler and never calls exit or abort.
 *
 * This header is what the runtime's files share:
 *
 *   clock.c    the timer (cycle counter or CLOCK_MONOTONIC) and its calibration
 *   log.c      the interval log: START, NAME, INTERVALS and END blocks
 *   section.c  registration, threads, the fast path, signals, fork and init
 *   report.c   the statistics of all threads merged, the text report
 *
 * The fast path (narwhal_enter/exit/begin/end and all they inline, ticks()
 * included) is section.c and this header only.  What is declared here is
 * hidden: the library exports only the narwhal_* functions of narwhal.h.
 */
#ifndef NW_RUNTIME_RT_H
#define NW_RUNTIME_RT_H

#include "narwhal.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define NW_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define NONE UINT32_MAX
#define CHUNK_SHIFT 6
#define CHUNK (1u << CHUNK_SHIFT)
#define NCHUNKS (NARWHAL_MAX_PATHS / CHUNK)
#define CACHE_SLOTS 256         /* per thread: (parent, section) -> path */
#define NAME_CACHE_SLOTS 64     /* per thread: name pointer -> section */
#define SEC_SLOTS 8192          /* > 2 * NARWHAL_MAX_SECTIONS */
#define PATH_SLOTS 32768        /* > 2 * NARWHAL_MAX_PATHS */
#define ENCODE_BUF 16384        /* bytes of one INTERVALS block at most */
#define MAX_CAL 8192            /* calibration points kept */

/* ---- data ---- */

/*
 * Per path, in timer ticks.  Self time is not kept: a path's self time is
 * its total minus the totals of its child paths, worked out in the report.
 */
struct rt_stats {
	uint64_t count, total, min, max;
};

struct rt_frame {
	uint64_t start;     /* ticks */
	uint32_t path;      /* NONE: not timed (over the limits) */
	uint32_t section;
};

struct rt_rec {
	uint64_t start, end; /* ticks */
	uint32_t section;
	uint16_t depth, flags;
};

struct rt_thread {
	uint32_t depth;     /* may exceed NARWHAL_MAX_DEPTH: those frames are not kept */
	uint32_t tid;
	uint64_t overflow, unbalanced, unregistered;
	struct rt_frame stack[NARWHAL_MAX_DEPTH];
	struct rt_stats *chunks[NCHUNKS];
	uint64_t cache_key[CACHE_SLOTS];
	uint32_t cache_path[CACHE_SLOTS];
	const char *name_ptr[NAME_CACHE_SLOTS];
	uint32_t name_sec[NAME_CACHE_SLOTS];
	/* Interval log: the owner appends at nlog; flushes hold log_lock. */
	pthread_mutex_t log_lock;
	struct rt_rec *log;
	uint32_t nlog, flushed;
	unsigned char *enc;
	struct rt_thread *next, *prev;
};

struct rt_section {
	char *name, *file;
	uint32_t line;
};

struct rt_path {
	uint32_t parent, section;
};

struct rt_cal_point {
	uint64_t ticks, ns;
};

/* Every thread's statistics merged at one time (report.c). */
struct rt_snapshot {
	uint32_t nsections, npaths;
	uint64_t wall_ns;
	double nspt;
	uint64_t overflow, unbalanced, unregistered, open, threads;
};

struct rt_state {
	pthread_mutex_t lock;          /* registrations, thread list, retired stats */
	pthread_key_t key;
	int use_tsc;
	struct rt_section sections[NARWHAL_MAX_SECTIONS];
	uint32_t nsections;
	uint32_t sec_slots[SEC_SLOTS];   /* section + 1, 0 empty */
	struct rt_path paths[NARWHAL_MAX_PATHS];
	uint32_t npaths;
	uint32_t path_slots[PATH_SLOTS]; /* path + 1, 0 empty */
	struct rt_stats retired[NARWHAL_MAX_PATHS]; /* of threads that ended */
	uint64_t retired_overflow, retired_unbalanced, retired_unregistered;
	struct rt_thread *threads;      /* live threads */
	uint32_t nthreads_seen;
	/* Timer calibration: ticks -> CLOCK_MONOTONIC ns, piecewise linear. */
	pthread_mutex_t cal_lock;
	struct rt_cal_point cal[MAX_CAL];
	uint32_t ncal;
	uint64_t start_ns;
	/* Interval log. */
	int logging;                    /* under narwhal-record: intervals are logged */
	int log_fd;                     /* -1: not open yet (a fork child opens on first use) */
	pthread_mutex_t open_lock;
	char log_dir[4096];
	uint64_t log_bytes, log_limit, dropped;
	int log_broken;
	/* Report. */
	int report;                     /* print the text report */
	char report_path[4096];
	int finished;
	pid_t pid;
};

/* Not exported, even where the library is built without -fvisibility=hidden. */
#pragma GCC visibility push(hidden)

extern struct rt_state rt_state;
extern pthread_once_t rt_once;
/* Set while the runtime itself runs on this thread: sections are not entered. */
extern __thread int rt_tls_busy __attribute__((tls_model("initial-exec")));

/* ---- clock.c ---- */

/* CLOCK_MONOTONIC in ns, out of line: the rare branch of ticks(). */
uint64_t rt_mono_ns(void);
int rt_counter_usable(void);
struct rt_cal_point rt_cal_read(void);
void rt_cal_add(struct rt_cal_point p);
uint64_t rt_cal_convert(uint64_t t, struct rt_cal_point last);
double rt_ns_per_tick(struct rt_cal_point now);

/* The timer: cycle counter where rt_state.use_tsc, else CLOCK_MONOTONIC ns. */
static inline __attribute__((always_inline)) uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(rt_state.use_tsc))
		return __rdtsc();
#elif defined(__aarch64__)
	if (likely(rt_state.use_tsc)) {
		uint64_t v;

		__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#endif
	return rt_mono_ns();
}

/* ---- log.c ---- */

void rt_log_open(void);
void rt_log_name_block(uint32_t id);
void rt_log_flush(struct rt_thread *t);
void rt_log_flush_all(struct rt_cal_point now, int final);
void rt_log_end_block(const struct rt_snapshot *s, uint32_t reason, int sig);
void rt_log_fork_child(void);

/* ---- section.c ---- */

void rt_init(void);
void rt_stats_merge(struct rt_stats *dst, const struct rt_stats *src);

/* ---- report.c ---- */

enum { RT_END_EXIT, RT_END_SIGNAL, RT_END_NOW };

void rt_finish(int reason, int sig);

#pragma GCC visibility pop

#endif /* NW_RUNTIME_RT_H */
