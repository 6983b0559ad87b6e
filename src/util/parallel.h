/* SPDX-License-Identifier: MIT */
/*
 * Independent jobs on a thread per processor: the readers' files, the
 * timeline's threads.  The one place the report decides how many threads
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

#endif
