/* SPDX-License-Identifier: MIT */
/*
 * The locks of a measurement (narwhal-record --locks, doc/LOCKS.md): each
 * lock that made a thread wait, with its totals and the paths that waited
 * for it and that released it to a waiter.  Paths are function names,
 * root first, as the recorder named them when it wrote the measurement
 * (locks.json, format/locksfile.h), so the view needs no tree to show
 * them.  Counts and times are weighed estimates from waits sampled by
 * time (record/locks.h), as the lock-* metrics of the trees are.
 */
#ifndef NW_MODEL_LOCKS_H
#define NW_MODEL_LOCKS_H

#include <stdint.h>

struct nw_lock_path {
	uint64_t contentions;      /* contended acquisitions through it (waiters) */
	uint64_t ns;               /* waited there, or made others wait (releasers) */
	uint32_t nframes;
	char **frames;             /* function names, root first */
};

struct nw_lock {
	uint32_t pid;
	uint64_t addr;             /* the lock object (a named one) or its futex word */
	char *name;                /* "lock_hot", "table+40"; NULL: not a global or static */
	uint64_t contentions, wait_ns;
	uint64_t max_ns;           /* the longest wait sampled */
	uint32_t nwaiters, nreleasers;
	struct nw_lock_path *waiters;   /* waiters[0]: the first contention's path */
	struct nw_lock_path *releasers;
};

struct nw_locks {
	uint64_t rate;             /* mean ns of waiting between samples; 1: every wait */
	uint64_t unknown_releaser_ns; /* waited with no release seen (EAGAIN, timeouts) */
	uint32_t n;
	struct nw_lock *v;
};

/* Frees what @p holds (its frames) and empties it. */
void nw_lock_path_fini(struct nw_lock_path *p);
/*
 * Moves the locks of *@src (another measurement's, merged) to the end of
 * *@dst's (made when *@dst is NULL); *@src is freed and NULL after.
 * -ENOMEM (nothing moved).
 */
int nw_locks_merge(struct nw_locks **dst, struct nw_locks **src);
/* Frees @l and what it holds; NULL is a no-op.  Works on a half-built table. */
void nw_locks_free(struct nw_locks *l);
/*
 * The function that first locked @k as far as the measurement saw: the
 * innermost frame of its first waiter's path outside the locking
 * functions themselves (pthread_*, sem_*, futex, std::mutex and the
 * like); NULL when none is known.
 */
const char *nw_lock_first_user(const struct nw_lock *k);

#endif
