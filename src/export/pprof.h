/* SPDX-License-Identifier: MIT */
/*
 * pprof export: a gzipped perftools.profiles.Profile (profile.proto, encoded
 * with protobuf-c).  Built from the thread files of the measurement, not
 * from the symbolic trees, so that every Location is a real address in a
 * real Mapping: one Location per distinct (mapping, address), with one Line
 * per frame of its inline chain (innermost first) and the Functions that
 * nw_profile's loader makes for the same addresses.  Caller frames are
 * placed at their return address - 1, inside the call instruction, the
 * address the symbol table resolved them at.
 *
 * Samples: one per (thread, calling context), one value per metric of the
 * measurement (for cpu-clock: samples/count, cpu/nanoseconds), labelled
 * with the thread's name ("thread"), "tid" and "pid".
 */
#ifndef NW_PPROF_H
#define NW_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "format/csprof.h"
#include "model/symtab.h"
#include "report/profile.h"

struct nw_pprof;

/*
 * A builder for a profile with the metrics (sample types) of @p; frames are
 * interned in @p, which must outlive the builder.  NULL on ENOMEM.
 */
struct nw_pprof *nw_pprof_new(struct nw_profile *p);
void nw_pprof_free(struct nw_pprof *b);

/*
 * Adds every tree of thread file @cp (symbols from @st) as samples of
 * thread @tid of process @pid called @comm.  -ENOMEM, -EBADMSG for a tree
 * with a bad epoch index or metric count.
 */
int nw_pprof_add(struct nw_pprof *b, const struct nw_csprof *cp, const struct nw_symtab *st,
		 uint32_t pid, uint32_t tid, const char *comm);

/*
 * The profile as protobuf bytes (not compressed): *ret_buf from malloc, the
 * caller's.  Reads the mapped files, where present and of the recorded
 * build-id, for each mapping's file offset.  -ENOMEM.
 */
int nw_pprof_pack(struct nw_pprof *b, uint8_t **ret_buf, size_t *ret_len);

/*
 * Writes the measurement in @dir, loaded as @p, to @path as a gzipped
 * profile, with the threads @f selects (all when NULL).  Re-reads the
 * thread files and the symbol table.  -errno with a message for the user
 * in @err naming the file.
 */
int nw_pprof_export(const char *path, const char *dir, struct nw_profile *p,
		    const struct nw_filter *f, char *err, size_t errlen);

#endif
