/* SPDX-License-Identifier: MIT */
/*
 * A thread's trace file, DIR/<comm>-<pid>-<tid>.trace (doc/ARCHITECTURE.md,
 * "Trace file format"): a 48-byte header, then the encoded events of model/trace.h
 * with node ids as in the thread's .csprof file (preorder).
 *
 *   magic "NWTRACE1", u32 version (1), u32 tick_ns, u32 pid, u32 tid,
 *   u64 t0 (CLOCK_MONOTONIC ns), u64 events, u64 bytes of events
 *
 * All integers little-endian.
 */
#ifndef NW_TRACEFILE_H
#define NW_TRACEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "model/measurement.h"

#define NW_TRACE_MAGIC "NWTRACE1"
#define NW_TRACE_VERSION 1
#define NW_TRACE_HEADER 48

/*
 * Writes th->trace to @path, its node ids mapped from @th's trees as they
 * are in memory to the preorder ids their .csprof file gives them.
 * -EINVAL when the trace names an epoch or node the thread's trees lack,
 * -errno.
 */
int nw_tracefile_write(const char *path, const struct nw_measurement *m,
		       const struct nw_mthread *th);
/*
 * The same to @f, left open and unsynced (a pack's entry); with @preorder
 * false the node ids stay the model's, for trees written in index order.
 */
int nw_tracefile_write_fp(FILE *f, const struct nw_measurement *m, const struct nw_mthread *th,
			  bool preorder);

/*
 * A checkpoint's delta of the trace file written before from @th's trace
 * in index order (doc/DURABILITY.md, "The journal"): the events after
 * the first @base_events, which took @base_bytes.  -EINVAL when the trace
 * holds fewer, -errno.
 */
int nw_tracefile_write_delta(FILE *f, const struct nw_mthread *th, uint64_t base_events,
			     uint64_t base_bytes);
/*
 * Appends such a delta (@n bytes at @delta) to the trace file in *@file
 * (*@size bytes, malloc'd; grown in place), whose header then counts the
 * events of both.  -EBADMSG with a message naming @name when the delta
 * does not extend that file, -ENOMEM.
 */
int nw_tracefile_apply_delta(uint8_t **file, size_t *size, const void *delta, size_t n,
			     const char *name, char *err, size_t errlen);

/*
 * Reads the trace of @th from @buf (@size bytes of the file @name) into
 * *@ret (the caller's), checking every event against @m: the thread's
 * pid and tid, its epochs and the size of each tree, the events recorded.
 * -EBADMSG with a message naming @name and the byte offset, -ENOMEM.
 */
int nw_tracefile_parse(const void *buf, size_t size, const char *name,
		       const struct nw_measurement *m, const struct nw_mthread *th,
		       struct nw_trace **ret, char *err, size_t errlen);
/* As nw_tracefile_parse() on the file @path; -errno when it cannot be read. */
int nw_tracefile_read(const char *path, const struct nw_measurement *m,
		      const struct nw_mthread *th, struct nw_trace **ret, char *err,
		      size_t errlen);

#endif
