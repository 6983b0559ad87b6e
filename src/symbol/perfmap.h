/* SPDX-License-Identifier: MIT */
/*
 * JIT symbols through perf map files: a JIT that writes
 * /tmp/perf-<pid>.map (one "START SIZE name" line per piece of generated
 * code, START and SIZE in hex) names code that lives in anonymous
 * executable memory, where no ELF file can.  Later lines win where entries
 * overlap (a JIT reuses freed code memory and appends the new code's line).
 */
#ifndef NW_PERFMAP_H
#define NW_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/symtab.h"

/* Files larger than this are refused (-EFBIG). */
#define NW_PERFMAP_MAX_SIZE (256u << 20)
/* Names longer than this make their line malformed. */
#define NW_PERFMAP_MAX_NAME 65536

/* The code range [start, end) named @name. */
struct nw_perfmap_sym {
	uint64_t start, end;
	const char *name;
};

struct nw_perfmap {
	struct nw_perfmap_sym *v; /* disjoint, sorted by start: what each address resolves to */
	size_t n;
	size_t nentries; /* lines used */
	size_t nbad;	 /* lines skipped as malformed */
	char *names;	 /* storage of the names */
	char *raw;	 /* the bytes parsed, unchanged */
	size_t rawlen;
};

/*
 * Parses the @len bytes at @buf (copied; they need no NUL).  A line is
 * START, blanks, SIZE, blanks, NAME: START and SIZE hex with an optional
 * 0x, at most 16 digits, NAME the rest of the line without trailing blanks
 * or CR.  Lines with an empty name, a zero size, an end past 2^64-1, a NUL
 * byte or a name over NW_PERFMAP_MAX_NAME are skipped and counted in nbad.
 * -ENOMEM.
 */
int nw_perfmap_parse(const char *buf, size_t len, struct nw_perfmap **ret);

/*
 * Reads and parses the perf map at @path.  Like perf, it only trusts a
 * regular file (no symlink, no FIFO) owned by the effective user or root:
 * -EPERM otherwise.  -ENOENT when missing, -EFBIG over NW_PERFMAP_MAX_SIZE,
 * -ENOMEM, -errno of open/read.
 */
int nw_perfmap_read(const char *path, struct nw_perfmap **ret);

void nw_perfmap_free(struct nw_perfmap *m);

/* The symbol holding @addr, or NULL. */
const struct nw_perfmap_sym *nw_perfmap_find(const struct nw_perfmap *m, uint64_t addr);

/*
 * One frame for @addr (function = the JIT's name, no file) into
 * *ret_frames, as nw_symbolize does; *ret_n is 0 when no entry holds it.
 * -ENOMEM.
 */
int nw_perfmap_symbolize(const struct nw_perfmap *m, uint64_t addr, struct nw_symframe **ret_frames,
			 uint32_t *ret_n);

/* Writes the bytes @m was parsed from to a new file @path (replacing it).  -errno. */
int nw_perfmap_save(const struct nw_perfmap *m, const char *path);

/*
 * True for the module paths the kernel gives memory that no file backs
 * ("//anon", "", "[anon:NAME]", "[heap]", "/memfd:NAME"): where JIT code
 * lives and a perf map may name it.
 */
bool nw_perfmap_module_is_anon(const char *path);

struct nw_perfmap_proc {
	uint32_t pid;
	struct nw_perfmap *map; /* NULL: none or unusable */
};

/* The perf maps of the processes of one recording, each read once. */
struct nw_perfmaps {
	const char *dir; /* where perf-<pid>.map files are: "/tmp" */
	struct nw_perfmap_proc *v;
	size_t n, cap;
};

/* @dir is borrowed and must outlive @c. */
void nw_perfmaps_init(struct nw_perfmaps *c, const char *dir);
void nw_perfmaps_fini(struct nw_perfmaps *c);

/*
 * The perf map of process @pid (DIR/perf-<pid>.map), read at the first
 * call for that pid: *ret is NULL when it has none or it cannot be used.
 * 1 when this call read it (so the caller can keep a copy), 0 when it was
 * looked up before, -ENOMEM.
 */
int nw_perfmaps_get(struct nw_perfmaps *c, uint32_t pid, const struct nw_perfmap **ret);

#endif
