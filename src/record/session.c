/* SPDX-License-Identifier: MIT */
#include "record/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "model/metric.h"
#include "alloc/abi.h"
#include "alloc/sampler.h"
#include "util/log.h"
#include "util/strbuf.h"

/* Where one record of a read round is, and when it happened. */
struct nw_batch_ref {
	uint64_t time;
	uint64_t seq;      /* arrival order: keeps a ring's own order on equal times */
	const unsigned char *rec; /* in its ring, held until the round ends; NULL: in the batch */
	size_t off;        /* where in the batch, when copied there */
	uint32_t size;
};

int nw_session_listen(struct nw_session *s, const struct nw_session_hooks *h)
{
	if (s->nhooks == NW_SESSION_MAX_HOOKS)
		return -ENOSPC;
	s->hooks[s->nhooks++] = h;
	return 0;
}

int nw_session_init(struct nw_session *s, const struct nw_session_opts *opts)
{
	int ret;

	memset(s, 0, sizeof(*s));
	nw_alloc_live_init(&s->live);
	if ((!opts->nevents && !opts->alloc) || (opts->nevents && !opts->value) ||
	    !opts->mmap_pages ||
	    (opts->mmap_pages & (opts->mmap_pages - 1)))
		return -EINVAL;
	s->opts = *opts;
	s->arch = nw_arch_host();
	if (!s->arch)
		return -EINVAL;
	s->nevents = opts->nevents + (opts->off_cpu ? 1 : 0);
	s->offcpu = opts->off_cpu ? opts->nevents : UINT32_MAX;
	s->nmetrics = 2 * s->nevents;
	s->alloc_metric = UINT32_MAX;
	if (opts->alloc) {
		s->alloc_metric = s->nmetrics;
		s->nmetrics += 4;
	}
	nw_tasks_init(&s->tasks);
	nw_module_table_init(&s->modules);
	s->events = calloc(s->nevents, sizeof(*s->events));
	s->frames = calloc(NW_UNWIND_MAX_FRAMES, sizeof(*s->frames));
	s->elf = nw_elf_cache_new();
	if (!s->events || !s->frames || !s->elf)
		return -ENOMEM;
	for (unsigned e = 0; e < opts->nevents; e++)
		s->events[e].ev = opts->events[e];
	if (opts->off_cpu) {
		struct nw_event *ev = &s->events[s->offcpu].ev;

		snprintf(ev->name, sizeof(ev->name), "off-cpu");
		ev->attr.type = PERF_TYPE_SOFTWARE;
		ev->attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	}

	s->fmt.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			     PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER;
	/*
	 * dwarf mode unwinds the stack copy alone: no frame-pointer walk of the
	 * user stack in the kernel; the kernel's own chain when it is sampled.
	 */
	if (opts->callgraph != NW_CALLGRAPH_DWARF || opts->kernel)
		s->fmt.sample_type |= PERF_SAMPLE_CALLCHAIN;
	s->fmt.regs_mask = s->arch->regs_mask_fp;
	if (opts->callgraph != NW_CALLGRAPH_FP) {
		s->fmt.sample_type |= PERF_SAMPLE_STACK_USER;
		s->fmt.regs_mask = s->arch->regs_mask_dwarf;
	}
	/* The markers' (and the C library's) arguments, read at their entry;
	 * the return value and the stack pointer, at a return. */
	for (unsigned i = 0; opts->alloc && i < 4; i++)
		s->fmt.regs_mask |= 1ull << s->arch->perf_args[i];
	if (opts->alloc)
		s->fmt.regs_mask |= 1ull << s->arch->perf_ret | 1ull << s->arch->perf_sp;
	s->fmt.sample_id_all = true;
	ret = nw_unwinder_init(&s->unwinder, opts->callgraph, s->arch, s->fmt.regs_mask);
	s->unwinder.kernel = opts->kernel;
	if (!ret && opts->kernel) {
		/* Kernel frames resolve in a mapping of every address space (record/tasks.h). */
		int mod = nw_module_intern(&s->modules, NW_KERNEL_MODULE, NULL, 0);

		if (mod < 0)
			return mod;
		nw_tasks_set_kernel(&s->tasks, (uint32_t)mod);
	}
	return ret;
}

/*
 * Allocation events, after the sampled ones: uprobes on the interposer's
 * markers, and a dummy event that brings the side-band records when
 * nothing else is sampled.
 */
enum { ALLOC_SAMPLE, ALLOC_FREE, ALLOC_DUMMY, ALLOC_LIBC };

/* Attached: the C library's probe of function @fn, its entry (@ret 0) or return. */
static unsigned libc_event(const struct nw_session *s, unsigned fn, unsigned ret)
{
	return s->nevents + ALLOC_LIBC + 2 * fn + ret;
}

static bool attached_alloc(const struct nw_session *s)
{
	return s->opts.alloc && s->opts.alloc->libc.path;
}

static void fill_common(const struct nw_session *s, struct perf_event_attr *a, bool leader,
			bool launch)
{
	a->size = sizeof(*a);
	a->sample_type = s->fmt.sample_type;
	a->sample_regs_user = s->fmt.regs_mask;
	if (s->opts.callgraph != NW_CALLGRAPH_FP)
		a->sample_stack_user = s->opts.stack_size;
	a->disabled = 1;
	a->inherit = 1;
	a->enable_on_exec = launch;
	a->exclude_hv = 1;
	a->exclude_callchain_user = s->opts.callgraph == NW_CALLGRAPH_DWARF;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	/* Allocation samples come in bursts a ring must absorb: the reader wakes sooner. */
	a->wakeup_watermark = (uint32_t)(s->opts.mmap_pages * (uint64_t)getpagesize() /
					 (s->opts.alloc ? 8 : 4));
	/* Side-band records come once per CPU and task, from the first event only. */
	a->mmap = leader;
	a->mmap2 = leader;
	a->comm = leader;
	a->comm_exec = leader;
	a->task = leader;
	a->build_id = leader;
}

/*
 * A uprobe on marker @which of libnarwhal-alloc: every call is a sample
 * with the user registers (its arguments) and the stack the call-graph
 * mode takes; a free needs only its argument, so no stack copy.  Opened
 * per CPU for every task, not inherited: the kernel reads the library's
 * path from the user memory of the task an event is inherited into,
 * where our pointer means nothing (clone and fork then fail with
 * EFAULT).  Samples of processes not ours are dropped.  ALLOC_DUMMY: the
 * leader of the side-band records when no event is sampled.
 */
