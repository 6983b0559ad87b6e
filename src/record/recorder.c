/* SPDX-License-Identifier: MIT */
/* One recording from start to end; see recorder.h. */
#include "record/recorder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc/abi.h"
#include "perf/tracefs.h"
#include "record/machine.h"
#include "util/log.h"
#include "util/strbuf.h"

/* ---- time ---- */

static uint64_t system_now(void *arg, clockid_t clk)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int system_wait(void *arg, struct pollfd *pfds, nfds_t n, int ms)
{
	(void)arg;
	return poll(pfds, n, ms);
}

static const struct nw_recorder_clock system_clock = {
	.now = system_now,
	.wait = system_wait,
};

static uint64_t now_ns(const struct nw_recorder *r, clockid_t clk)
{
	return r->clock.now(r->clock.arg, clk);
}

/* The recorder's own CPU time, for the summary's cost per sample. */
static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* ---- what the system allows ---- */

static bool permission_error(int err)
{
	return err == -EACCES || err == -EPERM;
}

/* ---- setting up ---- */

static bool attaching(const struct nw_recorder *r)
{
	return r->o.targets && r->o.targets->n;
}

/* Did the recorder start a program (not attached, not system-wide without one)? */
static bool launched(const struct nw_recorder *r)
{
	return !attaching(r) && r->o.argc > 0;
}

/* Attached --alloc: probes on the targets' C library (every call traps: doc/ALLOCATIONS.md). */
static int probe_libc(struct nw_recorder *r, char *err, size_t errlen)
{
	const struct nw_targets *t = r->o.targets;
	int ret = 0;

	for (size_t i = 0; !ret && i < t->n; i++) {
		ret = nw_alloc_probe_libc(&r->alloc, t->ids[i]);
		if (ret == -ENOENT)
			nw_set_err(err, errlen, "--alloc: %s %d maps no libc.so.6 (a static "
						"program?)", t->threads ? "thread" : "process",
				   (int)t->ids[i]);
		else if (ret == -EXDEV)
			nw_set_err(err, errlen, "--alloc: the targets use different C libraries; "
						"attach to one at a time");
		else if (permission_error(ret) && !*r->alloc.libc.tracefs)
			nw_set_err(err, errlen, "--alloc with -p/-t defines uprobes in tracefs, "
						"which is not mounted and cannot be mounted here: "
						"as root, mount -t tracefs nodev " NW_TRACEFS_DIR);
		else if (permission_error(ret))
			nw_set_err(err, errlen, "--alloc with -p/-t defines uprobes in %s, which "
						"needs root", r->alloc.libc.tracefs);
		else if (ret == -ENODEV)
			nw_set_err(err, errlen, "--alloc with -p/-t needs tracefs and the kernel's "
						"uprobe events, which this kernel does not have "
						"(CONFIG_TRACING, CONFIG_UPROBE_EVENTS)");
		else if (ret)
			nw_set_err(err, errlen, "--alloc: cannot probe the C library: %s",
				   strerror(-ret));
	}
	return ret;
}

/*
 * --alloc: libnarwhal-alloc.so (o.alloc_library, else beside o.exe in the
 * build tree, else installed) and its markers, and the uprobe PMU; or
 * attached, the C library's probes.
 */
static int setup_alloc(struct nw_recorder *r, char *err, size_t errlen)
{
	const char *lib = r->o.alloc_library;
	int ret;

	ret = attaching(r) ? nw_alloc_opts_init(&r->alloc, NULL, NULL, NULL, r->o.alloc_rate)
			   : nw_alloc_opts_init(&r->alloc, lib, r->o.exe, r->o.libdir,
						r->o.alloc_rate);
	r->alloc_ready = true;
	if (ret == -ENODEV && attaching(r))
		nw_set_err(err, errlen, "--alloc needs the kernel's uprobes, which this kernel "
					"does not have (CONFIG_UPROBE_EVENTS)");
	else if (ret == -ENODEV)
		nw_set_err(err, errlen, "--alloc needs the kernel's uprobe PMU, which this kernel "
					"does not have (no /sys/bus/event_source/devices/uprobe: "
					"CONFIG_UPROBE_EVENTS)");
	else if (ret == -ENOENT && !attaching(r))
		nw_set_err(err, errlen, "--alloc: cannot find %s with its markers (%s, or beside "
					"narwhal-record, or in %s/narwhal; NARWHAL_ALLOC_LIBRARY "
					"names another)", NW_ALLOC_LIBRARY, lib ? lib : "not set",
			   r->o.libdir);
	else if (ret)
		nw_set_err(err, errlen, "--alloc: %s", strerror(-ret));
	if (!ret && attaching(r))
		ret = probe_libc(r, err, errlen);
	if (!ret)
		nw_alloc_listener_init(&r->allocs, &r->alloc);
	return ret;
}

