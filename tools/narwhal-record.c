/* SPDX-License-Identifier: MIT */
/*
 * narwhal-record: run a program under the sampler and write a measurement.
 * A thin front end: options, launching the program at a gate, the poll
 * loop, signals, and messages for the user.  The work happens in src/.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "export/export.h"
#include "format/writer.h"
#include "perf/event.h"
#include "perf/tracefs.h"
#include "alloc/abi.h"
#include "record/alloc.h"
#include "record/measure.h"
#include "record/output.h"
#include "record/session.h"
#include "record/target.h"
#include "report/health.h"
#include "sections/record.h"
#include "util/cache.h"
#include "util/log.h"
#include "util/strbuf.h"

/*
 * Two metrics per event; HPC_CSPROF readers take 2..15 metrics (the old
 * reader mistakes a count whose low four bits are 0 or 1 for a tag), so
 * at most 7 events, the off-cpu event included.
 */
#define MAX_EVENTS 7
/* With --alloc four more metrics: 2 * 5 + 4 = 14. */
#define MAX_EVENTS_ALLOC 5
/* A sample record is at most 64 KiB: the stack copy's largest size. */
#define NW_MAX_STACK_COPY 65528
#define NW_DEFAULT_STACK_COPY 16384
#define NW_DEFAULT_HYBRID_COPY 2048

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t stop_count;
static volatile sig_atomic_t snapshot_asked; /* SIGUSR2: write a snapshot now */

/*
 * The exit status when the measurement could not be written and the
 * program itself succeeded (EX_IOERR); a program that failed keeps its own.
 */
#define NW_EXIT_WRITE_FAILED 74

struct opts {
	const char *output;
	char *event_list;
	uint64_t freq, period;
	enum nw_callgraph callgraph;
	uint32_t stack_size;
	unsigned mmap_pages;
	bool quiet;
	const char *pprof, *flamegraph, *html; /* exports written at the end of the run */
	struct nw_targets targets;          /* -p / -t: attach instead of launching */
	double duration;                 /* --duration: seconds, 0: until the end */
	bool off_cpu;
	bool no_trace;                   /* --no-trace: no per-thread traces */
	bool user_only;                  /* --user-only: no kernel time or frames */
	bool no_cache;                   /* --no-cache: no symbols kept between runs */
	bool system;                     /* -a: every process on every CPU */
	bool *cpus;                      /* -C: the CPUs to record (system-wide); NULL: all */
	bool idle;                       /* --idle: keep the idle task's samples */
	double checkpoint;               /* --checkpoint seconds; < 0: the default */
	double flight;                   /* --flight-recorder seconds; 0: off */
	double rotate;                   /* --rotate seconds; 0: off */
	bool rotate_pprof;               /* --rotate-pprof */
	uint64_t max_size;               /* --max-size bytes; 0: none */
	uint32_t max_files;              /* --max-files; 0: none */
	bool ring_size_given;            /* -m: keep that size (else shrink when refused) */
	bool alloc;                      /* --alloc: allocations through libnarwhal-alloc */
	uint64_t alloc_rate;             /* --alloc-rate BYTES; 0: the default */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: narwhal-record [options] [--] COMMAND [ARGS...]\n"
		"       narwhal-record [options] -p PID[,PID...] | -t TID[,TID...]\n"
		"       narwhal-record [options] -a | -C CPUS [[--] COMMAND [ARGS...]]\n"
		"\n"
		"Runs COMMAND (or attaches to running processes or threads), samples\n"
		"every thread and child process, and writes a measurement directory\n"
		"for narwhal-report.\n"
		"\n"
		"  -o, --output DIR        measurement directory (default narwhal.data;\n"
		"                          an existing one is moved to DIR.old)\n"
		"  -e, --event EV[,EV...]  events to sample (default cycles, or cpu-clock\n"
		"                          where the CPU has no PMU)\n"
		"  -F, --freq HZ           samples per second per thread (default 999)\n"
		"  -c, --count PERIOD      sample every PERIOD events instead of -F\n"
		"  -g, --call-graph MODE   dwarf[,SIZE] (default: CFI unwinding of a SIZE-byte\n"
		"                          stack copy at record time; 16384, at most 65528),\n"
		"                          fp (the kernel's frame-pointer chains: cheapest,\n"
		"                          but broken by code without frame pointers), or\n"
		"                          hybrid[,SIZE] (CFI over a small copy, 2048, spliced\n"
		"                          onto the frame-pointer chain)\n"
		"  -m, --mmap-pages N      data pages per CPU ring, a power of two (default\n"
		"                          128, or 2048 with --call-graph dwarf)\n"
		"  -p, --pid PID[,PID...]  attach to running processes (all their threads)\n"
		"  -t, --tid TID[,TID...]  attach to running threads\n"
		"  -a, --all-cpus          record the whole machine: every process on every CPU\n"
		"                          (root, CAP_PERFMON or perf_event_paranoid<=0); until\n"
		"                          Ctrl-C, --duration or the end of COMMAND if given\n"
		"  -C, --cpu CPUS          as -a, on the CPUs listed only (0,2-3)\n"
		"      --idle              with -a or -C: keep the idle task's samples (pid 0)\n"
		"      --duration SECONDS  stop after SECONDS (attached: the program runs on)\n"
		"      --alloc             record allocations (malloc, calloc, realloc, free, the\n"
		"                          aligned ones, C++ new/delete) with their call paths:\n"
		"                          alloc-objects, alloc-bytes, inuse-objects, inuse-bytes;\n"
		"                          allocations only, unless -e names events to sample too\n"
		"      --alloc-rate BYTES  one sample per BYTES allocated on average (default\n"
		"                          524288; 1: every allocation, exact)\n"
		"      --off-cpu           also record where threads block, and for how long\n"
		"                          (needs kernel samples: root or perf_event_paranoid<=1)\n"
		"      --user-only         user space only: no kernel time or frames (also an\n"
		"                          event with :u); by default the kernel's call chain\n"
		"                          is below the user stack where the kernel allows it\n"
		"      --no-trace          no traces (the time of each sample: --time, --timeline,\n"
		"                          the timeline exports and --sections need them)\n"
		"      --no-cache          neither read nor keep the kernel's symbols and the\n"
		"                          symbolization results of earlier runs (kept in\n"
		"                          $XDG_CACHE_HOME/narwhal by build-id; they make a\n"
		"                          run cheaper, never change what it records)\n"
		"      --checkpoint SECONDS  write the measurement every SECONDS while recording\n"
		"                          (default 10, the first after 1 s; 0: only at the end)\n"
		"      --flight-recorder SECONDS  keep only the last SECONDS, in bounded memory;\n"
		"                          written at the end or on SIGUSR2\n"
		"      --rotate SECONDS    one measurement per interval: DIR/0001, DIR/0002, ...\n"
		"      --rotate-pprof      with --rotate, also DIR/NNNN.pb.gz per interval\n"
		"      --max-size SIZE, --max-files N  with --rotate: remove the oldest beyond\n"
		"                          SIZE bytes (K, M, G) or N intervals\n"
		"      --snapshot PID      ask the narwhal-record PID to write its measurement now\n"
		"                          (as SIGUSR2 does), then exit\n"
		"      --pprof FILE        also write a pprof profile (gzipped protobuf) at the end\n"
		"      --flamegraph FILE   also write an SVG flame graph at the end\n"
		"      --html FILE         also write the HTML report (one file, opens anywhere) at the end\n"
		"      --list-events       list the event names this machine knows\n"
		"  -q, --quiet             no summary line\n"
		"  -v, --verbose           debug messages\n"
		"  -h, --help              this text\n"
		"  -V, --version           print the version\n");
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

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || !v || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

