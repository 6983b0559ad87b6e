/* SPDX-License-Identifier: MIT */
/*
 * The measurement directory: one HPC_CSPROF file per sampled thread, the
 * symbol table (every distinct sampled PC resolved once) and manifest.json.
 */
#ifndef NW_MEASUREMENT_H
#define NW_MEASUREMENT_H

#include <stddef.h>

#include "model/epoch.h"
#include "record/tasks.h"
#include "format/csprof.h"
#include "format/manifest.h"

struct nw_measurement {
	const struct nw_task_table *tasks;
	const struct nw_module_table *modules;
	uint32_t nmetrics;
	const struct nw_csprof_metric *metrics;
	/* Filled in by the caller except procs, threads and modules, which the
	 * writer fills from the tables. */
	struct nw_manifest *manifest;
};

/*
 * Moves an existing @dir aside to @dir.old (replacing an older one) and
 * creates it empty.  -errno, with a message in @err.
 */
int nw_measurement_create_dir(const char *dir, char *err, size_t errlen);

/*
 * Writes everything into @dir (made by nw_measurement_create_dir): the
 * trees, then the symbol table (symbolizing each distinct PC once), then
 * the manifest, so that a measurement with a manifest is complete.
 * -errno with a message in @err.
 */
int nw_measurement_write(const char *dir, const struct nw_measurement *m, char *err,
			 size_t errlen);

#endif