/* --locks: the kernel's futex tracepoints, and the listener that reads them. */
static int setup_locks(struct nw_recorder *r, char *err, size_t errlen)
{
	int ret = nw_lock_opts_init(&r->lock, r->o.lock_rate);

	if (permission_error(ret))
		nw_set_err(err, errlen, "--locks reads the ids of the futex tracepoints in "
					"tracefs (%s), which needs root or a readable tracefs",
			   *r->lock.tracefs ? r->lock.tracefs : NW_TRACEFS_DIR);
	else if (ret == -ENODEV)
		nw_set_err(err, errlen, "--locks needs the kernel's system-call tracepoints "
					"(syscalls:sys_enter_futex), which this kernel does not "
					"have (CONFIG_FTRACE_SYSCALLS)");
	else if (ret)
		nw_set_err(err, errlen, "--locks: %s", strerror(-ret));
	if (ret)
		return ret;
	nw_lock_listener_init(&r->locks, &r->lock);
	r->locks_ready = true;
	return 0;
}

int nw_recorder_init(struct nw_recorder *r, const struct nw_recorder_opts *o, char *err,
		     size_t errlen)
{
	struct nw_session_opts *so = &r->o.session;
	int ret;

	memset(r, 0, sizeof(*r));
	r->o = *o;
	r->clock = o->clock ? *o->clock : system_clock;
	r->l = (struct nw_launch){ .pid = -1, .gate_w = -1, .err_r = -1 };
	if (so->callgraph == NW_CALLGRAPH_AUTO)
		so->callgraph = nw_bpf_usable(r->notes.no_bpf, sizeof(r->notes.no_bpf))
					? NW_CALLGRAPH_BPF
					: NW_CALLGRAPH_DWARF;
	else if (so->callgraph == NW_CALLGRAPH_BPF && !nw_bpf_usable(err, errlen))
		return -EPERM;
	r->notes.pages_asked = so->mmap_pages;
	if (!so->mmap_pages) {
		so->mmap_pages = r->notes.pages_asked =
			nw_recorder_ring_pages(so->callgraph, o->alloc || o->locks);
		so->shrink_rings = true;
	}
	if (o->alloc) {
		ret = setup_alloc(r, err, errlen);
		if (ret)
			return ret;
		so->source = &r->allocs.source;
	}
	if (o->locks) {
		ret = setup_locks(r, err, errlen);
		if (ret)
			return ret;
		so->source = &r->locks.source;
	}
	if (o->alloc && o->locks) {
		/* Both: one source of the two, the locks' metrics after the allocations'. */
		nw_sources_init(&r->sources);
		nw_sources_add(&r->sources, &r->allocs.source);
		r->locks.metric_offset = (unsigned)nw_sources_add(&r->sources, &r->locks.source);
		so->source = &r->sources.source;
	}
	ret = nw_session_init(&r->s, so);
	if (ret && r->s.bpf_err[0] && o->session.callgraph == NW_CALLGRAPH_AUTO) {
		/* The kernel refused the program: dwarf, as where bpf is not allowed. */
		snprintf(r->notes.no_bpf, sizeof(r->notes.no_bpf), "%s", r->s.bpf_err);
		nw_session_fini(&r->s);
		so->callgraph = NW_CALLGRAPH_DWARF;
		ret = nw_session_init(&r->s, so);
	}
	r->session_ready = true;
	/* The run cache: unwind tables (-g bpf) from the start, symbols as it goes. */
	nw_cache_open(&r->cache, NULL, !r->o.cache);
	r->s.cache = &r->cache;
	if (ret && r->s.bpf_err[0])
		nw_set_err(err, errlen, "%s", r->s.bpf_err);
	else if (ret)
		nw_set_err(err, errlen, "cannot set up the session: %s", strerror(-ret));
	return ret;
}

