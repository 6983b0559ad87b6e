/* SPDX-License-Identifier: MIT */
/*
 * Writing a measurement directory: pure serialisation of the model.  One
 * HPC_CSPROF file per thread that has a file name, symbols.json, the
 * model's extra files (copies of JIT perf maps), manifest.json last.
 *
 * Atomic: everything is written into a new directory beside @dir, each file
 * flushed to disk, and the new directory then takes @dir's place in one
 * rename, so a crash at any moment leaves either the old measurement or the
 * new one, never a mix.  The final write of a run, a checkpoint and a
 * snapshot are this one operation.
 */
#ifndef NW_WRITER_H
#define NW_WRITER_H

#include <stddef.h>

#include "model/measurement.h"

enum nw_write_mode {
	/* A new run: an existing @dir (an older run's) moves aside to @dir.old. */
	NW_WRITE_NEW,
	/* The same run again (checkpoint): the new measurement replaces @dir. */
	NW_WRITE_REPLACE,
};

/* An extra file of the measurement, written as it is. */
struct nw_extra_file {
	char *name;            /* relative to the directory: "jit/perf-123.map" */
	void *data;
	size_t size;
};

/*
 * Writes @m (and @nextra extra files) to @dir.  -errno with a message for
 * the user in @err that names the file and the cause (ENOSPC, EDQUOT and
 * EROFS say so); on failure @dir is as it was.
 */
int nw_measurement_write(const struct nw_measurement *m, const struct nw_extra_file *extra,
			 size_t nextra, const char *dir, enum nw_write_mode mode, char *err,
			 size_t errlen);

/*
 * A checkpoint of @m in @dir: every file but the manifest in one pack
 * (format/pack.h), "checkpoint-XXXXXX.nwpack", then manifest.json naming
 * it, renamed into place.  Each is synced first, so @dir holds the last
 * complete checkpoint whenever the writer stops.  With NW_WRITE_NEW an
 * existing @dir (an older run's) moves aside to @dir.old; with
 * NW_WRITE_REPLACE the pack and manifest of @dir are replaced.  A later
 * nw_measurement_write() of the run replaces the whole directory.  0, or
 * -errno with a message for the user in @err.
 */
int nw_measurement_write_pack(const struct nw_measurement *m, const struct nw_extra_file *extra,
			      size_t nextra, const char *dir, enum nw_write_mode mode, char *err,
			      size_t errlen);

/*
 * The csprof file name of a thread: "<comm>-<pid>-<tid>.csprof", with
 * '/', spaces and control characters of the name made '_'.
 */
void nw_thread_file_name(char *buf, size_t len, const char *comm, uint32_t pid, uint32_t tid);

#endif
