/* SPDX-License-Identifier: MIT */
/*
 * The model of a measurement: one value that the recorder builds from its
 * in-memory trees and that the reader builds from a measurement directory,
 * and that every view and export reads (DESIGN.md, "One model of a
 * measurement"):
 *
 *  - run: what was recorded and how (command line, events, times, counts);
 *  - metrics: one descriptor per u64 of a tree node (model/metric.h);
 *  - modules: every module with its build-id and ELF facts;
 *  - epochs: the executable mappings of a process over time, each mapping
 *    with its address, ELF address and file offset;
 *  - processes and threads; each thread has one physical calling context
 *    tree per epoch it was sampled in (node ips are addresses);
 *  - the symbol table;
 *  - the places the trees' ips resolve to, each interned once as the
 *    views resolve them (model/places.h).
 *
 * One resolver maps (epoch, ip, caller?) to the module, the ELF address
 * looked up (ip - 1 for a caller frame, whose ip is a return address) and
 * the symbol entry: nothing else does that arithmetic.  Symbolic (merged)
 * trees are views derived from the model (report/stacks.h).
 */
#ifndef NW_MEASUREMENT_H
#define NW_MEASUREMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/cct.h"
#include "model/codestore.h"
#include "model/epoch.h"
#include "model/locks.h"
#include "model/metric.h"
#include "model/module.h"
#include "model/symtab.h"
#include "model/trace.h"

#define NW_COMM_MAX 16

struct nw_places;

struct nw_event_info {
	char *name;            /* as the user wrote it, or the default */
	uint32_t type;         /* perf_event_attr.type */
	uint64_t config;
	bool freq;             /* true: value is a frequency in Hz; false: a period */
	uint64_t value;
};

/*
 * When a measurement was written: at the end of the recording, or while
 * it went on (a checkpoint, a snapshot asked for), or as one interval of a
 * rotating recording.
 */
enum nw_run_written {
	NW_RUN_END,
	NW_RUN_CHECKPOINT,
	NW_RUN_SNAPSHOT,
	NW_RUN_ROTATION,
	NW_RUN_WRITTEN_KINDS,
};

/* "end", "checkpoint", "snapshot", "rotation". */
const char *nw_run_written_name(enum nw_run_written w);
/* The kind called @name, or -EINVAL. */
int nw_run_written_parse(const char *name);

/* What was recorded and how: manifest.json's top-level keys. */
struct nw_run {
	char *narwhal_version;
	char *arch;            /* "x86_64" */
	uint32_t argc;
	char **argv;           /* NULL-terminated */
	char *call_graph;      /* "fp", "dwarf", "hybrid", "bpf" */
	uint32_t stack_size;   /* dwarf mode's stack copy, 0 otherwise */
	uint32_t max_stack;    /* frames a chain keeps at most; 0: unknown */
	uint32_t nevents;
	struct nw_event_info *events;
	uint64_t start_ns, end_ns;  /* CLOCK_REALTIME */
	/* The same two moments in CLOCK_MONOTONIC, the clock of samples and traces; 0: unknown */
	uint64_t clock_start_ns, clock_end_ns;
	bool traced;           /* every sampled thread has a trace (not --no-trace) */
	bool kernel;           /* kernel time and frames were sampled */
	enum nw_run_written written;
	/* --flight-recorder: only the last window_ns of the run are kept; 0: all of it */
	uint64_t window_ns;
	int exit_status;       /* as a shell reports it: 128+N for signal N; -1 unknown */
	/*
	 * The pack that holds every file but the manifest (a checkpoint's
	 * one-file form, format/pack.h), relative to the directory; NULL:
	 * they are files of the directory.
	 */
	char *pack;
	/*
	 * The journal beside the pack (a checkpoint's later writes: what each
	 * added to the pack, format/writer.h), relative to the directory, and
	 * the bytes of each of its segments, front to back; NULL: none.
	 */
	char *journal;
	uint64_t *segments;
	uint32_t nsegments;
	uint64_t samples, lost, throttled, unwind_errors;
	/* -g bpf: user frames the kernel walked, those by frame pointers, samples from a copy */
	uint64_t bpf_frames, bpf_fp_frames, bpf_copies;
};

struct nw_mprocess {
	uint32_t pid, ppid;
	char *comm;
	uint32_t nspid;        /* its pid in its own PID namespace (a container); 0: the same */
};

/* One physical tree: a thread's samples in one epoch of its process. */
struct nw_tree {
	uint32_t epoch;        /* index into nw_measurement.epochs */
	struct nw_cct *cct;    /* cct->nmetrics == nw_measurement.nmetrics */
};

struct nw_mthread {
	uint32_t pid, tid;
	char *comm;
	char *file;            /* its HPC_CSPROF file, relative to the directory; NULL: none */
	uint64_t samples;      /* samples of every event */
	/*
	 * Its lifetime as the recorder saw it, CLOCK_MONOTONIC ns: from its
	 * creation (or first sample) to its exit (or last sample); 0: unknown.
	 */
	uint64_t first_ns, last_ns;
	/* The epochs of its process, oldest first: epochs[first_epoch + i]. */
	uint32_t first_epoch, nepochs;
	uint32_t ntrees;
	struct nw_tree *trees;
	/* Its samples and off-CPU intervals in time order; NULL: not recorded or not read */
	struct nw_trace *trace;
	char *trace_file;      /* relative to the directory; NULL: none */
};