/* -C "0,2-3": the CPUs named, as a malloc'd array of NW_MAX_CPUS flags.  -EINVAL, -ENOMEM. */
#define NW_MAX_CPUS 4096
static int parse_cpus(const char *s, bool **ret)
{
	bool *v = calloc(NW_MAX_CPUS, sizeof(*v));
	const char *p = s;

	if (!v)
		return -ENOMEM;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;

		if (end == p || a >= NW_MAX_CPUS)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || b < a || b >= NW_MAX_CPUS)
				goto bad;
		}
		for (unsigned long c = a; c <= b; c++)
			v[c] = true;
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	free(*ret);
	*ret = v;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

/* "500M", "2G", "4096": bytes. */
static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v *= 1024; end++; break;
	case 'M': case 'm': v *= 1024 * 1024; end++; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > 1e18)
		return -EINVAL;
	*ret = (uint64_t)v;
	return 0;
}

/* --snapshot PID: SIGUSR2 to a narwhal-record; the exit status. */
static int ask_snapshot(const char *arg)
{
	char path[64], comm[32] = "";
	uint64_t pid;
	FILE *f;

	if (parse_u64(arg, &pid) || pid > INT32_MAX) {
		fprintf(stderr, "narwhal-record: --snapshot wants the process id of a "
				"narwhal-record, not '%s'\n", arg);
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%llu/comm", (unsigned long long)pid);
	f = fopen(path, "r");
	if (!f || !fgets(comm, sizeof(comm), f)) {
		fprintf(stderr, "narwhal-record: --snapshot: no process %llu\n",
			(unsigned long long)pid);
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	if (strcmp(comm, "narwhal-record")) {
		fprintf(stderr, "narwhal-record: --snapshot: process %llu is %s, not a "
				"narwhal-record\n", (unsigned long long)pid, comm);
		return 1;
	}
	if (kill((pid_t)pid, SIGUSR2) < 0) {
		fprintf(stderr, "narwhal-record: --snapshot %llu: %s\n", (unsigned long long)pid,
			strerror(errno));
		return 1;
	}
	fprintf(stderr, "narwhal-record: asked narwhal-record %llu for a snapshot of its "
			"measurement\n", (unsigned long long)pid);
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "call-graph", required_argument, NULL, 'g' },
		{ "mmap-pages", required_argument, NULL, 'm' },
		{ "list-events", no_argument, NULL, 'L' },
		{ "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },
		{ "duration", required_argument, NULL, 'D' },
		{ "off-cpu", no_argument, NULL, 'O' },
		{ "alloc", no_argument, NULL, 'A' },
		{ "alloc-rate", required_argument, NULL, 'B' },
		{ "no-trace", no_argument, NULL, 'N' },
		{ "user-only", no_argument, NULL, 'U' },
		{ "no-cache", no_argument, NULL, 'W' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "idle", no_argument, NULL, 'I' },
		{ "checkpoint", required_argument, NULL, 'K' },
		{ "flight-recorder", required_argument, NULL, 'R' },
		{ "rotate", required_argument, NULL, 'T' },
		{ "rotate-pprof", no_argument, NULL, 'X' },
		{ "max-size", required_argument, NULL, 'Z' },
		{ "max-files", required_argument, NULL, 'M' },
		{ "snapshot", required_argument, NULL, 'S' },
		{ "pprof", required_argument, NULL, 'P' },
		{ "flamegraph", required_argument, NULL, 'G' },
		{ "html", required_argument, NULL, 'H' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "+o:e:F:c:g:m:p:t:aC:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case 'e':
			o->event_list = optarg;
			break;
		case 'F':
			if (parse_u64(optarg, &o->freq)) {
				fprintf(stderr, "narwhal-record: -F wants a frequency in Hz, not '%s'\n",
					optarg);
				return 2;
			}
			o->period = 0;
			break;
		case 'c':
			if (parse_u64(optarg, &o->period)) {
				fprintf(stderr, "narwhal-record: -c wants a positive period, not '%s'\n",
					optarg);
				return 2;
			}
			o->freq = 0;
			break;
		case 'g':
			if (!strcmp(optarg, "fp")) {
				o->callgraph = NW_CALLGRAPH_FP;
			} else if (!strncmp(optarg, "dwarf", 5) || !strncmp(optarg, "hybrid", 6)) {
				size_t len = optarg[0] == 'd' ? 5 : 6;
				const char *size = optarg[len] == ',' ? optarg + len + 1 : NULL;

				if (optarg[len] && !size)
					goto bad_mode;
				o->callgraph = len == 5 ? NW_CALLGRAPH_DWARF : NW_CALLGRAPH_HYBRID;
				o->stack_size = len == 5 ? NW_DEFAULT_STACK_COPY : NW_DEFAULT_HYBRID_COPY;
				if (size && (parse_u64(size, &v) || v > NW_MAX_STACK_COPY)) {
					fprintf(stderr, "narwhal-record: the stack copy must be 8 to "
							"%d bytes, not '%s'\n",
						NW_MAX_STACK_COPY, size);
					return 2;
				}
				if (size)
					o->stack_size = (uint32_t)((v + 7) & ~7ull);
			} else {
bad_mode:
				fprintf(stderr, "narwhal-record: unknown call graph mode '%s' "
						"(fp, dwarf[,SIZE], hybrid[,SIZE])\n",
					optarg);
				return 2;
			}
			break;
		case 'm':
			if (parse_u64(optarg, &v) || (v & (v - 1)) || v > (1u << 20)) {
				fprintf(stderr, "narwhal-record: -m wants a power of two, not '%s'\n",
					optarg);
				return 2;
			}
			o->mmap_pages = (unsigned)v;
			break;
		case 'L':
			nw_event_foreach(print_event, NULL);
			exit(0);
		case 'p':
		case 't':
			if ((o->targets.n && o->targets.threads != (c == 't')) ||
			    nw_targets_parse(&o->targets, optarg)) {
				fprintf(stderr, "narwhal-record: -%c wants a list of %s ids like 1234,5678 "
						"(and -p and -t do not mix), not '%s'\n",
					c, c == 'p' ? "process" : "thread", optarg);
				return 2;
			}
			o->targets.threads = c == 't';
			break;
		case 'D': {
			char *end;

			o->duration = strtod(optarg, &end);
			if (end == optarg || *end || !(o->duration > 0)) {
				fprintf(stderr, "narwhal-record: --duration wants seconds, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'O':
			o->off_cpu = true;
			break;
		case 'A':
			o->alloc = true;
			break;
		case 'B':
			if (parse_size(optarg, &o->alloc_rate) || !o->alloc_rate) {
				fprintf(stderr, "narwhal-record: --alloc-rate wants a number of bytes "
						"like 524288 or 512K, not '%s'\n", optarg);
				return 2;
			}
			o->alloc = true;
			break;
		case 'N':
			o->no_trace = true;
			break;
		case 'W':
			o->no_cache = true;
			break;
		case 'U':
			o->user_only = true;
			break;
		case 'a':
			o->system = true;
			break;
		case 'C':
			if (parse_cpus(optarg, &o->cpus)) {
				fprintf(stderr, "narwhal-record: -C wants CPU numbers like 0,2-3, not "
						"'%s'\n", optarg);
				return 2;
			}
			o->system = true;
			break;
		case 'I':
			o->idle = true;
			break;
		case 'K':
		case 'R':
		case 'T': {
			char *end;
			double v = strtod(optarg, &end);
			const char *name = c == 'K' ? "--checkpoint" : c == 'R' ? "--flight-recorder"
										     : "--rotate";

			if (end == optarg || *end || !(v >= 0) || (c != 'K' && !(v > 0)) || v > 1e6) {
				fprintf(stderr, "narwhal-record: %s wants seconds, not '%s'\n", name,
					optarg);
				return 2;
			}
			*(c == 'K' ? &o->checkpoint : c == 'R' ? &o->flight : &o->rotate) = v;
			break;
		}
		case 'X':
			o->rotate_pprof = true;
			break;
		case 'Z':
			if (parse_size(optarg, &o->max_size)) {
				fprintf(stderr, "narwhal-record: --max-size wants a size like 500M, not "
						"'%s'\n", optarg);
				return 2;
			}
			break;
		case 'M':
			if (parse_u64(optarg, &v) || v > UINT32_MAX) {
				fprintf(stderr, "narwhal-record: --max-files wants a count, not '%s'\n",
					optarg);
				return 2;
			}
			o->max_files = (uint32_t)v;
			break;
		case 'S':
			exit(ask_snapshot(optarg));
		case 'P':
			o->pprof = optarg;
			break;
		case 'G':
			o->flamegraph = optarg;
			break;
		case 'H':
			o->html = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'v':
			nw_log_level = NW_LOG_DEBUG;
			break;
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
	}
	if (o->targets.n && optind < argc) {
		fprintf(stderr, "narwhal-record: give a command to run or -p/-t to attach, not both\n");
		return 2;
	}
	if (o->system && o->targets.n) {
		fprintf(stderr, "narwhal-record: -a records every process already: not with -p/-t\n");
		return 2;
	}
	if (o->alloc && o->system) {
		fprintf(stderr, "narwhal-record: --alloc records a program it launches or attaches to "
				"(-p/-t): not with -a\n");
		return 2;
	}
	if (o->idle && !o->system) {
		fprintf(stderr, "narwhal-record: --idle goes with -a (system-wide)\n");
		return 2;
	}
	if (o->flight && (o->rotate || o->no_trace)) {
		fprintf(stderr, "narwhal-record: --flight-recorder keeps the last seconds of the "
				"traces: not with %s\n", o->rotate ? "--rotate" : "--no-trace");
		return 2;
	}
	if ((o->rotate_pprof || o->max_size || o->max_files) && !o->rotate) {
		fprintf(stderr, "narwhal-record: --rotate-pprof, --max-size and --max-files go "
				"with --rotate\n");
		return 2;
	}
	/* A flight recorder writes when asked; checkpoints only if asked for too. */
	if (o->checkpoint < 0)
		o->checkpoint = o->flight ? 0 : 10;
	if (!o->targets.n && !o->system && optind >= argc) {
		fprintf(stderr, "narwhal-record: no command to run (or -p PID to attach)\n");
		usage(stderr);
		return 2;
	}
	return 0;
}

static bool no_pmu_error(int err)
{
	return err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV || err == -EINVAL;
}

/* Resolves -e (or the default) into @evs; returns the count or -1. */
static int resolve_events(const struct opts *o, struct nw_event *evs)
{
	char *list, *save = NULL, *name;
	int n = 0, ret, max = o->alloc ? MAX_EVENTS_ALLOC : MAX_EVENTS;

	/* Allocations alone unless events are named. */
	if (!o->event_list && o->alloc && !o->off_cpu)
		return 0;
	if (!o->event_list) {
		ret = nw_event_parse("cycles", &evs[0]);
		if (!ret)
			ret = nw_event_probe(&evs[0]);
		if (ret && no_pmu_error(ret)) {
			if (!o->quiet)
				fprintf(stderr, "narwhal-record: no hardware PMU here (cycles cannot "
						"be opened); sampling cpu-clock instead\n");
			ret = nw_event_parse("cpu-clock", &evs[0]);
		}
		if (ret) {
			fprintf(stderr, "narwhal-record: cannot set up the default event: %s\n",
				strerror(-ret));
			return -1;
		}
		return 1;
	}
	list = strdup(o->event_list);
	if (!list)
		return -1;
	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		if (n == max - (o->off_cpu ? 1 : 0)) {
			fprintf(stderr, "narwhal-record: at most %d events at once (%d with --off-cpu)%s\n",
				max, max - 1, o->alloc ? " with --alloc" : "");
			n = -1;
			break;
		}
		ret = nw_event_parse(name, &evs[n]);
		if (ret) {
			fprintf(stderr,
				"narwhal-record: unknown event '%s'; list the names this machine "
				"knows with 'narwhal-record --list-events'\n",
				name);
			n = -1;
			break;
		}
		n++;
	}
	free(list);
	if (n == 0)
		fprintf(stderr, "narwhal-record: -e names no event\n");
	return n > 0 ? n : -1;
}

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = INT_MIN;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = INT_MIN;
		fclose(f);
	}
	return v;
}

static void explain_open_error(int err, const struct nw_event *evs, int nev)
{
	if (err == -EACCES || err == -EPERM) {
		int p = read_paranoid();

		fprintf(stderr,
			"narwhal-record: perf_event_open was denied (%s).\n"
			"  kernel.perf_event_paranoid is %d; user-space sampling of your own\n"
			"  programs needs it at 2 or lower (sudo sysctl kernel.perf_event_paranoid=2),\n"
			"  or run as root / with CAP_PERFMON.\n",
			strerror(-err), p);
	} else if (err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV) {
		fprintf(stderr,
			"narwhal-record: this machine cannot sample ");
		for (int i = 0; i < nev; i++)
			fprintf(stderr, "%s%s", i ? "," : "", evs[i].name);
		fprintf(stderr, " (%s); try -e cpu-clock\n", strerror(-err));
	} else if (err == -ENOMEM || err == -EPERM) {
		fprintf(stderr, "narwhal-record: cannot map the rings (%s): lower -m, or raise "
				"kernel.perf_event_mlock_kb\n", strerror(-err));
	} else {
		fprintf(stderr, "narwhal-record: cannot open the events: %s\n", strerror(-err));
	}
}

/*
 * Checks before the run that the measurement can be written: the parent
 * directory must exist and be writable.  0, or 1 after saying why.
 */
static int check_output_dir(const char *dir)
{
	char parent[PATH_MAX];
	char *slash;

	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent)) {
		fprintf(stderr, "narwhal-record: %s: path too long\n", dir);
		return 1;
	}
	while ((slash = strrchr(parent, '/')) && slash[1] == 0 && slash != parent)
		*slash = 0; /* trailing slashes */
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = 0;
	else
		*slash = 0;
	if (access(parent, W_OK | X_OK) < 0) {
		fprintf(stderr, "narwhal-record: cannot write the measurement into %s: %s\n",
			parent, strerror(errno));
		return 1;
	}
	return 0;
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* The frames a chain keeps at most: the kernel's limit for fp chains. */
static uint32_t max_stack(enum nw_callgraph mode)
{
	FILE *f;
	unsigned v = 0;

	if (mode != NW_CALLGRAPH_FP)
		return NW_UNWIND_MAX_FRAMES;
	f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");
	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v && v < NW_UNWIND_MAX_FRAMES ? v : NW_UNWIND_MAX_FRAMES;
}

/*
 * What was recorded and how: the model's run.  It ends at @clock_end_ns
 * (CLOCK_MONOTONIC; 0: now).
 */
static int fill_run(struct nw_run *r, const struct opts *o, const struct nw_session *s, int argc,
		    char **argv, uint64_t start_ns, uint64_t clock_start_ns, uint64_t clock_end_ns,
		    int exit_status, enum nw_run_written written)
{
	uint64_t mono = now_ns(CLOCK_MONOTONIC), real = now_ns(CLOCK_REALTIME);

	r->narwhal_version = strdup(NW_VERSION);
	r->arch = strdup(s->arch->name);
	r->call_graph = strdup(o->callgraph == NW_CALLGRAPH_DWARF    ? "dwarf"
			       : o->callgraph == NW_CALLGRAPH_HYBRID ? "hybrid"
								     : "fp");
	r->stack_size = o->callgraph != NW_CALLGRAPH_FP ? o->stack_size : 0;
	r->max_stack = max_stack(o->callgraph);
	r->events = calloc(s->nevents, sizeof(*r->events));
	/* System-wide without a command: the command line says so. */
	if (!argc && o->system) {
		static char *whole[] = { "(system-wide)", NULL };

		argc = 1;
		argv = whole;
	}
	if (!r->narwhal_version || !r->arch || !r->call_graph || !r->events ||
	    nw_run_set_argv(r, argc, argv))
		return -ENOMEM;
	for (unsigned e = 0; e < s->nevents; e++) {
		struct nw_event_info *ev = &r->events[e];

		ev->name = strdup(s->events[e].ev.name);
		if (!ev->name)
			return -ENOMEM;
		r->nevents++;
		ev->type = s->events[e].ev.attr.type;
		ev->config = s->events[e].ev.attr.config;
		ev->freq = e != s->offcpu && s->opts.freq;
		ev->value = e != s->offcpu ? s->opts.value : 1;
	}
	if (!clock_end_ns || clock_end_ns > mono)
		clock_end_ns = mono;
	r->start_ns = start_ns;
	r->end_ns = real - (mono - clock_end_ns);
	r->clock_start_ns = clock_start_ns;
	r->traced = !o->no_trace;
	r->kernel = s->opts.kernel;
	r->written = written;
	r->clock_end_ns = clock_end_ns;
	if (o->flight) {
		/* A flight recorder's measurement is its window. */
		r->window_ns = (uint64_t)(o->flight * 1e9);
		if (r->clock_end_ns - r->clock_start_ns > r->window_ns) {
			r->start_ns = r->end_ns - r->window_ns;
			r->clock_start_ns = r->clock_end_ns - r->window_ns;
		}
	}
	r->exit_status = exit_status;
	r->samples = s->stats.samples;
	r->lost = s->stats.lost;
	r->throttled = s->stats.throttled;
	r->unwind_errors = s->stats.empty_stacks;
	return 0;
}


/*
 * Ring pages per CPU when -m is not given: 512 KiB in fp mode; with stack
 * copies 8 MiB (500 samples of 16 KiB), within 64 MiB for all CPUs.  With
 * --alloc four times that: a burst of allocation samples is not spread
 * over time as timer samples are.
 */
static unsigned default_ring_pages(enum nw_callgraph mode, bool alloc)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);
	unsigned pages = mode == NW_CALLGRAPH_FP ? 128 : (8u << 20) / (unsigned)page;

	if (alloc)
		pages *= 4;

	if (ncpus < 1)
		ncpus = 1;
	while (pages > 128 && (uint64_t)pages * (uint64_t)page * (uint64_t)ncpus > (64ull << 20))
		pages /= 2;
	return pages;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}


