/* SPDX-License-Identifier: MIT */
/*
 * The kernel's vdso as an ELF file: a memfd holding this process's vdso
 * image, which is the image every process of this kernel and ABI maps, so
 * libdwfl can unwind through and symbolize [vdso] frames of the target.
 */
#ifndef NW_VDSO_H
#define NW_VDSO_H

#include <stddef.h>

struct nw_vdso {
	int fd;         /* -1 until made; -2 when this process has no vdso */
};

void nw_vdso_init(struct nw_vdso *v);
void nw_vdso_fini(struct nw_vdso *v);
/* A new descriptor of the vdso image (the caller's to close), or -errno. */
int nw_vdso_dup_fd(struct nw_vdso *v);

#endif
