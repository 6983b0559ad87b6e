/* SPDX-License-Identifier: MIT */
/*
 * The recorder's side of lock contention (narwhal-record --locks,
 * doc/LOCKS.md): a source of events of the session (session.h) that
 * opens the kernel's futex system-call tracepoints (syscalls:
 * sys_enter_futex and sys_exit_futex) on the recorded tasks, inherited
 * like the sampled events, and makes of them:
 *
 *  - a wait (FUTEX_WAIT, FUTEX_WAIT_BITSET, FUTEX_LOCK_PI[2]): its
 *    sample kept (a join's, the wait on a live thread's tid, is dropped);
 *  - a release (FUTEX_WAKE, FUTEX_WAKE_BITSET, FUTEX_UNLOCK_PI, ...) of a
 *    futex word a thread waits on now: its sample kept, the releaser's;
 *  - the wait's end (the exit of the same thread's call): the time
 *    waited.  Waits are sampled by time (a Poisson process over the
 *    nanoseconds waited, alloc/sampler.h, mean --lock-rate); a sampled
 *    wait is unwound, and left out when it waits for no lock (a
 *    pthread_cond_*, *join*, pthread_barrier_* or pthread_once function
 *    among its first frames: a condition variable, a join, a barrier;
 *    but glibc's low-level lock wait, FUTEX_WAIT for the value 2, is a
 *    mutex's, also when a condition variable takes its mutex back);
 *    a sampled wait of w ns stands for 1/p waits and w/p ns,
 *    p = 1 - exp(-w/rate), added to lock-wait and lock-contentions of the
 *    waiter's node and to lock-delay of the node of the last release of
 *    that word before the waiter woke (unwound then, once).  Only
 *    sampled waits cost an unwinding: the rate bounds the recorder's
 *    work, the kernel's is a sample per futex call.
 *
 * Locks are named when the word lies in a global or static object of a
 * module (its symbol, "+offset" inside it), else by the word's address;
 * the table of locks, with their waiting and releasing paths, becomes
 * locks.json at each write (nw_lock_listener_model()).
 */
#ifndef NW_RECORD_LOCKS_H
#define NW_RECORD_LOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc/sampler.h"
#include "format/writer.h"
#include "model/locks.h"
#include "model/measurement.h"
#include "record/session.h"
#include "util/hash.h"

/* Mean nanoseconds of waiting between samples, when --lock-rate does not say. */
#define NW_LOCK_DEFAULT_RATE 100000

struct nw_lock_opts {
	uint64_t rate;               /* mean ns of waiting between samples; 1: every wait */
	char tracefs[256];
	uint64_t enter_id, exit_id;  /* the tracepoints' ids */
};

/*
 * Fills @o for @rate (0: the default): tracefs found (mounted if it is
 * not) and the ids of the futex tracepoints read.  -ENODEV: no tracefs or
 * no system-call tracepoints in this kernel (CONFIG_FTRACE_SYSCALLS);
 * -EPERM/-EACCES: tracefs not readable or not mountable (root).
 */
int nw_lock_opts_init(struct nw_lock_opts *o, uint64_t rate);

/*
 * A futex call's sample kept until its wait is known (its registers,
 * callchain and the used part of its stack copy): only the waits
 * sampled, and the releases that woke them, are unwound.
 */
struct nw_lock_copy {
	struct nw_sample smp;        /* pointing into buf */
	unsigned char *buf;
	size_t cap;
	struct nw_thread *th;        /* whose, at which epoch */
	const struct nw_epoch *epoch;
	struct nw_cct *cct;          /* once unwound: its node; cct NULL: not yet */
	uint32_t node;
};

/* A thread's futex call under way. */
struct nw_lock_thread {
	uint64_t since;              /* its entry, CLOCK_MONOTONIC ns */
	struct nw_lock_copy entry;   /* its sample */
	uint32_t word;               /* index into words */
	bool waiting;                /* a wait under way (else nothing to time) */
	bool lll;                    /* glibc's low-level lock wait (FUTEX_WAIT for the value 2):
				      * a mutex, even called from a condition variable's function */
	struct nw_alloc_sampler sampler; /* by ns waited; rng 0: not seeded */
};