/*
 * Launches the program with libnarwhal-alloc preloaded (before the
 * program's own preloads) and its rate: in its environment, which its
 * children and the programs it execs inherit.  0 or -errno.
 */
static int launch_alloc(struct nw_recorder *r)
{
	const char *old = getenv("LD_PRELOAD");
	char *saved = old ? strdup(old) : NULL, *preload = nw_alloc_preload(&r->alloc, old);
	char rate[32];
	int ret = -ENOMEM;

	snprintf(rate, sizeof(rate), "%llu", (unsigned long long)r->alloc.rate);
	if (preload && (!old || saved) && setenv("LD_PRELOAD", preload, 1) == 0 &&
	    setenv(NW_ALLOC_RATE_ENV, rate, 1) == 0)
		ret = nw_launch_start(r->o.argv, &r->l);
	/* The recorder's own environment as it was. */
	if (saved)
		setenv("LD_PRELOAD", saved, 1);
	else
		unsetenv("LD_PRELOAD");
	unsetenv(NW_ALLOC_RATE_ENV);
	free(saved);
	free(preload);
	return ret;
}

/*
 * The recorder keeps every mapped file open (record/procfs.c) and an
 * event per CPU and thread: the soft limit on open files goes up to the
 * hard one.  After the launched program was forked, so that it runs with
 * its own limits.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Why the events could not be opened, and what to do about it. */
static void explain_open_error(const struct nw_recorder *r, int ret, char *err, size_t errlen)
{
	const struct nw_session_opts *so = &r->o.session;

	if (ret == -ESRCH) {
		nw_set_err(err, errlen, "the target ended while attaching");
	} else if (r->o.system && permission_error(ret)) {
		nw_set_err(err, errlen, "not allowed to record the whole machine (%s): -a needs "
					"root or CAP_PERFMON, or kernel.perf_event_paranoid at 0 "
					"or lower (it is %d)",
			   strerror(-ret), nw_recorder_paranoid());
	} else if (attaching(r) && permission_error(ret)) {
		nw_set_err(err, errlen, "not allowed to attach (%s): profiling a process of "
					"another user needs root, or CAP_PERFMON with ptrace "
					"access to it\n  (kernel.perf_event_paranoid is %d)",
			   strerror(-ret), nw_recorder_paranoid());
	} else if (permission_error(ret)) {
		nw_set_err(err, errlen, "perf_event_open was denied (%s).\n"
					"  kernel.perf_event_paranoid is %d; user-space sampling "
					"of your own\n  programs needs it at 2 or lower (sudo "
					"sysctl kernel.perf_event_paranoid=2),\n  or run as root / "
					"with CAP_PERFMON.",
			   strerror(-ret), nw_recorder_paranoid());
	} else if (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -ENODEV) {
		struct nw_strbuf b = { 0 };

		for (unsigned i = 0; i < so->nevents; i++) {
			nw_sb_puts(&b, i ? "," : "");
			nw_sb_puts(&b, so->events[i].name);
		}
		nw_set_err(err, errlen, "this machine cannot sample %s (%s); try -e cpu-clock",
			   b.len ? nw_sb_str(&b) : "", strerror(-ret));
		nw_sb_fini(&b);
	} else if (ret == -ENOMEM) {
		nw_set_err(err, errlen, "cannot map the rings (%s): lower -m, or raise "
					"kernel.perf_event_mlock_kb", strerror(-ret));
	} else {
		nw_set_err(err, errlen, "cannot open the events: %s", strerror(-ret));
	}
}

