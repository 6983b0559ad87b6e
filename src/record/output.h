/* SPDX-License-Identifier: MIT */
/*
 * Where and when a recording writes its measurement, so that a recorder
 * killed at any moment leaves a complete one of everything up to its last
 * write (doc/DURABILITY.md):
 *
 *  - one directory (the default): DIR, written at each checkpoint (every
 *    checkpoint_ns, the first after at most a second), at each snapshot
 *    asked for, and at the end.  The run's first write moves an older
 *    run's DIR aside (DIR.old); later ones replace DIR in one step.
 *  - rotation (rotate_ns): one complete measurement per interval,
 *    DIR/0001, DIR/0002, ..., each checkpointed the same way while it is
 *    the current one; beyond max_files entries or max_bytes on disk the
 *    oldest go.
 *
 * Every write is atomic (nw_measurement_write(), or a checkpoint's
 * nw_measurement_write_pack(), which appends what changed to a journal
 * while the journal is smaller than the pack): a write that fails (a full
 * disk) leaves what was there before.
 */
#ifndef NW_OUTPUT_H
#define NW_OUTPUT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "format/writer.h"
#include "model/measurement.h"

struct nw_output_opts {
	const char *dir;
	uint64_t checkpoint_ns;  /* 0: no checkpoints */
	uint64_t rotate_ns;      /* 0: one directory */
	uint64_t max_bytes;      /* rotation: 0 no limit */
	uint32_t max_files;      /* rotation: 0 no limit */
	/* Checkpoints after the first append what changed to a journal (writer.h). */
	bool journal;
};

struct nw_output {
	struct nw_output_opts o;
	uint64_t next_checkpoint, next_rotation; /* CLOCK_MONOTONIC ns; 0: never */
	uint32_t seq;            /* rotation: the current interval's number, from 1 */
	bool wrote;              /* the current target was written by this run */
	unsigned checkpoints, snapshots, rotations, failures;
	char path[PATH_MAX];     /* the current target: DIR, or DIR/NNNN */
	char last[PATH_MAX];     /* where the last write that succeeded went */
	struct nw_journal journal; /* what the current target's checkpoint holds */
};

/*
 * Checks before the run that a measurement can be written to @dir: its
 * parent directory exists and is writable.  -errno with a message in @err.
 */
int nw_output_check(const char *dir, char *err, size_t errlen);

/*
 * Starts at CLOCK_MONOTONIC @now.  With rotation, creates DIR (an older
 * run's DIR moves aside to DIR.old).  -errno with a message in @err.
 */
int nw_output_init(struct nw_output *out, const struct nw_output_opts *o, uint64_t now,
		   char *err, size_t errlen);

/* Frees the journal; a zeroed @out too. */
void nw_output_fini(struct nw_output *out);
/* What is due at @now: nothing, a checkpoint, or the end of a rotation interval. */
enum nw_output_due {
	NW_DUE_NONE,
	NW_DUE_CHECKPOINT,
	NW_DUE_ROTATION,
};
enum nw_output_due nw_output_due(const struct nw_output *out, uint64_t now);

/* How many milliseconds the recorder may wait at @now before something is due (at most @max). */
int nw_output_wait_ms(const struct nw_output *out, uint64_t now, int max);

/*
 * Writes @m (and its extra files) to the current target, written as
 * m->run.written says; at @now.  A rotation's end (NW_RUN_ROTATION, or
 * NW_RUN_END in rotation mode) also moves on to the next interval and
 * removes the oldest beyond the limits.  -errno with a message in @err
 * (ENOSPC, EDQUOT and EROFS named); the target is then as it was.
 */
int nw_output_write(struct nw_output *out, const struct nw_measurement *m,
		    const struct nw_extra_file *extra, size_t nextra, uint64_t now, char *err,
		    size_t errlen);

/*
 * Rotation: removes the oldest intervals (DIR/NNNN and DIR/NNNN.pb.gz)
 * beyond max_files or max_bytes, never the newest.  The count removed.
 */
int nw_output_prune(struct nw_output *out);

#endif