/* The integer in @path, -1 when unreadable. */
static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Does /proc/kallsyms hide the kernel's addresses from us (kptr_restrict)? */
static bool kallsyms_hidden(void)
{
	char line[256];
	bool hidden = false;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (f) {
		hidden = fgets(line, sizeof(line), f) && strtoull(line, NULL, 16) == 0;
		fclose(f);
	}
	return hidden;
}

static bool permission_error(int err)
{
	return err == -EACCES || err == -EPERM;
}

/* Everything a run holds, released in one place (run_fini). */
struct run {
	struct opts o;
	int argc;                 /* the command's words (0 when attaching) */
	char **cmd;
	/* -p/-t: the command line of what was attached to, read at attach (one allocation) */
	int attached_argc;
	char **attached_cmd;
	bool attach;              /* -p/-t */
	bool system;              /* -a, -C */
	struct nw_event evs[MAX_EVENTS];
	int nev;
	struct nw_alloc_opts alloc;      /* --alloc: the interposer and its markers */
	bool alloc_ready;
	struct nw_session_opts so;
	struct nw_session s;
	bool session_ready;
	struct nw_launch l;
	struct nw_targets attached;
	/* Instrumented sections (doc/SECTIONS.md): where libnarwhal in the
	 * program writes its intervals, moved into the measurement at the end. */
	char stage[PATH_MAX];
	int stage_lock;           /* held while the stage is ours (nw_seclog_stage_clean) */
	struct nw_tracer tracer;  /* the time of each sample (unless --no-trace) */
	bool tracing;
	struct nw_cache cache;    /* kernel symbols, symbolization results: util/cache.h */
	struct nw_measure ms;
	bool measure_ready;
	struct nw_output out;     /* where and when the measurement is written */
	char last_err[1024];      /* the last write's failure, told once */
	uint64_t rotated_samples; /* samples of the rotation intervals before the current one */
	struct nw_measurement *model; /* the final write's, for the summary and exports */
	uint64_t start_ns, clock_start_ns;  /* CLOCK_REALTIME, CLOCK_MONOTONIC */
	uint64_t stopped_ns;      /* CLOCK_MONOTONIC: the recording stopped (the end's write) */
	double cpu_start, cpu_loop;
	double cpu_writes;               /* of the writes while recording */
	int status;               /* waitpid's, for a launched program */
};

