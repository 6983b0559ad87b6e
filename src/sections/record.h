/* SPDX-License-Identifier: MIT */
/*
 * The recorder's side of instrumented sections (doc/SECTIONS.md): the
 * staging directory that the program's libnarwhal writes its interval logs
 * into.  The join takes the time of each sample from the threads' traces.
 */
#ifndef NW_SECTIONS_RECORD_H
#define NW_SECTIONS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sections/seclog.h"

/* ---- the staging directory ---- */

/*
 * Creates an empty staging directory next to the measurement @output, as
 * an absolute path (the program may change directory): "<output>.sections-
 * XXXXXX".  Fills @buf, and locks it (flock) through *@ret_lock, a
 * close-on-exec descriptor the caller keeps open for the whole recording
 * and closes after nw_seclog_stage_finish() or _remove(): a stage whose
 * lock is free belongs to no recorder that runs (nw_seclog_stage_clean()).
 * -errno.
 */
int nw_seclog_stage_create(const char *output, char *buf, size_t len, int *ret_lock);
/*
 * Removes the staging directories beside @output that recorders killed
 * before their end (SIGKILL: nothing ran to remove them) left: those whose
 * lock nobody holds.  A recorder that runs keeps its own.  The count
 * removed.
 */
unsigned nw_seclog_stage_clean(const char *output);
/* Whether @stage holds any interval log. */
bool nw_seclog_stage_used(const char *stage);
/*
 * At the end of a recording, after the measurement directory @dir was
 * created: when the program wrote interval logs, moves @stage to
 * @dir/sections; else removes @stage.  -errno with a message in @err.
 */
int nw_seclog_stage_finish(const char *stage, const char *dir, char *err, size_t errlen);
/* Removes @stage and what is in it (a run that wrote no measurement). */
void nw_seclog_stage_remove(const char *stage);

#endif
