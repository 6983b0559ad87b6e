/* SPDX-License-Identifier: MIT */
#include "elf/vdso.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

void nw_vdso_init(struct nw_vdso *v)
{
	v->fd = -1;
}

void nw_vdso_fini(struct nw_vdso *v)
{
	if (v->fd >= 0)
		close(v->fd);
	v->fd = -1;
}

/* The image's size: its section headers come last. */
static size_t vdso_size(const unsigned char *base)
{
	Elf64_Ehdr eh;

	memcpy(&eh, base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	return eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
}

int nw_vdso_dup_fd(struct nw_vdso *v)
{
	int fd;

	if (v->fd == -1) {
		const unsigned char *base = (const void *)getauxval(AT_SYSINFO_EHDR);
		size_t size = base ? vdso_size(base) : 0;

		if (!size || size > (1 << 20)) {
			v->fd = -2;
			return -ENOENT;
		}
		fd = memfd_create("narwhal-vdso", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (write(fd, base, size) != (ssize_t)size) {
			close(fd);
			return -EIO;
		}
		v->fd = fd;
	}
	if (v->fd < 0)
		return -ENOENT;
	fd = fcntl(v->fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}