static void fill_alloc_attr(const struct nw_session *s, unsigned which,
			    struct perf_event_attr *a, bool launch)
{
	const struct nw_alloc_opts *o = s->opts.alloc;

	memset(a, 0, sizeof(*a));
	if (which == ALLOC_DUMMY) {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		fill_common(s, a, true, launch);
		a->exclude_kernel = 1;
		return;
	}
	if (which >= ALLOC_LIBC) {
		/*
		 * Attached: a tracefs uprobe on the C library, inherited like
		 * the sampled events.  An entry needs its arguments only; a
		 * return, the pointer and the caller's stack.
		 */
		unsigned fn = (which - ALLOC_LIBC) / 2, ret = (which - ALLOC_LIBC) % 2;

		a->type = PERF_TYPE_TRACEPOINT;
		a->config = o->libc.ids[fn][ret];
		fill_common(s, a, false, launch);
		a->sample_period = 1;
		a->exclude_callchain_kernel = 1;
		if (!ret) {
			a->exclude_callchain_user = 1;
			if (a->sample_stack_user)
				a->sample_stack_user = 8;
		}
		return;
	}
	a->type = (uint32_t)o->uprobe_type;
	a->config1 = (uint64_t)(uintptr_t)o->library;
	a->config2 = which == ALLOC_SAMPLE ? o->sample_off : o->free_off;
	fill_common(s, a, false, false);
	a->inherit = 0;
	a->sample_period = 1;
	a->exclude_kernel = 1;
	a->exclude_callchain_kernel = 1;
	if (which == ALLOC_FREE && a->sample_stack_user)
		a->sample_stack_user = 8;
}

static void fill_attr(const struct nw_session *s, unsigned e, struct perf_event_attr *a,
		      bool launch)
{
	bool leader = e == 0;

	if (e >= s->nevents) {
		fill_alloc_attr(s, e - s->nevents, a, launch);
		return;
	}
	*a = s->events[e].ev.attr;
	fill_common(s, a, leader, launch);
	a->freq = s->opts.freq;
	a->sample_period = s->opts.value; /* union with sample_freq */
	/* Kernel time when asked for and the event allows it (not "cycles:u"). */
	a->exclude_kernel = !s->opts.kernel || s->events[e].ev.attr.exclude_kernel;
	a->exclude_callchain_kernel = a->exclude_kernel;
	if (e == s->offcpu) {
		/*
		 * Every context switch, where it happens: in the kernel, so the
		 * kernel must be allowed; the sample keeps only the user stack.
		 * Switch records (with times) tell when the thread runs again.
		 */
		a->freq = 0;
		a->sample_period = 1;
		a->exclude_kernel = 0;
		a->context_switch = 1;
	}
}

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0 && errno == EINVAL && a->build_id) {
		/* Kernels before 5.12 know no build-id in MMAP2. */
		a->build_id = 0;
		fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd < 0 ? -errno : (int)fd;
}

/* Per-CPU state: made at the first open. */
static int alloc_cpus(struct nw_session *s)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);

	if (s->rings)
		return 0;
	if (ncpus < 1)
		return -EINVAL;
	s->ncpus = (int)ncpus;
	s->map_len = (s->opts.mmap_pages + 1) * (size_t)getpagesize();
	s->rings = calloc(ncpus, sizeof(*s->rings));
	s->maps = calloc(ncpus, sizeof(*s->maps));
	s->pfds = calloc(ncpus + 1, sizeof(*s->pfds));
	s->ring_fd = malloc(ncpus * sizeof(*s->ring_fd));
	s->held = calloc(ncpus, sizeof(*s->held));
	if (!s->rings || !s->maps || !s->pfds || !s->ring_fd || !s->held)
		return -ENOMEM;
	for (long i = 0; i < ncpus; i++)
		s->ring_fd[i] = -1;
	for (long i = 0; i <= ncpus; i++)
		s->pfds[i].fd = -1;
	return 0;
}

/* Keeps @fd (closed here on failure) and files its id under event @e, in id order. */
static int add_fd(struct nw_session *s, int fd, unsigned e)
{
	uint64_t id;
	size_t k;

	if (s->nfds == s->cap_fds) {
		size_t cap = s->cap_fds ? s->cap_fds * 2 : 64;
		int *fds = realloc(s->fds, cap * sizeof(*fds));
		uint64_t *ids = realloc(s->id_to_event, 2 * cap * sizeof(*ids));

		if (fds)
			s->fds = fds;
		if (ids)
			s->id_to_event = ids;
		if (!fds || !ids) {
			close(fd);
			return -ENOMEM;
		}
		s->cap_fds = cap;
	}
	s->fds[s->nfds++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	for (k = s->nid_to_event; k > 0 && s->id_to_event[2 * (k - 1)] > id; k--) {
		s->id_to_event[2 * k] = s->id_to_event[2 * (k - 1)];
		s->id_to_event[2 * k + 1] = s->id_to_event[2 * (k - 1) + 1];
	}
	s->id_to_event[2 * k] = id;
	s->id_to_event[2 * k + 1] = e;
	s->nid_to_event++;
	return 0;
}

/* Maps @cpu's ring on @fd, smaller when the locked-memory limit says so. */
static int map_ring(struct nw_session *s, int cpu, int fd)
{
	size_t page = (size_t)getpagesize();
	int ret;

	for (;;) {
		s->maps[cpu] = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (s->maps[cpu] != MAP_FAILED)
			break;
		s->maps[cpu] = NULL;
		/* Over the locked-memory limit (perf_event_mlock_kb, RLIMIT_MEMLOCK):
		 * smaller rings for this CPU and the next, when allowed. */
		if ((errno != EPERM && errno != ENOMEM) || !s->opts.shrink_rings ||
		    s->opts.mmap_pages <= NW_SESSION_MIN_PAGES)
			return -errno;
		s->opts.mmap_pages /= 2;
		s->map_len = (s->opts.mmap_pages + 1) * page;
	}
	ret = nw_ring_init(&s->rings[cpu], s->maps[cpu], s->map_len);
	if (ret)
		return ret;
	s->ring_fd[cpu] = fd;
	s->pfds[cpu].fd = fd;
	s->pfds[cpu].events = POLLIN;
	return 0;
}

/*
 * Opens event @e on task @pid (-1: every task) and CPU @cpu into the
 * CPU's ring: the first event of a CPU owns it, every later one (other
 * events, other tasks) writes into it.  The fd, or -errno (-ENODEV or
 * -ENXIO: an offline CPU).
 */
static int open_one(struct nw_session *s, unsigned e, pid_t pid, int cpu, bool launch)
{
	struct perf_event_attr a;
	int fd, ret;

	fill_attr(s, e, &a, launch);
	fd = perf_open(&a, pid, cpu);
	if (fd < 0)
		return fd;
	ret = add_fd(s, fd, e);
	if (ret)
		return ret;
	if (s->ring_fd[cpu] < 0)
		ret = map_ring(s, cpu, fd);
	else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_fd[cpu]) < 0)
		ret = -errno;
	return ret ? ret : fd;
}

