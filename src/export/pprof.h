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

/* A builder for a profile of @m (which must outlive it).  NULL on ENOMEM. */
struct nw_pprof *nw_pprof_new(const struct nw_measurement *m);
void nw_pprof_free(struct nw_pprof *b);

/*
 * The builder's frame table (its Functions): a split's prefix frames are
 * interned there before nw_pprof_add().
 */
struct nw_frames *nw_pprof_frames(struct nw_pprof *b);
/*
 * Adds every tree of model thread @ti as samples; what @split (NULL: none)
 * moves below prefix frames becomes samples whose stacks end in locations
 * of those frames (without address).  -ENOMEM, -EBADMSG for a bad tree.
 */
int nw_pprof_add_thread(struct nw_pprof *b, uint32_t ti, const struct nw_split *split);
/* nw_pprof_add_thread() for every thread @f selects (NULL: all). */
int nw_pprof_add(struct nw_pprof *b, const struct nw_filter *f, const struct nw_split *split);

/* The profile as protobuf bytes (not compressed): *ret_buf from malloc, the caller's.  -ENOMEM. */
int nw_pprof_pack(struct nw_pprof *b, uint8_t **ret_buf, size_t *ret_len);

/* Packs @b and writes it gzipped to @path.  -errno with a message in @err. */
int nw_pprof_write(struct nw_pprof *b, const char *path, char *err, size_t errlen);

/* The protobuf bytes of the threads of @m that @f selects (NULL: all).  -ENOMEM. */
int nw_pprof_build(const struct nw_measurement *m, const struct nw_filter *f, uint8_t **ret_buf,
		   size_t *ret_len);

/*
 * Writes the threads of @m that @f selects (all when NULL) to @path as a
 * gzipped profile.  -errno with a message for the user in @err naming the
 * file.
 */
int nw_pprof_export(const char *path, const struct nw_measurement *m, const struct nw_filter *f,
		    char *err, size_t errlen);

#endif
