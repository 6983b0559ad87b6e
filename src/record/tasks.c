/* SPDX-License-Identifier: MIT */
#include "record/tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

/*
 * The live tasks are indexed by tid (threads) and pid (processes): an
 * index entry is replaced, never removed, when a new task takes the id; a
 * dead task stays in its slot until then.
 */
static uint64_t thr_hash(const void *ctx, uint32_t i)
{
	return nw_hash_u64(((const struct nw_task_table *)ctx)->threads[i]->tid);
}

static bool thr_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct nw_task_table *)ctx)->threads[i]->tid == *(const uint32_t *)key;
}

static uint64_t proc_hash(const void *ctx, uint32_t i)
{
	return nw_hash_u64(((const struct nw_task_table *)ctx)->procs[i]->pid);
}

static bool proc_eq(const void *ctx, uint32_t i, const void *key)
{
	return ((const struct nw_task_table *)ctx)->procs[i]->pid == *(const uint32_t *)key;
}

/* Makes entry @i (the task with id @id) the one the index finds for @id.  -ENOMEM. */
static int index_put(struct nw_index *ix, struct nw_task_table *t, uint32_t id, uint32_t i,
		     nw_index_eq_fn eq, nw_index_hash_fn hash)
{
	uint32_t *slot = nw_index_slot(ix, nw_hash_u64(id), eq, hash, t, &id);

	if (!slot)
		return -ENOMEM;
	if (*slot == NW_INDEX_NONE)
		nw_index_fill(ix, slot, i);
	else
		*slot = i;
	return 0;
}

void nw_tasks_init(struct nw_task_table *t)
{
	memset(t, 0, sizeof(*t));
}

void nw_tasks_fini(struct nw_task_table *t)
{
	for (uint32_t i = 0; i < t->nthreads; i++) {
		struct nw_thread *th = t->threads[i];

		for (uint32_t e = 0; e < th->nccts; e++)
			nw_cct_free(th->ccts[e]);
		free(th->ccts);
		free(th->alloc);
		free(th);
	}
	for (uint32_t i = 0; i < t->nprocs; i++) {
		nw_addrspace_fini(&t->procs[i]->as);
		free(t->procs[i]);
	}
	free(t->threads);
	free(t->procs);
	nw_index_fini(&t->tid_index);
	nw_index_fini(&t->pid_index);
	memset(t, 0, sizeof(*t));
}

static int push(void ***v, uint32_t *n, uint32_t *cap, void *item)
{
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		void **nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = item;
	return 0;
}

struct nw_process *nw_tasks_find_process(const struct nw_task_table *t, uint32_t pid)
{
	uint32_t i = nw_index_find(&t->pid_index, nw_hash_u64(pid), proc_eq, t, &pid);
	struct nw_process *p = i == NW_INDEX_NONE ? NULL : t->procs[i];

	return p && !p->exited ? p : NULL;
}

void nw_tasks_set_kernel(struct nw_task_table *t, uint32_t module)
{
	t->kernel = true;
	t->kernel_module = module;
}

/* The kernel's mapping in @as, when kernel samples are recorded.  -ENOMEM. */
static int map_kernel(const struct nw_task_table *t, struct nw_addrspace *as)
{
	if (!t->kernel)
		return 0;
	return nw_addrspace_map(as, NW_KERNEL_START, UINT64_MAX - NW_KERNEL_START, 0,
				NW_KERNEL_START, t->kernel_module);
}

static struct nw_process *new_process(struct nw_task_table *t, uint32_t pid, uint32_t ppid)
{
	struct nw_process *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->ppid = ppid;
	nw_addrspace_init(&p->as);
	if (map_kernel(t, &p->as)) {
		nw_addrspace_fini(&p->as);
		free(p);
		return NULL;
	}
	if (push((void ***)&t->procs, &t->nprocs, &t->cap_procs, p)) {
		free(p);
		return NULL;
	}
	/* Owned by procs[] from here on: a failed index insert leaks nothing. */
	if (index_put(&t->pid_index, t, pid, t->nprocs - 1, proc_eq, proc_hash))
		return NULL;
	return p;
}

struct nw_process *nw_tasks_process(struct nw_task_table *t, uint32_t pid)
{
	struct nw_process *p = nw_tasks_find_process(t, pid);

	return p ? p : new_process(t, pid, 0);
}

struct nw_thread *nw_tasks_find_thread(const struct nw_task_table *t, uint32_t tid)
{
	uint32_t i = nw_index_find(&t->tid_index, nw_hash_u64(tid), thr_eq, t, &tid);
	struct nw_thread *th = i == NW_INDEX_NONE ? NULL : t->threads[i];

	return th && !th->exited ? th : NULL;
}

