/* SPDX-License-Identifier: MIT */
/* symbols.json: the symbol table of a measurement on disk (model/symtab.h). */
#ifndef NW_SYMBOLS_H
#define NW_SYMBOLS_H

#include <stddef.h>
#include <stdio.h>

#include "model/module.h"
#include "model/symtab.h"

/* Writes @t, with the module list @modules, as JSON to @path.  -errno. */
int nw_symbols_write(const char *path, const struct nw_module_table *modules,
		     const struct nw_symtab *t);
/* The same to @f, left open and unsynced (a pack's entry).  -errno, -ENOMEM. */
int nw_symbols_write_fp(FILE *f, const struct nw_module_table *modules, const struct nw_symtab *t);
/*
 * Reads @path into the empty table @t: each module the file lists is
 * matched by (path, build-id) to @modules, and added there when missing,
 * so entries are keyed by @modules' indexes.  -errno for I/O (-ENOENT: no
 * file), -EBADMSG with a message naming the file and the key in @err,
 * -ENOMEM.  @t is left empty on failure.
 */
int nw_symbols_read(const char *path, struct nw_module_table *modules, struct nw_symtab *t,
		    char *err, size_t errlen);
/* The same from the @len bytes at @buf (followed by a NUL), called @name in messages. */
int nw_symbols_read_buf(const char *name, const char *buf, size_t len,
			struct nw_module_table *modules, struct nw_symtab *t, char *err,
			size_t errlen);

#endif
