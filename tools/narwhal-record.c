/* SPDX-License-Identifier: MIT */
/*
 * narwhal-record: run a program under the sampler and write a measurement.
 * A thin front end: options, the recorder (record/recorder.h) set up and
 * run, signals, the instrumented sections' stage, the end-of-run exports,
 * and every message the user sees.  The work happens in src/.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export.h"
#include "perf/event.h"
#include "record/recorder.h"
#include "report/health.h"
#include "sections/record.h"
#include "util/log.h"
#include "util/options.h"
#include "util/strbuf.h"

/* A sample record is at most 64 KiB: the stack copy's largest size.  -C: CPUs a list may name. */
#define NW_MAX_STACK_COPY 65528
#define NW_DEFAULT_STACK_COPY 16384
#define NW_DEFAULT_HYBRID_COPY 2048
#define NW_MAX_CPUS 4096

/* When the measurement could not be written (EX_IOERR); a failed program's own status wins. */
#define NW_EXIT_WRITE_FAILED 74

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t stop_count;
static volatile sig_atomic_t snapshot_asked; /* SIGUSR2: write a snapshot now */

/* The codes of the options without a short letter. */
enum {
	OPT_IDLE = NW_OPTION_LONG_ONLY, OPT_DURATION, OPT_ALLOC, OPT_ALLOC_RATE, OPT_OFF_CPU,
	OPT_USER_ONLY, OPT_NO_TRACE, OPT_NO_CACHE, OPT_CHECKPOINT, OPT_FLIGHT_RECORDER, OPT_ROTATE,
	OPT_ROTATE_PPROF, OPT_MAX_SIZE, OPT_MAX_FILES, OPT_SNAPSHOT, OPT_PPROF, OPT_FLAMEGRAPH,
	OPT_HTML, OPT_LIST_EVENTS, OPT_CODE_CAP, OPT_NO_CODE, OPT_LOCKS, OPT_LOCK_RATE,
};

/*
 * The one table of options (util/options.h), in --help's order: getopt's
 * long and short options and --help's list are made from it;
 * doc/narwhal-record.1 lists them too, and the cli test checks that it
 * names the same.
 */
