/* SPDX-License-Identifier: MIT */
/*
 * code.nwcode: the code store (model/codestore.h) on disk, beside the
 * symbol table.  Layout in doc/DISASSEMBLY.md ("The code file"); every
 * count, index and length is checked against the file before it is used,
 * and a file that breaks a rule is refused with the byte where it goes
 * wrong (fuzz/fuzz-code.c fuzzes the parser).
 */
#ifndef NW_CODEFILE_H
#define NW_CODEFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/codestore.h"
#include "model/measurement.h"
#include "model/module.h"

#define NW_CODEFILE_NAME "code.nwcode"
#define NW_CODEFILE_MAGIC "NWCODE01"
#define NW_CODEFILE_VERSION 1u

/*
 * Writes @cs (sorted) to @f, its modules named by path and build-id from
 * @modules.  0, -EINVAL for a store that breaks the file's rules (a module
 * index out of range, functions out of order or overlapping), -EIO.
 */
int nw_codefile_write_fp(FILE *f, const struct nw_codestore *cs,
			 const struct nw_module_table *modules);

/*
 * Parses the @len bytes of @buf, read from @path (named in messages), into
 * a new store whose module indices are @modules' (each module of the file
 * found there by path and build-id, or added).  -EBADMSG with a message
 * naming @path and the byte offset, -ENOMEM.
 */
int nw_codefile_parse(const uint8_t *buf, size_t len, const char *path,
		      struct nw_module_table *modules, struct nw_codestore **ret, char *err,
		      size_t errlen);

/*
 * Reads the code store of the measurement @m opened from @dir (a file of
 * the directory, or an entry of its checkpoint's pack and journal) into
 * m->code.  1 when read, 0 when the measurement has none (recorded
 * without it, or by an older narwhal-record), -errno, -EBADMSG for a
 * corrupt file, with a message naming it.
 */
int nw_measurement_read_code(struct nw_measurement *m, const char *dir, char *err,
			     size_t errlen);

#endif