void nw_tasks_sampled(const struct nw_task_table *t, uint32_t *ret_threads, uint32_t *ret_procs)
{
	uint32_t threads = 0, procs = 0;

	for (uint32_t i = 0; i < t->nthreads; i++)
		threads += t->threads[i]->samples > 0;
	for (uint32_t i = 0; i < t->nprocs; i++) {
		for (uint32_t k = 0; k < t->nthreads; k++) {
			if (t->threads[k]->proc == t->procs[i] && t->threads[k]->samples) {
				procs++;
				break;
			}
		}
	}
	*ret_threads = threads;
	*ret_procs = procs;
}

static struct nw_thread *new_thread(struct nw_task_table *t, struct nw_process *p, uint32_t tid)
{
	struct nw_thread *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->seq = t->nthreads;
	th->pid = p->pid;
	th->tid = tid;
	th->proc = p;
	memcpy(th->comm, p->comm, sizeof(th->comm));
	if (push((void ***)&t->threads, &t->nthreads, &t->cap_threads, th)) {
		free(th);
		return NULL;
	}
	if (index_put(&t->tid_index, t, tid, t->nthreads - 1, thr_eq, thr_hash))
		return NULL;
	return th;
}

struct nw_thread *nw_tasks_thread(struct nw_task_table *t, uint32_t pid, uint32_t tid)
{
	struct nw_thread *th = nw_tasks_find_thread(t, tid);
	struct nw_process *p;

	if (th && th->pid == pid)
		return th;
	p = nw_tasks_process(t, pid);
	if (!p)
		return NULL;
	if (th) /* the tid moved to another process: exec from a non-leader thread */
		th->exited = true;
	return new_thread(t, p, tid);
}

int nw_tasks_fork(struct nw_task_table *t, uint32_t pid, uint32_t ppid, uint32_t tid,
		  uint32_t ptid, uint64_t time)
{
	struct nw_process *parent = nw_tasks_find_process(t, ppid), *p;
	struct nw_thread *th, *pth = nw_tasks_find_thread(t, ptid);

	if (pid == ppid) {
		p = parent ? parent : nw_tasks_process(t, pid);
	} else {
		struct nw_process *old = nw_tasks_find_process(t, pid);

		if (old) /* pid reuse after a missed EXIT */
			old->exited = true;
		p = new_process(t, pid, ppid);
		if (p && parent) {
			memcpy(p->comm, parent->comm, sizeof(p->comm));
			if (nw_addrspace_copy(&p->as, &parent->as))
				return -ENOMEM;
		}
	}
	if (!p)
		return -ENOMEM;
	th = nw_tasks_find_thread(t, tid);
	if (th)
		th->exited = true; /* tid reuse after a missed EXIT */
	th = new_thread(t, p, tid);
	if (!th)
		return -ENOMEM;
	if (pth)
		memcpy(th->comm, pth->comm, sizeof(th->comm));
	th->first_time = time;
	return 0;
}

int nw_tasks_comm(struct nw_task_table *t, uint32_t pid, uint32_t tid, const char *comm,
		  bool exec)
{
	struct nw_thread *th = nw_tasks_thread(t, pid, tid);

	if (!th)
		return -ENOMEM;
	strncpy(th->comm, comm, NW_COMM_LEN - 1);
	th->comm[NW_COMM_LEN - 1] = 0;
	if (exec || pid == tid)
		memcpy(th->proc->comm, th->comm, NW_COMM_LEN);
	if (exec) {
		nw_addrspace_reset(&th->proc->as);
		if (map_kernel(t, &th->proc->as))
			return -ENOMEM;
	}
	return 0;
}

void nw_tasks_exit(struct nw_task_table *t, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct nw_thread *th = nw_tasks_find_thread(t, tid);

	if (th && th->pid == pid) {
		th->exited = true;
		th->last_time = time > th->last_time ? time : th->last_time;
	}
	if (pid == tid) {
		struct nw_process *p = nw_tasks_find_process(t, pid);

		if (p)
			p->exited = true;
	}
}

struct nw_cct *nw_thread_cct(struct nw_thread *th, const struct nw_epoch *epoch,
			     unsigned nmetrics)
{
	uint32_t e = epoch->index;

	if (e >= th->nccts) {
		uint32_t n = e + 1;
		struct nw_cct **v = realloc(th->ccts, n * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + th->nccts, 0, (n - th->nccts) * sizeof(*v));
		th->ccts = v;
		th->nccts = n;
	}
	if (!th->ccts[e]) {
		struct nw_cct *cct = nw_cct_new(nmetrics);

		/* Checkpoints write the nodes whose metrics changed since the last one. */
		if (cct && nw_cct_track_changes(cct)) {
			nw_cct_free(cct);
			cct = NULL;
		}
		th->ccts[e] = cct;
	}
	return th->ccts[e];
}
