/* SPDX-License-Identifier: MIT */
/*
 * The thread and process table built from COMM, FORK and EXIT records.
 * Every thread ever seen is kept (threads that end early still own their
 * trees); a tid that is reused after EXIT starts a new thread entry.  Each
 * thread owns one CCT per epoch of its process.
 */
#ifndef NW_THREAD_H
#define NW_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "model/cct.h"
#include "model/epoch.h"
#include "util/hash.h"

#define NW_COMM_LEN 16

struct nw_process {
	uint32_t pid, ppid;
	char comm[NW_COMM_LEN];
	bool exited;
	struct nw_addrspace as;
	int8_t root;                 /* 0 not looked at, 1 our root, 2 another (a container) */
	uint32_t nspid;              /* its pid in its own PID namespace, 0: the same or unknown */
};

struct nw_thread {
	uint32_t seq;                /* its index in nw_task_table.threads */
	uint32_t pid, tid;
	char comm[NW_COMM_LEN];
	bool exited;
	struct nw_process *proc;
	struct nw_cct **ccts;        /* indexed by epoch index, NULL where unsampled */
	uint32_t nccts;
	uint64_t samples;
	uint64_t first_time, last_time;
	/* Attached --alloc: its allocator calls under way (record/alloc.h); freed with it. */
	struct nw_alloc_thread *alloc;
	/* Off-CPU: where the thread blocked and since when (off_cct NULL: running). */
	struct nw_cct *off_cct;
	uint32_t off_node, off_epoch;
	uint64_t off_since;
};

struct nw_task_table {
	struct nw_thread **threads;  /* every thread, in order of appearance */
	uint32_t nthreads, cap_threads;
	struct nw_process **procs;   /* every process, in order of appearance */
	uint32_t nprocs, cap_procs;
	/* tid -> live thread and pid -> live process (entries of threads[] and procs[]) */
	struct nw_index tid_index, pid_index;
	/* Kernel samples: every address space maps the kernel's module (nw_tasks_set_kernel()) */
	bool kernel;
	uint32_t kernel_module;
};

void nw_tasks_init(struct nw_task_table *t);
void nw_tasks_fini(struct nw_task_table *t);
/*
 * Every process's address space, now and after each exec, maps module
 * @module over the kernel's half (NW_KERNEL_START up), so kernel frames
 * resolve like any other.  Call before any process exists.
 */
void nw_tasks_set_kernel(struct nw_task_table *t, uint32_t module);

/* The live process @pid, created when unknown.  NULL on allocation failure. */
struct nw_process *nw_tasks_process(struct nw_task_table *t, uint32_t pid);
/*
 * The live thread @tid of process @pid, created when unknown (inheriting
 * the process's name).  NULL on allocation failure.
 */
struct nw_thread *nw_tasks_thread(struct nw_task_table *t, uint32_t pid, uint32_t tid);
/* The live process @pid, or NULL. */
struct nw_process *nw_tasks_find_process(const struct nw_task_table *t, uint32_t pid);
/* The live thread @tid, or NULL. */
struct nw_thread *nw_tasks_find_thread(const struct nw_task_table *t, uint32_t tid);
/* How many threads, and processes, have samples. */
void nw_tasks_sampled(const struct nw_task_table *t, uint32_t *ret_threads, uint32_t *ret_procs);

/*
 * PERF_RECORD_FORK: a new thread (pid == ppid) or a new process whose
 * address map is copied from its parent.  -ENOMEM.
 */
int nw_tasks_fork(struct nw_task_table *t, uint32_t pid, uint32_t ppid, uint32_t tid,
		  uint32_t ptid, uint64_t time);
/* PERF_RECORD_COMM: renames the thread; an exec also forgets the process's mappings. */
int nw_tasks_comm(struct nw_task_table *t, uint32_t pid, uint32_t tid, const char *comm,
		  bool exec);
/* PERF_RECORD_EXIT: the thread (and the process, when it was the leader) ends. */
void nw_tasks_exit(struct nw_task_table *t, uint32_t pid, uint32_t tid, uint64_t time);

/* The thread's tree for @epoch, created when missing.  NULL on allocation failure. */
struct nw_cct *nw_thread_cct(struct nw_thread *th, const struct nw_epoch *epoch,
			     unsigned nmetrics);

#endif
