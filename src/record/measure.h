/* SPDX-License-Identifier: MIT */
/*
 * From a recording session to the model of its measurement (forward only:
 * the recorder never reads back what it wrote).  The model borrows the
 * session's modules, epochs and trees, so it is cheap to build at the end
 * and at every checkpoint; what it adds is the symbol table: each distinct
 * sampled PC is symbolized once per run (caller frames at ip - 1), through
 * the ELF file's DWARF or symbols, or the process's JIT perf map, whose
 * copy becomes an extra file of the measurement (jit/perf-PID.map).
 */
#ifndef NW_MEASURE_H
#define NW_MEASURE_H

#include "format/writer.h"
#include "model/measurement.h"
#include "model/places.h"
#include "record/codecap.h"
#include "record/session.h"
#include "record/tracer.h"
#include "symbol/kallsyms.h"
#include "symbol/perfmap.h"
#include "symbol/symbol.h"
#include "util/cache.h"

struct nw_measure {
	const struct nw_cache *cache; /* NULL or off: none */
	struct nw_symbolizer *sym;
	struct nw_symtab *symtab;     /* every PC symbolized so far */
	/*
	 * The places of the PCs seen, lent to the models built, and which of
	 * them are in symtab: a view of a model may add places too (the
	 * export at the end of a rotation interval).
	 */
	struct nw_places *places;
	uint8_t *done;
	size_t ndone, cap_done;
	struct nw_perfmaps jit;       /* /tmp/perf-<pid>.map of the processes */
	struct nw_extra_file *files;  /* copies of the perf maps used */
	size_t nfiles, cap_files;
	struct nw_kallsyms ksyms;     /* the kernel's symbols, from the cache or /proc/kallsyms */
	int ksyms_state;              /* 0 not read, 1 read, -errno could not be */
	/*
	 * Per session thread (by seq) and epoch: the nodes of its tree
	 * symbolized by an earlier build.  Trees only grow, so a checkpoint
	 * symbolizes what is new, not the whole tree again.
	 */
	struct nw_measure_marks { uint32_t *v; size_t n; } *marks;
	size_t nmarks, cap_marks;
	/*
	 * The places of recent (epoch, ip, as a caller): new nodes mostly
	 * repeat the PCs of older ones (other paths through the same call
	 * sites).  Emptied at each build, whose model numbers the epochs anew.
	 */
	struct nw_place_cache recent;
	/* The machine code of the sampled functions, the model's m->code (codecap.h). */
	struct nw_codecap code;
	unsigned checkpoints;          /* checkpoints built so far (the first carries no code) */
};

/*
 * @cache (NULL: none; borrowed) keeps kernel symbols and symbolization
 * results between runs: it makes a run cheaper, never changes what it
 * records.  -ENOMEM.
 */
int nw_measure_init(struct nw_measure *ms, struct nw_elf_cache *elf, const struct nw_cache *cache);
void nw_measure_fini(struct nw_measure *ms);

/*
 * Readies the kernel's symbols for kernel frames: nothing now when the
 * cache holds this kernel's (mapped at the first kernel PC); else
 * /proc/kallsyms is read now, in the recorder's set-up, where it costs
 * half the CPU it does beside a busy program (the kernel formats 120 K
 * lines), and its image's part kept in the cache.  A kallsyms that cannot
 * be read leaves kernel PCs unnamed.  -ENOMEM.
 */
int nw_measure_prepare_kernel(struct nw_measure *ms);

/*
 * The model of @s as it stands: @run (moved into the model: the caller's
 * strings now belong to it, and *run is zeroed), the metrics of the
 * session's events, its modules, epochs, processes, threads with samples
 * (each with its file name), trees and traces (@tracer's; NULL: none),
 * and the symbol table, after symbolizing every PC not seen before.  The
 * model borrows from @s, @tracer and @ms: free it before they change or
 * go.  -ENOMEM.
 */
int nw_measure_build(struct nw_measure *ms, struct nw_session *s,
		     const struct nw_tracer *tracer, struct nw_run *run,
		     struct nw_measurement **ret);

#endif