/*
 * Builds the model of the session as it stands and writes it where r->out
 * says (a checkpoint, a snapshot, the end of a rotation interval, or the
 * end).  0, or -errno after telling the user (the last good write is
 * kept).  The end's model stays in r->model for the summary and exports.
 */
static int write_now(struct run *r, enum nw_run_written w, int exit_status)
{
	double cpu0 = cpu_seconds(), cpu_model;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct nw_measurement *m = NULL;
	struct nw_run run = { 0 };
	char err[1024];
	int ret = 0;

	if (r->o.flight)
		ret = nw_tracer_expire(&r->tracer, now, true);
	if (!ret)
		ret = fill_run(&run, &r->o, &r->s, r->attach ? r->attached_argc : r->argc,
			       r->attach ? r->attached_cmd : r->cmd, r->start_ns, r->clock_start_ns,
			       w == NW_RUN_END ? r->stopped_ns : 0, exit_status, w);
	if (!ret)
		ret = nw_measure_build(&r->ms, &r->s, r->tracing ? &r->tracer : NULL, &run, &m);
	nw_run_fini(&run);
	if (ret) {
		fprintf(stderr, "narwhal-record: out of memory building the measurement\n");
		return ret;
	}
	cpu_model = cpu_seconds();
	ret = nw_output_write(&r->out, m, r->ms.files, r->ms.nfiles, now, err, sizeof(err));
	/* What the trees hold is written: the next checkpoint writes what changes after. */
	if (!ret)
		nw_session_clear_changes(&r->s);
	if (nw_log_level >= NW_LOG_DEBUG) {
		uint64_t nodes = 0, trace_bytes = 0, trace_events = 0;

		for (uint32_t i = 0; i < m->nthreads; i++)
			for (uint32_t t = 0; t < m->threads[i].ntrees; t++)
				nodes += m->threads[i].trees[t].cct->n;
		if (r->tracing)
			nw_tracer_size(&r->tracer, &trace_bytes, &trace_events);
		const struct nw_journal *j = &r->out.journal;
		char how[96] = "";

		/* A checkpoint is a pack, or a segment of its journal (what changed). */
		if (!ret && (w == NW_RUN_CHECKPOINT || w == NW_RUN_SNAPSHOT))
			snprintf(how, sizeof(how), ", as %s of %llu bytes",
				 j->nsegments ? "a journal segment" : "a pack",
				 (unsigned long long)(j->nsegments ? j->segments[j->nsegments - 1]
								   : j->pack_bytes));
		double cpu = cpu_seconds();

		fprintf(stderr, "narwhal-record: %s %s in %.1f ms (CPU %.1f ms building the model, "
				"%.1f ms writing): %llu nodes, %llu trace events (%llu bytes)%s\n",
			nw_run_written_name(w), ret ? "failed" : "written",
			(double)(now_ns(CLOCK_MONOTONIC) - now) / 1e6, 1e3 * (cpu_model - cpu0),
			1e3 * (cpu - cpu_model), (unsigned long long)nodes,
			(unsigned long long)trace_events, (unsigned long long)trace_bytes, how);
	}
	/* Said once while recording (the next checkpoint tries again), and at the end. */
	if (ret < 0 && (w == NW_RUN_END || strcmp(err, r->last_err))) {
		fprintf(stderr, "narwhal-record: %s\n", err);
		if (r->out.last[0])
			fprintf(stderr, "narwhal-record: %s still holds the last measurement "
					"written (narwhal-report reads it)\n", r->out.last);
		else if (w != NW_RUN_END)
			fprintf(stderr, "narwhal-record: recording goes on; the next checkpoint "
					"tries again\n");
		snprintf(r->last_err, sizeof(r->last_err), "%s", err);
	}
	if (!ret && r->o.rotate_pprof && (w == NW_RUN_ROTATION || w == NW_RUN_END)) {
		char *pb = nw_strdup_printf("%s.pb.gz", r->out.last);

		ret = pb ? nw_export_measurement(m, pb, NULL, NULL, err, sizeof(err)) : -ENOMEM;
		if (ret < 0)
			fprintf(stderr, "narwhal-record: %s\n", pb ? err : strerror(ENOMEM));
		free(pb);
	}
	if (w == NW_RUN_END)
		r->model = m;
	else
		nw_measurement_free(m);
	if (w == NW_RUN_ROTATION) {
		/* The next interval starts empty (its trees keep their nodes). */
		r->rotated_samples += r->s.stats.samples;
		nw_session_restart(&r->s);
		if (r->tracing)
			nw_tracer_restart(&r->tracer, now);
		r->start_ns = now_ns(CLOCK_REALTIME);
		r->clock_start_ns = now;
	}
	if (w != NW_RUN_END)
		r->cpu_writes += cpu_seconds() - cpu0;
	return ret;
}