struct nw_measurement {
	struct nw_run run;
	uint32_t nmetrics;
	struct nw_metric *metrics;
	struct nw_module_table *modules;
	uint32_t nepochs, cap_epochs;
	const struct nw_epoch **epochs;
	uint32_t nprocs, cap_procs;
	struct nw_mprocess *procs;
	uint32_t nthreads, cap_threads;
	struct nw_mthread *threads;
	struct nw_symtab *symtab;   /* sorted */
	/*
	 * The machine code of the sampled functions (model/codestore.h):
	 * the recorder's, borrowed; the reader's, owned, once
	 * nw_measurement_read_code() read it; NULL: none.
	 */
	struct nw_codestore *code;
	/*
	 * The places of the trees' ips (model/places.h): empty when read,
	 * filled by whoever resolves the trees; the recorder's are those it
	 * symbolized.
	 */
	struct nw_places *places;
	/* The locks that made threads wait (--locks, model/locks.h), owned; NULL: none */
	struct nw_locks *locks;
	/*
	 * The recorder's model borrows its modules, epochs, trees, symbol
	 * table and places (they go on growing after a checkpoint); the
	 * reader's owns everything.
	 */
	bool borrowed;
	bool trees_dropped;  /* nw_measurement_drop_trees() ran: no tree is left */
	/* nw_measurement_restrict_time(): the CLOCK_MONOTONIC range kept; both 0: all */
	uint64_t time_lo, time_hi;
	/*
	 * The measurements merged into this one (nw_measurement_merge()):
	 * run r's threads start at run_first[r]; nruns 0: one, not merged.
	 */
	uint32_t nruns;
	uint32_t *run_first;
};

/* An empty model that owns what is added to it; NULL on ENOMEM. */
struct nw_measurement *nw_measurement_new(void);
/* Frees @m and what it owns; NULL is a no-op.  Works on a half-built model. */
void nw_measurement_free(struct nw_measurement *m);

/* Appends metric (@event, @kind) with sample period @period; its index or -ENOMEM. */
int nw_measurement_add_metric(struct nw_measurement *m, const char *event,
			      enum nw_metric_kind kind, uint64_t period);
/* Appends a copy of @d; its index or -ENOMEM. */
int nw_measurement_copy_metric(struct nw_measurement *m, const struct nw_metric *d);
/*
 * The metric called @name: a metric name ("cpu-clock:period") or an event
 * name ("cpu-clock": its samples metric, else its first).  NULL asks for
 * the default: the first metric that counts samples, else alloc-bytes,
 * else lock-wait, else the first.  -ENOENT.
 */
int nw_measurement_find_metric(const struct nw_measurement *m, const char *name);
/* The metric counting the samples of @metric's event (itself when it does), or -ENOENT. */
int nw_measurement_samples_metric(const struct nw_measurement *m, unsigned metric);

/* Appends an epoch the model owns (unless borrowed); its index or -ENOMEM. */
int nw_measurement_add_epoch(struct nw_measurement *m, const struct nw_epoch *e);
/* Appends a process (copying @comm); its index or -ENOMEM. */
int nw_measurement_add_process(struct nw_measurement *m, uint32_t pid, uint32_t ppid,
			       const char *comm);
/* Appends a thread without trees (copying the strings; @file may be NULL); NULL on ENOMEM. */
struct nw_mthread *nw_measurement_add_thread(struct nw_measurement *m, uint32_t pid,
					     uint32_t tid, const char *comm, const char *file);
/* Appends a tree to @th (owned by the model unless borrowed).  -ENOMEM. */
int nw_mthread_add_tree(struct nw_mthread *th, uint32_t epoch, struct nw_cct *cct);
/*
 * Frees every thread's trees and the places of their ips (the thread list
 * and its totals stay): for a one-shot report whose last view needs only
 * what it derived from them, so that the model and the view are not both
 * held at their largest.
 */
void nw_measurement_drop_trees(struct nw_measurement *m);

/*
 * The index in th->trees of the tree for the epoch with nw_epoch.index
 * @epoch of the thread's process (what a trace event names), or -1.
 */
int nw_mthread_tree_of(const struct nw_measurement *m, const struct nw_mthread *th,
		       uint32_t epoch);

/* The metrics of event @e (run.events index): its count and its sum, -1 where none. */
void nw_measurement_event_metrics(const struct nw_measurement *m, uint32_t e, int *count,
				  int *sum);