/* Opens the events on what is recorded: every CPU, the targets, or the launched program. */
static int open_events(struct nw_recorder *r)
{
	int ret;

	if (r->o.system) {
		/* Every CPU, then what already runs (new processes come as records). */
		ret = nw_session_open_system(&r->s, r->o.cpus);
		return ret ? ret : nw_session_synthesize_all(&r->s);
	}
	if (attaching(r))
		return nw_targets_attach(&r->s, r->o.targets, &r->attached);
	/* -g bpf: the first samples find the tables of what the program maps first. */
	if (r->s.bpf) {
		const char *env = getenv("LD_PRELOAD");
		char *pre = r->o.alloc ? nw_alloc_preload(&r->alloc, env) : NULL;

		nw_session_preload_tables(&r->s, r->o.argv[0], pre ? pre : env);
		free(pre);
	}
	return nw_session_open(&r->s, r->l.pid);
}

int nw_recorder_open(struct nw_recorder *r, char *err, size_t errlen)
{
	struct nw_session_opts *so = &r->o.session;
	int ret;

	r->start_ns = now_ns(r, CLOCK_REALTIME);
	r->clock_start_ns = now_ns(r, CLOCK_MONOTONIC);
	if (launched(r)) {
		ret = r->o.alloc ? launch_alloc(r) : nw_launch_start(r->o.argv, &r->l);
		if (ret) {
			nw_set_err(err, errlen, "cannot start %s: %s", r->o.argv[0],
				   strerror(-ret));
			return ret;
		}
	}
	raise_fd_limit();
	while ((ret = open_events(r)) && permission_error(ret)) {
		/*
		 * Kernel samples not allowed: user space only.  Off-CPU needs
		 * them (the switch happens in the kernel): on-CPU only.
		 */
		if (so->kernel) {
			so->kernel = false;
			r->notes.no_kernel = true;
		} else if (so->off_cpu) {
			so->off_cpu = false;
			r->notes.no_offcpu = true;
		} else {
			break;
		}
		nw_session_fini(&r->s);
		r->attached.n = 0;
		ret = nw_session_init(&r->s, so);
		if (ret)
			break;
	}
	if (ret) {
		explain_open_error(r, ret, err, errlen);
		return ret;
	}
	/*
	 * The manifest's command: what runs there, read now (it may end before
	 * the write); none when it already ended.
	 */
	if (attaching(r))
		nw_targets_cmdline(r->o.targets, &r->attached_argc, &r->attached_argv);
	return 0;
}

/*
 * The poll set: each ring's fd, the in-kernel unwinder's ring buffer,
 * then a slot for the launched program's pidfd.
 */
static int make_poll_set(struct nw_recorder *r)
{
	r->pfds = calloc((size_t)r->s.ncpus + 2, sizeof(*r->pfds));
	if (!r->pfds)
		return -ENOMEM;
	for (int cpu = 0; cpu < r->s.ncpus; cpu++) {
		if (r->s.ring_fd[cpu] < 0)
			continue;
		r->pfds[r->npfds].fd = r->s.ring_fd[cpu];
		r->pfds[r->npfds++].events = POLLIN;
	}
	if (r->s.bpf) {
		r->pfds[r->npfds].fd = nw_bpf_fd(r->s.bpf);
		r->pfds[r->npfds++].events = POLLIN;
	}
	r->pfds[r->npfds].fd = -1;
	r->pfds[r->npfds++].events = POLLIN;
	return 0;
}

int nw_recorder_begin(struct nw_recorder *r, char *err, size_t errlen)
{
	struct nw_output_opts oo = {
		.dir = r->o.dir,
		.checkpoint_ns = r->o.checkpoint_ns,
		.rotate_ns = r->o.rotate_ns,
		.max_bytes = r->o.max_bytes,
		.max_files = r->o.max_files,
		/* The flight recorder's traces are cut, not extended: whole packs. */
		.journal = !r->o.flight_ns,
	};
	int ret;

	if (!r->clock_start_ns) {
		r->start_ns = now_ns(r, CLOCK_REALTIME);
		r->clock_start_ns = now_ns(r, CLOCK_MONOTONIC);
	}
	if (r->o.trace) {
		ret = nw_tracer_init(&r->tracer, &r->s, r->clock_start_ns);
		if (ret) {
			nw_set_err(err, errlen, "cannot trace: %s", strerror(-ret));
			return ret;
		}
		r->tracing = true;
		nw_tracer_set_window(&r->tracer, r->o.flight_ns);
	}
	/* Symbolized as it goes: each write symbolizes the PCs new since the last. */
	ret = nw_measure_init(&r->ms, r->s.elf, &r->cache);
	r->measure_ready = true;
	/* Kernel frames will want the kernel's symbols: read them before anything runs. */
	if (!ret && r->s.opts.kernel)
		ret = nw_measure_prepare_kernel(&r->ms);
	/* The code of the sampled functions; JIT code read while its process runs. */
	if (!ret)
		ret = nw_codecap_start(&r->ms.code, &r->s, &r->o.code);
	if (!ret)
		ret = make_poll_set(r);
	if (ret) {
		nw_set_err(err, errlen, "out of memory");
		return ret;
	}
	return nw_output_init(&r->out, &oo, r->clock_start_ns, err, errlen);
}

