/* SPDX-License-Identifier: MIT */
#include "sampler/session.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

/* Where one record of a read round sits in the batch, and when it happened. */
struct nw_batch_ref {
	uint64_t time;
	uint64_t seq;      /* arrival order: keeps a ring's own order on equal times */
	size_t off;
	uint32_t size;
};

int nw_session_init(struct nw_session *s, const struct nw_session_opts *opts)
{
	memset(s, 0, sizeof(*s));
	if (!opts->nevents || !opts->value || !opts->mmap_pages ||
	    (opts->mmap_pages & (opts->mmap_pages - 1)))
		return -EINVAL;
	s->opts = *opts;
	s->arch = nw_arch_host();
	if (!s->arch)
		return -EINVAL;
	s->nmetrics = 2 * opts->nevents;
	nw_tasks_init(&s->tasks);
	nw_module_table_init(&s->modules);
	s->events = calloc(opts->nevents, sizeof(*s->events));
	s->frames = calloc(NW_UNWIND_MAX_FRAMES, sizeof(*s->frames));
	if (!s->events || !s->frames)
		return -ENOMEM;
	for (unsigned e = 0; e < opts->nevents; e++)
		s->events[e].ev = opts->events[e];

	s->fmt.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			     PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
			     PERF_SAMPLE_REGS_USER;
	s->fmt.regs_mask = s->arch->regs_mask_fp;
	if (opts->callgraph != NW_CALLGRAPH_FP) {
		s->fmt.sample_type |= PERF_SAMPLE_STACK_USER;
		s->fmt.regs_mask = s->arch->regs_mask_dwarf;
	}
	s->fmt.sample_id_all = true;
	return nw_unwinder_init(&s->unwinder, opts->callgraph, s->arch, s->fmt.regs_mask);
}