/*
 * Opens every event on task @pid on every online CPU.  @launch: enabled
 * at exec; else the caller enables.  With allocations, also the dummy
 * leader (when no event is sampled) and, once per session, the markers'
 * uprobes on every CPU, enabled at once.
 */
static int open_task(struct nw_session *s, pid_t pid, bool launch, size_t *first_fd)
{
	bool any = false;
	int fd;

	*first_fd = s->nfds;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		bool offline = false;

		for (unsigned e = 0; e < s->nevents; e++) {
			fd = open_one(s, e, pid, cpu, launch);
			offline = fd == -ENODEV || fd == -ENXIO;
			if (offline)
				break; /* an offline CPU: nothing will run there */
			if (fd < 0)
				return fd;
			any = true;
		}
		if (offline || !s->opts.alloc)
			continue;
		if (!s->nevents) {
			fd = open_one(s, s->nevents + ALLOC_DUMMY, pid, cpu, launch);
			if (fd == -ENODEV || fd == -ENXIO)
				continue;
			if (fd < 0)
				return fd;
			any = true;
		}
		for (unsigned fn = 0; attached_alloc(s) && fn < NW_ALLOC_FNS; fn++) {
			for (unsigned r = 0; r < 2; r++) {
				if (!s->opts.alloc->libc.ids[fn][r])
					continue;
				fd = open_one(s, libc_event(s, fn, r), pid, cpu, launch);
				if (fd < 0)
					return fd;
			}
		}
		for (unsigned w = ALLOC_SAMPLE; !attached_alloc(s) && !s->alloc_open &&
						w <= ALLOC_FREE; w++) {
			fd = open_one(s, s->nevents + w, -1, cpu, false);
			if (fd < 0)
				return fd;
			if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
				return -errno;
		}
	}
	s->alloc_open = s->opts.alloc != NULL;
	return any ? 0 : -ENODEV;
}

int nw_session_open(struct nw_session *s, pid_t pid)
{
	size_t first;
	int ret = alloc_cpus(s);

	return ret ? ret : open_task(s, pid, true, &first);
}

int nw_session_open_system(struct nw_session *s, const bool *cpus)
{
	bool any = false;
	int ret = alloc_cpus(s);

	for (int cpu = 0; !ret && cpu < s->ncpus; cpu++) {
		if (cpus && !cpus[cpu])
			continue;
		for (unsigned e = 0; e < s->nevents && !ret; e++) {
			struct perf_event_attr a;
			int fd;

			fill_attr(s, e, &a, false);
			a.inherit = 0; /* per CPU: every task already */
			fd = perf_open(&a, -1, cpu);
			if (fd == -ENODEV || fd == -ENXIO)
				break; /* offline */
			if (fd < 0)
				return fd;
			ret = add_fd(s, fd, e);
			if (!ret && s->ring_fd[cpu] < 0)
				ret = map_ring(s, cpu, fd);
			else if (!ret && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_fd[cpu]) < 0)
				ret = -errno;
			any = true;
		}
	}
	if (!ret && !any)
		ret = -ENODEV;
	for (size_t i = 0; !ret && i < s->nfds; i++)
		if (ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0)
			ret = -errno;
	if (!ret)
		s->system_wide = true;
	return ret;
}

int nw_session_attach(struct nw_session *s, pid_t tid)
{
	size_t first;
	int ret = alloc_cpus(s);

	if (!ret)
		ret = open_task(s, tid, false, &first);
	if (ret) {
		/* A thread that ended while we opened: forget its events. */
		while (s->nfds > first)
			close(s->fds[--s->nfds]);
		return ret;
	}
	for (size_t i = first; i < s->nfds; i++)
		if (ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0)
			return -errno;
	return 0;
}