static const struct nw_option opts_table[] = {
	{ "--output", required_argument, 'o', "DIR",
	  "measurement directory (default narwhal.data;\n"
	  "an existing one is moved to DIR.old)" },
	{ "--event", required_argument, 'e', "EV[,EV...]",
	  "events to sample (default cycles, or cpu-clock\n"
	  "where the CPU has no PMU)" },
	{ "--freq", required_argument, 'F', "HZ", "samples per second per thread (default 999)" },
	{ "--count", required_argument, 'c', "PERIOD", "sample every PERIOD events instead of -F" },
	{ "--call-graph", required_argument, 'g', "MODE",
	  "bpf (default as root: CFI unwinding in the kernel,\n"
	  "any depth, no copy), dwarf[,SIZE] (default elsewhere:\n"
	  "CFI unwinding of a SIZE-byte stack copy at record\n"
	  "time; 16384, at most 65528),\n"
	  "fp (the kernel's frame-pointer chains: cheapest,\n"
	  "but broken by code without frame pointers), or\n"
	  "hybrid[,SIZE] (CFI over a small copy, 2048, spliced\n"
	  "onto the frame-pointer chain)" },
	{ "--mmap-pages", required_argument, 'm', "N",
	  "data pages per CPU ring, a power of two (default\n"
	  "128, or 2048 with --call-graph dwarf)" },
	{ "--pid", required_argument, 'p', "PID[,PID...]",
	  "attach to running processes (all their threads)" },
	{ "--tid", required_argument, 't', "TID[,TID...]", "attach to running threads" },
	{ "--all-cpus", no_argument, 'a', NULL,
	  "record the whole machine: every process on every CPU\n"
	  "(root, CAP_PERFMON or perf_event_paranoid<=0); until\n"
	  "Ctrl-C, --duration or the end of COMMAND if given" },
	{ "--cpu", required_argument, 'C', "CPUS", "as -a, on the CPUs listed only (0,2-3)" },
	{ "--idle", no_argument, OPT_IDLE, NULL,
	  "with -a or -C: keep the idle task's samples (pid 0)" },
	{ "--duration", required_argument, OPT_DURATION, "SECONDS",
	  "stop after SECONDS (attached: the program runs on)" },
	{ "--alloc", no_argument, OPT_ALLOC, NULL,
	  "record allocations (malloc, calloc, realloc, free, the\n"
	  "aligned ones, C++ new/delete) with their call paths:\n"
	  "alloc-objects, alloc-bytes, inuse-objects, inuse-bytes;\n"
	  "allocations only, unless -e names events to sample too" },
	{ "--alloc-rate", required_argument, OPT_ALLOC_RATE, "BYTES",
	  "one sample per BYTES allocated on average (default\n"
	  "524288; 1: every allocation, exact)" },
	{ "--locks", no_argument, OPT_LOCKS, NULL,
	  "record lock contention (pthread mutexes, rwlocks,\n"
	  "semaphores): lock-wait, lock-contentions, lock-delay;\n"
	  "locks only, unless -e names events to sample too" },
	{ "--lock-rate", required_argument, OPT_LOCK_RATE, "NS",
	  "one sample per NS of waiting on average (default\n"
	  "100000; 1: every contended acquisition)" },
	{ "--off-cpu", no_argument, OPT_OFF_CPU, NULL,
	  "also record where threads block, and for how long\n"
	  "(needs kernel samples: root or perf_event_paranoid<=1)" },
	{ "--user-only", no_argument, OPT_USER_ONLY, NULL,
	  "user space only: no kernel time or frames (also an\n"
	  "event with :u); by default the kernel's call chain\n"
	  "is below the user stack where the kernel allows it" },
	{ "--no-trace", no_argument, OPT_NO_TRACE, NULL,
	  "no traces (the time of each sample: --time, --timeline,\n"
	  "the timeline exports and --sections need them)" },
	{ "--no-cache", no_argument, OPT_NO_CACHE, NULL,
	  "neither read nor keep the kernel's symbols and the\n"
	  "symbolization results of earlier runs (kept in\n"
	  "$XDG_CACHE_HOME/narwhal by build-id; they make a\n"
	  "run cheaper, never change what it records)" },
	{ "--code-cap", required_argument, OPT_CODE_CAP, "FUNC[,TOTAL]", "store at most FUNC bytes "
	  "of each sampled function's\nmachine code and TOTAL in all, the hottest first\n(default "
	  "64K,8M; K, M, G): --disasm then needs no binary" },
	{ "--no-code", no_argument, OPT_NO_CODE, NULL, "store no machine code" },
	{ "--checkpoint", required_argument, OPT_CHECKPOINT, "SECONDS",
	  "write the measurement every SECONDS while recording\n"
	  "(default 10, the first after 1 s; 0: only at the end)" },
	{ "--flight-recorder", required_argument, OPT_FLIGHT_RECORDER, "SECONDS",
	  "keep only the last SECONDS, in bounded memory;\n"
	  "written at the end or on SIGUSR2" },
	{ "--rotate", required_argument, OPT_ROTATE, "SECONDS",
	  "one measurement per interval: DIR/0001, DIR/0002, ..." },
	{ "--rotate-pprof", no_argument, OPT_ROTATE_PPROF, NULL,
	  "with --rotate, also DIR/NNNN.pb.gz per interval" },
	{ "--max-size", required_argument, OPT_MAX_SIZE, "SIZE", NULL },
	{ "--max-files", required_argument, OPT_MAX_FILES, "N",
	  "with --rotate: remove the oldest beyond\n"
	  "SIZE bytes (K, M, G) or N intervals" },
	{ "--snapshot", required_argument, OPT_SNAPSHOT, "PID",
	  "ask the narwhal-record PID to write its measurement now\n"
	  "(as SIGUSR2 does), then exit" },
	{ "--pprof", required_argument, OPT_PPROF, "FILE",
	  "also write a pprof profile (gzipped protobuf) at the end" },
	{ "--flamegraph", required_argument, OPT_FLAMEGRAPH, "FILE",
	  "also write an SVG flame graph at the end" },
	{ "--html", required_argument, OPT_HTML, "FILE",
	  "also write the HTML report (one file, opens anywhere) at the end" },
	{ "--list-events", no_argument, OPT_LIST_EVENTS, NULL,
	  "list the event names this machine knows" },
	{ "--quiet", no_argument, 'q', NULL, "no summary line" },
	{ "--verbose", no_argument, 'v', NULL, "debug messages" },
	{ "--help", no_argument, 'h', NULL, "this text" },
	{ "--version", no_argument, 'V', NULL, "print the version" },
};

#define NOPTS (sizeof(opts_table) / sizeof(opts_table[0]))

struct opts {
	struct nw_recorder_opts rec;     /* what the recorder is told, as far as options say */
	char *event_list;
	uint64_t freq, period;
	bool quiet;
	const char *pprof, *flamegraph, *html; /* exports written at the end of the run */
	struct nw_targets targets;       /* -p / -t: attach instead of launching */
	bool *cpus;                      /* -C: the CPUs to record (system-wide); NULL: all */
	bool rotate_pprof;               /* --rotate-pprof */
};

