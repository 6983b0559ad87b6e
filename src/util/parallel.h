/* SPDX-License-Identifier: MIT */
/*
 * Independent jobs on a thread per processor: the readers' files, the
 * timeline's threads, an export's threads made while the one before is
 * written.  The one place the report decides how many threads
 * to run.
 */
#ifndef NW_PARALLEL_H
#define NW_PARALLEL_H

#include <stdint.h>

/* Threads worth running here: one per online processor, at most 8. */
uint32_t nw_parallel_workers(void);

/*
 * Calls @job(@arg, i) once for every i in [0, @n), on up to @workers
 * threads (0: nw_parallel_workers()), this one among them, each taking
 * the next i not yet taken; returns when all are done.  Jobs keep their
 * own results (there is nothing to fail here: a thread that cannot start
 * leaves its share to the others).
 */
void nw_parallel_for(uint32_t n, uint32_t workers, void (*job)(void *arg, uint32_t i), void *arg);

/*
 * Results made side by side and taken in order: calls @job(@arg, i) for
 * every i in [0, @n) on up to @workers threads (0: nw_parallel_workers()),
 * the i taken in order, and on this thread @done(@arg, i) for each i in
 * order, once its job is done.  This thread runs jobs too while it waits;
 * no job runs more than 2 * @workers ahead of the results taken, so few
 * wait at once.  A nonzero return of @done stops it: no job starts after
 * that; returns that value (jobs done but not taken keep their results for
 * the caller to free), else 0.
 */
int nw_parallel_ordered(uint32_t n, uint32_t workers, void (*job)(void *arg, uint32_t i),
			int (*done)(void *arg, uint32_t i), void *arg);

#endif
