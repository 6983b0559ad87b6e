/* SPDX-License-Identifier: MIT */
/* Independent jobs side by side; see parallel.h. */
#include "util/parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
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

struct ordered {
	void (*job)(void *arg, uint32_t i);
	void *arg;
	uint32_t n;
	pthread_mutex_t lock;
	pthread_cond_t changed;  /* a job finished, or a result was taken */
	uint32_t next;           /* the first job not taken */
	uint32_t taken;          /* results taken by done() */
	uint32_t window;         /* jobs run at most this far ahead of the results taken */
	bool *finished;
	bool stop;
};

/* The next job, under the lock; false when none is left or it would run too far ahead. */
static bool take(struct ordered *o, uint32_t *i)
{
	if (o->stop || o->next >= o->n || o->next >= o->taken + o->window)
		return false;
	*i = o->next++;
	return true;
}

/* Runs job @i, the lock held on entry and on return. */
static void run_one(struct ordered *o, uint32_t i)
{
	pthread_mutex_unlock(&o->lock);
	o->job(o->arg, i);
	pthread_mutex_lock(&o->lock);
	o->finished[i] = true;
	pthread_cond_broadcast(&o->changed);
}

static void *run_ordered(void *arg)
{
	struct ordered *o = arg;
	uint32_t i;

	pthread_mutex_lock(&o->lock);
	while (!o->stop && o->next < o->n) {
		if (take(o, &i))
			run_one(o, i);
		else
			pthread_cond_wait(&o->changed, &o->lock);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

int nw_parallel_ordered(uint32_t n, uint32_t workers, void (*job)(void *arg, uint32_t i),
			int (*done)(void *arg, uint32_t i), void *arg)
{
	struct ordered o = { .job = job, .arg = arg, .n = n };
	uint32_t nworkers = workers ? workers : nw_parallel_workers(), started = 0, j;
	pthread_t threads[MAX_WORKERS];
	int ret = 0;

	if (nworkers > MAX_WORKERS)
		nworkers = MAX_WORKERS;
	o.window = 2 * nworkers;
	o.finished = nworkers > 1 && n > 1 ? calloc(n, sizeof(*o.finished)) : NULL;
	if (!o.finished) {
		/* One at a time, here. */
		for (uint32_t i = 0; i < n && !ret; i++) {
			job(arg, i);
			ret = done(arg, i);
		}
		return ret;
	}
	pthread_mutex_init(&o.lock, NULL);
	pthread_cond_init(&o.changed, NULL);
	for (uint32_t w = 1; w < nworkers; w++)
		if (pthread_create(&threads[started], NULL, run_ordered, &o) == 0)
			started++;
	pthread_mutex_lock(&o.lock);
	for (uint32_t i = 0; i < n && !ret; i++) {
		while (!o.finished[i]) {
			if (take(&o, &j))
				run_one(&o, j);
			else
				pthread_cond_wait(&o.changed, &o.lock);
		}
		pthread_mutex_unlock(&o.lock);
		ret = done(arg, i);
		pthread_mutex_lock(&o.lock);
		o.taken = i + 1;
		if (ret)
			o.stop = true;
		pthread_cond_broadcast(&o.changed);
	}
	pthread_mutex_unlock(&o.lock);
	for (uint32_t w = 0; w < started; w++)
		pthread_join(threads[w], NULL);
	pthread_cond_destroy(&o.changed);
	pthread_mutex_destroy(&o.lock);
	free(o.finished);
	return ret;
}
