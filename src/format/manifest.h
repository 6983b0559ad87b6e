/* SPDX-License-Identifier: MIT */
/*
 * manifest.json: what was recorded and how.  Written by narwhal-record,
 * read by narwhal-report; json-c does the JSON.
 */
#ifndef NW_MANIFEST_H
#define NW_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NW_MANIFEST_VERSION 1

struct nw_manifest_event {
	char *name;          /* as the user wrote it, or the default */
	uint32_t type;       /* perf_event_attr.type */
	uint64_t config;
	bool freq;           /* true: value is a frequency in Hz; false: a period */
	uint64_t value;
};

struct nw_manifest_process {
	uint32_t pid, ppid;
	char *comm;
};

struct nw_manifest_thread {
	uint32_t pid, tid;
	char *comm;
	char *file;          /* the thread's .csprof file, relative to the directory */
	uint64_t samples;
};

struct nw_manifest_module {
	char *path;
	char *build_id;      /* lowercase hex, "" when unknown */
};

struct nw_manifest {
	uint32_t version;            /* NW_MANIFEST_VERSION */
	char *narwhal_version;
	char *arch;                  /* "x86_64" */
	uint32_t argc;
	char **argv;
	char *call_graph;            /* "fp", "dwarf" */
	uint32_t stack_size;         /* dwarf mode's stack copy, 0 otherwise */
	uint32_t max_stack;          /* frames a chain keeps at most; 0: unknown (key optional) */
	uint32_t nevents;
	struct nw_manifest_event *events;
	uint64_t start_ns, end_ns;   /* CLOCK_REALTIME, nanoseconds */
	int exit_status;             /* as a shell reports it: 128+N for signal N; -1 unknown */
	uint64_t samples, lost, throttled, unwind_errors;
	uint32_t nprocs;
	struct nw_manifest_process *procs;
	uint32_t nthreads;
	struct nw_manifest_thread *threads;
	uint32_t nmodules;
	struct nw_manifest_module *modules;
};

/* Writes @m as JSON to @path.  -errno. */
int nw_manifest_write(const char *path, const struct nw_manifest *m);
/*
 * Reads @path.  -errno for I/O, -EBADMSG for JSON that is not a manifest,
 * with a message naming the file and what is wrong in @err.  On success
 * *ret is the caller's, to free with nw_manifest_free().
 */
int nw_manifest_read(const char *path, struct nw_manifest **ret, char *err, size_t errlen);
/* Frees @m and its strings; NULL is a no-op.  Works on a half-built manifest. */
void nw_manifest_free(struct nw_manifest *m);

#endif