/* rec.checkpoint_ns when --checkpoint is not given. */
#define NW_CHECKPOINT_DEFAULT UINT64_MAX

static void usage(FILE *f)
{
	fputs("usage: narwhal-record [options] [--] COMMAND [ARGS...]\n"
	      "       narwhal-record [options] -p PID[,PID...] | -t TID[,TID...]\n"
	      "       narwhal-record [options] -a | -C CPUS [[--] COMMAND [ARGS...]]\n\n"
	      "Runs COMMAND (or attaches to running processes or threads), samples\n"
	      "every thread and child process, and writes a measurement directory\n"
	      "for narwhal-report.\n\n", f);
	nw_options_help(f, opts_table, NOPTS);
}

/* "-F wants a frequency in Hz, not 'x'": exit status 2. */
static int bad_arg(int code, const char *what)
{
	char name[64];

	fprintf(stderr, "narwhal-record: %s wants %s, not '%s'\n",
		nw_options_name(opts_table, NOPTS, code, name, sizeof(name)), what, optarg);
	return 2;
}

static void on_signal(int sig)
{
	stop_signal = sig;
	stop_count++;
}

static void on_snapshot(int sig)
{
	(void)sig;
	snapshot_asked = 1;
}

static int print_event(const char *pmu, const char *name, const char *desc, void *arg)
{
	printf("%s::%s\n", pmu, name);
	return 0;
}

/* -g fp | dwarf[,SIZE] | hybrid[,SIZE].  0, or 2 after saying why. */
static int parse_callgraph(const char *arg, struct nw_session_opts *so)
{
	size_t len = !strncmp(arg, "dwarf", 5) ? 5 : !strncmp(arg, "hybrid", 6) ? 6 : 0;
	const char *size = len && arg[len] == ',' ? arg + len + 1 : NULL;
	uint64_t v;

	if (!strcmp(arg, "fp") || !strcmp(arg, "bpf")) {
		so->callgraph = arg[0] == 'f' ? NW_CALLGRAPH_FP : NW_CALLGRAPH_BPF;
		so->stack_size = NW_DEFAULT_STACK_COPY;
		return 0;
	}
	if (!len || (arg[len] && !size)) {
		fprintf(stderr, "narwhal-record: unknown call graph mode '%s' "
				"(bpf, fp, dwarf[,SIZE], hybrid[,SIZE])\n", arg);
		return 2;
	}
	so->callgraph = len == 5 ? NW_CALLGRAPH_DWARF : NW_CALLGRAPH_HYBRID;
	so->stack_size = len == 5 ? NW_DEFAULT_STACK_COPY : NW_DEFAULT_HYBRID_COPY;
	if (size && (nw_parse_count(size, &v) || v > NW_MAX_STACK_COPY)) {
		fprintf(stderr, "narwhal-record: the stack copy must be 8 to %d bytes, not '%s'\n",
			NW_MAX_STACK_COPY, size);
		return 2;
	}
	if (size)
		so->stack_size = (uint32_t)((v + 7) & ~7ull);
	return 0;
}

/* Seconds into @ns: 0, or 2 after saying why. */
static int parse_seconds(int code, bool zero, double max, uint64_t *ns)
{
	double v;

	if (nw_parse_seconds(optarg, zero, max, &v))
		return bad_arg(code, "seconds");
	*ns = (uint64_t)(v * 1e9);
	return 0;
}

/* --snapshot PID: asks that narwhal-record for a snapshot; the exit status. */
static int ask_snapshot(const char *arg)
{
	char err[128];
	uint64_t pid;
	int ret;

	if (nw_parse_count(arg, &pid) || pid > INT32_MAX) {
		fprintf(stderr, "narwhal-record: --snapshot wants the process id of a "
				"narwhal-record, not '%s'\n", arg);
		return 2;
	}
	ret = nw_recorder_ask_snapshot((pid_t)pid, err, sizeof(err));
	if (ret)
		fprintf(stderr, "narwhal-record: %s\n", err);
	else
		fprintf(stderr, "narwhal-record: asked narwhal-record %llu for a snapshot of its "
				"measurement\n", (unsigned long long)pid);
	return ret ? 1 : 0;
}

