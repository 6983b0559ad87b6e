/* SPDX-License-Identifier: MIT */
/*
 * The sections part of a measurement (DIR/sections/, see doc/SECTIONS.md):
 *
 *  - sections-<pid>.bin, written by libnarwhal (src/runtime/) in the
 *    program: a log of blocks (START, NAME, INTERVALS, END), each appended
 *    with one write(2).  The block layout below is the contract between the
 *    runtime (which includes this header for the constants only and links
 *    nothing of the profiler) and the reader here.

 * The time and calling context of each sample, which tell which sections
 * were open at it, are in the threads' traces (model/trace.h).
 *
 * The program writes its files into a staging directory that narwhal-record
 * creates before the run and names in NARWHAL_SECTIONS_DIR; at the end the
 * recorder moves it into the measurement as DIR/sections.
 *
 * All integers little-endian; all times CLOCK_MONOTONIC nanoseconds (the
 * clock of the samples: the recorder sets use_clockid).
 */
#ifndef NW_SECTIONLOG_H
#define NW_SECTIONLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the interval log: constants shared with the runtime ---- */

#define NW_SECLOG_ENV "NARWHAL_SECTIONS_DIR"
#define NW_SECLOG_SUBDIR "sections"
#define NW_SECLOG_PREFIX "sections-"          /* sections-<pid>.bin */
#define NW_SECLOG_MAGIC "NWSECT1"             /* 8 bytes with the NUL */
#define NW_SECLOG_VERSION 1

/* Block header: u32 type, u32 payload size, then the payload. */
#define NW_SECLOG_BLOCK_HEADER 8
enum nw_seclog_block {
	/*
	 * One program image starts (process start, fork child, exec): magic[8],
	 * u32 version, u32 pid, u64 start_ns, u32 timer (0 clock_gettime, 1 a
	 * cycle counter calibrated against CLOCK_MONOTONIC), u32 max_depth.
	 * Section ids of later blocks belong to this image.
	 */
	NW_SECLOG_START = 1,
	/* u32 id, u32 line, u32 name length, u32 file length, name, file (no NULs). */
	NW_SECLOG_NAME = 2,
	/*
	 * u32 tid, u32 count, u64 base_ns, then count records of five LEB128
	 * varints: section id, depth (0 = outermost), flags,
	 * zigzag(start - previous start; the first is against base_ns),
	 * end - start.
	 */
	NW_SECLOG_INTERVALS = 3,
	/*
	 * The image ends (exit, fatal signal): u64 end_ns, u64 overflow (opens
	 * beyond max_depth), u64 unbalanced, u64 dropped (intervals over the
	 * size limit), u64 unregistered (opens over the name or path limits),
	 * u32 reason (0 exit, 1 signal, 2 narwhal_report()), u32 signal.
	 */
	NW_SECLOG_END = 4,
};

#define NW_SECLOG_START_SIZE 32
#define NW_SECLOG_NAME_FIXED 16
#define NW_SECLOG_INTERVALS_FIXED 16
#define NW_SECLOG_END_SIZE 48

/* Interval flags. */
#define NW_SECLOG_OPEN 1u       /* still open when the image ended: closed at its end */
#define NW_SECLOG_UNBALANCED 2u /* closed by an outer section's exit */

/* ---- reading the interval logs ---- */

struct nw_secname {
	char *name;
	char *file;        /* where it was first opened; "" when unknown */
	uint32_t line;
};

struct nw_secinterval {
	uint64_t start, end;   /* CLOCK_MONOTONIC ns, end >= start */
	uint32_t name;         /* index into nw_seclog.names */
	uint16_t depth;
	uint16_t flags;        /* NW_SECLOG_* */
};

/* The intervals of one thread (pid, tid), sorted by (start, depth). */
struct nw_secthread {
	uint32_t pid, tid;
	struct nw_secinterval *v;
	size_t n, cap;
};

/*
 * Every interval log of a directory, merged: names are interned across
 * processes and images (the same name is one section everywhere).
 */
struct nw_seclog {
	struct nw_secname *names;
	uint32_t nnames, cap_names;
	struct nw_secthread *threads;
	uint32_t nthreads, cap_threads;
	uint32_t nfiles, nimages;
	uint64_t nintervals;
	/* From the END blocks, summed. */
	uint64_t overflow, unbalanced, dropped, unregistered;
	uint32_t unended;      /* images without an END block (killed) */
	uint32_t truncated;    /* files that end inside a block */
	uint64_t start_ns, end_ns; /* earliest START, latest END (0: none) */
};

/*
 * Parses one log of @size bytes into @log (names from @path in messages).
 * A file cut short inside a block keeps what came before it (counted in
 * truncated).  -EBADMSG with a message in @err for a file that is not a
 * log or whose blocks contradict themselves, -ENOMEM.
 */
int nw_seclog_parse(struct nw_seclog *log, const void *buf, size_t size, const char *path,
		    char *err, size_t errlen);
/*
 * Reads every sections-*.bin of @dir and sorts each thread's intervals.
 * -ENOENT when @dir holds none; -errno, -EBADMSG with a message.  *ret is
 * the caller's, to free with nw_seclog_free().
 */
int nw_seclog_read_dir(const char *dir, struct nw_seclog **ret, char *err, size_t errlen);
/* Is @name the name of an interval log file (sections-<pid>.bin)? */
bool nw_seclog_is_log_name(const char *name);
/* An empty log; NULL on ENOMEM. */
struct nw_seclog *nw_seclog_new(void);
/* Sorts each thread's intervals by (start, depth). */
void nw_seclog_sort(struct nw_seclog *log);
void nw_seclog_free(struct nw_seclog *log);
/* The thread (pid, tid), or NULL. */
const struct nw_secthread *nw_seclog_thread(const struct nw_seclog *log, uint32_t pid,
					    uint32_t tid);

#endif
