/* SPDX-License-Identifier: MIT */
/*
 * Reading a measurement directory into the model, once: the manifest, the
 * symbol table and every thread's HPC_CSPROF file.  Each file's epochs
 * become epochs of the model (mappings with their ELF address and, from
 * the module's ELF facts, their file offset); each tree keeps its file's
 * node order, so node i is the file's node i.
 */
#ifndef NW_READER_H
#define NW_READER_H

#include <stddef.h>

#include "model/measurement.h"

/*
 * Reads the measurement in @dir: nw_measurement_open() then
 * nw_measurement_load().  -errno, or -EBADMSG for a corrupt or truncated
 * file, with a message for the user in @err naming the file (and the
 * offset, for an HPC_CSPROF file).  *ret is the caller's.
 */
int nw_measurement_read(const char *dir, struct nw_measurement **ret, char *err, size_t errlen);

/*
 * Reads the manifest of the measurement in @dir alone: the run, the
 * metrics, the processes and the threads with their sample counts, no
 * trees and no symbols (enough for a view such as --threads).  Errors as
 * above.
 */
int nw_measurement_open(const char *dir, struct nw_measurement **ret, char *err, size_t errlen);

/*
 * Reads the rest of the measurement @m opened from @dir: its symbol table
 * and every thread's trees.  Errors as above (@m is then to be freed).
 */
int nw_measurement_load(struct nw_measurement *m, const char *dir, char *err, size_t errlen);

/*
 * Reads the trace of every thread of @m (read from @dir) that the
 * manifest names (model/trace.h; the views that need time ask for them).
 * Returns how many threads have a trace, or -errno, -EBADMSG for a corrupt
 * or truncated trace, with a message naming the file and the byte offset.
 */
int nw_measurement_read_traces(struct nw_measurement *m, const char *dir, char *err,
			       size_t errlen);

/* What nw_measurement_read_parts() reads beyond the manifest. */
enum {
	NW_READ_TREES = 1u << 0,   /* nw_measurement_load() */
	NW_READ_TRACES = 1u << 1,  /* nw_measurement_read_traces() */
	NW_READ_CODE = 1u << 2,    /* nw_measurement_read_code() */
};

/*
 * Opens the manifest of @dir, then reads the parts @parts says of the
 * measurement it describes (NW_READ_*).  A live recording's checkpoint
 * replaces the pack and journal its manifest names: a file named there
 * that is gone when read has the new manifest read again (a few times).
 * Errors as above; *ret is the caller's.
 */
int nw_measurement_read_parts(const char *dir,
			      unsigned (*parts)(void *arg, const struct nw_measurement *m),
			      void *arg, struct nw_measurement **ret, char *err, size_t errlen);

#endif