void nw_session_disable(struct nw_session *s)
{
	for (size_t i = 0; i < s->nfds; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

void nw_session_fini(struct nw_session *s)
{
	for (int cpu = 0; s->maps && cpu < s->ncpus; cpu++) {
		if (s->maps[cpu]) {
			nw_ring_fini(&s->rings[cpu]);
			munmap(s->maps[cpu], s->map_len);
		}
	}
	for (size_t i = 0; i < s->nfds; i++)
		close(s->fds[i]);
	for (size_t i = 0; i < s->nkept; i++)
		close(s->kept_fds[i]);
	free(s->kept_fds);
	nw_unwinder_fini(&s->unwinder);
	nw_alloc_live_fini(&s->live);
	nw_tasks_fini(&s->tasks);
	nw_module_table_fini(&s->modules);
	nw_elf_cache_free(s->elf);
	free(s->events);
	free(s->fds);
	free(s->ring_fd);
	free(s->rings);
	free(s->maps);
	free(s->pfds);
	free(s->batch);
	free(s->refs);
	free(s->held);
	free(s->frames);
	free(s->id_to_event);
	memset(s, 0, sizeof(*s));
}

static unsigned event_of(const struct nw_session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nid_to_event;

	if (s->nevents == 1 && !s->opts.alloc)
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->id_to_event[2 * mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->nid_to_event && s->id_to_event[2 * lo] == id)
		return (unsigned)s->id_to_event[2 * lo + 1];
	return 0;
}

/* Argument @i of the marker a uprobe sample stopped at; false without registers. */
static bool marker_arg(const struct nw_session *s, const struct nw_sample *smp, unsigned i,
		       uint64_t *ret)
{
	int idx = nw_arch_reg_index(s->fmt.regs_mask, s->arch->perf_args[i]);

	if (!smp->regs_abi || idx < 0 || (unsigned)idx >= smp->nregs)
		return false;
	*ret = nw_rd64(smp->regs, (size_t)idx);
	return true;
}

/* What a live allocation added to the live metrics of its node, taken back. */
static void take_back(void *arg, const struct nw_alloc_entry *e)
{
	const struct nw_session *s = arg;
	uint64_t *m = nw_cct_metrics(e->cct, e->node) + s->alloc_metric;

	m[2] -= e->objects < m[2] ? e->objects : m[2];
	m[3] -= e->bytes < m[3] ? e->bytes : m[3];
	nw_cct_mark_changed(e->cct, e->node);
}

/*
 * Pointer @ptr of process @pid freed at @time: if sampled, its live
 * metrics go; else the free is noted, in case its allocation's sample
 * comes in a later read round (another CPU's ring).
 */
static void free_ptr(struct nw_session *s, uint32_t pid, uint64_t ptr, uint64_t time)
{
	struct nw_alloc_entry e;

	if (nw_alloc_live_remove(&s->live, pid, ptr, &e)) {
		take_back(s, &e);
		s->stats.alloc_frees++;
	} else if (!attached_alloc(s)) {
		/* Attached, most frees are of unsampled blocks: nothing to note. */
		nw_alloc_live_orphan(&s->live, pid, ptr, time);
	}
}

/* A free of a sampled allocation (the interposer's marker). */
static void process_free(struct nw_session *s, const struct nw_sample *smp)
{
	uint64_t ptr;

	if (!marker_arg(s, smp, 0, &ptr)) {
		s->stats.bad_records++;
		return;
	}
	free_ptr(s, smp->sid.pid, ptr, smp->sid.time);
}

/* Register @reg (perf's number) of a sample; false without it. */
static bool sample_reg(const struct nw_session *s, const struct nw_sample *smp, int reg,
		       uint64_t *ret)
{
	int idx = nw_arch_reg_index(s->fmt.regs_mask, reg);

	if (!smp->regs_abi || idx < 0 || (unsigned)idx >= smp->nregs)
		return false;
	*ret = nw_rd64(smp->regs, (size_t)idx);
	return true;
}

/*
 * A sampled allocation of @ptr, @size bytes at @rate, with @flags
 * (alloc/abi.h), whose stack is s->frames[@skip, @n): weighed into the
 * node of that stack in the thread's tree, and into the live table unless
 * its free cannot be seen.
 */
static void fold_alloc(struct nw_session *s, const struct nw_sample *smp, struct nw_thread *th,
		       const struct nw_epoch *epoch, size_t skip, size_t n, uint64_t ptr,
		       uint64_t size, uint64_t rate, uint64_t flags)
{
	uint64_t objects, bytes, *m;
	double ow, bw;
	struct nw_cct *cct;
	uint32_t node;

	if (skip == n) {
		s->stats.empty_stacks++;
		return;
	}
	cct = nw_thread_cct(th, epoch, s->nmetrics);
	node = cct ? nw_cct_insert(cct, s->frames + skip, n - skip) : NW_CCT_NONE;
	if (node == NW_CCT_NONE) {
		s->stats.alloc_failures++;
		return;
	}
	nw_alloc_weight(size, rate, &ow, &bw);
	objects = (uint64_t)(ow + 0.5);
	bytes = (uint64_t)(bw + 0.5);
	m = nw_cct_metrics(cct, node) + s->alloc_metric;
	m[0] += objects;
	m[1] += bytes;
	nw_cct_mark_changed(cct, node);
	s->stats.alloc_samples++;
	th->samples++;
	if (!th->first_time)
		th->first_time = smp->sid.time;
	th->last_time = smp->sid.time;
	if (flags & NW_ALLOC_UNTRACKED) {
		s->stats.alloc_untracked++;
		return;
	}
	/* Its free was read first (from another CPU's ring, a round earlier). */
	if (nw_alloc_live_freed(&s->live, smp->sid.pid, ptr, smp->sid.time)) {
		s->stats.alloc_frees++;
		return;
	}
	{
		struct nw_alloc_entry e = { .pid = smp->sid.pid, .ptr = ptr, .cct = cct,
					    .node = node, .objects = objects, .bytes = bytes },
				      old;
		int ret = nw_alloc_live_add(&s->live, &e, &old);

		if (ret < 0) {
			s->stats.alloc_failures++;
			return;
		}
		if (ret == 1)
			take_back(s, &old); /* its free was lost: the address is in use again */
		m[2] += objects;
		m[3] += bytes;
	}
}

/*
 * A sampled allocation reported by the interposer, its stack unwound in
 * s->frames (@n, leaf first, the marker at the leaf): the interposer's own
 * frames are cut so that the leaf is the allocator's caller.
 */
static void process_alloc(struct nw_session *s, const struct nw_sample *smp,
			  struct nw_thread *th, const struct nw_epoch *epoch, size_t n)
{
	const struct nw_map *marker = nw_epoch_find(epoch, smp->ip);
	uint64_t ptr, size, rate, flags;
	size_t skip = 0;

	if (!marker_arg(s, smp, 0, &ptr) || !marker_arg(s, smp, 1, &size) ||
	    !marker_arg(s, smp, 2, &rate) || !marker_arg(s, smp, 3, &flags)) {
		s->stats.bad_records++;
		return;
	}
	while (marker && skip < n) {
		const struct nw_map *map = nw_epoch_find(epoch, s->frames[skip].ip);

		if (!map || map->module != marker->module)
			break;
		skip++;
	}
	fold_alloc(s, smp, th, epoch, skip, n, ptr, size, rate, flags);
}

/*
 * Attached: the entry (@ret 0) or return of C library function @fn in
 * thread @th.  An entry notes the call (its stack pointer, size, old
 * pointer) or, for free, frees; a return finds its entry by the stack
 * pointer, and when it is the outermost allocator call under way (glibc's
 * realloc calls malloc, say) and the recorder's byte sampler picks it,
 * the caller's stack is unwound and the allocation folded in.
 */
static void process_libc(struct nw_session *s, const struct nw_sample *smp,
			 struct nw_thread *th, const struct nw_epoch *epoch, unsigned fn,
			 unsigned ret)
{
	struct nw_alloc_thread *t = th->alloc ? th->alloc : calloc(1, sizeof(*t));
	uint64_t sp, a0 = 0, a1 = 0, ptr, rate = s->opts.alloc->rate;
	struct nw_unwind_ctx ctx;
	uint32_t k;
	size_t n;

	th->alloc = t;
	if (!t) {
		s->stats.alloc_failures++;
		return;
	}
	if (!sample_reg(s, smp, s->arch->perf_sp, &sp) || !marker_arg(s, smp, 0, &a0) ||
	    !marker_arg(s, smp, 1, &a1) || !sample_reg(s, smp, s->arch->perf_ret, &ptr)) {
		s->stats.bad_records++;
		return;
	}
	if (!ret) {
		/* Calls under way at or above this stack depth returned unseen (records lost). */
		while (t->npending && t->pending[t->npending - 1].sp <= sp)
			t->npending--;
		if (fn == NW_ALLOC_FN_FREE) {
			if (!t->npending)
				free_ptr(s, smp->sid.pid, a0, smp->sid.time);
			return;
		}
		if (t->npending == NW_ALLOC_PENDING) {
			memmove(t->pending, t->pending + 1, sizeof(t->pending[0]) * --t->npending);
		}
		k = t->npending++;
		t->pending[k].sp = sp;
		t->pending[k].fn = fn;
		t->pending[k].old = fn == NW_ALLOC_FN_REALLOC ? a0 : 0;
		t->pending[k].size = fn == NW_ALLOC_FN_MALLOC		  ? a0
				     : fn != NW_ALLOC_FN_CALLOC		  ? a1
				     : a1 && a0 > UINT64_MAX / a1 ? UINT64_MAX
								  : a0 * a1;
		return;
	}
	for (k = t->npending; k > 0; k--)
		if (t->pending[k - 1].sp == sp - (uint64_t)s->arch->ret_sp_adjust &&
		    t->pending[k - 1].fn == fn)
			break;
	if (!k)
		return; /* its entry was lost */
	t->npending = k - 1;
	if (t->npending)
		return; /* inside another allocator call, which counts */
	if (t->pending[k - 1].old)
		free_ptr(s, smp->sid.pid, t->pending[k - 1].old, smp->sid.time);
	if (!ptr)
		return;
	if (rate > 1) {
		if (!t->sampler.rng)
			nw_alloc_sampler_seed(&t->sampler, nw_hash_u64(th->tid ^ smp->sid.time), rate);
		if (!nw_alloc_sample(&t->sampler, t->pending[k - 1].size, rate))
			return;
	}
	/* The return's sample: the caller's registers and stack, at the return address. */
	ctx = (struct nw_unwind_ctx){ .pid = th->pid, .proc = th->proc, .epoch = epoch,
				      .modules = &s->modules };
	n = nw_unwind(&s->unwinder, &ctx, smp, s->frames, NW_UNWIND_MAX_FRAMES);
	fold_alloc(s, smp, th, epoch, 0, n, ptr, t->pending[k - 1].size, rate, 0);
}

static void process_sample(struct nw_session *s, const struct nw_sample *smp)
{
	unsigned e = event_of(s, smp->sid.id);
	struct nw_thread *th;
	const struct nw_epoch *epoch;
	struct nw_unwind_ctx ctx;
	struct nw_cct *cct;
	uint64_t *m;
	uint32_t node;
	size_t n;

	/* The markers' uprobes fire in every process: only ours count. */
	if (e >= s->nevents && !nw_tasks_find_process(&s->tasks, smp->sid.pid)) {
		s->stats.alloc_foreign++;
		return;
	}
	th = nw_tasks_thread(&s->tasks, smp->sid.pid, smp->sid.tid);

	/* The idle task (pid 0) is no program's time, unless asked for. */
	if (smp->sid.pid == 0 && s->system_wide && !s->opts.idle) {
		s->stats.idle++;
		return;
	}
	if (!th) {
		s->stats.alloc_failures++;
		return;
	}
	if (smp->sid.pid == 0 && !th->comm[0]) {
		/* The idle task has no COMM record: perf's name for it. */
		snprintf(th->comm, sizeof(th->comm), "swapper");
		memcpy(th->proc->comm, th->comm, sizeof(th->proc->comm));
	}
	epoch = nw_addrspace_epoch(&th->proc->as);
	if (!epoch) {
		s->stats.alloc_failures++;
		return;
	}
	if (e == s->nevents + ALLOC_FREE) {
		process_free(s, smp);
		return;
	}
	if (e >= s->nevents + ALLOC_LIBC) {
		process_libc(s, smp, th, epoch, (e - s->nevents - ALLOC_LIBC) / 2,
			     (e - s->nevents - ALLOC_LIBC) % 2);
		return;
	}
	ctx = (struct nw_unwind_ctx){ .pid = th->pid, .proc = th->proc, .epoch = epoch,
				      .modules = &s->modules };
	n = nw_unwind(&s->unwinder, &ctx, smp, s->frames, NW_UNWIND_MAX_FRAMES);
	if (!n) {
		s->stats.empty_stacks++;
		return;
	}
	if (e == s->nevents + ALLOC_SAMPLE) {
		process_alloc(s, smp, th, epoch, n);
		return;
	}
	cct = nw_thread_cct(th, epoch, s->nmetrics);
	node = cct ? nw_cct_insert(cct, s->frames, n) : NW_CCT_NONE;
	if (node == NW_CCT_NONE) {
		s->stats.alloc_failures++;
		return;
	}
	m = nw_cct_metrics(cct, node);
	m[2 * e] += 1;
	nw_cct_mark_changed(cct, node);
	s->events[e].samples++;
	if (e == s->offcpu) {
		/* The thread blocks here; the time off the CPU is known at switch-in. */
		th->off_cct = cct;
		th->off_node = node;
		th->off_epoch = epoch->index;
		th->off_since = smp->sid.time;
	} else {
		m[2 * e + 1] += smp->period;
		s->events[e].period += smp->period;
	}
	th->samples++;
	if (!th->first_time)
		th->first_time = smp->sid.time;
	th->last_time = smp->sid.time;
	s->stats.samples++;
	/* Off-CPU time is known only at switch-in: listeners hear of it then. */
	for (unsigned i = 0; e != s->offcpu && i < s->nhooks; i++)
		if (s->hooks[i]->sample &&
		    s->hooks[i]->sample(s->hooks[i]->arg, th, epoch->index, node, e,
					smp->sid.time, smp->period))
			s->stats.alloc_failures++;
}

/*
 * @p's pid in its own PID namespace (the last NSpid of /proc/PID/status),
 * when it differs: a process in a container.
 */
static void read_nspid(struct nw_process *p)
{
	char path[64], line[256];
	FILE *f;

	if (!p)
		return;
	snprintf(path, sizeof(path), "/proc/%u/status", p->pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *last, *tok, *save = NULL;

		if (strncmp(line, "NSpid:", 6))
			continue;
		last = NULL;
		for (tok = strtok_r(line + 6, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			last = tok;
		if (last && (uint32_t)strtoul(last, NULL, 10) != p->pid)
			p->nspid = (uint32_t)strtoul(last, NULL, 10);
		break;
	}
	fclose(f);
}

/* Is @p's root directory not ours (a container, a chroot)?  Looked at once. */
static bool foreign_root(struct nw_process *p)
{
	char path[64];
	struct stat a, b;

	if (!p->root) {
		snprintf(path, sizeof(path), "/proc/%u/root/", p->pid);
		p->root = stat(path, &a) == 0 && stat("/", &b) == 0 &&
				  (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			  ? 2
			  : 1;
	}
	return p->root == 2;
}

/*
 * Where to read module file @path of process @p now and at the end (the
 * process may be gone by then, its file deleted or replaced): the file
 * mapped, through the mapping (/proc/PID/map_files/START-END, which needs
 * root or CAP_CHECKPOINT_RESTORE), else a container's file through the
 * process's root; kept open and named "/proc/self/fd/N".  NULL when
 * neither can be opened (then @path is read).  -ENOMEM as NULL with
 * @failed set.
 */
static char *module_source(struct nw_session *s, struct nw_process *p, const char *path,
			   uint64_t start, uint64_t end, bool *failed)
{
	char buf[PATH_MAX + 64], *src;
	int fd;

	if (path[0] != '/')
		return NULL;
	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%llx-%llx", p->pid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && foreign_root(p)) {
		snprintf(buf, sizeof(buf), "/proc/%u/root%s", p->pid, path);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return NULL;
	src = nw_strdup_printf("/proc/self/fd/%d", fd);
	if (!src || nw_grow(&s->kept_fds, &s->cap_kept, s->nkept + 1, sizeof(*s->kept_fds))) {
		free(src);
		close(fd);
		*failed = true;
		return NULL;
	}
	s->kept_fds[s->nkept++] = fd;
	return src;
}

/*
 * The module of (@path, @build_id) mapped by @p at [@start, @end), with
 * its file kept open when it is first seen (module_source(): so that a
 * file deleted or replaced later, or a container's, is still the one read)
 * and its ELF facts read, and the ELF address of file offset @pgoff in it
 * (@pgoff itself without facts).  "PATH (deleted)" is module PATH.
 * -ENOMEM.
 */
static int map_module(struct nw_session *s, struct nw_process *p, const char *path,
		      const uint8_t *build_id, size_t build_id_size, uint64_t pgoff,
		      uint64_t start, uint64_t end, uint64_t *ret_vaddr)
{
	static const char deleted_tag[] = " (deleted)";
	size_t len = strlen(path), tag = sizeof(deleted_tag) - 1;
	bool deleted = len > tag && !strcmp(path + len - tag, deleted_tag), failed = false;
	char clean[PATH_MAX];
	uint32_t known = s->modules.n;
	struct nw_module *m;
	int mod;

	if (deleted) {
		snprintf(clean, sizeof(clean), "%.*s", (int)(len - tag), path);
		path = clean;
	}
	mod = nw_module_intern(&s->modules, path, build_id, build_id_size);
	if (mod < 0)
		return mod;
	m = &s->modules.v[mod];
	if ((uint32_t)mod == known) {
		m->source = p ? module_source(s, p, path, start, end, &failed) : NULL;
		if (failed ||
		    nw_elf_facts_for(s->elf, nw_module_source(m), build_id, build_id_size, &m->facts))
			return -ENOMEM;
	}
	if (!m->facts.known || nw_facts_offset_to_vaddr(&m->facts, pgoff, ret_vaddr))
		*ret_vaddr = pgoff;
	return mod;
}

static void process_mmap2(struct nw_session *s, const struct nw_mmap2 *m)
{
	struct nw_process *p;
	uint64_t vaddr = 0;
	int mod;

	if (!(m->prot & PROT_EXEC))
		return;
	p = nw_tasks_process(&s->tasks, m->pid);
	mod = p ? map_module(s, p, m->filename, m->build_id, m->build_id_size, m->pgoff, m->addr,
			     m->addr + m->len, &vaddr)
		: -1;
	if (mod < 0 || nw_addrspace_map(&p->as, m->addr, m->len, m->pgoff, vaddr, (uint32_t)mod))
		s->stats.alloc_failures++;
}

/* Adds the time a thread spent off the CPU to the stack where it blocked. */
static void switch_in(struct nw_session *s, uint32_t tid, uint64_t time)
{
	struct nw_thread *th = nw_tasks_find_thread(&s->tasks, tid);

	uint64_t ns;

	if (!th || !th->off_cct)
		return;
	ns = time > th->off_since ? time - th->off_since : 0;
	nw_cct_metrics(th->off_cct, th->off_node)[2 * s->offcpu + 1] += ns;
	nw_cct_mark_changed(th->off_cct, th->off_node);
	th->off_cct = NULL;
	for (unsigned i = 0; i < s->nhooks; i++)
		if (s->hooks[i]->offcpu &&
		    s->hooks[i]->offcpu(s->hooks[i]->arg, th, th->off_epoch, th->off_node,
					s->offcpu, th->off_since, ns))
			s->stats.alloc_failures++;
}

/* One line of /proc/PID/maps: an executable mapping goes into the address map. */
static int synthesize_map(struct nw_session *s, struct nw_process *p, char *line)
{
	unsigned long long start, end, off;
	char perms[5], *path, *nl;
	uint64_t vaddr = 0;
	int n = 0, mod;

	if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &start, &end, perms, &off, &n) < 4 ||
	    !n || perms[2] != 'x' || end <= start)
		return 0;
	path = line + n;
	nl = strchr(path, '\n');
	if (nl)
		*nl = 0;
	mod = map_module(s, p, *path ? path : "//anon", NULL, 0, off, start, end, &vaddr);
	if (mod < 0)
		return mod;
	return nw_addrspace_map(&p->as, start, end - start, off, vaddr, (uint32_t)mod);
}

static void read_comm(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

int nw_session_synthesize(struct nw_session *s, pid_t pid)
{
	char path[64], line[PATH_MAX + 128], comm[NW_COMM_LEN];
	struct nw_process *p;
	struct dirent *de;
	DIR *dir;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	p = nw_tasks_process(&s->tasks, (uint32_t)pid);
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	read_nspid(p);
	/* Linux lists the mappings sorted by address (seeds/002's region discovery). */
	while (ret == 0 && fgets(line, sizeof(line), f))
		ret = synthesize_map(s, p, line);
	fclose(f);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	read_comm(path, comm, sizeof(comm));
	memcpy(p->comm, comm, sizeof(comm));
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((de = readdir(dir))) {
		char cpath[96];
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%d/comm", pid, tid);
		read_comm(cpath, comm, sizeof(comm));
		if (nw_tasks_comm(&s->tasks, (uint32_t)pid, (uint32_t)tid, comm, false)) {
			ret = -ENOMEM;
			break;
		}
	}
	closedir(dir);
	return ret;
}

int nw_session_describe_metrics(const struct nw_session *s, struct nw_measurement *m)
{
	for (unsigned e = 0; e < s->nevents; e++) {
		const struct nw_session_event *ev = &s->events[e];
		bool off = e == s->offcpu;
		/* -F: the mean period sampled; the off-CPU event samples every switch. */
		uint64_t period = off ? 1 : !s->opts.freq ? s->opts.value
				  : ev->samples ? (ev->period + ev->samples / 2) / ev->samples : 0;
		int ret;

		ret = nw_measurement_add_metric(m, ev->ev.name,
						off ? NW_METRIC_SWITCHES : NW_METRIC_SAMPLES, period);
		if (ret >= 0)
			ret = nw_measurement_add_metric(m, ev->ev.name,
							off ? NW_METRIC_OFFCPU_TIME
							    : NW_METRIC_PERIOD,
							period);
		if (ret < 0)
			return ret;
	}
	for (int k = NW_METRIC_ALLOC_OBJECTS; s->opts.alloc && k <= NW_METRIC_INUSE_BYTES; k++) {
		int ret = nw_measurement_add_metric(m, NW_ALLOC_EVENT, (enum nw_metric_kind)k,
						    s->opts.alloc->rate);

		if (ret < 0)
			return ret;
	}
	return 0;
}

void nw_session_finish(struct nw_session *s, uint64_t now)
{
	/* Threads still blocked when the recording stops: off the CPU until now. */
	for (uint32_t i = 0; s->offcpu != UINT32_MAX && i < s->tasks.nthreads; i++)
		if (!s->tasks.threads[i]->exited)
			switch_in(s, s->tasks.threads[i]->tid, now);
}

int nw_session_process(struct nw_session *s, const void *buf, size_t size)
{
	struct nw_record r;

	if (nw_record_decode(&s->fmt, buf, size, &r)) {
		s->stats.bad_records++;
		return -EBADMSG;
	}
	switch (r.type) {
	case PERF_RECORD_SAMPLE:
		process_sample(s, &r.sample);
		break;
	case PERF_RECORD_MMAP2:
		process_mmap2(s, &r.mmap2);
		break;
	case PERF_RECORD_COMM:
		if (r.comm.exec)
			nw_unwinder_forget(&s->unwinder, r.comm.pid);
		/* The image that held them is gone: its allocations are no longer live. */
		if (r.comm.exec && s->opts.alloc)
			nw_alloc_live_drop_pid(&s->live, r.comm.pid, take_back, s);
		if (nw_tasks_comm(&s->tasks, r.comm.pid, r.comm.tid, r.comm.comm, r.comm.exec))
			s->stats.alloc_failures++;
		break;
	case PERF_RECORD_FORK:
		if (nw_tasks_fork(&s->tasks, r.task.pid, r.task.ppid, r.task.tid, r.task.ptid,
				  r.task.time))
			s->stats.alloc_failures++;
		else if (r.task.pid == r.task.tid)
			read_nspid(nw_tasks_process(&s->tasks, r.task.pid));
		break;
	case PERF_RECORD_EXIT:
		nw_tasks_exit(&s->tasks, r.task.pid, r.task.tid, r.task.time);
		if (r.task.pid == r.task.tid)
			nw_unwinder_forget(&s->unwinder, r.task.pid);
		break;
	case PERF_RECORD_LOST:
		s->stats.lost += r.lost.lost;
		break;
	case PERF_RECORD_THROTTLE:
		s->stats.throttled++;
		break;
	case PERF_RECORD_SWITCH:
		if (!(r.misc & PERF_RECORD_MISC_SWITCH_OUT))
			switch_in(s, r.sid.tid, r.sid.time);
		break;
	default:
		break;
	}
	return 0;
}

/* Bytes of the sample_id trailer of non-sample records. */
static size_t trailer_size(uint64_t t)
{
	return 8 * (!!(t & PERF_SAMPLE_TID) + !!(t & PERF_SAMPLE_TIME) + !!(t & PERF_SAMPLE_ID) +
		    !!(t & PERF_SAMPLE_STREAM_ID) + !!(t & PERF_SAMPLE_CPU) +
		    !!(t & PERF_SAMPLE_IDENTIFIER));
}

/*
 * A record's time, read straight from its bytes for the round's sort; 0
 * for the records nw_record_decode() gives no time.  A malformed record is
 * counted when it is processed.
 */
static uint64_t record_time(const struct nw_sample_format *fmt, const unsigned char *rec,
			    size_t size)
{
	uint64_t t = fmt->sample_type, time;
	struct perf_event_header hdr;
	size_t off;

	if (!(t & PERF_SAMPLE_TIME) || size < sizeof(hdr))
		return 0;
	memcpy(&hdr, rec, sizeof(hdr));
	switch (hdr.type) {
	case PERF_RECORD_SAMPLE:
		off = sizeof(hdr) + 8 * (!!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_IP) +
					 !!(t & PERF_SAMPLE_TID));
		break;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_LOST:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (!fmt->sample_id_all || size < sizeof(hdr) + trailer_size(t))
			return 0;
		off = size - trailer_size(t) + 8 * !!(t & PERF_SAMPLE_TID);
		break;
	default:
		return 0;
	}
	if (off + 8 > size)
		return 0;
	memcpy(&time, rec + off, 8);
	return time;
}

/* A round's ring being read, for batch_add. */
struct batch_ctx {
	struct nw_session *s;
	const struct nw_ring *ring;
};

/*
 * Ring callback: note where the record is and when it happened.  It stays
 * in the ring until the round is processed; only a record that wraps the
 * end of the ring (handed over in the ring's bounce buffer) is copied.
 */
static int batch_add(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	struct batch_ctx *c = arg;
	struct nw_session *s = c->s;
	struct nw_batch_ref *ref;
	bool copy = rec == c->ring->bounce;

	if (copy && s->batch_len + size > s->batch_cap) {
		size_t cap = s->batch_cap ? s->batch_cap : 1 << 16;
		unsigned char *b;

		while (cap < s->batch_len + size)
			cap *= 2;
		b = realloc(s->batch, cap);
		if (!b)
			return -ENOMEM;
		s->batch = b;
		s->batch_cap = cap;
	}
	if (s->nrefs == s->cap_refs) {
		size_t cap = s->cap_refs ? s->cap_refs * 2 : 4096;
		struct nw_batch_ref *v = realloc(s->refs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->refs = v;
		s->cap_refs = cap;
	}
	ref = &s->refs[s->nrefs];
	ref->time = record_time(&s->fmt, rec, size);
	ref->seq = s->nrefs;
	ref->size = hdr->size;
	ref->rec = copy ? NULL : rec;
	ref->off = s->batch_len;
	if (copy) {
		memcpy(s->batch + s->batch_len, rec, size);
		s->batch_len += size;
	}
	s->nrefs++;
	return 0;
}

/* Ring callback of a round where one ring alone has records: process them in place. */
static int process_in_place(const struct perf_event_header *hdr, const void *rec, size_t size,
			    void *arg)
{
	(void)hdr;
	nw_session_process(arg, rec, size); /* a malformed record is counted there */
	return 0;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct nw_batch_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int nw_session_read(struct nw_session *s)
{
	int rings_with_data = 0, last = -1, ret = 0, cpu;
	uint64_t bad = 0;

	s->batch_len = 0;
	s->nrefs = 0;
	for (cpu = 0; cpu < s->ncpus; cpu++) {
		if (s->maps[cpu] &&
		    nw_ring_pending(&s->rings[cpu]) >= sizeof(struct perf_event_header)) {
			rings_with_data++;
			last = cpu;
		}
	}
	if (rings_with_data == 1) {
		/* Nothing to interleave: records are processed where they lie. */
		ret = nw_ring_read(&s->rings[last], process_in_place, s);
	} else if (rings_with_data > 1) {
		for (cpu = 0; cpu < s->ncpus && ret >= 0; cpu++) {
			struct batch_ctx c = { .s = s, .ring = &s->rings[cpu] };

			if (s->maps[cpu])
				ret = nw_ring_peek(&s->rings[cpu], batch_add, &c, &s->held[cpu]);
		}
		/* On failure nothing is released: the records are read again next round. */
		if (ret >= 0) {
			/* Each ring is in time order already; interleave them. */
			qsort(s->refs, s->nrefs, sizeof(*s->refs), cmp_ref);
			for (size_t i = 0; i < s->nrefs; i++)
				nw_session_process(s, s->refs[i].rec ? s->refs[i].rec
								      : s->batch + s->refs[i].off,
						   s->refs[i].size);
			for (cpu = 0; cpu < s->ncpus; cpu++)
				if (s->maps[cpu])
					nw_ring_release(&s->rings[cpu], s->held[cpu]);
			ret = (int)s->nrefs;
		}
	}
	for (cpu = 0; cpu < s->ncpus; cpu++)
		if (s->maps[cpu])
			bad += s->rings[cpu].bad_records;
	s->stats.ring_resyncs = bad;
	return ret;
}

void nw_session_forget(struct nw_session *s, struct nw_thread *th, uint32_t epoch, uint32_t node,
		       unsigned event, bool offcpu, uint64_t value)
{
	struct nw_cct *cct = epoch < th->nccts ? th->ccts[epoch] : NULL;
	uint64_t *m;

	if (!cct || node >= cct->n || event >= s->nevents)
		return;
	m = nw_cct_metrics(cct, node);
	nw_cct_mark_changed(cct, node);
	if (m[2 * event])
		m[2 * event]--;
	m[2 * event + 1] -= value < m[2 * event + 1] ? value : m[2 * event + 1];
	if (th->samples)
		th->samples--;
	if (s->stats.samples)
		s->stats.samples--;
	if (s->events[event].samples)
		s->events[event].samples--;
	if (!offcpu)
		s->events[event].period -= value < s->events[event].period ? value
									   : s->events[event].period;
}

void nw_session_restart(struct nw_session *s)
{
	for (uint32_t i = 0; i < s->tasks.nthreads; i++) {
		struct nw_thread *th = s->tasks.threads[i];

		for (uint32_t e = 0; e < th->nccts; e++) {
			struct nw_cct *cct = th->ccts[e];

			if (cct)
				memset(cct->metrics, 0,
				       (size_t)cct->n * cct->nmetrics * sizeof(*cct->metrics));
		}
		th->samples = 0;
	}
	s->stats.samples = s->stats.lost = s->stats.throttled = s->stats.empty_stacks = 0;
	for (unsigned e = 0; e < s->nevents; e++)
		s->events[e].samples = s->events[e].period = 0;
}

void nw_session_clear_changes(struct nw_session *s)
{
	for (uint32_t i = 0; i < s->tasks.nthreads; i++) {
		struct nw_thread *th = s->tasks.threads[i];

		for (uint32_t e = 0; e < th->nccts; e++)
			if (th->ccts[e])
				nw_cct_clear_changes(th->ccts[e]);
	}
}

int nw_session_synthesize_all(struct nw_session *s)
{
	struct dirent *de;
	DIR *dir = opendir("/proc");
	int ret = 0;

	if (!dir)
		return -errno;
	while (!ret && (de = readdir(dir))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		ret = nw_session_synthesize(s, (pid_t)pid);
		/* Gone meanwhile, or a kernel thread without maps to read: skipped. */
		if (ret == -ESRCH || ret == -EACCES || ret == -ENOENT)
			ret = 0;
	}
	closedir(dir);
	return ret;
}
