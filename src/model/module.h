/* SPDX-License-Identifier: MIT */
/*
 * Load modules: every file (or pseudo-file: [vdso], //anon, [kernel.kallsyms])
 * that executable code of a measurement was mapped from, interned by path
 * and build-id, with the facts of its ELF file that the views need: the
 * loadable segments (file offset <-> ELF address), the entry point and
 * whether it has call frame information.  The recorder reads the facts
 * when a module is first mapped (elf/facts.h) and the measurement keeps
 * them, so a report never opens a binary.
 */
#ifndef NW_MODULE_H
#define NW_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NW_BUILD_ID_MAX 20

/*
 * The module of kernel code: one mapping over the kernel's half of the
 * address space, whose ELF address is the address itself (kernel frames
 * are symbolized from /proc/kallsyms, symbol/kallsyms.h).
 */
#define NW_KERNEL_MODULE "[kernel.kallsyms]"
#define NW_KERNEL_START (1ull << 63)

struct nw_segment {
	uint64_t vaddr, memsz;   /* address range */
	uint64_t offset, filesz; /* file range */
	bool exec;               /* PF_X */
};

/* What the module's ELF file says; known is false when it could not be read. */
struct nw_module_facts {
	bool known;
	bool has_cfi;            /* .eh_frame or .debug_frame with contents */
	bool dyn;                /* ET_DYN (PIE, shared library), else ET_EXEC */
	uint16_t machine;        /* e_machine */
	uint8_t build_id[NW_BUILD_ID_MAX];
	uint8_t build_id_size;   /* the file's own build-id note; 0: none */
	uint64_t entry;          /* e_entry */
	uint32_t nsegs;
	struct nw_segment *segs; /* PT_LOAD segments, file order */
};

struct nw_module {
	char *path;                  /* as the kernel named it: "/usr/lib/x.so", "[vdso]", "//anon" */
	/*
	 * Where this machine reads the file while recording, when not at
	 * @path: a container's file ("/proc/PID/root/..."), a deleted file,
	 * kept open as "/proc/self/fd/N"; NULL: at @path.  Not written.
	 */
	char *source;
	uint8_t build_id[NW_BUILD_ID_MAX];
	uint8_t build_id_size;       /* 0: unknown */
	struct nw_module_facts facts;
};

/* Every module of a recording, interned by (path, build-id). */
struct nw_module_table {
	struct nw_module *v;
	uint32_t n, cap;
};

void nw_module_table_init(struct nw_module_table *t);

/* The file to read for module @m: its source, else its path. */
static inline const char *nw_module_source(const struct nw_module *m)
{
	return m->source ? m->source : m->path;
}
void nw_module_table_fini(struct nw_module_table *t);
/* Index of (path, build id), added when new; -ENOMEM. */
int nw_module_intern(struct nw_module_table *t, const char *path, const uint8_t *build_id,
		     size_t build_id_size);
/* The first module called @path, or -ENOENT. */
int nw_module_find(const struct nw_module_table *t, const char *path);

/* Copies @src into @dst (which owns nothing yet).  -ENOMEM. */
int nw_module_facts_copy(struct nw_module_facts *dst, const struct nw_module_facts *src);
void nw_module_facts_fini(struct nw_module_facts *f);

/*
 * The ELF virtual address of file offset @offset of an executable mapping
 * (a segment is mapped from its offset rounded down to a page; where that
 * page is shared with another segment, lld's layout, the PF_X one wins).
 * -ERANGE when no segment holds it.
 */
int nw_facts_offset_to_vaddr(const struct nw_module_facts *f, uint64_t offset,
			     uint64_t *ret_vaddr);
/* The file offset of ELF address @vaddr.  -ERANGE when no segment holds it. */
int nw_facts_vaddr_to_offset(const struct nw_module_facts *f, uint64_t vaddr,
			     uint64_t *ret_offset);
/* The index of the segment that holds ELF address @vaddr, or -1. */
int nw_facts_segment_of(const struct nw_module_facts *f, uint64_t vaddr);

/* Lowercase hex of @size bytes of @id into @buf (2 * size + 1 bytes), "" for none. */
void nw_build_id_hex(const uint8_t *id, size_t size, char *buf, size_t len);
/* Parses hex @hex into @id (room for NW_BUILD_ID_MAX).  -EINVAL. */
int nw_build_id_parse(const char *hex, uint8_t *id, uint8_t *ret_size);

#endif
