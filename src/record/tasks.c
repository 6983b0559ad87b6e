/* SPDX-License-Identifier: MIT */
#include "record/tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * The live-task indexes are open-addressing tables of pointers keyed by
 * tid (threads) or pid (processes); entries are only replaced, never
 * removed, so a lookup stops at the first empty slot.  A dead task stays
 * in its slot until a new task with the same id replaces it.
 */
static uint32_t id_hash(uint32_t id)
{
	return id * 2654435761u;
}

#define TABLE_OPS(name, type, key)                                                         \
	static type **name##_slot(type **slots, uint32_t nslots, uint32_t id)              \
	{                                                                                  \
		uint32_t mask = nslots - 1, h = id_hash(id) & mask;                        \
		while (slots[h] && slots[h]->key != id)                                    \
			h = (h + 1) & mask;                                                \
		return &slots[h];                                                          \
	}                                                                                  \
	static int name##_put(type ***slots, uint32_t *nslots, uint32_t count, type *v)     \
	{                                                                                  \
		if ((count + 1) * 2 > *nslots) {                                           \
			uint32_t n = *nslots ? *nslots * 2 : 64;                           \
			type **s = calloc(n, sizeof(*s));                                  \
			if (!s)                                                            \
				return -ENOMEM;                                            \
			for (uint32_t i = 0; i < *nslots; i++)                             \
				if ((*slots)[i])                                           \
					*name##_slot(s, n, (*slots)[i]->key) = (*slots)[i]; \
			free(*slots);                                                      \
			*slots = s;                                                        \
			*nslots = n;                                                       \
		}                                                                          \
		*name##_slot(*slots, *nslots, v->key) = v;                                 \
		return 0;                                                                  \
	}

TABLE_OPS(thr, struct nw_thread, tid)
TABLE_OPS(proc, struct nw_process, pid)

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
		free(th);
	}
	for (uint32_t i = 0; i < t->nprocs; i++) {
		nw_addrspace_fini(&t->procs[i]->as);
		free(t->procs[i]);
	}
	free(t->threads);
	free(t->procs);
	free(t->tid_slots);
	free(t->pid_slots);
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

static struct nw_process *find_process(const struct nw_task_table *t, uint32_t pid)
{
	struct nw_process *p;

	if (!t->nslots_p)
		return NULL;
	p = *proc_slot(t->pid_slots, t->nslots_p, pid);
	return p && !p->exited ? p : NULL;
}

static struct nw_process *new_process(struct nw_task_table *t, uint32_t pid, uint32_t ppid)
{
	struct nw_process *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->ppid = ppid;
	nw_addrspace_init(&p->as);
	if (push((void ***)&t->procs, &t->nprocs, &t->cap_procs, p)) {
		free(p);
		return NULL;
	}
	/* Owned by procs[] from here on: a failed index insert leaks nothing. */
	if (proc_put(&t->pid_slots, &t->nslots_p, t->nprocs, p))
		return NULL;
	return p;
}

struct nw_process *nw_tasks_process(struct nw_task_table *t, uint32_t pid)
{
	struct nw_process *p = find_process(t, pid);

	return p ? p : new_process(t, pid, 0);
}

struct nw_thread *nw_tasks_find_thread(const struct nw_task_table *t, uint32_t tid)
{
	struct nw_thread *th;

	if (!t->nslots_t)
		return NULL;
	th = *thr_slot(t->tid_slots, t->nslots_t, tid);
	return th && !th->exited ? th : NULL;
}

static struct nw_thread *new_thread(struct nw_task_table *t, struct nw_process *p, uint32_t tid)
{
	struct nw_thread *th = calloc(1, sizeof(*th));

	if (!th)
		return NULL;
	th->pid = p->pid;
	th->tid = tid;
	th->proc = p;
	memcpy(th->comm, p->comm, sizeof(th->comm));
	if (push((void ***)&t->threads, &t->nthreads, &t->cap_threads, th)) {
		free(th);
		return NULL;
	}
	if (thr_put(&t->tid_slots, &t->nslots_t, t->nthreads, th))
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
	struct nw_process *parent = find_process(t, ppid), *p;
	struct nw_thread *th, *pth = nw_tasks_find_thread(t, ptid);

	if (pid == ppid) {
		p = parent ? parent : nw_tasks_process(t, pid);
	} else {
		struct nw_process *old = find_process(t, pid);

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
	if (exec)
		nw_addrspace_reset(&th->proc->as);
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
		struct nw_process *p = find_process(t, pid);

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
	if (!th->ccts[e])
		th->ccts[e] = nw_cct_new(nmetrics);
	return th->ccts[e];
}
