/* SPDX-License-Identifier: MIT */
/*
 * The recorder's side of instrumented sections (doc/SECTIONS.md): the
 * staging directory that the program's libnarwhal writes its interval logs
 * into, and the sample times (samples.bin) that the join needs, collected
 * through the session's sample hook.
 */
#ifndef NW_SECTIONS_RECORD_H
#define NW_SECTIONS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/session.h"
#include "sections/seclog.h"

/* Collecting during a recording: opaque, owned by narwhal-record. */
struct nw_stimes_rec;

/* NULL on ENOMEM. */
struct nw_stimes_rec *nw_stimes_rec_new(void);
void nw_stimes_rec_free(struct nw_stimes_rec *r);
/*
 * Keeps one sample of @th folded into node @node of its tree for the
 * epoch with index @epoch (nw_epoch.index).  24 bytes per sample.  -ENOMEM.
 */
int nw_stimes_rec_add(struct nw_stimes_rec *r, const struct nw_thread *th, uint32_t epoch,
		      uint32_t node, unsigned event, uint64_t time, uint64_t period);
/*
 * Writes @path: the samples of every thread of @tasks, node ids turned into
 * the preorder ids nw_csprof_write() gives and epochs into file epoch
 * indexes, threads named the way the measurement writer lists them in the
 * manifest.  -errno.
 */
int nw_stimes_write(const char *path, const struct nw_stimes_rec *r,
		    const struct nw_task_table *tasks);

/*
 * Points @hooks at @r: every sample the session folds is kept by
 * nw_stimes_rec_add().
 */
void nw_stimes_rec_hooks(struct nw_stimes_rec *r, struct nw_session_hooks *hooks);

/* ---- the staging directory ---- */

/*
 * Creates an empty staging directory next to the measurement @output, as
 * an absolute path (the program may change directory): "<output>.sections-
 * XXXXXX".  Fills @buf.  -errno.
 */
int nw_seclog_stage_create(const char *output, char *buf, size_t len);
/* Whether @stage holds any interval log. */
bool nw_seclog_stage_used(const char *stage);
/*
 * At the end of a recording, after the measurement directory @dir was
 * created: when the program wrote interval logs, moves @stage to
 * @dir/sections and writes the sample times of @r there; else removes
 * @stage.  -errno with a message in @err.
 */
int nw_seclog_stage_finish(const char *stage, const char *dir, const struct nw_stimes_rec *r,
			   const struct nw_task_table *tasks, char *err, size_t errlen);
/* Removes @stage and what is in it (a run that wrote no measurement). */
void nw_seclog_stage_remove(const char *stage);

#endif