/*
 * Keeps only what happened in [@lo, @hi) (CLOCK_MONOTONIC ns): every tree's
 * metrics are rebuilt from the threads' traces (samples in the range; the
 * part of each off-CPU interval inside it), the threads' and the run's
 * sample counts too, and m->time_lo, m->time_hi say what was kept.  The
 * traces must be read (format/reader.h).  -ENODATA when a thread with
 * samples has no trace (recorded with --no-trace), -EBADMSG when a trace
 * does not decode, -EINVAL for a borrowed model or an empty range.
 */
int nw_measurement_restrict_time(struct nw_measurement *m, uint64_t lo, uint64_t hi);
/*
 * The range of run @r that @spec names ("START,END", narwhal-report
 * --time): each end seconds from the start of the run ("2.5", "2.5s") or
 * a percentage of it ("40%"), either may be empty (the start; the end of
 * the run, its end included).  0; -ENODATA when @r has no times (recorded
 * before traces existed), -EINVAL for a spec that is none or ends before
 * it starts, -ERANGE for a start after the run.
 */
int nw_run_time_range(const struct nw_run *r, const char *spec, uint64_t *ret_lo,
		      uint64_t *ret_hi);
/* The process of @pid (the last one listed: pids are reused), or NULL. */
const struct nw_mprocess *nw_measurement_process(const struct nw_measurement *m, uint32_t pid);

/* Sum of metric @metric over every node of @th's trees. */
uint64_t nw_mthread_total(const struct nw_mthread *th, unsigned metric);
/*
 * @sums[i] (room for @nmetrics): the sum of metric i over every node of
 * @th's trees, in one pass over their metrics.
 */
void nw_mthread_totals(const struct nw_mthread *th, unsigned nmetrics, uint64_t *sums);

/* Where an ip of a tree is, and what the symbol table knows of it. */
struct nw_resolved {
	const struct nw_map *map;       /* NULL: no mapping of the epoch holds the ip */
	const struct nw_module *module; /* the map's module */
	uint32_t module_index;
	uint64_t addr;                  /* the module's ELF address of the PC (- 1 for a caller) */
	bool caller;                    /* addr is a return address - 1 */
	const struct nw_symentry *sym;  /* NULL: the symbol table knows nothing of it */
};

/*
 * Resolves @ip of a tree of epoch @epoch: the mapping with the greatest
 * start at or below @ip, when @ip is below its end (a recorder's mappings
 * have their ends; csprof files keep none, so the reader ends a mapping
 * at the next one's start or where its module's segments end), the ELF
 * address (@caller: PC - 1, inside the call instruction of a return
 * address) and the symbol entry.  NW_IP_EXACT is stripped from @ip.
 */
void nw_measurement_resolve(const struct nw_measurement *m, uint32_t epoch, uint64_t ip,
			    bool caller, struct nw_resolved *ret);

/* nw_measurement_resolve() without the symbol lookup (sym stays NULL). */
void nw_measurement_locate(const struct nw_measurement *m, uint32_t epoch, uint64_t ip,
			   bool caller, struct nw_resolved *ret);

/*
 * Node @node of tree @tr located (_resolve: and looked up), as a return
 * address where nw_cct_is_return() says it is one.
 */
static inline void nw_measurement_locate_node(const struct nw_measurement *m,
					      const struct nw_tree *tr, uint32_t node,
					      struct nw_resolved *ret)
{
	nw_measurement_locate(m, tr->epoch, tr->cct->nodes[node].ip,
			      nw_cct_is_return(tr->cct, node), ret);
}

static inline void nw_measurement_resolve_node(const struct nw_measurement *m,
					       const struct nw_tree *tr, uint32_t node,
					       struct nw_resolved *ret)
{
	nw_measurement_resolve(m, tr->epoch, tr->cct->nodes[node].ip,
			       nw_cct_is_return(tr->cct, node), ret);
}

/*
 * Makes @m read @modules, @symtab and @places, owned by someone else, as
 * well as the epochs and trees added from now on (the recorder's model).
 */
void nw_measurement_borrow(struct nw_measurement *m, struct nw_module_table *modules,
			   struct nw_symtab *symtab, struct nw_places *places);

/*
 * Adds the measurement @src to @dst (both read from disk, not borrowed):
 * modules interned by path and build-id, epochs, processes, threads with
 * their trees (moved: @src keeps its thread list but no trees), symbols,
 * locks (moved); sample counts add up, the time span covers both; @src's
 * threads are @dst's last run (nw_measurement_run()).  -EINVAL with a
 * message in @err when they recorded different metrics (it lists @src's,
 * then @dst's), -ENOMEM.
 */
int nw_measurement_merge(struct nw_measurement *dst, struct nw_measurement *src, char *err,
			 size_t errlen);

/* How many measurements @m was merged from (1 when not merged). */
uint32_t nw_measurement_runs(const struct nw_measurement *m);
/* The threads of the @r-th of them: [*first, *end) of m->threads. */
void nw_measurement_run(const struct nw_measurement *m, uint32_t r, uint32_t *first, uint32_t *end);

/* Frees what nw_run holds (not @r itself). */
void nw_run_fini(struct nw_run *r);
/* Copies the command line: -ENOMEM. */
int nw_run_set_argv(struct nw_run *r, int argc, char *const *argv);

#endif