/* One option: 0, or the exit status after saying why. */
static int parse_one(int c, struct opts *o)
{
	struct nw_recorder_opts *ro = &o->rec;
	uint64_t v;

	switch (c) {
	case 'o': ro->dir = optarg; break;
	case 'e': o->event_list = optarg; break;
	case 'F':
		if (nw_parse_count(optarg, &o->freq))
			return bad_arg(c, "a frequency in Hz");
		o->period = 0;
		break;
	case 'c':
		if (nw_parse_count(optarg, &o->period))
			return bad_arg(c, "a positive period");
		o->freq = 0;
		break;
	case 'g': return parse_callgraph(optarg, &ro->session);
	case 'm':
		if (nw_parse_count(optarg, &v) || (v & (v - 1)) || v > (1u << 20))
			return bad_arg(c, "a power of two");
		ro->session.mmap_pages = (unsigned)v;
		break;
	case 'p':
	case 't':
		if ((o->targets.n && o->targets.threads != (c == 't')) ||
		    nw_targets_parse(&o->targets, optarg))
			return bad_arg(c, c == 'p' ? "a list of process ids like 1234,5678 (and -p "
						     "and -t do not mix)"
						   : "a list of thread ids like 1234,5678 (and -p "
						     "and -t do not mix)");
		o->targets.threads = c == 't';
		break;
	case 'a': ro->system = true; break;
	case 'C':
		if (nw_parse_cpus(optarg, NW_MAX_CPUS, &o->cpus))
			return bad_arg(c, "CPU numbers like 0,2-3");
		ro->system = true;
		break;
	case OPT_IDLE: ro->session.idle = true; break;
	case OPT_DURATION: return parse_seconds(c, false, HUGE_VAL, &ro->duration_ns);
	case OPT_ALLOC: ro->alloc = true; break;
	case OPT_ALLOC_RATE:
		if (nw_parse_size(optarg, &ro->alloc_rate) || !ro->alloc_rate)
			return bad_arg(c, "a number of bytes like 524288 or 512K");
		ro->alloc = true;
		break;
	case OPT_LOCKS: ro->locks = true; break;
	case OPT_LOCK_RATE:
		if (nw_parse_count(optarg, &ro->lock_rate) || !ro->lock_rate)
			return bad_arg(c, "a number of nanoseconds like 100000");
		ro->locks = true;
		break;
	case OPT_OFF_CPU: ro->session.off_cpu = true; break;
	case OPT_USER_ONLY: ro->session.kernel = false; break;
	case OPT_NO_TRACE: ro->trace = false; break;
	case OPT_NO_CACHE: ro->cache = false; break;
	case OPT_CHECKPOINT: return parse_seconds(c, true, 1e6, &ro->checkpoint_ns);
	case OPT_FLIGHT_RECORDER: return parse_seconds(c, false, 1e6, &ro->flight_ns);
	case OPT_ROTATE: return parse_seconds(c, false, 1e6, &ro->rotate_ns);
	case OPT_ROTATE_PPROF: o->rotate_pprof = true; break;
	case OPT_CODE_CAP:
		if (nw_parse_size_pair(optarg, &ro->code.func_cap, &ro->code.total_cap))
			return bad_arg(c, "FUNC[,TOTAL] in bytes like 64K,8M");
		break;
	case OPT_NO_CODE: ro->code.off = true; break;
	case OPT_MAX_SIZE:
		if (nw_parse_size(optarg, &ro->max_bytes))
			return bad_arg(c, "a size like 500M");
		break;
	case OPT_MAX_FILES:
		if (nw_parse_count(optarg, &v) || v > UINT32_MAX)
			return bad_arg(c, "a count");
		ro->max_files = (uint32_t)v;
		break;
	case OPT_SNAPSHOT: exit(ask_snapshot(optarg));
	case OPT_PPROF: o->pprof = optarg; break;
	case OPT_FLAMEGRAPH: o->flamegraph = optarg; break;
	case OPT_HTML: o->html = optarg; break;
	case OPT_LIST_EVENTS:
		nw_event_foreach(print_event, NULL);
		exit(0);
	case 'q': o->quiet = true; break;
	case 'v': nw_log_level = NW_LOG_DEBUG; break;
	case 'h':
		usage(stdout);
		exit(0);
	case 'V':
		printf("narwhal-record %s\n", NW_VERSION);
		exit(0);
	default:
		usage(stderr);
		return 2;
	}
	return 0;
}