/* A futex word waited on, and its last release. */
struct nw_lock_word {
	uint32_t pid;
	uint64_t uaddr;
	uint32_t lock;               /* index into locks */
	uint32_t pending;            /* threads waiting on it now */
	bool woken;                  /* a release was seen: wake, wake_time */
	uint64_t wake_time;
	struct nw_lock_copy wake;    /* the last release's sample */
};

/* A path that waited for a lock or released it, in the session's trees. */
struct nw_lock_ref {
	struct nw_cct *cct;
	uint32_t node;
	double contentions, ns;
};

struct nw_lock_refs {
	struct nw_lock_ref *v;
	size_t n, cap;
};

struct nw_lock_entry {
	uint32_t pid;
	uint64_t addr;               /* the object when named, else the word */
	char *name;                  /* NULL: not a global or static object */
	double contentions, ns;
	uint64_t max_ns;
	struct nw_lock_refs waiters, releasers; /* waiters.v[0]: the first contention's */
};

/* What the listener read of a module's symbols, at its first use. */
struct nw_lock_symbol {
	uint64_t start, end;
	char *name;                  /* NULL: a condition variable's function */
};

struct nw_lock_module {
	bool read;
	struct nw_lock_symbol *objects; /* global and static objects, by start */
	size_t nobjects;
	struct nw_lock_symbol *conds;   /* pthread_cond_* functions, by start */
	size_t nconds;
};

struct nw_lock_stats {
	uint64_t waits;              /* futex waits that ended (not joins) */
	uint64_t at_once;            /* calls that returned at once (-EAGAIN: never slept), not waits */
	uint64_t sampled;            /* of which sampled */
	uint64_t cond_waits;         /* joins, and sampled condition-variable and barrier waits */
	uint64_t releases;           /* releases seen while a thread waited */
	uint64_t no_releaser;        /* sampled waits without a release seen */
};

struct nw_lock_listener {
	struct nw_session_source source; /* give it to the session: nw_session_opts.source */
	const struct nw_lock_opts *o;
	struct nw_lock_thread *threads;  /* by nw_thread.seq */
	size_t nthreads, cap_threads;
	struct nw_lock_word *words;
	uint32_t nwords;
	size_t cap_words;
	struct nw_index word_ix;         /* (pid, uaddr) -> word */
	struct nw_lock_entry *locks;
	uint32_t nlocks;
	size_t cap_locks;
	struct nw_index lock_ix;         /* (pid, addr) -> lock */
	struct nw_lock_module *mods;     /* by module index */
	size_t nmods, cap_mods;
	double unknown_ns;               /* waited with no release seen */
	struct nw_lock_stats stats;
	bool failed;                     /* out of memory once: locks.json is incomplete */
	unsigned metric_offset;          /* its metrics from s->source_metric + this (record/sources.h) */
};

/* Readies @l for @o (borrowed until nw_lock_listener_fini()). */
void nw_lock_listener_init(struct nw_lock_listener *l, const struct nw_lock_opts *o);
void nw_lock_listener_fini(struct nw_lock_listener *l);

/*
 * The locks as they stand, for the model @m of the session (built by
 * nw_measure_build(), whose trees are the session's): each lock's
 * waiting and releasing paths named from @m's symbols, equal paths
 * merged, the NW_LOCK_PATHS heaviest of each kept (and a lock's first
 * waiter's path first).  Into *@ret (a new table), or -ENOMEM.
 */
#define NW_LOCK_PATHS 8
int nw_lock_listener_model(const struct nw_lock_listener *l, const struct nw_measurement *m,
			   struct nw_locks **ret);
/*
 * The same table made m->locks (replacing any) and its locks.json into
 * @ret, an extra file of the measurement whose data the caller frees
 * (its name is static).  -ENOMEM.
 */
int nw_lock_listener_file(const struct nw_lock_listener *l, struct nw_measurement *m,
			  struct nw_extra_file *ret);

#endif
