/* SPDX-License-Identifier: MIT */
/*
 * Writing a measurement directory: pure serialisation of the model.  One
 * HPC_CSPROF file per thread that has a file name, symbols.json, the
 * code of the sampled functions when the model has it (code.nwcode,
 * format/codefile.h), the model's extra files (copies of JIT perf maps),
 * manifest.json last.
 *
 * Atomic: everything is written into a new directory beside @dir, each file
 * flushed to disk, and the new directory then takes @dir's place in one
 * rename, so a crash at any moment leaves either the old measurement or the
 * new one, never a mix.  The final write of a run, a checkpoint and a
 * snapshot are this one operation.
 */
#ifndef NW_WRITER_H
#define NW_WRITER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/measurement.h"
#include "util/hash.h"

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
 * What the checkpoint files of a directory hold, for the next checkpoint to
 * write only what changed: the pack, its journal's segments, and for each
 * thread its trees' epochs and node counts and its trace's length.
 */
struct nw_journal_thread {
	char *file;                /* the thread's .csprof name */
	uint32_t nepochs, ntrees;
	uint32_t *epochs, *nodes;  /* per tree, in file order: its file epoch, nodes held */
	bool traced;
	uint64_t trace_events, trace_bytes;
};

struct nw_journal {
	bool on;                   /* later checkpoints append to a journal */
	char pack[NAME_MAX + 1];   /* the pack in the directory; "" none yet */
	uint64_t pack_bytes;
	char file[NAME_MAX + 1];   /* its journal; "" none yet */
	uint64_t *segments, bytes; /* sizes of the journal's segments, their sum */
	uint32_t nsegments;
	size_t cap_segments;
	struct nw_journal_thread *threads;
	size_t nthreads, cap_threads;
	struct nw_index ix;        /* threads by file name */
	/*
	 * The modules and symbol entries symbols.json held at the last
	 * checkpoint: both only grow while a run writes the same directory,
	 * so a segment leaves it out while they are the same.
	 */
	uint32_t symbol_modules, symbol_entries;
	/* The generation of the code store it holds (model/codestore.h); 0: none. */
	uint64_t code_generation;
};

/*
 * An empty journal: the next checkpoint is a whole pack.  With @on false,
 * every checkpoint is (the flight recorder's traces are cut, not extended).
 */
void nw_journal_init(struct nw_journal *j, bool on);
/* Forgets everything (the next checkpoint is a whole pack); keeps @on. */
void nw_journal_fini(struct nw_journal *j);

/*
 * A checkpoint of @m in @dir: every file but the manifest in one pack
 * (format/pack.h), "checkpoint-XXXXXX.nwpack", then manifest.json naming
 * it, renamed into place.  Each is synced first, so @dir holds the last
 * complete checkpoint whenever the writer stops.  With NW_WRITE_NEW an
 * existing @dir (an older run's) moves aside to @dir.old; with
 * NW_WRITE_REPLACE the pack and manifest of @dir are replaced.  A later
 * nw_measurement_write() of the run replaces the whole directory.
 *
 * With a journal @j (NULL: none), a checkpoint of the same run (REPLACE)
 * appends to "checkpoint-XXXXXX.nwjournal" a segment, a pack of what
 * changed since the last (the nodes added and the metrics changed of each
 * tree, as csprof deltas; the trace events added; the symbols), and the
 * manifest names the pack, the journal and its segments; once the journal
 * outgrows what a whole pack would hold then, the next checkpoint is a
 * whole pack again.  The trees
 * must track their changes (nw_cct_track_changes()) and the caller clears
 * them after each write that succeeds.  0, or -errno with a message for
 * the user in @err.
 */
int nw_measurement_write_pack(const struct nw_measurement *m, const struct nw_extra_file *extra,
			      size_t nextra, const char *dir, enum nw_write_mode mode,
			      struct nw_journal *j, char *err, size_t errlen);
/*
 * The csprof file name of a thread: "<comm>-<pid>-<tid>.csprof", with
 * '/', spaces and control characters of the name made '_'.
 */
void nw_thread_file_name(char *buf, size_t len, const char *comm, uint32_t pid, uint32_t tid);

#endif
