/* SPDX-License-Identifier: MIT */
/*
 * The session's dispatch of records (session.h): each record, in time
 * order, into the task table, the address maps, the trees and the
 * listeners; a source's samples to the source.
 */
#include "record/session.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "model/metric.h"

/*
 * What sample id @id was opened for: NULL for a session that samples one
 * event and has no source (the id needs no look-up), and for an id the
 * session did not open (taken as event 0's, as the kernel would not send it).
 */
static const struct nw_session_id *id_of(const struct nw_session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nids;

	if (s->nevents == 1 && !s->opts.source)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nids && s->ids[lo].id == id ? &s->ids[lo] : NULL;
}

bool nw_session_reg(const struct nw_session *s, const struct nw_sample *smp, int reg,
		    uint64_t *ret)
{
	int idx = nw_arch_reg_index(s->fmt.regs_mask, reg);

	if (!smp->regs_abi || idx < 0 || (unsigned)idx >= smp->nregs)
		return false;
	*ret = nw_rd64(smp->regs, (size_t)idx);
	return true;
}

static inline size_t unwind(struct nw_session *s, const struct nw_thread *th,
			    const struct nw_epoch *epoch, const struct nw_sample *smp)
{
	struct nw_unwind_ctx ctx = { .pid = th->pid, .proc = th->proc, .epoch = epoch,
				     .modules = &s->modules };

	return nw_unwind(&s->unwinder, &ctx, smp, s->frames, NW_UNWIND_MAX_FRAMES);
}

size_t nw_session_unwind(struct nw_session *s, const struct nw_thread *th,
			 const struct nw_epoch *epoch, const struct nw_sample *smp)
{
	struct nw_unwind_ctx ctx = { .pid = th->pid, .proc = th->proc, .epoch = epoch,
				     .modules = &s->modules };

	/* A source's sample: the in-kernel unwinder's (or handed back), else from its copy. */
	if (s->source_in_kernel)
		return nw_unwind(&s->unwinder, &ctx, smp, s->frames, NW_UNWIND_MAX_FRAMES);
	return nw_unwind_copy(&s->unwinder, &ctx, smp, s->frames, NW_UNWIND_MAX_FRAMES);
}

/*
 * The thread of @smp and its current epoch, NULL when the sample is
 * dropped (counted): the idle task's unless asked for, or memory.
 */
static struct nw_thread *sample_thread(struct nw_session *s, const struct nw_sample *smp,
				       const struct nw_epoch **ret_epoch)
{
	struct nw_thread *th = nw_tasks_thread(&s->tasks, smp->sid.pid, smp->sid.tid);

	/* The idle task (pid 0) is no program's time, unless asked for. */
	if (smp->sid.pid == 0 && s->system_wide && !s->opts.idle) {
		s->stats.idle++;
		return NULL;
	}
	if (!th) {
		s->stats.alloc_failures++;
		return NULL;
	}
	if (smp->sid.pid == 0 && !th->comm[0]) {
		/* The idle task has no COMM record: perf's name for it. */
		snprintf(th->comm, sizeof(th->comm), "swapper");
		memcpy(th->proc->comm, th->comm, sizeof(th->proc->comm));
	}
	*ret_epoch = nw_addrspace_epoch(&th->proc->as);
	if (!*ret_epoch) {
		s->stats.alloc_failures++;
		return NULL;
	}
	return th;
}

/* A sample of the source's event @which: only the processes the session follows count. */
static void source_sample(struct nw_session *s, unsigned which, const struct nw_sample *smp)
{
	const struct nw_session_source *src = s->opts.source;
	const struct nw_epoch *epoch;
	struct nw_thread *th;

	/* Its events opened for every task fire in every process. */
	if (!nw_tasks_find_process(&s->tasks, smp->sid.pid)) {
		s->stats.foreign++;
		return;
	}
	th = sample_thread(s, smp, &epoch);
	if (!th)
		return;
	s->source_in_kernel = nw_session_probe(s, which);
	/*
	 * Check mode: each of the program's samples is paired with perf's
	 * twin (its copy) here, once, whether the source unwinds it or not
	 * (an allocation not sampled, a call inside another); the twin is
	 * compared, not counted.
	 */
	if (s->source_in_kernel && s->unwinder.bpf_check) {
		nw_session_unwind(s, th, epoch, smp);
		s->unwinder.bpf_check_done = true;
	}
	if (!s->source_in_kernel || !s->unwinder.bpf_check || !smp->stack_size)
		src->sample(src->arg, s, which, smp, th, epoch);
	s->unwinder.bpf_check_done = false;
	s->source_in_kernel = false;
}

static void process_sample(struct nw_session *s, const struct nw_sample *smp)
{
	const struct nw_session_id *id = id_of(s, smp->sid.id);
	unsigned e = id ? id->event : 0;
	struct nw_thread *th;
	const struct nw_epoch *epoch;
	struct nw_cct *cct;
	uint64_t *m;
	uint32_t node;
	size_t n;

	if (id && id->source) {
		source_sample(s, e, smp);
		return;
	}
	th = sample_thread(s, smp, &epoch);
	if (!th)
		return;
	n = unwind(s, th, epoch, smp);
	if (!n) {
		/* A check twin (bpf mode) was compared, not folded: the program's copy was. */
		if (!s->unwinder.twin)
			s->stats.empty_stacks++;
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

static void process_mmap2(struct nw_session *s, const struct nw_mmap2 *m)
{
	struct nw_process *p;
	uint64_t vaddr = 0;
	int mod;

	if (!(m->prot & PROT_EXEC))
		return;
	p = nw_tasks_process(&s->tasks, m->pid);
	mod = p ? nw_session_map_module(s, p, m->filename, m->build_id, m->build_id_size,
					m->pgoff, m->addr, m->addr + m->len, &vaddr)
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
	if (s->opts.source)
		return s->opts.source->describe(s->opts.source->arg, s, m);
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
		if (r.comm.exec && s->opts.source && s->opts.source->exec)
			s->opts.source->exec(s->opts.source->arg, s, r.comm.pid);
		if (nw_tasks_comm(&s->tasks, r.comm.pid, r.comm.tid, r.comm.comm, r.comm.exec))
			s->stats.alloc_failures++;
		else if (r.comm.exec && s->bpf)
			nw_session_bpf_mappings(s, nw_tasks_find_process(&s->tasks, r.comm.pid));
		break;
	case PERF_RECORD_FORK:
		if (nw_tasks_fork(&s->tasks, r.task.pid, r.task.ppid, r.task.tid, r.task.ptid,
				  r.task.time)) {
			s->stats.alloc_failures++;
		} else if (r.task.pid == r.task.tid) {
			struct nw_process *p = nw_tasks_process(&s->tasks, r.task.pid);

			nw_session_read_nspid(p);
			if (s->bpf)
				nw_session_bpf_mappings(s, p);
		}
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