/* The options that do not go together.  0, or 2 after saying why. */
static int check_opts(const struct opts *o, bool command)
{
	const struct nw_recorder_opts *ro = &o->rec;
	const char *why = NULL;

	if (o->targets.n && command)
		why = "give a command to run or -p/-t to attach, not both";
	else if (ro->system && o->targets.n)
		why = "-a records every process already: not with -p/-t";
	else if ((ro->alloc || ro->locks) && ro->system)
		why = "--alloc and --locks record a program launched or attached to: not with -a";
	else if (ro->session.idle && !ro->system)
		why = "--idle goes with -a (system-wide)";
	else if (ro->flight_ns && ro->rotate_ns)
		why = "--flight-recorder keeps the last seconds of the traces: not with --rotate";
	else if (ro->flight_ns && !ro->trace)
		why = "--flight-recorder keeps the last seconds of the traces: not with --no-trace";
	else if ((o->rotate_pprof || ro->max_bytes || ro->max_files) && !ro->rotate_ns)
		why = "--rotate-pprof, --max-size and --max-files go with --rotate";
	if (why) {
		fprintf(stderr, "narwhal-record: %s\n", why);
		return 2;
	}
	if (!o->targets.n && !ro->system && !command) {
		fprintf(stderr, "narwhal-record: no command to run (or -p PID to attach)\n");
		usage(stderr);
		return 2;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	struct option longopts[NOPTS + 1];
	char shortopts[2 * NOPTS + 2];
	int c, ret = 0;

	nw_options_getopt(opts_table, NOPTS, longopts, shortopts);
	while (!ret && (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1)
		ret = parse_one(c, o);
	if (!ret)
		ret = check_opts(o, optind < argc);
	/* A flight recorder writes when asked; checkpoints only if asked for too. */
	if (o->rec.checkpoint_ns == NW_CHECKPOINT_DEFAULT)
		o->rec.checkpoint_ns = o->rec.flight_ns ? 0 : 10000000000ull;
	return ret;
}

/* Everything a run holds, released in one place (run_fini). */
struct run {
	struct opts o;
	int argc;                 /* the command's words (0 when attaching) */
	char **cmd;
	bool attach;              /* -p/-t */
	struct nw_event evs[NW_RECORDER_MAX_EVENTS];
	struct nw_recorder rec;
	/* Instrumented sections (doc/SECTIONS.md): where libnarwhal in the
	 * program writes its intervals, moved into the measurement at the end. */
	char stage[PATH_MAX];
	int stage_lock;           /* held while the stage is ours (nw_seclog_stage_clean) */
	char last_err[1024];      /* the last write's failure, told once */
};

/* Did narwhal-record start a program (not attached, not system-wide without one)? */
static bool launched(const struct run *r)
{
	return !r->attach && r->argc > 0;
}

/* -v: what a write cost and holds. */
static void tell_write(const struct nw_recorder_write *w)
{
	char how[96] = "";

	/* A checkpoint is a pack, or a segment of its journal (what changed). */
	if (!w->ret && (w->what == NW_RUN_CHECKPOINT || w->what == NW_RUN_SNAPSHOT))
		snprintf(how, sizeof(how), ", as %s of %llu bytes",
			 w->segment ? "a journal segment" : "a pack", (unsigned long long)w->bytes);
	fprintf(stderr, "narwhal-record: %s %s in %.1f ms (CPU %.1f ms building the model, "
			"%.1f ms writing): %llu nodes, %llu trace events (%llu bytes)%s\n",
		nw_run_written_name(w->what), w->ret ? "failed" : "written", 1e3 * w->wall,
		1e3 * w->cpu_model, 1e3 * w->cpu_write, (unsigned long long)w->nodes,
		(unsigned long long)w->trace_events, (unsigned long long)w->trace_bytes, how);
}

/* The recorder's wrote callback: a failure said (once while recording), --rotate-pprof. */
static int on_write(void *arg, const struct nw_recorder_write *w)
{
	struct run *r = arg;
	const char *last = r->rec.out.last;
	char err[1024], *pb;
	int ret;

	if (!w->m) {
		fprintf(stderr, "narwhal-record: %s\n", w->err);
		return 0;
	}
	if (nw_log_level >= NW_LOG_DEBUG)
		tell_write(w);
	/* Said once while recording (the next checkpoint tries again), and at the end. */
	if (w->ret < 0 && (w->what == NW_RUN_END || strcmp(w->err, r->last_err))) {
		fprintf(stderr, "narwhal-record: %s\n", w->err);
		if (last[0])
			fprintf(stderr, "narwhal-record: %s still holds the last measurement "
					"written (narwhal-report reads it)\n", last);
		else if (w->what != NW_RUN_END)
			fprintf(stderr, "narwhal-record: recording goes on; the next checkpoint "
					"tries again\n");
		snprintf(r->last_err, sizeof(r->last_err), "%s", w->err);
	}
	if (w->ret || !r->o.rotate_pprof || (w->what != NW_RUN_ROTATION && w->what != NW_RUN_END))
		return 0;
	pb = nw_strdup_printf("%s.pb.gz", last);
	ret = pb ? nw_export_measurement(w->m, pb, NULL, NULL, err, sizeof(err)) : -ENOMEM;
	if (ret < 0)
		fprintf(stderr, "narwhal-record: %s\n", pb ? err : strerror(ENOMEM));
	free(pb);
	return ret;
}

/* Checks the command or targets, the output, the events: -1 to go on, else the exit status. */
static int prepare(struct run *r)
{
	struct nw_recorder_opts *ro = &r->o.rec;
	const char *lib = getenv("NARWHAL_ALLOC_LIBRARY");
	char why[PATH_MAX + 128], exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	bool fell_back;
	pid_t missing;
	int n, ret;

	exe[len > 0 ? len : 0] = 0;
	if (launched(r) && (ret = nw_launch_check(r->cmd[0], why, sizeof(why)))) {
		fprintf(stderr, "narwhal-record: %s\n", why);
		return ret;
	}
	if (!launched(r) && (missing = nw_targets_missing(&r->o.targets))) {
		fprintf(stderr, "narwhal-record: no such %s: %d\n",
			r->o.targets.threads ? "thread" : "process", missing);
		return 1;
	}
	if (nw_output_check(ro->dir, why, sizeof(why)) < 0) {
		fprintf(stderr, "narwhal-record: %s\n", why);
		return 1;
	}
	n = nw_recorder_events(r->o.event_list, ro->session.off_cpu,
			       (ro->alloc ? 4 : 0) + (ro->locks ? 3 : 0), r->evs,
			       &fell_back, why, sizeof(why));
	if (fell_back && !r->o.quiet)
		fprintf(stderr, "narwhal-record: no hardware PMU here (cycles cannot be opened); "
				"sampling cpu-clock instead\n");
	if (n < 0) {
		fprintf(stderr, "narwhal-record: %s\n", why);
		return 2;
	}
	ro->session.events = r->evs;
	ro->session.nevents = (unsigned)n;
	ro->session.freq = r->o.freq != 0;
	ro->session.value = r->o.freq ? r->o.freq : r->o.period;
	ro->alloc_library = lib && *lib ? lib : NULL;
	ro->exe = exe;
	ro->argv = r->cmd;
	ro->argc = r->argc;
	ro->targets = &r->o.targets;
	ro->cpus = r->o.cpus;
	if (nw_recorder_init(&r->rec, ro, why, sizeof(why))) {
		fprintf(stderr, "narwhal-record: %s\n", why);
		return 1;
	}
	if (ro->alloc && r->attach && !r->o.quiet)
		fprintf(stderr, "narwhal-record: --alloc attached: every call of malloc, calloc, "
				"realloc, memalign and free in %s traps (microseconds each)\n",
			r->rec.alloc.libc.path);
	return -1;
}

/* What opening the events found, said once they are open. */
static void tell_open(const struct run *r, bool opened)
{
	const struct nw_recorder *rec = &r->rec;
	int restrict_;

	if (rec->notes.no_kernel && !r->o.quiet)
		fprintf(stderr, "narwhal-record: no kernel frames: kernel.perf_event_paranoid=%d "
				"forbids kernel samples for this user (run as root, with "
				"CAP_PERFMON, or set it to 1 or lower; --user-only silences "
				"this)\n",
			nw_recorder_paranoid());
	if (rec->notes.no_offcpu)
		fprintf(stderr, "narwhal-record: off-CPU sampling needs kernel samples, which "
				"kernel.perf_event_paranoid=%d forbids for this user; recording "
				"on-CPU only (set it to 1 or lower, or run as root, for "
				"--off-cpu)\n",
			nw_recorder_paranoid());
	if (!opened || r->o.quiet)
		return;
	if (rec->notes.no_bpf[0])
		fprintf(stderr, "narwhal-record: call graph dwarf (stack copies): %s\n",
			rec->notes.no_bpf);
	if (rec->s.opts.kernel && nw_recorder_kernel_hidden(&restrict_))
		fprintf(stderr, "narwhal-record: kernel frames will show as [kernel]: "
				"/proc/kallsyms hides kernel addresses from this user "
				"(kernel.kptr_restrict=%d; root sees them unless it is 2)\n",
			restrict_);
	if (rec->s.opts.mmap_pages != rec->notes.pages_asked)
		fprintf(stderr, "narwhal-record: the locked-memory limit allows rings of %u pages "
				"per CPU, not %u (raise kernel.perf_event_mlock_kb for larger)\n",
			rec->s.opts.mmap_pages, rec->notes.pages_asked);
}

/*
 * Starts the program at its gate (or attaches), opens the events on it
 * and lets it go: -1 to go on, else the exit status.
 */
static int start(struct run *r)
{
	struct nw_recorder *rec = &r->rec;
	char err[PATH_MAX + 512];
	int ret;

	if (launched(r) &&
	    nw_seclog_stage_create(r->o.rec.dir, r->stage, sizeof(r->stage), &r->stage_lock) == 0)
		setenv(NW_SECLOG_ENV, r->stage, 1);
	ret = nw_recorder_open(rec, err, sizeof(err));
	tell_open(r, !ret);
	if (ret) {
		fprintf(stderr, "narwhal-record: %s\n", err);
		return 1;
	}
	/* A run that starts removes the stages that killed recorders left beside DIR. */
	nw_seclog_stage_clean(r->o.rec.dir);
	if (nw_recorder_begin(rec, err, sizeof(err))) {
		fprintf(stderr, "narwhal-record: %s\n", err);
		return 1;
	}
	if (r->o.rec.system && !r->o.quiet)
		fprintf(stderr, "narwhal-record: recording every process on %s%s\n",
			r->o.cpus ? "the CPUs of -C" : "every CPU",
			launched(r) ? "" : "; Ctrl-C (or --duration) to stop");
	if (r->attach && !r->o.quiet)
		fprintf(stderr, "narwhal-record: attached to %zu thread%s; Ctrl-C to stop\n",
			rec->attached.n, rec->attached.n == 1 ? "" : "s");
	ret = nw_recorder_release(rec);
	if (ret) {
		fprintf(stderr, "narwhal-record: %s: %s\n", r->cmd[0], strerror(ret));
		return ret == ENOENT ? 127 : 126;
	}
	return -1;
}

/* Each line of @text (cut there) after the tool's name. */
static void tell_lines(char *text)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(stderr, "narwhal-record: %s\n", line);
}

static void print_summary(const struct run *r)
{
	const struct nw_recorder *rec = &r->rec;
	const struct nw_output *out = &rec->out;
	const struct nw_session *s = &rec->s;
	uint32_t threads, procs;
	char health[512], costs[4096];

	nw_tasks_sampled(&s->tasks, &threads, &procs);
	fprintf(stderr, "narwhal-record: %llu samples from %u thread%s in %u process%s (%llu lost",
		(unsigned long long)s->stats.samples, threads, threads == 1 ? "" : "s", procs,
		procs == 1 ? "" : "es", (unsigned long long)s->stats.lost);
	if (s->stats.throttled)
		fprintf(stderr, ", throttled %llu times", (unsigned long long)s->stats.throttled);
	fprintf(stderr, ") written to %s\n", out->last);
	if (out->rotations > 1)
		fprintf(stderr, "narwhal-record: %llu samples in all %u intervals\n",
			(unsigned long long)(rec->rotated_samples + s->stats.samples),
			out->rotations);
	if (out->checkpoints || out->snapshots || out->rotations > 1 || out->failures)
		fprintf(stderr, "narwhal-record: while recording: %u checkpoint%s, %u snapshot%s%s",
			out->checkpoints, out->checkpoints == 1 ? "" : "s", out->snapshots,
			out->snapshots == 1 ? "" : "s", out->rotations ? "" : "\n");
	if (out->rotations)
		fprintf(stderr, ", %u interval%s in %s\n", out->rotations,
			out->rotations == 1 ? "" : "s", r->o.rec.dir);
	if (out->failures)
		fprintf(stderr, "narwhal-record: %u write%s failed (see above)\n", out->failures,
			out->failures == 1 ? "" : "s");
	if (s->stats.samples && !nw_health_summary(rec->model, out->last, health, sizeof(health)))
		fprintf(stderr, "narwhal-record: %s\n", health);
	if (nw_log_level >= NW_LOG_DEBUG) {
		nw_recorder_costs(rec, costs, sizeof(costs));
		tell_lines(costs);
	}
	if (nw_recorder_source_note(rec, costs, sizeof(costs)))
		tell_lines(costs);
	if (s->stats.lost)
		fprintf(stderr, "narwhal-record: the kernel dropped %llu records: raise the ring "
				"size with -m (now %u pages)%s\n",
			(unsigned long long)s->stats.lost, s->opts.mmap_pages,
			r->o.rec.alloc ? ", raise --alloc-rate or take smaller stack copies "
					 "(-g dwarf,SIZE)"
				       : " or lower -F");
	if (s->bpf_refused)
		fprintf(stderr, "narwhal-record: %llu unwind table%s not loaded into the kernel "
				"(%s): %s samples were unwound from stack copies\n",
			(unsigned long long)s->bpf_refused, s->bpf_refused == 1 ? "" : "s",
			s->bpf_refused_why, s->bpf_refused == 1 ? "its" : "their");
	if (s->stats.bad_records || s->stats.ring_resyncs)
		fprintf(stderr, "narwhal-record: %llu malformed records skipped\n",
			(unsigned long long)(s->stats.bad_records + s->stats.ring_resyncs));
}

/*
 * The exit status when the measurement could not be written: the
 * program's own when it failed, else NW_EXIT_WRITE_FAILED.
 */
static int write_failed(int exit_status)
{
	return exit_status ? exit_status : NW_EXIT_WRITE_FAILED;
}

/* Writes the measurement, the sections and the exports; the exit status. */
static int finish(struct run *r)
{
	const struct opts *o = &r->o;
	const char *last = r->rec.out.last;
	bool sections = false;
	char err[PATH_MAX + 128];
	int ret = nw_recorder_finish(&r->rec), status = r->rec.exit_status;

	if (ret < 0) {
		if (launched(r))
			fprintf(stderr, "narwhal-record: %s exited with status %d\n", r->cmd[0],
				status);
		return write_failed(status);
	}
	if (r->stage[0]) {
		sections = nw_seclog_stage_used(r->stage);
		ret = nw_seclog_stage_finish(r->stage, last, err, sizeof(err));
		r->stage[0] = 0;
		if (ret < 0) {
			fprintf(stderr, "narwhal-record: %s\n", err);
			return write_failed(status);
		}
	}
	if (!o->quiet)
		print_summary(r);
	if (!o->quiet && sections)
		fprintf(stderr, "narwhal-record: instrumented sections in %s/%s (narwhal-report "
				"--sections, --by-section)\n", last, NW_SECLOG_SUBDIR);
	if (!o->pprof && !o->flamegraph && !o->html)
		return status;
	ret = nw_export_measurement(r->rec.model, o->pprof, o->flamegraph, o->html, err,
				    sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "narwhal-record: %s\n", err);
		return write_failed(status);
	}
	if (!o->quiet)
		fprintf(stderr, "narwhal-record: wrote%s%s%s%s%s%s\n", o->pprof ? " " : "",
			o->pprof ? o->pprof : "", o->flamegraph ? " " : "",
			o->flamegraph ? o->flamegraph : "", o->html ? " " : "",
			o->html ? o->html : "");
	return status;
}

