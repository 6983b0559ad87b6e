/* SPDX-License-Identifier: MIT */
/*
 * manifest.json: what was recorded and how (the model's run), the metric
 * descriptors, the modules with their ELF facts, the processes and the
 * threads with their files.  Written by narwhal-record, read by
 * narwhal-report; json-c does the JSON.
 *
 * Version 2 added "metrics" and each module's "elf" facts.  Version 1
 * manifests (no descriptors) are read with two metrics per event, samples
 * and period (off-cpu: switches and nanoseconds): the layout every
 * version-1 writer used.
 */
#ifndef NW_MANIFEST_H
#define NW_MANIFEST_H

#include <stddef.h>
#include <stdio.h>

#include "model/measurement.h"

#define NW_MANIFEST_VERSION 2

/* Writes the manifest of @m to @path.  -errno. */
int nw_manifest_write(const char *path, const struct nw_measurement *m);
/* The same to @f, left open and unsynced (a pack's entry).  -errno, -ENOMEM. */
int nw_manifest_write_fp(FILE *f, const struct nw_measurement *m);
/*
 * Reads @path into the empty model @m: run, metrics, modules, processes
 * and threads (without trees).  -errno for I/O, -EBADMSG for JSON that is
 * not a manifest, with a message naming the file and the key in @err.
 */
int nw_manifest_read(const char *path, struct nw_measurement *m, char *err, size_t errlen);

#endif