int nw_recorder_release(struct nw_recorder *r)
{
	int exec_errno;

	if (!launched(r))
		return 0;
	/*
	 * A launched program's run starts when it is let go, not when the
	 * recorder began opening events and rings (tens of ms on a loaded
	 * machine, when no thread of it can be alive yet).
	 */
	r->start_ns = now_ns(r, CLOCK_REALTIME);
	r->clock_start_ns = now_ns(r, CLOCK_MONOTONIC);
	/* Open the gate: the child execs, and the events enable at exec. */
	exec_errno = nw_launch_release(&r->l);
	if (exec_errno) {
		waitpid(r->l.pid, &r->status, 0);
		r->l.pid = -1;
		return exec_errno;
	}
	/*
	 * The program's end wakes the loop at once (the end of the run is its
	 * end, not up to a poll timeout later); without pidfds (before Linux
	 * 5.3) the loop sees it at the next timeout.
	 */
#ifdef SYS_pidfd_open
	r->pfds[r->npfds - 1].fd = (int)syscall(SYS_pidfd_open, r->l.pid, 0);
#endif
	return 0;
}

/* ---- writing ---- */

/*
 * What was recorded and how: the model's run.  It ends at @clock_end_ns
 * (CLOCK_MONOTONIC; 0: now).
 */
static int fill_run(const struct nw_recorder *r, struct nw_run *run, uint64_t clock_end_ns,
		    int exit_status, enum nw_run_written written)
{
	static char *whole[] = { "(system-wide)", NULL };
	const struct nw_session *s = &r->s;
	uint64_t mono = now_ns(r, CLOCK_MONOTONIC), real = now_ns(r, CLOCK_REALTIME);
	int argc = attaching(r) ? r->attached_argc : r->o.argc;
	char **argv = attaching(r) ? r->attached_argv : r->o.argv;

	/* System-wide without a command: the command line says so. */
	if (!argc && r->o.system) {
		argc = 1;
		argv = whole;
	}
	run->narwhal_version = strdup(NW_VERSION);
	run->arch = strdup(s->arch->name);
	run->call_graph = strdup(s->opts.callgraph == NW_CALLGRAPH_DWARF    ? "dwarf"
				 : s->opts.callgraph == NW_CALLGRAPH_HYBRID ? "hybrid"
				 : s->opts.callgraph == NW_CALLGRAPH_BPF    ? "bpf"
									    : "fp");
	run->stack_size = s->opts.callgraph != NW_CALLGRAPH_FP ? s->opts.stack_size : 0;
	run->max_stack = nw_recorder_max_stack(s->opts.callgraph);
	run->events = calloc(s->nevents, sizeof(*run->events));
	if (!run->narwhal_version || !run->arch || !run->call_graph || !run->events ||
	    nw_run_set_argv(run, argc, argv))
		return -ENOMEM;
	for (unsigned e = 0; e < s->nevents; e++) {
		struct nw_event_info *ev = &run->events[e];

		ev->name = strdup(s->events[e].ev.name);
		if (!ev->name)
			return -ENOMEM;
		run->nevents++;
		ev->type = s->events[e].ev.attr.type;
		ev->config = s->events[e].ev.attr.config;
		ev->freq = e != s->offcpu && s->opts.freq;
		ev->value = e != s->offcpu ? s->opts.value : 1;
	}
	if (!clock_end_ns || clock_end_ns > mono)
		clock_end_ns = mono;
	run->start_ns = r->start_ns;
	run->end_ns = real - (mono - clock_end_ns);
	run->clock_start_ns = r->clock_start_ns;
	run->traced = r->o.trace;
	run->kernel = s->opts.kernel;
	run->written = written;
	run->clock_end_ns = clock_end_ns;
	if (r->o.flight_ns) {
		/* A flight recorder's measurement is its window. */
		run->window_ns = r->o.flight_ns;
		if (run->clock_end_ns - run->clock_start_ns > run->window_ns) {
			run->start_ns = run->end_ns - run->window_ns;
			run->clock_start_ns = run->clock_end_ns - run->window_ns;
		}
	}
	run->exit_status = exit_status;
	run->samples = s->stats.samples;
	run->lost = s->stats.lost;
	run->throttled = s->stats.throttled;
	run->unwind_errors = s->stats.empty_stacks;
	if (s->bpf) {
		struct nw_bpf_stats st;

		nw_bpf_get_stats(s->bpf, &st);
		run->bpf_frames = st.v[NW_BPF_FRAMES];
		run->bpf_fp_frames = st.v[NW_BPF_FP_FRAMES];
		run->bpf_copies = s->unwinder.stats.bpf_copies;
	}
	return 0;
}