/*
 * The recorder keeps every mapped file open (record/session.c) and an
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

/* Did narwhal-record start a program (not attached, not system-wide without one)? */
static bool launched(const struct run *r)
{
	return !r->attach && r->argc > 0;
}

static void run_fini(struct run *r)
{
	if (r->l.pid > 0) {
		/* A program started but never released or reaped: do not leave it behind. */
		kill(r->l.pid, SIGKILL);
		waitpid(r->l.pid, NULL, 0);
	}
	if (r->stage[0])
		nw_seclog_stage_remove(r->stage);
	if (r->stage_lock >= 0)
		close(r->stage_lock);
	nw_measurement_free(r->model);
	nw_output_fini(&r->out);
	if (r->tracing)
		nw_tracer_fini(&r->tracer);
	if (r->measure_ready)
		nw_measure_fini(&r->ms);
	if (r->session_ready)
		nw_session_fini(&r->s);
	if (r->alloc_ready && nw_alloc_unprobe(&r->alloc))
		fprintf(stderr, "narwhal-record: the kernel still holds the probes of group %s in "
				"/sys/kernel/tracing/uprobe_events (the next --alloc -p removes them)\n",
			r->alloc.libc.group);
	nw_targets_fini(&r->attached);
	nw_targets_fini(&r->o.targets);
	free(r->attached_cmd);
	if (r->alloc_ready)
		nw_alloc_opts_fini(&r->alloc);
	free(r->o.cpus);
}

/*
 * --alloc with -p/-t: probes on the targets' C library (every call traps:
 * doc/ALLOCATIONS.md).  0, or 1 after saying why.
 */
static int setup_alloc_attached(struct run *r)
{
	int ret = nw_alloc_opts_init(&r->alloc, NULL, NULL, NULL, r->o.alloc_rate);

	r->alloc_ready = true;
	if (ret == -ENODEV) {
		fprintf(stderr, "narwhal-record: --alloc needs the kernel's uprobes, which this "
				"kernel does not have (CONFIG_UPROBE_EVENTS)\n");
		return 1;
	}
	for (size_t i = 0; !ret && i < r->o.targets.n; i++) {
		ret = nw_alloc_probe_libc(&r->alloc, r->o.targets.ids[i]);
		if (ret == -ENOENT)
			fprintf(stderr, "narwhal-record: --alloc: %s %d maps no libc.so.6 (a static "
					"program?)\n", r->o.targets.threads ? "thread" : "process",
				(int)r->o.targets.ids[i]);
		else if (ret == -EXDEV)
			fprintf(stderr, "narwhal-record: --alloc: the targets use different C "
					"libraries; attach to one at a time\n");
		else if ((ret == -EACCES || ret == -EPERM) && !*r->alloc.libc.tracefs)
			fprintf(stderr, "narwhal-record: --alloc with -p/-t defines uprobes in "
					"tracefs, which is not mounted and cannot be mounted "
					"here: as root, mount -t tracefs nodev " NW_TRACEFS_DIR "\n");
		else if (ret == -EACCES || ret == -EPERM)
			fprintf(stderr, "narwhal-record: --alloc with -p/-t defines uprobes in %s, "
					"which needs root\n", r->alloc.libc.tracefs);
		else if (ret == -ENODEV)
			fprintf(stderr, "narwhal-record: --alloc with -p/-t needs tracefs and the "
					"kernel's uprobe events, which this kernel does not have "
					"(CONFIG_TRACING, CONFIG_UPROBE_EVENTS)\n");
		else if (ret)
			fprintf(stderr, "narwhal-record: --alloc: cannot probe the C library: %s\n",
				strerror(-ret));
		if (ret)
			return 1;
	}
	if (!r->o.quiet)
		fprintf(stderr, "narwhal-record: --alloc attached: every call of malloc, calloc, "
				"realloc, memalign and free in %s traps (microseconds each)\n",
			r->alloc.libc.path);
	return 0;
}

/*
 * --alloc: finds libnarwhal-alloc.so (NARWHAL_ALLOC_LIBRARY, else beside
 * this program in the build tree, else installed) and its markers, and
 * checks for the uprobe PMU.  0, or 1 after saying why.
 */
