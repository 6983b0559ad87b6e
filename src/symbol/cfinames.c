/* SPDX-License-Identifier: MIT */
/*
 * Naming code no symbol names from its CFI (symfile.h): a stripped
 * program's or library's own functions, the vdso's static ones, named
 * "module+0xSTART" after the start of the function whose FDE in
 * .eh_frame covers the PC, found through .eh_frame_hdr's search table.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "symbol/symfile.h"
#include "util/strbuf.h"

/*
 * The file name a report shows for the file read as @path: the recorder
 * reads most files through a descriptor it kept ("/proc/self/fd/N"),
 * whose link names the file.  Into @buf (@len bytes).
 */
static const char *shown_name(const char *path, char *buf, size_t len)
{
	char link[PATH_MAX];
	ssize_t n;

	if (strncmp(path, "/proc/self/fd/", 14) ||
	    (n = readlink(path, link, sizeof(link) - 1)) <= 0)
		return nw_basename(path);
	link[n] = 0;
	if (n > 10 && !strcmp(link + n - 10, " (deleted)"))
		link[n - 10] = 0;
	snprintf(buf, len, "%s", nw_basename(link));
	return buf;
}

/* A 4-byte little- or big-endian field of @elf's byte order at @p. */
static uint32_t rd32(const unsigned char *p, bool msb)
{
	return msb ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		   : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/*
 * The start of the function whose FDE covers @vaddr, from the binary
 * search table of .eh_frame_hdr (the one layout every toolchain writes:
 * datarel sdata4 pairs; FDEs with pcrel sdata4 pc_begin, checked against
 * the table).  false where there is none.
 */
static bool fde_start(Elf *elf, uint64_t vaddr, uint64_t *ret)
{
	bool msb = elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB;
	Elf_Scn *scn = NULL, *hdr = NULL, *eh = NULL;
	Elf_Data *hd, *ed;
	GElf_Shdr hs, es;
	size_t shstrndx, lo, hi, n;
	const unsigned char *t;
	uint64_t loc, fde, begin, range;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (name && !strcmp(name, ".eh_frame_hdr"))
			hdr = scn;
		else if (name && !strcmp(name, ".eh_frame"))
			eh = scn;
	}
	if (!hdr || !eh || !gelf_getshdr(hdr, &hs) || !gelf_getshdr(eh, &es) ||
	    !(hd = elf_rawdata(hdr, NULL)) || !(ed = elf_rawdata(eh, NULL)) || hd->d_size < 12)
		return false;
	t = hd->d_buf;
	/* version 1; fde_count udata4 (0x03); table datarel|sdata4 (0x3b). */
	if (t[0] != 1 || t[2] != 0x03 || t[3] != 0x3b)
		return false;
	n = rd32(t + 8, msb);
	if (n > (hd->d_size - 12) / 8 || !n)
		return false;
	t += 12;
	/* The last entry whose initial location is at or below @vaddr. */
	lo = 0;
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (hs.sh_addr + (uint64_t)(int64_t)(int32_t)rd32(t + 8 * mid, msb) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	loc = hs.sh_addr + (uint64_t)(int64_t)(int32_t)rd32(t + 8 * (lo - 1), msb);
	fde = hs.sh_addr + (uint64_t)(int64_t)(int32_t)rd32(t + 8 * (lo - 1) + 4, msb);
	/* The FDE: length, CIE pointer, pc_begin (pcrel sdata4), pc_range. */
	if (fde < es.sh_addr || fde - es.sh_addr + 16 > ed->d_size)
		return false;
	{
		const unsigned char *f = (const unsigned char *)ed->d_buf + (fde - es.sh_addr);

		begin = fde + 8 + (uint64_t)(int64_t)(int32_t)rd32(f + 8, msb);
		range = rd32(f + 12, msb);
	}
	if (begin != loc || vaddr - loc >= range)
		return false;
	*ret = loc;
	return true;
}

/*
 * Code no symbol names (a stripped program's or library's own functions,
 * the vdso's static ones): named after the start of the function its
 * .eh_frame covers, "module+0xSTART", so that its samples gather in one
 * frame per function, not one per address as perf shows them.  No debug
 * file is loaded for it.  *ret_n is 0 where no FDE covers @vaddr.
 */
int nw_symbolize_cfi(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
		     uint32_t *ret_n)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(f->mod, &bias);
	struct nw_symframe *fr;
	char name[NAME_MAX + 1];
	uint64_t start;

	*ret_n = 0;
	if (!elf || !fde_start(elf, vaddr, &start))
		return 0;
	fr = calloc(1, sizeof(*fr));
	if (!fr || !(fr->function = nw_strdup_printf("%s+0x%llx", shown_name(f->path, name,
										 sizeof(name)),
						     (unsigned long long)start))) {
		free(fr);
		return -ENOMEM;
	}
	*ret_frames = fr;
	*ret_n = 1;
	return 0;
}