/* The next rotation interval starts empty (its trees keep their nodes). */
static void next_interval(struct nw_recorder *r, uint64_t now)
{
	r->rotated_samples += r->s.stats.samples;
	nw_session_restart(&r->s);
	if (r->tracing)
		nw_tracer_restart(&r->tracer, now);
	r->start_ns = now_ns(r, CLOCK_REALTIME);
	r->clock_start_ns = now;
}

/* What the write @w holds: for the caller's debug line. */
static void describe_write(const struct nw_recorder *r, struct nw_recorder_write *w)
{
	const struct nw_journal *j = &r->out.journal;

	for (uint32_t i = 0; i < w->m->nthreads; i++)
		for (uint32_t t = 0; t < w->m->threads[i].ntrees; t++)
			w->nodes += w->m->threads[i].trees[t].cct->n;
	if (r->tracing)
		nw_tracer_size(&r->tracer, &w->trace_bytes, &w->trace_events);
	w->segment = j->nsegments > 0;
	w->bytes = j->nsegments ? j->segments[j->nsegments - 1] : j->pack_bytes;
}

/* Writes @m where r->out says, with the extra files: the JIT maps, locks.json. */
static int write_model(struct nw_recorder *r, struct nw_measurement *m, uint64_t now, char *err,
		       size_t errlen)
{
	struct nw_extra_file *extra = r->ms.files;
	size_t n = r->ms.nfiles;
	int ret = 0;

	if (r->locks_ready) {
		extra = calloc(n + 1, sizeof(*extra));
		if (extra) {
			if (n)
				memcpy(extra, r->ms.files, n * sizeof(*extra));
			ret = nw_lock_listener_file(&r->locks, m, &extra[n++]);
		}
		if (!extra || ret) {
			nw_set_err(err, errlen, "out of memory building locks.json");
			if (extra)
				free(extra[n - 1].data);
			free(extra);
			return -ENOMEM;
		}
	}
	ret = nw_output_write(&r->out, m, extra, n, now, err, errlen);
	if (extra != r->ms.files) {
		free(extra[n - 1].data);
		free(extra);
	}
	return ret;
}

/*
 * Builds the model of the session as it stands and writes it where r->out
 * says (a checkpoint, a snapshot, the end of a rotation interval, or the
 * end), then tells the caller.  0, or -errno (the last good write is
 * kept).  The end's model stays in r->model.
 */
