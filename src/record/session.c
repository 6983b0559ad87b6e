/* SPDX-License-Identifier: MIT */
/* The session's events and their rings; see session.h. */
#include "record/session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/strbuf.h"

int nw_session_listen(struct nw_session *s, const struct nw_session_hooks *h)
{
	if (s->nhooks == NW_SESSION_MAX_HOOKS)
		return -ENOSPC;
	s->hooks[s->nhooks++] = h;
	return 0;
}

int nw_session_init(struct nw_session *s, const struct nw_session_opts *opts)
{
	const struct nw_session_source *src = opts->source;
	int ret;

	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < NW_SESSION_MAX_PROBES; i++)
		s->probe_fd[i] = -1;
	nw_ordered_init(&s->order);
	if ((!opts->nevents && !src) || (opts->nevents && !opts->value) ||
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
	s->source_metric = UINT32_MAX;
	if (src) {
		s->source_metric = s->nmetrics;
		s->nmetrics += src->nmetrics;
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
	/* One format for every event: the source's registers are in every sample. */
	if (src)
		s->fmt.regs_mask |= src->regs_mask;
	s->fmt.sample_id_all = true;
	ret = nw_unwinder_init(&s->unwinder, opts->callgraph, s->arch, s->fmt.regs_mask);
	s->unwinder.kernel = opts->kernel;
	if (ret)
		return ret;
	if (opts->callgraph == NW_CALLGRAPH_BPF) {
		/* The program's samples: the layout of bpf/abi.h (its pairs in the callchain). */
		for (unsigned w = 0; src && src->in_kernel && w < src->nevents; w++)
			if (src->in_kernel(src->arg, w) && s->nprobes < NW_SESSION_MAX_PROBES)
				s->probes[s->nprobes++] = w;
		struct nw_bpf_opts bo = {
			.max_frames = opts->max_frames ? opts->max_frames : NW_UNWIND_MAX_FRAMES,
			.kernel = opts->kernel,
			.ring_bytes = NW_BPF_DEFAULT_RING,
			/* NARWHAL_BPF_ROWS: fewer, to see what a full rows map does. */
			.max_rows = getenv("NARWHAL_BPF_ROWS")
					    ? (uint32_t)strtoul(getenv("NARWHAL_BPF_ROWS"), NULL, 0)
					    : NW_BPF_DEFAULT_ROWS,
			.nevents = s->nevents,
			.probes = s->probes,
			.nprobes = s->nprobes,
			.regs_mask = s->fmt.regs_mask,
			.check = s->unwinder.bpf_check != NULL,
		};

		ret = nw_bpf_open(&s->bpf, &bo, s->bpf_err, sizeof(s->bpf_err));
		for (unsigned e = 0; !ret && e < s->nevents; e++)
			ret = nw_session_file_id(s, NW_BPF_ID(e), e, false);
		for (unsigned i = 0; !ret && i < s->nprobes; i++)
			ret = nw_session_file_id(s, NW_BPF_PROBE_ID(s->probes[i]), s->probes[i], true);
		if (ret)
			return ret;
	}
	if (!ret && opts->kernel) {
		/* Kernel frames resolve in a mapping of every address space (record/tasks.h). */
		int mod = nw_module_intern(&s->modules, NW_KERNEL_MODULE, NULL, 0);

		if (mod < 0)
			return mod;
		nw_tasks_set_kernel(&s->tasks, (uint32_t)mod);
	}
	return ret;
}

static void fill_common(const struct nw_session *s, struct perf_event_attr *a, bool leader,
			bool launch)
{
	const struct nw_session_source *src = s->opts.source;

	a->size = sizeof(*a);
	a->sample_type = s->fmt.sample_type;
	a->sample_regs_user = s->fmt.regs_mask;
	if (s->opts.callgraph != NW_CALLGRAPH_FP)
		a->sample_stack_user = s->opts.stack_size;
	a->disabled = 1;
	a->inherit = 1;
	a->enable_on_exec = launch;
	a->exclude_hv = 1;
	/* dwarf and bpf: never the kernel's frame-pointer walk of the user stack. */
	a->exclude_callchain_user = s->opts.callgraph == NW_CALLGRAPH_DWARF ||
				    s->opts.callgraph == NW_CALLGRAPH_BPF;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	/* A source's samples come in bursts a ring must absorb: the reader wakes sooner. */
	a->wakeup_watermark = (uint32_t)(s->opts.mmap_pages * (uint64_t)getpagesize() /
					 (src && src->bursty ? 8 : 4));
	/*
	 * -g bpf: the rings hold side-band records and the samples the program
	 * hands back for want of a table; the first such sample (a stack copy)
	 * wakes the reader, which loads the tables it lacked.  Not with a
	 * source, whose every sample carries a copy: the reader would wake for
	 * each, and take the CPU from the program it measures.
	 */
	if (s->bpf && !src)
		a->wakeup_watermark = 8192;
	/*
	 * When the program cannot look up a mapping it was not told (before
	 * 5.17), the reader wakes at every record (in this ring: side-band
	 * records, and the samples handed back), so that it tells a mapping
	 * soon after it is made.
	 */
	if (s->bpf && !nw_bpf_finds(s->bpf))
		a->wakeup_watermark = 1;
	/* Side-band records come once per CPU and task, from the first event only. */
	a->mmap = leader;
	a->mmap2 = leader;
	a->comm = leader;
	a->comm_exec = leader;
	a->task = leader;
	a->build_id = leader;
}

/*
 * Event @e of the session: a sampled one, the first of which brings the
 * side-band records; with none (a source's events alone), the dummy
 * event NW_EVENT_DUMMY brings them.
 */
#define NW_EVENT_DUMMY UINT32_MAX

static void fill_attr(const struct nw_session *s, unsigned e, struct perf_event_attr *a,
		      bool launch)
{
	bool leader = e == 0;

	if (e == NW_EVENT_DUMMY) {
		memset(a, 0, sizeof(*a));
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_DUMMY;
		fill_common(s, a, true, launch);
		a->exclude_kernel = 1;
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

/* The source's event @which: its attributes and where it opens. */
static enum nw_source_scope fill_source_attr(const struct nw_session *s, unsigned which,
					     struct perf_event_attr *a, bool launch)
{
	const struct nw_session_source *src = s->opts.source;

	memset(a, 0, sizeof(*a));
	fill_common(s, a, false, launch);
	return src->attr(src->arg, s, which, a);
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
	s->ring_fd = malloc(ncpus * sizeof(*s->ring_fd));
	if (!s->rings || !s->maps || !s->ring_fd)
		return -ENOMEM;
	for (long i = 0; i < ncpus; i++)
		s->ring_fd[i] = -1;
	return 0;
}

int nw_session_file_id(struct nw_session *s, uint64_t id, unsigned event, bool source)
{
	size_t k;

	if (nw_grow(&s->ids, &s->cap_ids, s->nids + 1, sizeof(*s->ids)))
		return -ENOMEM;
	for (k = s->nids; k > 0 && s->ids[k - 1].id > id; k--)
		s->ids[k] = s->ids[k - 1];
	s->ids[k] = (struct nw_session_id){ .id = id, .event = event, .source = source };
	s->nids++;
	return 0;
}

/* The index in s->probes of the source's event @which, or -1: not unwound in the kernel. */
static int probe_index(const struct nw_session *s, unsigned which)
{
	for (unsigned i = 0; s->bpf && i < s->nprobes; i++)
		if (s->probes[i] == which)
			return (int)i;
	return -1;
}

bool nw_session_probe(const struct nw_session *s, unsigned which)
{
	return probe_index(s, which) >= 0;
}

/*
 * Keeps @fd, opened on @cpu (closed here on failure), and files its id
 * under @event (the source's when @source).
 */
static int add_fd(struct nw_session *s, int fd, unsigned event, bool source, int cpu)
{
	uint64_t id;

	if (nw_grow(&s->fds, &s->cap_fds, s->nfds + 1, sizeof(*s->fds))) {
		close(fd);
		return -ENOMEM;
	}
	s->fds[s->nfds++] = fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	/* The dummy event brings records, never samples. */
	if (!source && event == NW_EVENT_DUMMY)
		return 0;
	/* -g bpf: the sampled events' samples are unwound in the kernel (the source's: open_source()). */
	if (s->bpf && !source) {
		int ret = nw_bpf_attach(s->bpf, fd, event);

		if (ret)
			return ret;
	}
	return nw_session_file_id(s, id, event, source);
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
	return 0;
}

/*
 * Opens the event @a on task @pid (-1: every task) and CPU @cpu into the
 * CPU's ring: the first event of a CPU owns it, every later one (other
 * events, other tasks) writes into it.  Its id is filed under @event (the
 * source's when @source).  The fd, or -errno (-ENODEV or -ENXIO: an
 * offline CPU).
 */
static int open_attr(struct nw_session *s, struct perf_event_attr *a, unsigned event, bool source,
		     pid_t pid, int cpu)
{
	int fd, ret;

	fd = perf_open(a, pid, cpu);
	if (fd < 0)
		return fd;
	ret = add_fd(s, fd, event, source, cpu);
	if (ret)
		return ret;
	if (s->ring_fd[cpu] < 0)
		ret = map_ring(s, cpu, fd);
	else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring_fd[cpu]) < 0)
		ret = -errno;
	return ret ? ret : fd;
}

/* Opens the session's event @e (or NW_EVENT_DUMMY) on task @pid and CPU @cpu: open_attr(). */
static int open_one(struct nw_session *s, unsigned e, pid_t pid, int cpu, bool launch)
{
	struct perf_event_attr a;

	fill_attr(s, e, &a, launch);
	return open_attr(s, &a, e, false, pid, cpu);
}

static bool offline(int err)
{
	return err == -ENODEV || err == -ENXIO;
}

/*
 * -g bpf: the program unwinds the source's uprobe @which, whose event @fd
 * (attributes @a) was opened on task @pid and CPU @cpu.  A uprobe of
 * CPU scope: each CPU's event holds a copy, which takes the hits on its
 * CPU.  A tracefs uprobe of task scope: the kernel runs every program
 * attached to any of its events at each hit, and frees an inherited
 * event's program with it (a thread's exit would detach the program
 * from all): one event, opened for @pid alone, never enabled and never
 * inherited, holds the one program, which takes every hit.
 */
static int attach_probe(struct nw_session *s, unsigned which, struct perf_event_attr *a,
			enum nw_source_scope scope, int fd, pid_t pid, int cpu)
{
	int i = probe_index(s, which);

	if (i < 0)
		return 0;
	if (scope == NW_SOURCE_CPU)
		return nw_bpf_attach_probe(s->bpf, fd, which, cpu);
	if (s->probe_fd[i] >= 0)
		return 0;
	a->disabled = 1;
	a->inherit = 0;
	a->enable_on_exec = 0;
	fd = perf_open(a, pid, -1);
	if (fd < 0)
		return fd;
	s->probe_fd[i] = fd;
	return nw_bpf_attach_probe(s->bpf, fd, which, -1);
}

/*
 * Opens the source's events on CPU @cpu: those of task scope on @pid, and
 * at the session's first open those of CPU scope, enabled at once.
 */
static int open_source(struct nw_session *s, pid_t pid, int cpu, bool launch)
{
	const struct nw_session_source *src = s->opts.source;

	for (unsigned w = 0; w < src->nevents; w++) {
		struct perf_event_attr a;
		enum nw_source_scope scope = fill_source_attr(s, w, &a, launch);
		int fd, ret;

		if (scope == NW_SOURCE_CPU && s->source_open)
			continue;
		fd = open_attr(s, &a, w, true, scope == NW_SOURCE_CPU ? -1 : pid, cpu);
		if (fd < 0)
			return fd;
		if ((ret = attach_probe(s, w, &a, scope, fd, pid, cpu)))
			return ret;
		if (scope == NW_SOURCE_CPU && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			return -errno;
	}
	return 0;
}

/*
 * Opens every event on task @pid on every online CPU.  @launch: enabled
 * at exec; else the caller enables.  With a source, also its events
 * (open_source()), and the dummy leader when no event is sampled.
 */
static int open_task(struct nw_session *s, pid_t pid, bool launch, size_t *first_fd)
{
	bool any = false;
	int fd, ret;

	*first_fd = s->nfds;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		bool off = false;

		/* No sampled event: the dummy alone brings the side-band records. */
		for (unsigned i = 0; i < (s->nevents ? s->nevents : 1); i++) {
			fd = open_one(s, s->nevents ? i : NW_EVENT_DUMMY, pid, cpu, launch);
			off = offline(fd);
			if (off)
				break; /* an offline CPU: nothing will run there */
			if (fd < 0)
				return fd;
			any = true;
		}
		if (off || !s->opts.source)
			continue;
		ret = open_source(s, pid, cpu, launch);
		if (ret)
			return ret;
	}
	s->source_open = s->opts.source != NULL;
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
			fd = open_attr(s, &a, e, false, -1, cpu);
			if (offline(fd))
				break;
			ret = fd < 0 ? fd : 0;
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
	for (unsigned i = 0; i < NW_SESSION_MAX_PROBES; i++)
		if (s->probe_fd[i] >= 0)
			close(s->probe_fd[i]);
	for (size_t i = 0; i < s->nkept; i++)
		close(s->kept_fds[i]);
	free(s->kept_fds);
	nw_bpf_close(s->bpf);
	free(s->bpf_seen);
	free(s->bpf_keys);
	nw_unwinder_fini(&s->unwinder);
	nw_tasks_fini(&s->tasks);
	nw_module_table_fini(&s->modules);
	nw_elf_cache_free(s->elf);
	nw_ordered_fini(&s->order);
	free(s->events);
	free(s->fds);
	free(s->ids);
	free(s->ring_fd);
	free(s->rings);
	free(s->maps);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* Ordered-reader callback: a record, in time order. */
static void process(void *arg, const void *rec, size_t size)
{
	nw_session_process(arg, rec, size); /* a malformed record is counted there */
}

/* Ring buffer callback: one of the in-kernel unwinder's samples, copied into the round. */
static int copy_bpf(void *arg, const void *rec, size_t size)
{
	struct nw_session *s = arg;

	return nw_ordered_copy(&s->order, &s->fmt, rec, size);
}

static int collect_bpf(void *arg, struct nw_ordered *o)
{
	struct nw_session *s = arg;
	int ret = nw_bpf_consume(s->bpf, copy_bpf, s);

	(void)o;
	return ret < 0 ? ret : 0;
}

int nw_session_read(struct nw_session *s)
{
	uint64_t bad = 0;
	int ret;

	/* The in-kernel unwinder's samples, interleaved with the rings' records. */
	struct nw_ordered_extra extra = { .collect = collect_bpf, .arg = s };

	ret = nw_ordered_read(&s->order, s->rings, s->rings ? (size_t)s->ncpus : 0, &s->fmt,
			      s->bpf ? &extra : NULL, process, s);
	for (int cpu = 0; cpu < s->ncpus; cpu++)
		if (s->maps[cpu])
			bad += s->rings[cpu].bad_records;
	s->stats.ring_resyncs = bad;
	return ret;
}
