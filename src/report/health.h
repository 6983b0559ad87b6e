/* SPDX-License-Identifier: MIT */
/*
 * Stack health: how many samples were unwound all the way, and where the
 * others stopped.  Each sample of the threads' physical trees (a node's
 * samples metrics: the samples whose leaf it is) is classified by its path:
 *
 * - complete: the outermost frame (the root's child) is a thread entry:
 *   _start, __libc_start_main(_impl), __libc_start_call_main, main,
 *   start_thread, clone, clone3, __clone, __clone3, thread_start, and
 *   the loader's _dl_start_user (a "__GI_" prefix is ignored).  Debian's libc has no frame pointers, so fp
 *   chains end at __libc_start_call_main or start_thread: they count.
 * - in execve: not complete, and the path goes through the kernel's
 *   execve (sys_execve, do_execveat_common): the sample's user registers
 *   are the old program's, its maps and stack the new one's.  Not a stop.
 * - truncated: the path is as deep as the recorder's limit (the manifest's
 *   max_stack; without it 127, the kernel's default perf_event_max_stack,
 *   for fp and 512 for dwarf).  Depth counts physical frames, as the
 *   recorder's limit does: an inline chain is one frame.
 * - stopped in module M: anything else; M is the outermost frame's module
 *   (NULL for a frame no module maps), and the cause: in fp mode a broken
 *   frame-pointer chain; in dwarf mode the stack copy exhausted (the
 *   outermost frame's stack pointer within 512 bytes of the copy's end
 *   above the leaf's), no CFI for the address (a module without
 *   .eh_frame or .debug_frame by its ELF facts), or a CFI failure; in
 *   either mode JIT code (anonymous memory) that no perf map names.
 *   Each cause has its own remedy.
 */
#ifndef NW_HEALTH_H
#define NW_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report/stacks.h"

/* Depth limits when the manifest does not say (older measurements). */
#define NW_HEALTH_FP_MAX_STACK 127    /* the kernel's default perf_event_max_stack */
#define NW_HEALTH_DWARF_MAX_STACK 512 /* NW_UNWIND_MAX_FRAMES */

/* Why unwinding stopped before a thread entry. */
enum nw_stop_cause {
	NW_STOP_FP,      /* fp: the frame-pointer chain broke (code without frame pointers) */
	NW_STOP_COPY,    /* dwarf: the unwinder ran off the stack copy */
	NW_STOP_NO_CFI,  /* dwarf: no CFI for the address (the module has none, or no module) */
	NW_STOP_JIT,     /* code in anonymous memory that no perf map names */
	NW_STOP_OTHER,   /* dwarf: CFI present, the copy not exhausted */
	NW_STOP_CAUSES,
};

/* "stack copy exhausted", ... */
const char *nw_stop_cause_name(enum nw_stop_cause cause);

/* One module and cause where unwinding stops. */
struct nw_health_stop {
	enum nw_stop_cause cause;
	char *module; /* module path; NULL: no module maps the frame */
	uint64_t samples;
	char *func; /* the outermost function most often seen there */
	uint64_t func_samples;
	bool system; /* a system library (/lib, /usr/lib, [vdso]), not the program's */
	int cfi;     /* dwarf mode: 1 the module has CFI, 0 none, -1 unknown */
};

struct nw_health {
	bool dwarf;	     /* recorded with --call-graph dwarf or bpf (CFI) */
	bool bpf;	     /* ... bpf: unwound in the kernel, no stack copy */
	uint64_t bpf_frames, bpf_fp_frames, bpf_copies;
	uint32_t max_stack;  /* the depth limit applied */
	uint32_t stack_size; /* dwarf mode's stack copy, bytes */
	uint64_t samples, complete, truncated, stopped;
	uint64_t in_exec;    /* taken inside execve (not complete, not a stop) */
	uint32_t nstops;
	struct nw_health_stop *stops; /* most samples first */
};

/*
 * Classifies the samples of the physical trees of @m's threads that @f
 * selects (NULL: all), where each path is one thread's as the recorder
 * unwound it: no symbolic tree is built, only the outermost frame of each
 * path is symbolized.  The call graph mode and limits come from the
 * model's run (fp without one).  0, -ENOMEM, -EINVAL for a tree whose
 * nodes do not come parents first; *ret is the caller's, to free with
 * nw_health_free().
 */
int nw_health_classify(const struct nw_measurement *m, const struct nw_filter *f,
		       struct nw_health **ret);
void nw_health_free(struct nw_health *h);

/* Is @name a thread entry (see above)? */
bool nw_health_is_entry(const char *name);

/* What to do about the samples that stop at @s, into @buf; returns @buf. */
const char *nw_health_remedy(const struct nw_health *h, const struct nw_health_stop *s, char *buf,
			     size_t len);

/*
 * narwhal-report --stack-health: the complete and truncated shares and the
 * table of where unwinding stops, each with its remedy.  0, -EIO when
 * writing failed.
 */
int nw_health_print(FILE *out, const struct nw_health *h);

/*
 * One line for narwhal-record to print at the end of a run, from the model
 * it wrote to @dir: "stacks: 99.6% complete, 0.0% truncated" into @line,
 * followed by "; run narwhal-report --stack-health DIR for where unwinding
 * stops" when some sample is not complete.  0 or -ENOMEM.
 */
int nw_health_summary(const struct nw_measurement *m, const char *dir, char *line, size_t len);

#endif
