/* SPDX-License-Identifier: MIT */
/* Independent jobs side by side; see parallel.h. */
#include "util/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define MAX_WORKERS 8

struct pool {
	void (*job)(void *arg, uint32_t i);
	void *arg;
	uint32_t n;
	atomic_uint next;
};

uint32_t nw_parallel_workers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus < 1 ? 1 : cpus > MAX_WORKERS ? MAX_WORKERS : (uint32_t)cpus;
}

static void *run(void *arg)
{
	struct pool *p = arg;
	uint32_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		p->job(p->arg, i);
	return NULL;
}

void nw_parallel_for(uint32_t n, uint32_t workers, void (*job)(void *arg, uint32_t i), void *arg)
{
	struct pool p = { .job = job, .arg = arg, .n = n };
	uint32_t nworkers = workers ? workers : nw_parallel_workers(), started = 0;
	pthread_t threads[MAX_WORKERS];

	atomic_init(&p.next, 0);
	if (nworkers > MAX_WORKERS)
		nworkers = MAX_WORKERS;
	if (nworkers > n)
		nworkers = n;
	for (uint32_t w = 1; w < nworkers; w++)
		if (pthread_create(&threads[started], NULL, run, &p) == 0)
			started++;
	run(&p);
	for (uint32_t w = 0; w < started; w++)
		pthread_join(threads[w], NULL);
}
