/* SPDX-License-Identifier: MIT */
/*
 * pprof export: a gzipped perftools.profiles.Profile (profile.proto, encoded
 * with protobuf-c), built from the model's physical trees so that every
 * Location is a real address in a real Mapping (memory start, file offset
 * and build-id as recorded; no binary is opened): one Location per
 * distinct (mapping, address), with one Line per frame of its inline chain
 * (innermost first).  Caller frames are placed at their return address -
 * 1, inside the call instruction, the address the symbol table resolved
 * them at.
 *
 * Samples: one per (thread, calling context), one value per metric of the
 * measurement (for cpu-clock: samples/count, cpu/nanoseconds), labelled
 * with the thread's name ("thread"), "tid" and "pid".
 */
#ifndef NW_PPROF_H
#define NW_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "model/measurement.h"
#include "report/stacks.h"

struct nw_pprof;
struct nw_pprof_file;

/* Where the encoded profile goes, piece by piece: 0 or -errno. */
typedef int (*nw_pprof_write_fn)(void *arg, const void *buf, size_t len);

/*
 * A builder for a profile of @m (which must outlive it) that writes the
 * encoded Profile through @write: each sample as it is added, the rest at
 * nw_pprof_finish().  NULL on ENOMEM.
 */
struct nw_pprof *nw_pprof_new(const struct nw_measurement *m, nw_pprof_write_fn write, void *arg);
void nw_pprof_free(struct nw_pprof *b);

/*
 * The builder's frame table (its Functions): a split's prefix frames are
 * interned there before nw_pprof_add().
 */
struct nw_frames *nw_pprof_frames(struct nw_pprof *b);
/*
 * Adds every tree of model thread @ti as samples; what @split (NULL: none)
 * moves below prefix frames becomes samples whose stacks end in locations
 * of those frames (without address).  -ENOMEM, -EBADMSG for a bad tree,
 * or what the writer returned.
 */
int nw_pprof_add_thread(struct nw_pprof *b, uint32_t ti, const struct nw_split *split);
/* nw_pprof_add_thread() for every thread @f selects (NULL: all). */
int nw_pprof_add(struct nw_pprof *b, const struct nw_filter *f, const struct nw_split *split);
/*
 * Adds the stacks @s (of the builder's model, built per thread: after
 * --focus, --hide and the like, which work on frames) as samples whose
 * locations are frames, without addresses.  -EINVAL for stacks not built
 * per thread or of other metrics, -ENOMEM.
 */
int nw_pprof_add_stacks(struct nw_pprof *b, const struct nw_stacks *s);
/* Writes what follows the samples: types, mappings, locations, functions, strings. */
int nw_pprof_finish(struct nw_pprof *b);

/* The protobuf bytes (not compressed) of the threads of @m that @f selects (NULL: all). */
int nw_pprof_build(const struct nw_measurement *m, const struct nw_filter *f, uint8_t **ret_buf,
		   size_t *ret_len);

/*
 * A builder writing a gzipped profile to @path, in *ret and *ret_file:
 * -errno with a message in @err naming the file when it cannot be made.
 * nw_pprof_close() finishes it (when @ret, the result of adding, is 0),
 * closes the file and frees both; -errno with a message naming the file.
 */
int nw_pprof_open(const struct nw_measurement *m, const char *path, struct nw_pprof **ret,
		  struct nw_pprof_file **ret_file, char *err, size_t errlen);
int nw_pprof_close(struct nw_pprof *b, struct nw_pprof_file *pf, int ret, char *err,
		   size_t errlen);

/*
 * Writes the threads of @m that @f selects (all when NULL) to @path as a
 * gzipped profile.  -errno with a message for the user in @err naming the
 * file.
 */
int nw_pprof_export(const char *path, const struct nw_measurement *m, const struct nw_filter *f,
		    char *err, size_t errlen);

#endif
