/* SPDX-License-Identifier: MIT */
/*
 * A measurement directory loaded for reporting: the manifest, the symbol
 * table and every thread's HPC_CSPROF file, turned into one symbolic tree
 * per thread.  Frames are symbolic (function, file, module), so the same
 * function in two epochs is one frame; inline chains become nested frames.
 */
#ifndef NW_PROFILE_H
#define NW_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/cct.h"
#include "format/manifest.h"

/* A symbolic frame: a function, or module+0xOFFSET where nothing is known. */
struct nw_func {
	char *name;        /* function name, "module+0x1234", or "[unknown]" */
	char *file;        /* the function's source file, NULL when unknown */
	uint32_t line;     /* the function's first line, 0 when unknown */
	char *module;      /* module path, NULL when unknown */
};

struct nw_prof_thread {
	uint32_t pid, tid;
	char *comm;
	uint64_t samples;
	/*
	 * Symbolic tree: each node's ip is an index into nw_profile.funcs, its
	 * sp the tag of the physical frame it came from (the frames of one
	 * inline chain share it; 0 where unknown).
	 */
	struct nw_cct *tree;
};

struct nw_profile {
	struct nw_manifest *manifest;
	unsigned nmetrics;
	char **metric_names;           /* from the HPC_CSPROF metric table */
	struct nw_func *funcs;
	uint32_t nfuncs, cap_funcs;
	uint32_t *func_slots;          /* intern index over (name, module) */
	uint32_t nfunc_slots;
	struct nw_prof_thread *threads;
	uint32_t nthreads;
};

/*
 * Loads the measurement in @dir.  -errno, or -EBADMSG for a corrupt or
 * truncated file, with a message for the user in @err naming the file
 * (and the offset, for an HPC_CSPROF file).  *ret is the caller's.
 */
int nw_profile_load(const char *dir, struct nw_profile **ret, char *err, size_t errlen);
void nw_profile_free(struct nw_profile *p);

/* Which threads a view covers: all of them when tid < 0 and comm is NULL. */
struct nw_filter {
	int64_t tid;
	const char *comm;
};

bool nw_filter_match(const struct nw_filter *f, const struct nw_prof_thread *th);

/* One tree merging the threads @f selects (ips are func indexes).  NULL on ENOMEM. */
struct nw_cct *nw_profile_merge(const struct nw_profile *p, const struct nw_filter *f);

/*
 * The metric called @name: a metric name ("cpu-clock:period") or an event
 * name ("cpu-clock", its samples metric).  NULL asks for the default, the
 * first samples metric.  Returns the index, or -ENOENT.
 */
int nw_profile_find_metric(const struct nw_profile *p, const char *name);

/*
 * Building blocks of nw_profile_load(), for tests and other front ends.
 * nw_profile_new() gives an empty profile with @nmetrics metrics (names
 * "metric<i>" until set) and no manifest; NULL on ENOMEM.
 */
struct nw_profile *nw_profile_new(unsigned nmetrics);
/*
 * The index of the frame (@name, @module) in funcs, added when new (copies
 * of the strings).  @file and @line fill in what an earlier entry lacked.
 * -ENOMEM.
 */
int64_t nw_profile_intern(struct nw_profile *p, const char *name, const char *file,
			  uint32_t line, const char *module);
/* Appends a thread with an empty tree; NULL on ENOMEM.  The profile owns it. */
struct nw_prof_thread *nw_profile_add_thread(struct nw_profile *p, uint32_t pid, uint32_t tid,
					     const char *comm);

#endif