static int setup_alloc(struct run *r)
{
	const char *lib = getenv("NARWHAL_ALLOC_LIBRARY");
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int ret;

	exe[len > 0 ? len : 0] = 0;
	if (r->attach)
		return setup_alloc_attached(r);
	ret = nw_alloc_opts_init(&r->alloc, lib && *lib ? lib : NULL, exe, NW_LIBDIR,
				 r->o.alloc_rate);
	r->alloc_ready = true;
	if (ret == -ENODEV)
		fprintf(stderr, "narwhal-record: --alloc needs the kernel's uprobe PMU, which this "
				"kernel does not have (no /sys/bus/event_source/devices/uprobe: "
				"CONFIG_UPROBE_EVENTS)\n");
	else if (ret == -ENOENT)
		fprintf(stderr, "narwhal-record: --alloc: cannot find %s with its markers (%s, "
				"or beside narwhal-record, or in %s/narwhal; NARWHAL_ALLOC_LIBRARY "
				"names another)\n", NW_ALLOC_LIBRARY, lib && *lib ? lib : "not set",
			NW_LIBDIR);
	else if (ret)
		fprintf(stderr, "narwhal-record: --alloc: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}

/* Checks the command or the targets, the output and the events: -1 to go on, else the exit status. */
static int prepare(struct run *r)
{
	pid_t missing;
	int ret;

	if (launched(r)) {
		char why[PATH_MAX + 64];

		ret = nw_launch_check(r->cmd[0], why, sizeof(why));
		if (ret) {
			fprintf(stderr, "narwhal-record: %s\n", why);
			return ret;
		}
	} else if ((missing = nw_targets_missing(&r->o.targets))) {
		fprintf(stderr, "narwhal-record: no such %s: %d\n",
			r->o.targets.threads ? "thread" : "process", missing);
		return 1;
	}
	if (check_output_dir(r->o.output))
		return 1;
	r->nev = resolve_events(&r->o, r->evs);
	if (r->nev < 0)
		return 2;
	if (r->o.alloc && setup_alloc(r))
		return 1;
	r->so = (struct nw_session_opts){
		.events = r->evs,
		.nevents = (unsigned)r->nev,
		.freq = r->o.freq != 0,
		.value = r->o.freq ? r->o.freq : r->o.period,
		.callgraph = r->o.callgraph,
		.stack_size = r->o.stack_size,
		.mmap_pages = r->o.mmap_pages,
		.shrink_rings = !r->o.ring_size_given,
		.off_cpu = r->o.off_cpu,
		.kernel = !r->o.user_only,
		.idle = r->o.idle,
		.alloc = r->o.alloc ? &r->alloc : NULL,
	};
	ret = nw_session_init(&r->s, &r->so);
	r->session_ready = true;
	if (ret) {
		fprintf(stderr, "narwhal-record: cannot set up the session: %s\n", strerror(-ret));
		return 1;
	}
	return -1;
}

/* Says why the events could not be opened on the target. */
static void explain_start_error(const struct run *r, int ret)
{
	if (ret == -ESRCH)
		fprintf(stderr, "narwhal-record: the target ended while attaching\n");
	else if (r->system && permission_error(ret))
		fprintf(stderr,
			"narwhal-record: not allowed to record the whole machine (%s): -a needs "
			"root or CAP_PERFMON, or kernel.perf_event_paranoid at 0 or lower (it is "
			"%d)\n",
			strerror(-ret), read_paranoid());
	else if (r->attach && permission_error(ret))
		fprintf(stderr,
			"narwhal-record: not allowed to attach (%s): profiling a process of "
			"another user needs root, or CAP_PERFMON with ptrace access to it\n"
			"  (kernel.perf_event_paranoid is %d)\n",
			strerror(-ret), read_paranoid());
	else
		explain_open_error(ret, r->evs, r->nev);
}

/*
 * Launches the program with libnarwhal-alloc preloaded (before the
 * program's own preloads) and its rate: in its environment, which its
 * children and the programs it execs inherit.  0 or -errno.
 */
static int launch_alloc(struct run *r)
{
	const char *old = getenv("LD_PRELOAD");
	char *saved = old ? strdup(old) : NULL, *preload = nw_alloc_preload(&r->alloc, old);
	char rate[32];
	int ret = -ENOMEM;

	snprintf(rate, sizeof(rate), "%llu", (unsigned long long)r->alloc.rate);
	if (preload && (!old || saved) && setenv("LD_PRELOAD", preload, 1) == 0 &&
	    setenv(NW_ALLOC_RATE_ENV, rate, 1) == 0)
		ret = nw_launch_start(r->cmd, &r->l);
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
 * Starts the program at its gate (or attaches), opens the events on it
 * and lets it go: -1 to go on, else the exit status.
 */
static int start(struct run *r)
{
	int ret, exec_errno;

	r->start_ns = now_ns(CLOCK_REALTIME);
	r->clock_start_ns = now_ns(CLOCK_MONOTONIC);
	if (launched(r)) {
		if (nw_seclog_stage_create(r->o.output, r->stage, sizeof(r->stage),
					   &r->stage_lock) == 0)
			setenv(NW_SECLOG_ENV, r->stage, 1);
		ret = r->o.alloc ? launch_alloc(r) : nw_launch_start(r->cmd, &r->l);
		if (ret) {
			fprintf(stderr, "narwhal-record: cannot start %s: %s\n", r->cmd[0],
				strerror(-ret));
			return 1;
		}
	}
	raise_fd_limit();
	for (;;) {
		if (r->system) {
			/* Every CPU, then what already runs (new processes come as records). */
			ret = nw_session_open_system(&r->s, r->o.cpus);
			if (!ret)
				ret = nw_session_synthesize_all(&r->s);
		} else {
			ret = r->attach ? nw_targets_attach(&r->s, &r->o.targets, &r->attached)
					: nw_session_open(&r->s, r->l.pid);
		}
		if (ret && r->so.kernel && permission_error(ret)) {
			/* Kernel samples not allowed: user space only, and say so once. */
			if (!r->o.quiet)
				fprintf(stderr,
					"narwhal-record: no kernel frames: kernel.perf_event_paranoid=%d "
					"forbids kernel samples for this user (run as root, with "
					"CAP_PERFMON, or set it to 1 or lower; --user-only silences "
					"this)\n",
					read_paranoid());
			nw_session_fini(&r->s);
			r->so.kernel = false;
			r->attached.n = 0;
			ret = nw_session_init(&r->s, &r->so);
			if (ret)
				break;
			continue;
		}
		if (!(ret && r->so.off_cpu && permission_error(ret)))
			break;
		/* Off-CPU needs kernel samples (the switch happens in the kernel). */
		fprintf(stderr,
			"narwhal-record: off-CPU sampling needs kernel samples, which "
			"kernel.perf_event_paranoid=%d forbids for this user; recording on-CPU "
			"only (set it to 1 or lower, or run as root, for --off-cpu)\n",
			read_paranoid());
		nw_session_fini(&r->s);
		r->so.off_cpu = r->o.off_cpu = false;
		r->attached.n = 0;
		ret = nw_session_init(&r->s, &r->so);
		if (ret)
			break;
	}
	if (ret) {
		explain_start_error(r, ret);
		return 1;
	}
	/*
	 * The manifest's command: what runs there, read now (it may end before
	 * the write); none when it already ended.
	 */
	if (r->attach)
		nw_targets_cmdline(&r->o.targets, &r->attached_argc, &r->attached_cmd);
	if (r->so.kernel && !r->o.quiet && kallsyms_hidden())
		fprintf(stderr, "narwhal-record: kernel frames will show as [kernel]: /proc/kallsyms "
				"hides kernel addresses from this user (kernel.kptr_restrict=%d; root "
				"sees them unless it is 2)\n",
			read_int_file("/proc/sys/kernel/kptr_restrict"));
	if (r->s.opts.mmap_pages != r->o.mmap_pages && !r->o.quiet)
		fprintf(stderr, "narwhal-record: the locked-memory limit allows rings of %u pages "
				"per CPU, not %u (raise kernel.perf_event_mlock_kb for larger)\n",
			r->s.opts.mmap_pages, r->o.mmap_pages);
	r->o.mmap_pages = r->s.opts.mmap_pages;
	if (!r->o.no_trace) {
		ret = nw_tracer_init(&r->tracer, &r->s, r->clock_start_ns);
		if (ret) {
			fprintf(stderr, "narwhal-record: cannot trace: %s\n", strerror(-ret));
			return 1;
		}
		r->tracing = true;
		if (r->o.flight)
			nw_tracer_set_window(&r->tracer, (uint64_t)(r->o.flight * 1e9));
	}
	/* Symbolized as it goes: each write symbolizes the PCs new since the last. */
	nw_cache_open(&r->cache, NULL, r->o.no_cache);
	ret = nw_measure_init(&r->ms, r->s.elf, &r->cache);
	r->measure_ready = true;
	/* Kernel frames will want the kernel's symbols: read them before anything runs. */
	if (!ret && r->s.opts.kernel)
		ret = nw_measure_prepare_kernel(&r->ms);
	if (ret) {
		fprintf(stderr, "narwhal-record: out of memory\n");
		return 1;
	}
	{
		struct nw_output_opts oo = {
			.dir = r->o.output,
			.checkpoint_ns = (uint64_t)(r->o.checkpoint * 1e9),
			.rotate_ns = (uint64_t)(r->o.rotate * 1e9),
			.max_bytes = r->o.max_size,
			.max_files = r->o.max_files,
			/* The flight recorder's traces are cut, not extended: whole packs. */
			.journal = !r->o.flight,
		};
		char err[PATH_MAX + 128];

		/* A run that starts removes the stages that killed recorders left beside DIR. */
		nw_seclog_stage_clean(r->o.output);
		ret = nw_output_init(&r->out, &oo, r->clock_start_ns, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "narwhal-record: %s\n", err);
			return 1;
		}
	}
	if (r->system && !r->o.quiet)
		fprintf(stderr, "narwhal-record: recording every process on %s%s\n",
			r->o.cpus ? "the CPUs of -C" : "every CPU",
			launched(r) ? "" : "; Ctrl-C (or --duration) to stop");
	if (r->attach) {
		if (!r->o.quiet)
			fprintf(stderr, "narwhal-record: attached to %zu thread%s; Ctrl-C to stop\n",
				r->attached.n, r->attached.n == 1 ? "" : "s");
		return -1;
	}
	if (!launched(r))
		return -1;
	/*
	 * A launched program's run starts when it is let go, not when the
	 * recorder began opening events and rings (tens of ms on a loaded
	 * machine, when no thread of it can be alive yet).
	 */
	r->start_ns = now_ns(CLOCK_REALTIME);
	r->clock_start_ns = now_ns(CLOCK_MONOTONIC);
	/* Open the gate: the child execs, and the events enable at exec. */
	exec_errno = nw_launch_release(&r->l);
	if (exec_errno) {
		waitpid(r->l.pid, &r->status, 0);
		r->l.pid = -1;
		fprintf(stderr, "narwhal-record: %s: %s\n", r->cmd[0], strerror(exec_errno));
		return exec_errno == ENOENT ? 127 : 126;
	}
	/*
	 * The program's end wakes the poll loop at once (the end of the run
	 * is its end, not up to a poll timeout later); without pidfds (before
	 * Linux 5.3) the loop sees it at the next timeout.
	 */
#ifdef SYS_pidfd_open
	r->s.pfds[r->s.ncpus].fd = (int)syscall(SYS_pidfd_open, r->l.pid, 0);
	r->s.pfds[r->s.ncpus].events = POLLIN;
#endif
	return -1;
}

/* Reads the rings until the program ends, Ctrl-C, or --duration. */
static void record(struct run *r)
{
	uint64_t deadline = 0;
	int forwarded = 0, ret;
	bool done = false;

	if (r->o.duration > 0)
		deadline = now_ns(CLOCK_MONOTONIC) + (uint64_t)(r->o.duration * 1e9);
	r->cpu_start = cpu_seconds();
	while (!done) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		bool timeout = deadline && now >= deadline;
		enum nw_output_due due;

		poll(r->s.pfds, (nfds_t)r->s.ncpus + 1, nw_output_wait_ms(&r->out, now, 100));
		nw_session_read(&r->s);
		now = now_ns(CLOCK_MONOTONIC);
		if (snapshot_asked) {
			snapshot_asked = 0;
			write_now(r, NW_RUN_SNAPSHOT, -1);
		}
		due = nw_output_due(&r->out, now);
		if (due != NW_DUE_NONE)
			write_now(r, due == NW_DUE_ROTATION ? NW_RUN_ROTATION : NW_RUN_CHECKPOINT,
				  -1);
		if (r->o.flight && nw_tracer_expire(&r->tracer, now, false))
			r->s.stats.alloc_failures++;
		if (!launched(r)) {
			/* The programs run on, undisturbed: only the recording stops. */
			done = stop_signal || timeout ||
			       (r->attach && !nw_targets_alive(&r->o.targets));
			continue;
		}
		if ((stop_signal || timeout) && forwarded < stop_count + timeout) {
			/* Forward Ctrl-C / SIGTERM (SIGINT at --duration); a second one kills. */
			kill(r->l.pid, forwarded ? SIGKILL : stop_signal ? stop_signal : SIGINT);
			forwarded = stop_count + timeout;
			deadline = 0;
		}
		ret = waitpid(r->l.pid, &r->status, WNOHANG);
		if (ret == r->l.pid || (ret < 0 && errno == ECHILD)) {
			done = true;
			r->l.pid = -1;
		}
	}
	if (r->s.pfds[r->s.ncpus].fd >= 0) {
		close(r->s.pfds[r->s.ncpus].fd);
		r->s.pfds[r->s.ncpus].fd = -1;
	}
	r->stopped_ns = now_ns(CLOCK_MONOTONIC);
	nw_session_disable(&r->s);
	nw_session_read(&r->s);
	nw_session_finish(&r->s, r->stopped_ns);
	/*
	 * A launched program's run ends with its last event (its exit), not
	 * when the loop got round to seeing it (after a checkpoint's write,
	 * say).  System-wide, the recording itself is the run.
	 */
	if (launched(r) && !r->system) {
		uint64_t last = 0;

		for (uint32_t i = 0; i < r->s.tasks.nthreads; i++)
			if (r->s.tasks.threads[i]->last_time > last)
				last = r->s.tasks.threads[i]->last_time;
		if (last > r->clock_start_ns && last < r->stopped_ns)
			r->stopped_ns = last;
	}
	r->cpu_loop = cpu_seconds();
}

static void print_summary(const struct run *r, double cpu_end)
{
	const struct opts *o = &r->o;
	const struct nw_session *s = &r->s;
	const struct nw_measurement *m = r->model;
	double cpu_start = r->cpu_start, cpu_loop = r->cpu_loop;
	uint32_t threads = 0, procs = 0;
	char health[512];

	for (uint32_t i = 0; i < s->tasks.nthreads; i++)
		threads += s->tasks.threads[i]->samples > 0;
	for (uint32_t i = 0; i < s->tasks.nprocs; i++) {
		const struct nw_process *p = s->tasks.procs[i];

		for (uint32_t k = 0; k < s->tasks.nthreads; k++) {
			if (s->tasks.threads[k]->proc == p && s->tasks.threads[k]->samples) {
				procs++;
				break;
			}
		}
	}
	fprintf(stderr, "narwhal-record: %llu samples from %u thread%s in %u process%s (%llu lost",
		(unsigned long long)s->stats.samples, threads, threads == 1 ? "" : "s", procs,
		procs == 1 ? "" : "es", (unsigned long long)s->stats.lost);
	if (s->stats.throttled)
		fprintf(stderr, ", throttled %llu times", (unsigned long long)s->stats.throttled);
	fprintf(stderr, ") written to %s\n", r->out.last);
	if (r->out.rotations > 1)
		fprintf(stderr, "narwhal-record: %llu samples in all %u intervals\n",
			(unsigned long long)(r->rotated_samples + s->stats.samples),
			r->out.rotations);
	if (r->out.checkpoints || r->out.snapshots || r->out.rotations > 1 || r->out.failures)
		fprintf(stderr, "narwhal-record: while recording: %u checkpoint%s, %u snapshot%s%s",
			r->out.checkpoints, r->out.checkpoints == 1 ? "" : "s", r->out.snapshots,
			r->out.snapshots == 1 ? "" : "s", r->out.rotations ? "" : "\n");
	if (r->out.rotations)
		fprintf(stderr, ", %u interval%s in %s\n", r->out.rotations,
			r->out.rotations == 1 ? "" : "s", o->output);
	if (r->out.failures)
		fprintf(stderr, "narwhal-record: %u write%s failed (see above)\n", r->out.failures,
			r->out.failures == 1 ? "" : "s");
	if (s->stats.samples && nw_health_summary(m, r->out.last, health, sizeof(health)) == 0)
		fprintf(stderr, "narwhal-record: %s\n", health);
	if (nw_log_level >= NW_LOG_DEBUG) {
		/* The sampling loop's own cost, without the writes it made while recording. */
		double loop = cpu_loop - cpu_start - r->cpu_writes;

		fprintf(stderr,
			"narwhal-record: recorder CPU: %.3f s set-up, %.3f s sampling (%.2f us per "
			"sample), %.3f s writing while recording, %.3f s writing at the end\n",
			cpu_start, loop,
			s->stats.samples ? loop * 1e6 / (double)s->stats.samples : 0.0,
			r->cpu_writes, cpu_end - cpu_loop);
		if (s->opts.callgraph != NW_CALLGRAPH_FP)
			fprintf(stderr,
				"narwhal-record: unwinding: %llu samples by cached CFI rules, %llu by "
				"libdwfl, %llu stopped on CFI errors, %llu truncated, %llu spliced "
				"onto the fp chain\n",
				(unsigned long long)s->unwinder.stats.fast,
				(unsigned long long)s->unwinder.stats.fallback,
				(unsigned long long)s->unwinder.stats.cfi_failures,
				(unsigned long long)s->unwinder.stats.truncated,
				(unsigned long long)s->unwinder.stats.spliced);
		if (s->unwinder.stats.checked)
			fprintf(stderr,
				"narwhal-record: unwind check: %llu of %llu samples differ between "
				"cached rules and libdwfl\n",
				(unsigned long long)s->unwinder.stats.mismatches,
				(unsigned long long)s->unwinder.stats.checked);
	}
	if (s->opts.alloc)
		fprintf(stderr, "narwhal-record: %llu allocation samples (one per %llu bytes on "
				"average), %llu of them freed, %zu live at the end%s\n",
			(unsigned long long)s->stats.alloc_samples,
			(unsigned long long)s->opts.alloc->rate,
			(unsigned long long)s->stats.alloc_frees, nw_alloc_live_count(&s->live),
			s->stats.alloc_untracked ? " (some untracked: the interposer's table was full)"
						 : "");
	if (s->stats.lost)
		fprintf(stderr, "narwhal-record: the kernel dropped %llu records: raise the ring "
				"size with -m (now %u pages)%s\n",
			(unsigned long long)s->stats.lost, o->mmap_pages,
			o->alloc ? ", raise --alloc-rate or take smaller stack copies (-g dwarf,SIZE)"
				 : " or lower -F");
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
	int exit_status = launched(r) ? exit_status_of(r->status) : 0;
	bool sections = false;
	char err[PATH_MAX + 128];
	int ret;

	ret = write_now(r, NW_RUN_END, launched(r) ? exit_status : -1);
	if (ret < 0) {
		if (launched(r))
			fprintf(stderr, "narwhal-record: %s exited with status %d\n", r->cmd[0],
				exit_status);
		return write_failed(exit_status);
	}
	if (r->stage[0]) {
		sections = nw_seclog_stage_used(r->stage);
		ret = nw_seclog_stage_finish(r->stage, r->out.last, err, sizeof(err));
		r->stage[0] = 0;
		if (ret < 0) {
			fprintf(stderr, "narwhal-record: %s\n", err);
			return write_failed(exit_status);
		}
	}
	if (!r->o.quiet)
		print_summary(r, cpu_seconds());
	if (!r->o.quiet && sections)
		fprintf(stderr, "narwhal-record: instrumented sections in %s/%s (narwhal-report "
				"--sections, --by-section)\n",
			r->out.last, NW_SECLOG_SUBDIR);
	if (r->o.pprof || r->o.flamegraph || r->o.html) {
		ret = nw_export_measurement(r->model, r->o.pprof, r->o.flamegraph, r->o.html, err,
					    sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "narwhal-record: %s\n", err);
			return write_failed(exit_status);
		}
		if (!r->o.quiet)
			fprintf(stderr, "narwhal-record: wrote%s%s%s%s%s%s\n", r->o.pprof ? " " : "",
				r->o.pprof ? r->o.pprof : "", r->o.flamegraph ? " " : "",
				r->o.flamegraph ? r->o.flamegraph : "", r->o.html ? " " : "",
				r->o.html ? r->o.html : "");
	}
	return exit_status;
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

int main(int argc, char **argv)
{
	/*
	 * dwarf by default: complete stacks through code without frame pointers
	 * (all of Debian's libraries) for about 7 us of recorder CPU per sample;
	 * doc/UNWINDING.md has the measurements behind the choice.
	 */
	struct run r = {
		.o = { .output = "narwhal.data", .freq = 999, .callgraph = NW_CALLGRAPH_DWARF,
		       .stack_size = NW_DEFAULT_STACK_COPY, .checkpoint = -1 },
		.l = { .pid = -1, .gate_w = -1, .err_r = -1 },
		.stage_lock = -1,
	};
	int ret;

	ret = parse_opts(argc, argv, &r.o);
	if (ret)
		goto cleanup;
	if (r.o.quiet)
		nw_log_level = NW_LOG_QUIET;
	r.attach = r.o.targets.n > 0;
	r.system = r.o.system;
	r.cmd = argv + optind;
	r.argc = r.attach ? 0 : argc - optind;
	r.o.ring_size_given = r.o.mmap_pages != 0;
	if (!r.o.ring_size_given)
		r.o.mmap_pages = default_ring_pages(r.o.callgraph, r.o.alloc);
	ret = prepare(&r);
	if (ret >= 0)
		goto cleanup;
	handle_signals();
	ret = start(&r);
	if (ret >= 0)
		goto cleanup;
	record(&r);
	ret = finish(&r);
cleanup:
	run_fini(&r);
	return ret;
}