static int write_now(struct nw_recorder *r, enum nw_run_written what, int exit_status)
{
	double cpu0 = cpu_seconds(), cpu_model;
	uint64_t now = now_ns(r, CLOCK_MONOTONIC);
	struct nw_recorder_write w = { .what = what };
	struct nw_measurement *m = NULL;
	struct nw_run run = { 0 };
	char err[1024] = "";
	int ret = 0, told;

	if (r->o.flight_ns)
		ret = nw_tracer_expire(&r->tracer, now, true);
	if (!ret)
		ret = fill_run(r, &run, what == NW_RUN_END ? r->stopped_ns : 0, exit_status, what);
	if (!ret)
		ret = nw_measure_build(&r->ms, &r->s, r->tracing ? &r->tracer : NULL, &run, &m);
	nw_run_fini(&run);
	if (ret) {
		w.ret = ret;
		w.err = "out of memory building the measurement";
		if (r->o.wrote)
			r->o.wrote(r->o.arg, &w);
		return ret;
	}
	cpu_model = cpu_seconds();
	ret = write_model(r, m, now, err, sizeof(err));
	/* What the trees hold is written: the next checkpoint writes what changes after. */
	if (!ret)
		nw_session_clear_changes(&r->s);
	w.ret = ret;
	w.err = err;
	w.m = m;
	w.cpu_model = cpu_model - cpu0;
	w.cpu_write = cpu_seconds() - cpu_model;
	w.wall = (double)(now_ns(r, CLOCK_MONOTONIC) - now) / 1e9;
	describe_write(r, &w);
	told = r->o.wrote ? r->o.wrote(r->o.arg, &w) : 0;
	if (!ret && told)
		ret = told;
	if (what == NW_RUN_END)
		r->model = m;
	else
		nw_measurement_free(m);
	if (what == NW_RUN_ROTATION)
		next_interval(r, now);
	if (what != NW_RUN_END)
		r->cpu_writes += cpu_seconds() - cpu0;
	return ret;
}

/* ---- the loop ---- */

/* Closes the launched program's pidfd, the poll set's last. */
static void close_pidfd(struct nw_recorder *r)
{
	if (r->npfds && r->pfds[r->npfds - 1].fd >= 0) {
		close(r->pfds[r->npfds - 1].fd);
		r->pfds[r->npfds - 1].fd = -1;
	}
}

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static bool flag(volatile sig_atomic_t *f)
{
	return f && *f;
}

/*
 * A stop asked for, or --duration passed (@timeout): true when that ends
 * the recording itself (attached, or system-wide without a command).  A
 * launched program is sent the signal instead (SIGINT at --duration; a
 * second stop kills it), and the recording ends when it does.
 */
static bool stop_asked(struct nw_recorder *r, bool timeout)
{
	int count;

	if (!flag(r->o.stop_signal) && !timeout)
		return false;
	if (!launched(r))
		return true;
	count = (r->o.stop_count ? *r->o.stop_count : 0) + timeout;
	if (r->forwarded < count) {
		kill(r->l.pid, r->forwarded ? SIGKILL
			       : flag(r->o.stop_signal) ? *r->o.stop_signal
							: SIGINT);
		r->forwarded = count;
		r->deadline = 0;
	}
	return false;
}

bool nw_recorder_step(struct nw_recorder *r)
{
	uint64_t now = now_ns(r, CLOCK_MONOTONIC);
	bool timeout;
	enum nw_output_due due;
	int ret;

	if (!r->looping) {
		/* The first turn: the set-up is over. */
		r->looping = true;
		r->cpu_start = cpu_seconds();
		r->deadline = r->o.duration_ns ? now + r->o.duration_ns : 0;
	}
	timeout = r->deadline && now >= r->deadline;
	r->clock.wait(r->clock.arg, r->pfds, r->npfds, nw_output_wait_ms(&r->out, now, 100));
	/* A ring's fd whose task has exited (a main thread gone before the
	 * others) polls hung up for good: not polled, its ring read anyway. */
	for (nfds_t i = 0; i + 1 < r->npfds; i++)
		if (r->pfds[i].revents & (POLLHUP | POLLERR))
			r->pfds[i].fd = -1;
	nw_session_read(&r->s);
	now = now_ns(r, CLOCK_MONOTONIC);
	if (flag(r->o.snapshot)) {
		*r->o.snapshot = 0;
		write_now(r, NW_RUN_SNAPSHOT, -1);
	}
	due = nw_output_due(&r->out, now);
	if (due != NW_DUE_NONE)
		write_now(r, due == NW_DUE_ROTATION ? NW_RUN_ROTATION : NW_RUN_CHECKPOINT, -1);
	if (r->o.flight_ns && nw_tracer_expire(&r->tracer, now, false))
		r->s.stats.alloc_failures++;
	if (!launched(r))
		/* The programs run on, undisturbed: only the recording stops. */
		return stop_asked(r, timeout) || (attaching(r) && !nw_targets_alive(r->o.targets));
	stop_asked(r, timeout);
	ret = waitpid(r->l.pid, &r->status, WNOHANG);
	if (ret == r->l.pid || (ret < 0 && errno == ECHILD)) {
		r->l.pid = -1;
		return true;
	}
	return false;
}

