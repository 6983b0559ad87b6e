/* SPDX-License-Identifier: MIT */
/*
 * Symbolic frames: what the nodes of a symbolic tree stand for.  A frame
 * is a function of a module (from the symbol table), an address of a
 * module nothing is known about ("libfoo.so+0x1234"), an address no module
 * maps ("[unknown]"), or a frame that views add above the stacks: a thread
 * ("comm-tid", --per-thread) or an instrumented section ("[section NAME]",
 * --by-section).  Frames are interned by (kind, name, module), so the same
 * function in two epochs, threads or processes is one frame.
 */
#ifndef NW_FRAMES_H
#define NW_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "util/hash.h"

enum nw_frame_kind {
	NW_FRAME_FUNCTION,   /* a function, from the symbol table */
	NW_FRAME_ADDRESS,    /* module+0xADDR: the symbol table knows nothing */
	NW_FRAME_UNKNOWN,    /* [unknown]: no module maps the address */
	NW_FRAME_THREAD,     /* comm-tid: a thread as a root frame */
	NW_FRAME_SECTION,    /* [section NAME]: an instrumented section */
};

struct nw_func {
	enum nw_frame_kind kind;
	char *name;          /* function name, "module+0x1234", "[unknown]", "comm-tid", ... */
	char *short_name;    /* the readable form (report/names.h); NULL: the same as name */
	char *file;          /* the function's source file, NULL when unknown */
	uint32_t line;       /* the function's first line, 0 when unknown */
	char *module;        /* module path, NULL when none */
};

struct nw_frames {
	struct nw_func *v;
	uint32_t n;
	size_t cap;
	struct nw_index ix;
};

/* The module of thread frames, and the module of section frames. */
#define NW_FRAMES_THREAD_MODULE "[thread]"
#define NW_FRAMES_SECTION_MODULE "[sections]"
#define NW_FRAMES_SECTION_PREFIX "[section "

/* The name views show: the readable form, or the whole name with @full. */
static inline const char *nw_func_name(const struct nw_func *fn, bool full)
{
	return full || !fn->short_name ? fn->name : fn->short_name;
}

void nw_frames_init(struct nw_frames *f);
void nw_frames_fini(struct nw_frames *f);
/*
 * The index of frame (@kind, @name, @module), added when new (copies of
 * the strings).  @file and @line fill in what an earlier entry lacked.
 * -ENOMEM, -EINVAL for a NULL name.
 */
int64_t nw_frames_intern(struct nw_frames *f, enum nw_frame_kind kind, const char *name,
			 const char *file, uint32_t line, const char *module);

#endif