static void handle_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_snapshot;
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void run_fini(struct run *r)
{
	char err[256];

	/* The recorder first: a launched program killed, the probes' events closed. */
	if (nw_recorder_fini(&r->rec, err, sizeof(err)))
		fprintf(stderr, "narwhal-record: %s\n", err);
	if (r->stage[0])
		nw_seclog_stage_remove(r->stage);
	if (r->stage_lock >= 0)
		close(r->stage_lock);
	nw_targets_fini(&r->o.targets);
	free(r->o.cpus);
}

int main(int argc, char **argv)
{
	/*
	 * bpf where allowed, else dwarf: complete stacks through code without
	 * frame pointers (all of Debian's libraries); doc/UNWINDING.md has the
	 * measurements behind the choice.
	 */
	struct run r = {
		.o = { .rec = { .dir = "narwhal.data", .trace = true, .cache = true,
				.checkpoint_ns = NW_CHECKPOINT_DEFAULT, .libdir = NW_LIBDIR,
				.session = { .callgraph = NW_CALLGRAPH_AUTO, .kernel = true,
					     .stack_size = NW_DEFAULT_STACK_COPY },
				.stop_signal = &stop_signal, .stop_count = &stop_count,
				.snapshot = &snapshot_asked, .wrote = on_write, .arg = &r },
		       .freq = 999 },
		.stage_lock = -1,
	};
	int ret;

	ret = parse_opts(argc, argv, &r.o);
	if (ret)
		goto cleanup;
	if (r.o.quiet)
		nw_log_level = NW_LOG_QUIET;
	r.attach = r.o.targets.n > 0;
	r.cmd = argv + optind;
	r.argc = r.attach ? 0 : argc - optind;
	ret = prepare(&r);
	if (ret >= 0)
		goto cleanup;
	handle_signals();
	ret = start(&r);
	if (ret >= 0)
		goto cleanup;
	nw_recorder_record(&r.rec);
	ret = finish(&r);
cleanup:
	run_fini(&r);
	return ret;
}