void nw_recorder_stop(struct nw_recorder *r)
{
	close_pidfd(r);
	r->stopped_ns = now_ns(r, CLOCK_MONOTONIC);
	nw_session_disable(&r->s);
	nw_session_read(&r->s);
	nw_session_finish(&r->s, r->stopped_ns);
	/*
	 * A launched program's run ends with its last event (its exit), not
	 * when the loop got round to seeing it (after a checkpoint's write,
	 * say).  System-wide, the recording itself is the run.
	 */
	if (launched(r) && !r->o.system) {
		uint64_t last = 0;

		for (uint32_t i = 0; i < r->s.tasks.nthreads; i++)
			if (r->s.tasks.threads[i]->last_time > last)
				last = r->s.tasks.threads[i]->last_time;
		if (last > r->clock_start_ns && last < r->stopped_ns)
			r->stopped_ns = last;
	}
	r->cpu_loop = cpu_seconds();
}

void nw_recorder_record(struct nw_recorder *r)
{
	while (!nw_recorder_step(r))
		;
	nw_recorder_stop(r);
}

int nw_recorder_finish(struct nw_recorder *r)
{
	int ret;

	r->exit_status = launched(r) ? exit_status_of(r->status) : 0;
	ret = write_now(r, NW_RUN_END, launched(r) ? r->exit_status : -1);
	/* -g bpf: what the program mapped once started, for its next run. */
	nw_session_save_preload(&r->s);
	r->cpu_end = cpu_seconds();
	return ret;
}

int nw_recorder_ask_snapshot(pid_t pid, char *err, size_t errlen)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f || !fgets(comm, sizeof(comm), f)) {
		nw_set_err(err, errlen, "--snapshot: no process %d", (int)pid);
		if (f)
			fclose(f);
		return -ESRCH;
	}
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	if (strcmp(comm, "narwhal-record")) {
		nw_set_err(err, errlen, "--snapshot: process %d is %s, not a narwhal-record",
			   (int)pid, comm);
		return -EINVAL;
	}
	if (kill(pid, SIGUSR2) < 0) {
		int e = errno;

		nw_set_err(err, errlen, "--snapshot %d: %s", (int)pid, strerror(e));
		return -e;
	}
	return 0;
}

int nw_recorder_fini(struct nw_recorder *r, char *err, size_t errlen)
{
	int ret = 0;

	if (r->l.pid > 0) {
		/* A program started but never released or reaped: do not leave it behind. */
		kill(r->l.pid, SIGKILL);
		waitpid(r->l.pid, NULL, 0);
	}
	close_pidfd(r);
	free(r->pfds);
	nw_measurement_free(r->model);
	nw_output_fini(&r->out);
	if (r->tracing)
		nw_tracer_fini(&r->tracer);
	if (r->measure_ready)
		nw_measure_fini(&r->ms);
	if (r->session_ready)
		nw_session_fini(&r->s);
	/* The probes go once their events are closed. */
	if (r->alloc_ready && nw_alloc_unprobe(&r->alloc)) {
		nw_set_err(err, errlen, "the kernel still holds the probes of group %s in "
					"/sys/kernel/tracing/uprobe_events (the next --alloc -p "
					"removes them)", r->alloc.libc.group);
		ret = -EBUSY;
	}
	nw_targets_fini(&r->attached);
	free(r->attached_argv);
	nw_alloc_listener_fini(&r->allocs);
	if (r->locks_ready)
		nw_lock_listener_fini(&r->locks);
	if (r->alloc_ready)
		nw_alloc_opts_fini(&r->alloc);
	memset(r, 0, sizeof(*r));
	return ret;
}
