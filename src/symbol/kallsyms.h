/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols from /proc/kallsyms: the text symbols (t, T, w, W) sorted
 * by address, so that a kernel PC resolves to the function whose start is
 * the greatest at or below it.  Symbols of loadable modules carry their
 * module's name ("[ext4]").  Where kernel.kptr_restrict hides the
 * addresses (they read as 0), the table says so and resolves nothing.
 */
#ifndef NW_KALLSYMS_H
#define NW_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nw_ksym {
	uint64_t addr;
	const char *name;      /* in the table's string pool */
	const char *module;    /* "ext4" for "[ext4]"; NULL: the kernel image */
};

struct nw_kallsyms {
	struct nw_ksym *v;
	size_t n, cap;
	char *pool;            /* the file's text, names cut out in place */
	bool hidden;           /* the file lists symbols, all at address 0 */
	uint64_t text_end;     /* _etext, 0 unknown: PCs past the last symbol of the image */
};

/*
 * Reads @path (NULL: /proc/kallsyms) into @ks.  0, -errno when it cannot
 * be read, -ENOMEM.  A table of hidden addresses reads fine (ks->hidden).
 */
int nw_kallsyms_load(struct nw_kallsyms *ks, const char *path);
void nw_kallsyms_fini(struct nw_kallsyms *ks);

/* The symbol of kernel PC @pc, or NULL. */
const struct nw_ksym *nw_kallsyms_find(const struct nw_kallsyms *ks, uint64_t pc);

#endif
