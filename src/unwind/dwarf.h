/* SPDX-License-Identifier: MIT */
/* Internal to src/unwind: the CFI unwinder behind nw_unwind() in dwarf mode. */
#ifndef NW_UNWIND_DWARF_H
#define NW_UNWIND_DWARF_H

#include <stdbool.h>

#include "unwind/unwind.h"

struct nw_dwarf *nw_dwarf_new(const struct nw_arch_ops *arch, uint64_t regs_mask);
void nw_dwarf_free(struct nw_dwarf *d);
/* *complete: the CFI said the outermost frame was reached. */
size_t nw_dwarf_unwind(struct nw_dwarf *d, const struct nw_unwind_ctx *ctx,
		       const struct nw_sample *s, struct nw_frame *out, size_t max,
		       struct nw_unwind_stats *stats, bool *complete);
void nw_dwarf_forget(struct nw_dwarf *d, uint32_t pid);

#endif