static void fill_attr(const struct nw_session *s, const struct nw_event *ev,
		      struct perf_event_attr *a, bool leader)
{
	*a = ev->attr;
	a->size = sizeof(*a);
	a->sample_type = s->fmt.sample_type;
	a->sample_regs_user = s->fmt.regs_mask;
	if (s->opts.callgraph != NW_CALLGRAPH_FP)
		a->sample_stack_user = s->opts.stack_size;
	a->freq = s->opts.freq;
	a->sample_period = s->opts.value; /* union with sample_freq */
	a->disabled = 1;
	a->inherit = 1;
	a->enable_on_exec = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->exclude_callchain_kernel = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(s->opts.mmap_pages * (uint64_t)getpagesize() / 4);
	/* Side-band records come once per CPU, from the first event only. */
	a->mmap = leader;
	a->mmap2 = leader;
	a->comm = leader;
	a->comm_exec = leader;
	a->task = leader;
	a->build_id = leader;
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

static int cmp_u64_pair(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int nw_session_open(struct nw_session *s, pid_t pid)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	size_t page = (size_t)getpagesize();
	unsigned ne = s->opts.nevents;
	int ret;

	if (ncpus < 1)
		return -EINVAL;
	s->ncpus = (int)ncpus;
	s->map_len = (s->opts.mmap_pages + 1) * page;
	s->fds = malloc(ncpus * ne * sizeof(*s->fds));
	s->rings = calloc(ncpus, sizeof(*s->rings));
	s->maps = calloc(ncpus, sizeof(*s->maps));
	s->pfds = calloc(ncpus, sizeof(*s->pfds));
	s->id_to_event = calloc(2 * ncpus * ne, sizeof(uint64_t));
	if (!s->fds || !s->rings || !s->maps || !s->pfds || !s->id_to_event)
		return -ENOMEM;
	for (long i = 0; i < ncpus * ne; i++)
		s->fds[i] = -1;
	for (unsigned e = 0; e < ne; e++) {
		s->events[e].ids = calloc(ncpus, sizeof(uint64_t));
		if (!s->events[e].ids)
			return -ENOMEM;
	}

	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		int *fds = &s->fds[cpu * ne];
		bool opened = false;

		for (unsigned e = 0; e < ne; e++) {
			struct perf_event_attr a;
			uint64_t id;

			fill_attr(s, &s->events[e].ev, &a, e == 0);
			ret = perf_open(&a, pid, cpu);
			if (ret == -ENODEV || ret == -ENXIO) {
				/* An offline CPU: nothing will run there. */
				break;
			}
			if (ret < 0)
				return ret;
			fds[e] = ret;
			opened = true;
			if (ioctl(fds[e], PERF_EVENT_IOC_ID, &id) < 0)
				return -errno;
			s->events[e].ids[s->events[e].nids++] = id;
			s->id_to_event[2 * s->nid_to_event] = id;
			s->id_to_event[2 * s->nid_to_event + 1] = e;
			s->nid_to_event++;
		}
		if (!opened)
			continue;
		for (;;) {
			s->maps[cpu] = mmap(NULL, s->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
					    fds[0], 0);
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
		/* The other events of this CPU write into the first one's ring,
		 * which must exist before they can be pointed at it. */
		for (unsigned e = 1; e < ne; e++)
			if (fds[e] >= 0 && ioctl(fds[e], PERF_EVENT_IOC_SET_OUTPUT, fds[0]) < 0)
				return -errno;
		s->pfds[cpu].fd = fds[0];
		s->pfds[cpu].events = POLLIN;
	}
	qsort(s->id_to_event, s->nid_to_event, 2 * sizeof(uint64_t), cmp_u64_pair);
	return 0;
}

void nw_session_disable(struct nw_session *s)
{
	if (!s->fds)
		return;
	for (int i = 0; i < s->ncpus * (int)s->opts.nevents; i++)
		if (s->fds[i] >= 0)
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
	for (int i = 0; s->fds && i < s->ncpus * (int)s->opts.nevents; i++)
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	for (unsigned e = 0; s->events && e < s->opts.nevents; e++)
		free(s->events[e].ids);
	nw_unwinder_fini(&s->unwinder);
	nw_tasks_fini(&s->tasks);
	nw_module_table_fini(&s->modules);
	free(s->events);
	free(s->fds);
	free(s->rings);
	free(s->maps);
	free(s->pfds);
	free(s->batch);
	free(s->refs);
	free(s->frames);
	free(s->id_to_event);
	memset(s, 0, sizeof(*s));
}

static unsigned event_of(const struct nw_session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nid_to_event;

	if (s->opts.nevents == 1)
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

static void process_sample(struct nw_session *s, const struct nw_sample *smp)
{
	struct nw_thread *th = nw_tasks_thread(&s->tasks, smp->sid.pid, smp->sid.tid);
	const struct nw_epoch *epoch;
	struct nw_unwind_ctx ctx;
	struct nw_cct *cct;
	uint64_t *m;
	uint32_t node;
	unsigned e;
	size_t n;

	if (!th) {
		s->stats.alloc_failures++;
		return;
	}
	epoch = nw_addrspace_epoch(&th->proc->as);
	if (!epoch) {
		s->stats.alloc_failures++;
		return;
	}
	ctx = (struct nw_unwind_ctx){ .pid = th->pid, .proc = th->proc, .epoch = epoch,
				      .modules = &s->modules };
	n = nw_unwind(&s->unwinder, &ctx, smp, s->frames, NW_UNWIND_MAX_FRAMES);
	if (!n) {
		s->stats.empty_stacks++;
		return;
	}
	cct = nw_thread_cct(th, epoch, s->nmetrics);
	node = cct ? nw_cct_insert(cct, s->frames, n) : NW_CCT_NONE;
	if (node == NW_CCT_NONE) {
		s->stats.alloc_failures++;
		return;
	}
	e = event_of(s, smp->sid.id);
	m = nw_cct_metrics(cct, node);
	m[2 * e] += 1;
	m[2 * e + 1] += smp->period;
	th->samples++;
	if (!th->first_time)
		th->first_time = smp->sid.time;
	th->last_time = smp->sid.time;
	s->stats.samples++;
}

static void process_mmap2(struct nw_session *s, const struct nw_mmap2 *m)
{
	struct nw_process *p;
	int mod;

	if (!(m->prot & PROT_EXEC))
		return;
	p = nw_tasks_process(&s->tasks, m->pid);
	mod = p ? nw_module_intern(&s->modules, m->filename, m->build_id, m->build_id_size) : -1;
	if (mod < 0 || nw_addrspace_map(&p->as, m->addr, m->len, m->pgoff, (uint32_t)mod))
		s->stats.alloc_failures++;
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
		if (nw_tasks_comm(&s->tasks, r.comm.pid, r.comm.tid, r.comm.comm, r.comm.exec))
			s->stats.alloc_failures++;
		break;
	case PERF_RECORD_FORK:
		if (nw_tasks_fork(&s->tasks, r.task.pid, r.task.ppid, r.task.tid, r.task.ptid,
				  r.task.time))
			s->stats.alloc_failures++;
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
	default:
		break;
	}
	return 0;
}

/* Ring callback: copy the record into the round's batch. */
static int batch_add(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	struct nw_session *s = arg;
	struct nw_record r;
	struct nw_batch_ref *ref;

	if (s->batch_len + size > s->batch_cap) {
		size_t cap = s->batch_cap ? s->batch_cap : 1 << 20;
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
	memcpy(s->batch + s->batch_len, rec, size);
	ref = &s->refs[s->nrefs];
	/* A record that does not decode keeps time 0 and is counted when processed. */
	ref->time = nw_record_decode(&s->fmt, rec, size, &r) ? 0 : r.sid.time;
	ref->seq = s->nrefs;
	ref->off = s->batch_len;
	ref->size = hdr->size;
	s->batch_len += size;
	s->nrefs++;
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
	int rings_with_data = 0, ret;
	uint64_t bad = 0;

	s->batch_len = 0;
	s->nrefs = 0;
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		size_t before = s->nrefs;

		if (!s->maps[cpu])
			continue;
		ret = nw_ring_read(&s->rings[cpu], batch_add, s);
		if (ret < 0)
			return ret;
		rings_with_data += s->nrefs > before;
		bad += s->rings[cpu].bad_records;
	}
	/* Each ring is in time order already; interleave them when several had data. */
	if (rings_with_data > 1)
		qsort(s->refs, s->nrefs, sizeof(*s->refs), cmp_ref);
	for (size_t i = 0; i < s->nrefs; i++)
		nw_session_process(s, s->batch + s->refs[i].off, s->refs[i].size);
	s->stats.ring_resyncs = bad;
	return (int)s->nrefs;
}
