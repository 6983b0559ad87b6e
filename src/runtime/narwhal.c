/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal: the runtime of narwhal.h and of the GCC plugin.
 *
 * Fast path: each thread owns a stack of open sections and its own
 * statistics (count, total, self, min, max per nesting path), so threads
 * never contend; the timer is the CPU's cycle counter where it is
 * invariant (calibrated against CLOCK_MONOTONIC), else clock_gettime
 * (CLOCK_MONOTONIC).  A site remembers the last nesting it was entered in,
 * so entering a section is a few loads and stores and one timer read.
 *
 * Slow paths (first use of a site, a new nesting, a new thread) take one
 * process-wide lock.  At exit, on a fatal signal or on narwhal_report(), the
 * statistics of all threads are merged and printed (Narwhalyzer's flat
 * summary, hierarchy and details); under narwhal-record every closed
 * interval is also logged to $NARWHAL_SECTIONS_DIR/sections-<pid>.bin
 * (format: src/format/sectionlog.h) in CLOCK_MONOTONIC nanoseconds, the
 * clock of the samples.
 *
 * Unlike src/, the runtime must keep process-wide state (one struct rt): a
 * library called from anywhere in a program has no context to pass down.
 * It links nothing of the profiler and never calls exit or abort.
 */
#include "narwhal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "sections/seclog.h"

#define NW_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define NONE UINT32_MAX
#define CHUNK_SHIFT 6
#define CHUNK (1u << CHUNK_SHIFT)
#define NCHUNKS (NARWHAL_MAX_PATHS / CHUNK)
#define CACHE_SLOTS 256         /* per thread: (parent, section) -> path */
#define NAME_CACHE_SLOTS 64     /* per thread: name pointer -> section */
#define SEC_SLOTS 8192          /* > 2 * NARWHAL_MAX_SECTIONS */
#define PATH_SLOTS 32768        /* > 2 * NARWHAL_MAX_PATHS */
#define LOG_CAP 2048            /* intervals buffered per thread */
#define ENCODE_BUF 16384        /* bytes of one INTERVALS block at most */
#define MAX_CAL 8192            /* calibration points kept */
#define CAL_GAP_NS 10000000ull  /* a new calibration point every 10 ms of flushes */
#define DEFAULT_LOG_LIMIT (512ull << 20)

/* ---- data ---- */

/*
 * Per path, in timer ticks.  Self time is not kept: a path's self time is
 * its total minus the totals of its child paths, worked out in the report.
 */
struct rt_stats {
	uint64_t count, total, min, max;
};

struct rt_frame {
	uint64_t start;     /* ticks */
	uint32_t path;      /* NONE: not timed (over the limits) */
	uint32_t section;
};

struct rt_rec {
	uint64_t start, end; /* ticks */
	uint32_t section;
	uint16_t depth, flags;
};

struct rt_thread {
	uint32_t depth;     /* may exceed NARWHAL_MAX_DEPTH: those frames are not kept */
	uint32_t tid;
	uint64_t overflow, unbalanced, unregistered;
	struct rt_frame stack[NARWHAL_MAX_DEPTH];
	struct rt_stats *chunks[NCHUNKS];
	uint64_t cache_key[CACHE_SLOTS];
	uint32_t cache_path[CACHE_SLOTS];
	const char *name_ptr[NAME_CACHE_SLOTS];
	uint32_t name_sec[NAME_CACHE_SLOTS];
	/* Interval log: the owner appends at nlog; flushes hold log_lock. */
	pthread_mutex_t log_lock;
	struct rt_rec *log;
	uint32_t nlog, flushed;
	unsigned char *enc;
	struct rt_thread *next, *prev;
};

struct rt_section {
	char *name, *file;
	uint32_t line;
};

struct rt_path {
	uint32_t parent, section;
};

struct rt_cal_point {
	uint64_t ticks, ns;
};

static struct rt_state {
	pthread_mutex_t lock;          /* registrations, thread list, retired stats */
	pthread_key_t key;
	int use_tsc;
	struct rt_section sections[NARWHAL_MAX_SECTIONS];
	uint32_t nsections;
	uint32_t sec_slots[SEC_SLOTS];   /* section + 1, 0 empty */
	struct rt_path paths[NARWHAL_MAX_PATHS];
	uint32_t npaths;
	uint32_t path_slots[PATH_SLOTS]; /* path + 1, 0 empty */
	struct rt_stats retired[NARWHAL_MAX_PATHS]; /* of threads that ended */
	uint64_t retired_overflow, retired_unbalanced, retired_unregistered;
	struct rt_thread *threads;      /* live threads */
	uint32_t nthreads_seen;
	/* Timer calibration: ticks -> CLOCK_MONOTONIC ns, piecewise linear. */
	pthread_mutex_t cal_lock;
	struct rt_cal_point cal[MAX_CAL];
	uint32_t ncal;
	uint64_t start_ns;
	/* Interval log. */
	int logging;                    /* under narwhal-record: intervals are logged */
	int log_fd;                     /* -1: not open yet (a fork child opens on first use) */
	pthread_mutex_t open_lock;
	char log_dir[4096];
	uint64_t log_bytes, log_limit, dropped;
	int log_broken;
	/* Report. */
	int report;                     /* print the text report */
	char report_path[4096];
	int finished;
	pid_t pid;
} rt_state = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cal_lock = PTHREAD_MUTEX_INITIALIZER,
	.log_fd = -1,
	.open_lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static __thread struct rt_thread *tls_thread __attribute__((tls_model("initial-exec")));
static __thread int rt_tls_busy __attribute__((tls_model("initial-exec")));

/* Scratch of the report: static, so that a crash report allocates nothing. */
static struct {
	struct rt_stats paths[NARWHAL_MAX_PATHS];
	uint64_t open[NARWHAL_MAX_PATHS];
	uint64_t self[NARWHAL_MAX_PATHS];
	struct rt_stats secs[NARWHAL_MAX_SECTIONS];
	uint64_t sec_self[NARWHAL_MAX_SECTIONS];
	uint64_t callers[NARWHAL_MAX_SECTIONS + 1];
	uint32_t order[NARWHAL_MAX_PATHS];
	uint32_t first_child[NARWHAL_MAX_PATHS], next_sibling[NARWHAL_MAX_PATHS];
} scratch;

static void rt_init(void);

/* ---- time ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t rt_mono_ns(void)
{
	return mono_ns();
}

static inline __attribute__((always_inline)) uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (likely(rt_state.use_tsc))
		return __rdtsc();
#elif defined(__aarch64__)
	if (likely(rt_state.use_tsc)) {
		uint64_t v;

		__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#endif
	return rt_mono_ns();
}

/* Whether the cycle counter runs at a constant rate in every state (invariant TSC). */
static int rt_counter_usable(void)
{
	const char *env = getenv("NARWHAL_TIMER");

	if (env && strcmp(env, "clock") == 0)
		return 0;
#if defined(__x86_64__) || defined(__i386__)
	{
		unsigned a, b, c, d;

		if (!__get_cpuid(0x80000007, &a, &b, &c, &d))
			return 0;
		return (d >> 8) & 1;
	}
#elif defined(__aarch64__)
	return 1; /* the generic timer counts at a fixed frequency by architecture */
#else
	return 0;
#endif
}

/* A (ticks, ns) pair read as close together as this machine allows. */
static struct rt_cal_point rt_cal_read(void)
{
	struct rt_cal_point best = { 0, 0 };
	uint64_t best_gap = UINT64_MAX;

	if (!rt_state.use_tsc) {
		best.ns = mono_ns();
		best.ticks = best.ns;
		return best;
	}
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = ticks(), ns = mono_ns(), t1 = ticks();

		if (t1 - t0 < best_gap) {
			best_gap = t1 - t0;
			best.ticks = t0 + (t1 - t0) / 2;
			best.ns = ns;
		}
	}
	return best;
}

/* Adds a point (cal_lock held); every other old point goes when full. */
static void rt_cal_add(struct rt_cal_point p)
{
	if (rt_state.ncal && p.ticks <= rt_state.cal[rt_state.ncal - 1].ticks)
		return;
	if (rt_state.ncal == MAX_CAL) {
		uint32_t n = 1;

		for (uint32_t i = 2; i < MAX_CAL - 1; i += 2)
			rt_state.cal[n++] = rt_state.cal[i];
		rt_state.cal[n++] = rt_state.cal[MAX_CAL - 1];
		rt_state.ncal = n;
	}
	rt_state.cal[rt_state.ncal++] = p;
}

/* ticks -> ns through the segment of @a and @b (a.ticks < b.ticks). */
static uint64_t cal_interp(struct rt_cal_point a, struct rt_cal_point b, uint64_t t)
{
	double slope = (double)(int64_t)(b.ns - a.ns) / (double)(int64_t)(b.ticks - a.ticks);
	double d = (double)(int64_t)(t - a.ticks) * slope;

	return (uint64_t)((int64_t)a.ns + (int64_t)d);
}

/*
 * ticks -> CLOCK_MONOTONIC ns (cal_lock held), @last being a point read
 * after every tick count converted: the calibration points, then @last
 * where it is newer, are the corners of a piecewise linear map.  The search
 * starts at the newest segment: what is flushed is mostly recent.
 */
static uint64_t rt_cal_convert(uint64_t t, struct rt_cal_point last)
{
	uint32_t n = rt_state.ncal, m, k;

#define P(i) ((i) < n ? rt_state.cal[(i)] : last)
	if (!rt_state.use_tsc)
		return t;
	m = n + (n == 0 || last.ticks > rt_state.cal[n - 1].ticks);
	if (m < 2)
		return P(0).ns;
	for (k = m - 1; k > 0 && P(k).ticks > t; k--)
		;
	/* Segment (k, k+1); beyond the ends the nearest segment extrapolates. */
	if (k == m - 1)
		k = m - 2;
	return cal_interp(P(k), P(k + 1), t);
#undef P
}

/* Nanoseconds per tick over the whole run so far. */
static double rt_ns_per_tick(struct rt_cal_point now)
{
	if (!rt_state.use_tsc || rt_state.ncal == 0 || now.ticks <= rt_state.cal[0].ticks)
		return 1.0;
	return (double)(now.ns - rt_state.cal[0].ns) / (double)(now.ticks - rt_state.cal[0].ticks);
}

/* ---- little-endian output ---- */

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return p + 4;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return p + 8;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

static int write_block(int fd, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = write(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

static size_t start_block(unsigned char *b)
{
	unsigned char *p = b;

	p = put_u32(p, NW_SECLOG_START);
	p = put_u32(p, NW_SECLOG_START_SIZE);
	memcpy(p, NW_SECLOG_MAGIC, 8);
	p += 8;
	p = put_u32(p, NW_SECLOG_VERSION);
	p = put_u32(p, (uint32_t)rt_state.pid);
	p = put_u64(p, rt_state.start_ns);
	p = put_u32(p, rt_state.use_tsc ? 1 : 0);
	p = put_u32(p, NARWHAL_MAX_DEPTH);
	return (size_t)(p - b);
}

#define NAME_BLOCK_MAX (NW_SECLOG_BLOCK_HEADER + NW_SECLOG_NAME_FIXED + 1024)

static size_t name_block(unsigned char *b, uint32_t id)
{
	const struct rt_section *s = &rt_state.sections[id];
	size_t nl = strlen(s->name), fl = strlen(s->file);
	unsigned char *p = b;

	if (nl > 512)
		nl = 512;
	if (fl > 480)
		fl = 480;
	p = put_u32(p, NW_SECLOG_NAME);
	p = put_u32(p, (uint32_t)(NW_SECLOG_NAME_FIXED + nl + fl));
	p = put_u32(p, id);
	p = put_u32(p, s->line);
	p = put_u32(p, (uint32_t)nl);
	p = put_u32(p, (uint32_t)fl);
	memcpy(p, s->name, nl);
	memcpy(p + nl, s->file, fl);
	return (size_t)(p + nl + fl - b);
}

/*
 * The log's file descriptor, the file made on first use: at start, and in
 * a fork child at its first write (so that a child that only execs leaves
 * no file).  A new file begins with START and the names known so far.
 */
static int log_fd_get(void)
{
	unsigned char b[NAME_BLOCK_MAX];
	char path[sizeof(rt_state.log_dir) + 32];
	int fd = __atomic_load_n(&rt_state.log_fd, __ATOMIC_ACQUIRE);

	if (fd >= 0 || !rt_state.logging)
		return fd;
	pthread_mutex_lock(&rt_state.open_lock);
	fd = rt_state.log_fd;
	if (fd < 0 && rt_state.logging) {
		snprintf(path, sizeof(path), "%s/%s%d.bin", rt_state.log_dir, NW_SECLOG_PREFIX,
			 (int)rt_state.pid);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0 || write_block(fd, b, start_block(b))) {
			if (fd >= 0)
				close(fd);
			fd = -1;
			rt_state.logging = 0;
		} else {
			uint32_t n = __atomic_load_n(&rt_state.nsections, __ATOMIC_ACQUIRE);

			for (uint32_t i = 0; i < n; i++)
				write_block(fd, b, name_block(b, i));
			__atomic_store_n(&rt_state.log_fd, fd, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&rt_state.open_lock);
	return fd;
}

/*
 * Appends one block with one write(2) (O_APPEND: blocks of several threads
 * never interleave).  A short write stops the log: what follows would not
 * parse.
 */
static int log_write(const void *buf, size_t len, int counted)
{
	int fd;

	if (!rt_state.logging || __atomic_load_n(&rt_state.log_broken, __ATOMIC_RELAXED))
		return -1;
	if (counted &&
	    __atomic_add_fetch(&rt_state.log_bytes, len, __ATOMIC_RELAXED) > rt_state.log_limit)
		return -1;
	fd = log_fd_get();
	if (fd < 0)
		return -1;
	if (write_block(fd, buf, len)) {
		__atomic_store_n(&rt_state.log_broken, 1, __ATOMIC_RELAXED);
		return -1;
	}
	return 0;
}

static void rt_log_name_block(uint32_t id)
{
	unsigned char b[NAME_BLOCK_MAX];

	log_write(b, name_block(b, id), 0);
}

/*
 * Writes @n records as INTERVALS blocks of thread @t, encoded in t->enc
 * (t->log_lock held).  After the end (finished), records are dropped: the
 * end block counted what was open then.
 */
static void log_encode(struct rt_thread *t, const struct rt_rec *recs, uint32_t n)
{
	struct rt_cal_point last, seg = { 0, 0 };
	double slope = 1.0;
	uint32_t i = 0;
	int locked;

	if (!n)
		return;
	if (__atomic_load_n(&rt_state.finished, __ATOMIC_ACQUIRE) == 2 || !rt_state.logging ||
	    __atomic_load_n(&rt_state.log_bytes, __ATOMIC_RELAXED) >= rt_state.log_limit) {
		/* After the end, or over the size limit: counted, not encoded. */
		__atomic_add_fetch(&rt_state.dropped, n, __ATOMIC_RELAXED);
		return;
	}
	/* A crash report must not wait for a lock its own thread may hold. */
	locked = pthread_mutex_trylock(&rt_state.cal_lock) == 0;
	if (!locked && !__atomic_load_n(&rt_state.finished, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&rt_state.cal_lock);
		locked = 1;
	}
	last = rt_cal_read();
	if (locked && rt_state.use_tsc &&
	    (!rt_state.ncal || last.ns - rt_state.cal[rt_state.ncal - 1].ns >= CAL_GAP_NS))
		rt_cal_add(last);
	/* Most records fall in the newest segment: its slope, worked out once. */
	if (rt_state.use_tsc && rt_state.ncal &&
	    last.ticks > rt_state.cal[rt_state.ncal - 1].ticks) {
		seg = rt_state.cal[rt_state.ncal - 1];
		slope = (double)(int64_t)(last.ns - seg.ns) / (double)(int64_t)(last.ticks - seg.ticks);
	} else if (rt_state.use_tsc && rt_state.ncal >= 2) {
		seg = rt_state.cal[rt_state.ncal - 2];
		slope = (double)(int64_t)(rt_state.cal[rt_state.ncal - 1].ns - seg.ns) /
			(double)(int64_t)(rt_state.cal[rt_state.ncal - 1].ticks - seg.ticks);
	} else {
		seg.ticks = UINT64_MAX; /* no segment: rt_cal_convert() for all */
	}
#define CONVERT(t)                                                                         \
	(!rt_state.use_tsc ? (t)                                                           \
	 : (t) >= seg.ticks                                                                 \
		 ? (uint64_t)((int64_t)seg.ns + (int64_t)((double)((t)-seg.ticks) * slope)) \
		 : rt_cal_convert((t), last))
	while (i < n) {
		unsigned char *p = t->enc + NW_SECLOG_BLOCK_HEADER + NW_SECLOG_INTERVALS_FIXED;
		unsigned char *end = t->enc + ENCODE_BUF - 60;
		uint64_t base = CONVERT(recs[i].start), prev = base;
		uint32_t first = i, count;
		unsigned char *h = t->enc;
		size_t len;

		while (i < n && p < end) {
			const struct rt_rec *r = &recs[i++];
			uint64_t s = CONVERT(r->start), e = CONVERT(r->end);
			int64_t delta = (int64_t)(s - prev);

			if (e < s)
				e = s;
			p = put_varint(p, r->section);
			p = put_varint(p, r->depth);
			p = put_varint(p, r->flags);
			p = put_varint(p, ((uint64_t)delta << 1) ^ (uint64_t)(delta >> 63));
			p = put_varint(p, e - s);
			prev = s;
		}
		count = i - first;
		len = (size_t)(p - t->enc);
		h = put_u32(h, NW_SECLOG_INTERVALS);
		h = put_u32(h, (uint32_t)(len - NW_SECLOG_BLOCK_HEADER));
		h = put_u32(h, t->tid);
		h = put_u32(h, count);
		put_u64(h, base);
		if (log_write(t->enc, len, 1))
			__atomic_add_fetch(&rt_state.dropped, count, __ATOMIC_RELAXED);
	}
#undef CONVERT
	if (locked)
		pthread_mutex_unlock(&rt_state.cal_lock);
}

/* Writes the records of @t not written yet (t->log_lock held). */
static void rt_log_flush(struct rt_thread *t)
{
	uint32_t n = __atomic_load_n(&t->nlog, __ATOMIC_ACQUIRE);

	if (n > t->flushed)
		log_encode(t, t->log + t->flushed, n - t->flushed);
	t->flushed = n;
}

/* The owner's buffer is full: write it out and start over. */
static __attribute__((noinline)) void log_full(struct rt_thread *t)
{
	pthread_mutex_lock(&t->log_lock);
	rt_log_flush(t);
	t->flushed = 0;
	__atomic_store_n(&t->nlog, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&t->log_lock);
}

static inline void log_interval(struct rt_thread *t, uint64_t start, uint64_t end,
				uint32_t section, uint32_t depth, uint16_t flags)
{
	uint32_t n = t->nlog;
	struct rt_rec *r;

	if (unlikely(n == LOG_CAP)) {
		log_full(t);
		n = 0;
	}
	r = &t->log[n];
	r->start = start;
	r->end = end;
	r->section = section;
	r->depth = (uint16_t)depth;
	r->flags = flags;
	__atomic_store_n(&t->nlog, n + 1, __ATOMIC_RELEASE);
}

/* ---- registration (rt_state.lock held) ---- */

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t hash_u64(uint64_t v)
{
	v *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(v >> 32);
}

/* The section called @name, registered when new: its id, or NONE past the limit. */
static uint32_t section_lookup(const char *name, const char *file, int line)
{
	uint32_t h = hash_str(name) & (SEC_SLOTS - 1), id;

	for (;;) {
		uint32_t v = rt_state.sec_slots[h];

		if (!v)
			break;
		if (strcmp(rt_state.sections[v - 1].name, name) == 0)
			return v - 1;
		h = (h + 1) & (SEC_SLOTS - 1);
	}
	if (rt_state.nsections == NARWHAL_MAX_SECTIONS)
		return NONE;
	id = rt_state.nsections;
	rt_state.sections[id].name = strdup(name);
	rt_state.sections[id].file = strdup(file ? file : "");
	rt_state.sections[id].line = line > 0 ? (uint32_t)line : 0;
	if (!rt_state.sections[id].name || !rt_state.sections[id].file) {
		free(rt_state.sections[id].name);
		free(rt_state.sections[id].file);
		return NONE;
	}
	rt_state.sec_slots[h] = id + 1;
	__atomic_store_n(&rt_state.nsections, id + 1, __ATOMIC_RELEASE);
	rt_log_name_block(id);
	return id;
}

/* The path (parent, section), registered when new: its index, or NONE past the limit. */
static uint32_t path_lookup(uint32_t parent, uint32_t section)
{
	uint64_t key = ((uint64_t)parent << 32) | section;
	uint32_t h = hash_u64(key) & (PATH_SLOTS - 1), id;

	for (;;) {
		uint32_t v = rt_state.path_slots[h];

		if (!v)
			break;
		if (rt_state.paths[v - 1].parent == parent &&
		    rt_state.paths[v - 1].section == section)
			return v - 1;
		h = (h + 1) & (PATH_SLOTS - 1);
	}
	if (rt_state.npaths == NARWHAL_MAX_PATHS)
		return NONE;
	id = rt_state.npaths;
	rt_state.paths[id].parent = parent;
	rt_state.paths[id].section = section;
	rt_state.path_slots[h] = id + 1;
	__atomic_store_n(&rt_state.npaths, id + 1, __ATOMIC_RELEASE);
	return id;
}

/* ---- threads ---- */

static struct rt_thread *thread_new(void)
{
	struct rt_thread *t;

	pthread_once(&rt_once, rt_init);
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->log_lock, NULL);
	t->tid = (uint32_t)syscall(SYS_gettid);
	if (rt_state.logging) {
		t->log = malloc(LOG_CAP * sizeof(*t->log));
		t->enc = malloc(ENCODE_BUF);
		if (!t->log || !t->enc) {
			free(t->log);
			free(t->enc);
			free(t);
			return NULL;
		}
	}
	pthread_mutex_lock(&rt_state.lock);
	t->next = rt_state.threads;
	if (rt_state.threads)
		rt_state.threads->prev = t;
	rt_state.threads = t;
	rt_state.nthreads_seen++;
	pthread_mutex_unlock(&rt_state.lock);
	tls_thread = t;
	pthread_setspecific(rt_state.key, t);
	return t;
}

static struct rt_stats *stats_chunk(struct rt_thread *t, uint32_t c)
{
	struct rt_stats *s = calloc(CHUNK, sizeof(*s));

	if (!s)
		return NULL;
	for (uint32_t i = 0; i < CHUNK; i++)
		s[i].min = UINT64_MAX;
	__atomic_store_n(&t->chunks[c], s, __ATOMIC_RELEASE);
	return s;
}

static inline void stat_set(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Closes frame @d of @t at @end (ticks). */
static inline __attribute__((always_inline)) void close_frame(struct rt_thread *t, uint32_t d, uint64_t end, uint16_t flags)
{
	struct rt_frame *f = &t->stack[d];
	uint64_t dur = end - f->start;

	if (unlikely((int64_t)dur < 0))
		dur = 0;
	if (likely(f->path != NONE)) {
		struct rt_stats *c = t->chunks[f->path >> CHUNK_SHIFT];
		struct rt_stats *s;

		if (unlikely(!c))
			c = stats_chunk(t, f->path >> CHUNK_SHIFT);
		if (likely(c != NULL)) {
			s = &c[f->path & (CHUNK - 1)];
			stat_set(&s->count, s->count + 1);
			stat_set(&s->total, s->total + dur);
			if (dur < s->min)
				stat_set(&s->min, dur);
			if (dur > s->max)
				stat_set(&s->max, dur);
		}
	}
	if (t->log && f->section != NONE)
		log_interval(t, f->start, end, f->section, d, flags);
}

/* Closes every frame of @t above depth @to (those kept) at @end, flagged. */
static void close_down_to(struct rt_thread *t, uint32_t to, uint64_t end, uint16_t flags)
{
	while (t->depth > to) {
		uint32_t d = t->depth - 1;

		if (d < NARWHAL_MAX_DEPTH)
			close_frame(t, d, end, flags);
		t->depth = d;
	}
}

static void rt_stats_merge(struct rt_stats *dst, const struct rt_stats *src)
{
	uint64_t count = __atomic_load_n(&src->count, __ATOMIC_RELAXED);
	uint64_t min = __atomic_load_n(&src->min, __ATOMIC_RELAXED);
	uint64_t max = __atomic_load_n(&src->max, __ATOMIC_RELAXED);

	if (!count)
		return;
	if (!dst->count || min < dst->min)
		dst->min = min;
	if (max > dst->max)
		dst->max = max;
	dst->count += count;
	dst->total += __atomic_load_n(&src->total, __ATOMIC_RELAXED);
}

static void thread_free(struct rt_thread *t)
{
	for (uint32_t c = 0; c < NCHUNKS; c++)
		free(t->chunks[c]);
	free(t->log);
	free(t->enc);
	pthread_mutex_destroy(&t->log_lock);
	free(t);
}

/* pthread key destructor: a thread ends.  Its open sections close now. */
static void thread_exit(void *arg)
{
	struct rt_thread *t = arg;
	uint64_t now = ticks();
	uint32_t n;

	rt_tls_busy = 1;
	if (t->depth)
		t->unbalanced += t->depth;
	close_down_to(t, 0, now, NW_SECLOG_OPEN);
	if (t->log) {
		pthread_mutex_lock(&t->log_lock);
		rt_log_flush(t);
		pthread_mutex_unlock(&t->log_lock);
	}
	pthread_mutex_lock(&rt_state.lock);
	n = __atomic_load_n(&rt_state.npaths, __ATOMIC_ACQUIRE);
	for (uint32_t p = 0; p < n; p++) {
		struct rt_stats *c = t->chunks[p >> CHUNK_SHIFT];

		if (c)
			rt_stats_merge(&rt_state.retired[p], &c[p & (CHUNK - 1)]);
	}
	rt_state.retired_overflow += t->overflow;
	rt_state.retired_unbalanced += t->unbalanced;
	rt_state.retired_unregistered += t->unregistered;
	if (t->prev)
		t->prev->next = t->next;
	else
		rt_state.threads = t->next;
	if (t->next)
		t->next->prev = t->prev;
	pthread_mutex_unlock(&rt_state.lock);
	tls_thread = NULL;
	thread_free(t);
	rt_tls_busy = 0;
}

/* ---- the fast path ---- */

/* Slow part of an entry: the site's section, then the path under @parent. */
static __attribute__((noinline)) uint32_t enter_slow(struct rt_thread *t,
						     struct narwhal_site *site,
						     const char *name, const char *file,
						     int line, uint32_t parent, uint32_t *ret_sec)
{
	uint32_t sec = __atomic_load_n(&site->id, __ATOMIC_ACQUIRE);
	uint64_t key;
	uint32_t slot, path;

	if (sec) {
		sec -= 1;
	} else {
		if (!name)
			return NONE;
		pthread_mutex_lock(&rt_state.lock);
		sec = section_lookup(name, file, line);
		pthread_mutex_unlock(&rt_state.lock);
		if (sec == NONE)
			return NONE;
		__atomic_store_n(&site->id, sec + 1, __ATOMIC_RELEASE);
	}
	*ret_sec = sec;
	key = ((uint64_t)(parent + 1) << 32) | (sec + 1);
	slot = hash_u64(key) & (CACHE_SLOTS - 1);
	if (t->cache_key[slot] == key) {
		path = t->cache_path[slot];
	} else {
		pthread_mutex_lock(&rt_state.lock);
		path = path_lookup(parent, sec);
		pthread_mutex_unlock(&rt_state.lock);
		if (path == NONE)
			return NONE;
		t->cache_key[slot] = key;
		t->cache_path[slot] = path;
	}
	__atomic_store_n(&site->cache, ((uint64_t)(parent + 1) << 32) | (path + 1),
			 __ATOMIC_RELAXED);
	return path;
}

/* Every entry but a site entered again in the same nesting (narwhal_enter). */
static __attribute__((noinline)) int enter_full(struct narwhal_site *site, const char *name,
						const char *file, int line)
{
	struct rt_thread *t = tls_thread;
	struct rt_frame *f;
	uint32_t d, parent, path = NONE, sec = NONE;
	uint64_t c;

	if (!t) {
		if (rt_tls_busy)
			return -1;
		rt_tls_busy = 1;
		t = thread_new();
		rt_tls_busy = 0;
		if (!t)
			return -1;
	}
	d = t->depth;
	if (d >= NARWHAL_MAX_DEPTH) {
		t->overflow++;
		t->depth = d + 1;
		return (int)d;
	}
	parent = d ? t->stack[d - 1].path : NONE;
	c = __atomic_load_n(&site->cache, __ATOMIC_RELAXED);
	if ((uint32_t)(c >> 32) == parent + 1 && (uint32_t)c && (d == 0 || parent != NONE)) {
		path = (uint32_t)c - 1;
		sec = __atomic_load_n(&site->id, __ATOMIC_RELAXED) - 1;
	} else if (d == 0 || parent != NONE) {
		path = enter_slow(t, site, name, file, line, parent, &sec);
		if (path == NONE)
			t->unregistered++;
	} else {
		/* Inside a section that is not timed: neither is this one. */
		t->unregistered++;
	}
	f = &t->stack[d];
	f->path = path;
	f->section = path == NONE ? NONE : sec;
	t->depth = d + 1;
	f->start = ticks();
	return (int)d;
}

NW_EXPORT int narwhal_enter(struct narwhal_site *site, const char *name, const char *file,
			    int line)
{
	struct rt_thread *t = tls_thread;

	/* The fast path: a site entered again under the same parent path. */
	if (likely(t != NULL)) {
		uint32_t d = t->depth;
		uint64_t c = __atomic_load_n(&site->cache, __ATOMIC_RELAXED);

		if (likely(d - 1 < NARWHAL_MAX_DEPTH - 1)) {
			uint32_t parent = t->stack[d - 1].path;

			if (likely((uint32_t)(c >> 32) == parent + 1 && parent != NONE &&
				   (uint32_t)c)) {
				struct rt_frame *f = &t->stack[d];

				f->path = (uint32_t)c - 1;
				f->section = __atomic_load_n(&site->id, __ATOMIC_RELAXED) - 1;
				t->depth = d + 1;
				f->start = ticks();
				return (int)d;
			}
		} else if (d == 0 && likely(c >> 32 == 0 && (uint32_t)c)) {
			struct rt_frame *f = &t->stack[0];

			f->path = (uint32_t)c - 1;
			f->section = __atomic_load_n(&site->id, __ATOMIC_RELAXED) - 1;
			t->depth = 1;
			f->start = ticks();
			return 0;
		}
	}
	return enter_full(site, name, file, line);
}

/* An exit that is not of the innermost open section. */
static __attribute__((noinline)) void exit_slow(struct rt_thread *t, int token, uint64_t end)
{
	uint32_t d;

	if (!t || token < 0)
		return;
	d = t->depth;
	if ((uint32_t)token >= d) {
		/* Closed already (narwhal_end, or an outer exit closed it). */
		t->unbalanced++;
		return;
	}
	if ((uint32_t)token + 1 != d) {
		/* Sections opened after this one are still open: they end here. */
		t->unbalanced += d - (uint32_t)token - 1;
		close_down_to(t, (uint32_t)token + 1, end, NW_SECLOG_UNBALANCED);
	}
	if ((uint32_t)token < NARWHAL_MAX_DEPTH)
		close_frame(t, (uint32_t)token, end, 0);
	t->depth = (uint32_t)token;
}

NW_EXPORT void narwhal_exit(int token)
{
	uint64_t end = ticks();
	struct rt_thread *t = tls_thread;

	/* The fast path: the innermost section closes, its statistics exist. */
	if (likely(t && (uint32_t)token + 1 == t->depth && (uint32_t)token < NARWHAL_MAX_DEPTH)) {
		struct rt_frame *f = &t->stack[token];
		uint32_t path = f->path;
		struct rt_stats *c;

		if (likely(path != NONE && (c = t->chunks[path >> CHUNK_SHIFT]) != NULL)) {
			struct rt_stats *s = &c[path & (CHUNK - 1)];
			uint64_t dur = end - f->start;

			if (unlikely((int64_t)dur < 0))
				dur = 0;
			stat_set(&s->count, s->count + 1);
			stat_set(&s->total, s->total + dur);
			if (unlikely(dur < s->min))
				stat_set(&s->min, dur);
			if (unlikely(dur > s->max))
				stat_set(&s->max, dur);
			if (t->log)
				log_interval(t, f->start, end, f->section, (uint32_t)token, 0);
			t->depth = (uint32_t)token;
			return;
		}
	}
	exit_slow(t, token, end);
}

NW_EXPORT int(narwhal_begin)(const char *name)
{
	struct rt_thread *t = tls_thread;
	struct narwhal_site site = { 0, 0, 0, 0 };
	uint32_t slot, sec;

	if (!name)
		name = "(null)";
	if (unlikely(!t)) {
		if (rt_tls_busy)
			return -1;
		rt_tls_busy = 1;
		t = thread_new();
		rt_tls_busy = 0;
		if (!t)
			return -1;
	}
	/* A pointer seen before and holding the same text: its section. */
	slot = hash_u64((uintptr_t)name) & (NAME_CACHE_SLOTS - 1);
	if (t->name_ptr[slot] == name) {
		sec = t->name_sec[slot];
		if (strcmp(rt_state.sections[sec].name, name) == 0)
			site.id = sec + 1;
	}
	if (!site.id) {
		pthread_once(&rt_once, rt_init);
		pthread_mutex_lock(&rt_state.lock);
		sec = section_lookup(name, NULL, 0);
		pthread_mutex_unlock(&rt_state.lock);
		if (sec != NONE) {
			t->name_ptr[slot] = name;
			t->name_sec[slot] = sec;
			site.id = sec + 1;
		}
	}
	return narwhal_enter(&site, name, NULL, 0);
}

NW_EXPORT void narwhal_end(void)
{
	struct rt_thread *t = tls_thread;

	if (unlikely(!t) && !rt_tls_busy) {
		rt_tls_busy = 1;
		t = thread_new();
		rt_tls_busy = 0;
	}
	if (!t || !t->depth) {
		if (t)
			t->unbalanced++;
		return;
	}
	narwhal_exit((int)t->depth - 1);
}

/* ---- the report ---- */

struct out {
	int fd;
	size_t len;
	char buf[4096];
};

static void out_flush(struct out *o)
{
	size_t off = 0;

	while (off < o->len) {
		ssize_t n = write(o->fd, o->buf + off, o->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	o->len = 0;
}

__attribute__((format(printf, 2, 3))) static void out_printf(struct out *o, const char *fmt,
							     ...)
{
	va_list ap;
	int n;

	if (o->len > sizeof(o->buf) - 512)
		out_flush(o);
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(o->buf) - o->len) {
		/* Longer than what is left: flush and print again. */
		out_flush(o);
		va_start(ap, fmt);
		n = vsnprintf(o->buf, sizeof(o->buf), fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n >= sizeof(o->buf))
			n = (int)sizeof(o->buf) - 1;
	}
	o->len += (size_t)n;
}

/* "1.204 s", "12.345 ms", "345.678 us", "123 ns" into @buf. */
static const char *fmt_time(char *buf, size_t len, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.3f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.3f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.3f us", ns / 1e3);
	else
		snprintf(buf, len, "%.0f ns", ns);
	return buf;
}

/* Insertion-free sort (heap sort) of @n indexes by @key descending: no allocation. */
static void sort_desc(uint32_t *v, uint32_t n, const uint64_t *key, size_t stride)
{
#define KEY(i) (*(const uint64_t *)((const char *)key + (size_t)(i)*stride))
	for (uint32_t start = n / 2; n > 1;) {
		uint32_t root, child, end = n;

		if (start > 0) {
			root = --start;
		} else {
			uint32_t tmp = v[0];

			v[0] = v[--n];
			v[n] = tmp;
			end = n;
			root = 0;
		}
		/* sift down: a min-heap, so the result is descending */
		while ((child = 2 * root + 1) < end) {
			if (child + 1 < end && KEY(v[child + 1]) < KEY(v[child]))
				child++;
			if (KEY(v[child]) < KEY(v[root])) {
				uint32_t tmp = v[root];

				v[root] = v[child];
				v[child] = tmp;
				root = child;
			} else {
				break;
			}
		}
	}
#undef KEY
}

struct rt_snapshot {
	uint32_t nsections, npaths;
	uint64_t wall_ns;
	double nspt;
	uint64_t overflow, unbalanced, unregistered, open, threads;
};

/*
 * Merges every thread's statistics into scratch (rt_state.lock held, or not when
 * it could not be taken in a crash): ended threads, live ones, and the
 * sections still open now, counted as closed now.
 */
static void snapshot(struct rt_snapshot *s, struct rt_cal_point now)
{
	s->nsections = __atomic_load_n(&rt_state.nsections, __ATOMIC_ACQUIRE);
	s->npaths = __atomic_load_n(&rt_state.npaths, __ATOMIC_ACQUIRE);
	s->wall_ns = now.ns > rt_state.start_ns ? now.ns - rt_state.start_ns : 0;
	s->nspt = rt_ns_per_tick(now);
	s->overflow = rt_state.retired_overflow;
	s->unbalanced = rt_state.retired_unbalanced;
	s->unregistered = rt_state.retired_unregistered;
	s->open = 0;
	s->threads = rt_state.nthreads_seen;
	memcpy(scratch.paths, rt_state.retired, s->npaths * sizeof(scratch.paths[0]));
	memset(scratch.open, 0, s->npaths * sizeof(scratch.open[0]));
	for (struct rt_thread *t = rt_state.threads; t; t = t->next) {
		uint32_t depth = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);

		for (uint32_t p = 0; p < s->npaths; p++) {
			struct rt_stats *c = __atomic_load_n(&t->chunks[p >> CHUNK_SHIFT],
							     __ATOMIC_ACQUIRE);

			if (c)
				rt_stats_merge(&scratch.paths[p], &c[p & (CHUNK - 1)]);
		}
		s->overflow += t->overflow;
		s->unbalanced += t->unbalanced;
		s->unregistered += t->unregistered;
		if (depth > NARWHAL_MAX_DEPTH)
			depth = NARWHAL_MAX_DEPTH;
		for (uint32_t d = depth; d-- > 0;) {
			const struct rt_frame *f = &t->stack[d];
			uint64_t dur = now.ticks > f->start ? now.ticks - f->start : 0;
			struct rt_stats one = { 1, dur, dur, dur };

			if (f->path >= s->npaths)
				continue;
			rt_stats_merge(&scratch.paths[f->path], &one);
			scratch.open[f->path]++;
			s->open++;
		}
	}
	/* Self: the total less the totals of the child paths. */
	for (uint32_t p = 0; p < s->npaths; p++)
		scratch.self[p] = scratch.paths[p].total;
	for (uint32_t p = 0; p < s->npaths; p++) {
		uint32_t q = rt_state.paths[p].parent;

		if (q < s->npaths)
			scratch.self[q] -= scratch.self[q] > scratch.paths[p].total
						   ? scratch.paths[p].total
						   : scratch.self[q];
	}
	memset(scratch.secs, 0, s->nsections * sizeof(scratch.secs[0]));
	memset(scratch.sec_self, 0, s->nsections * sizeof(scratch.sec_self[0]));
	for (uint32_t p = 0; p < s->npaths; p++) {
		uint32_t sec = rt_state.paths[p].section;

		if (sec < s->nsections) {
			rt_stats_merge(&scratch.secs[sec], &scratch.paths[p]);
			scratch.sec_self[sec] += scratch.self[p];
		}
	}
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0.0;
}

static void report_flat(struct out *o, const struct rt_snapshot *s)
{
	char a[32], b[32], c[32], d[32], e[32];
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nsections; i++)
		if (scratch.secs[i].count)
			scratch.order[n++] = i;
	sort_desc(scratch.order, n, &scratch.secs[0].total, sizeof(scratch.secs[0]));
	out_printf(o, "\nFlat summary (by cumulative time):\n");
	out_printf(o, "%8s %12s %12s %10s %12s %12s %12s  %s\n", "CUMUL%", "CUMULATIVE", "SELF",
		   "CALLS", "AVERAGE", "MIN", "MAX", "SECTION");
	for (uint32_t k = 0; k < n; k++) {
		const struct rt_stats *st = &scratch.secs[scratch.order[k]];
		double total = (double)st->total * s->nspt;

		out_printf(o, "%7.2f%% %12s %12s %10llu %12s %12s %12s  %s\n",
			   pct(total, (double)s->wall_ns), fmt_time(a, sizeof(a), total),
			   fmt_time(b, sizeof(b), (double)scratch.sec_self[scratch.order[k]] * s->nspt),
			   (unsigned long long)st->count,
			   fmt_time(c, sizeof(c), total / (double)st->count),
			   fmt_time(d, sizeof(d), (double)st->min * s->nspt),
			   fmt_time(e, sizeof(e), (double)st->max * s->nspt),
			   rt_state.sections[scratch.order[k]].name);
	}
}

static void report_tree(struct out *o, const struct rt_snapshot *s, uint32_t node, unsigned depth,
			char *prefix, size_t plen)
{
	char a[32], b[32];

	for (uint32_t c = node; c != NONE; c = scratch.next_sibling[c]) {
		const struct rt_stats *st = &scratch.paths[c];
		double total = (double)st->total * s->nspt;
		int last = scratch.next_sibling[c] == NONE;

		out_printf(o, "  %s%s%s  %.2f%%  %s  (%llu call%s, self %s%s)\n", prefix,
			   depth ? (last ? "`-- " : "|-- ") : "",
			   rt_state.sections[rt_state.paths[c].section].name,
			   pct(total, (double)s->wall_ns), fmt_time(a, sizeof(a), total),
			   (unsigned long long)st->count, st->count == 1 ? "" : "s",
			   fmt_time(b, sizeof(b), (double)scratch.self[c] * s->nspt),
			   scratch.open[c] ? ", open at exit" : "");
		if (scratch.first_child[c] != NONE && plen + 5 < 512) {
			size_t l = strlen(prefix);

			if (depth)
				memcpy(prefix + l, last ? "    " : "|   ", 5);
			report_tree(o, s, scratch.first_child[c], depth + 1, prefix, plen + 4);
			prefix[l] = 0;
		}
	}
}

static void report_hierarchy(struct out *o, const struct rt_snapshot *s)
{
	char prefix[520] = "";
	uint32_t n = 0, roots = NONE;

	out_printf(o, "\nHierarchy (cumulative time, share of the wall time):\n");
	for (uint32_t p = 0; p < s->npaths; p++) {
		scratch.first_child[p] = NONE;
		scratch.next_sibling[p] = NONE;
		if (scratch.paths[p].count)
			scratch.order[n++] = p;
	}
	sort_desc(scratch.order, n, &scratch.paths[0].total, sizeof(scratch.paths[0]));
	/* Link children in order of total, so each list comes out sorted. */
	for (uint32_t k = n; k-- > 0;) {
		uint32_t p = scratch.order[k], parent = rt_state.paths[p].parent;

		if (parent == NONE) {
			scratch.next_sibling[p] = roots;
			roots = p;
		} else if (parent < s->npaths) {
			scratch.next_sibling[p] = scratch.first_child[parent];
			scratch.first_child[parent] = p;
		}
	}
	if (roots != NONE)
		report_tree(o, s, roots, 0, prefix, 0);
}

static void report_details(struct out *o, const struct rt_snapshot *s)
{
	char a[32], b[32], c[32], d[32];
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nsections; i++)
		if (scratch.secs[i].count)
			scratch.order[n++] = i;
	sort_desc(scratch.order, n, &scratch.secs[0].total, sizeof(scratch.secs[0]));
	out_printf(o, "\nSection details:\n");
	for (uint32_t k = 0; k < n; k++) {
		uint32_t id = scratch.order[k];
		const struct rt_section *sec = &rt_state.sections[id];
		const struct rt_stats *st = &scratch.secs[id];
		double total = (double)st->total * s->nspt;
		int first = 1;

		out_printf(o, "  %s\n", sec->name);
		if (sec->file[0])
			out_printf(o, "    location:    %s:%u\n", sec->file, sec->line);
		out_printf(o, "    calls:       %llu\n", (unsigned long long)st->count);
		out_printf(o, "    cumulative:  %s (%.2f%% of the wall time)\n",
			   fmt_time(a, sizeof(a), total), pct(total, (double)s->wall_ns));
		out_printf(o, "    self:        %s\n",
			   fmt_time(b, sizeof(b), (double)scratch.sec_self[id] * s->nspt));
		out_printf(o, "    average:     %s\n",
			   fmt_time(c, sizeof(c), total / (double)st->count));
		out_printf(o, "    min / max:   %s / %s\n",
			   fmt_time(a, sizeof(a), (double)st->min * s->nspt),
			   fmt_time(d, sizeof(d), (double)st->max * s->nspt));
		/* Calls per enclosing section (index nsections: top level). */
		out_printf(o, "    called from:");
		for (uint32_t p = 0; p < s->npaths; p++) {
			uint32_t parent = rt_state.paths[p].parent;

			if (rt_state.paths[p].section == id)
				scratch.callers[parent == NONE ? s->nsections
							       : rt_state.paths[parent].section] +=
					scratch.paths[p].count;
		}
		for (uint32_t c = 0; c <= s->nsections; c++) {
			if (!scratch.callers[c])
				continue;
			out_printf(o, "%s %s (%llu)", first ? "" : ",",
				   c == s->nsections ? "(top level)" : rt_state.sections[c].name,
				   (unsigned long long)scratch.callers[c]);
			scratch.callers[c] = 0;
			first = 0;
		}
		out_printf(o, "\n");
	}
}

/* The three reports on @fd. */
static void report_write(int fd, const struct rt_snapshot *s, const char *why)
{
	/* One report at a time: finish and narwhal_report hold rt_state.lock. */
	static struct out o;
	char a[32];

	o.fd = fd;
	o.len = 0;
	out_printf(&o, "==== Narwhal sections: pid %d, wall time %s, %u section%s, %llu thread%s%s "
		       "====\n",
		   (int)rt_state.pid, fmt_time(a, sizeof(a), (double)s->wall_ns), s->nsections,
		   s->nsections == 1 ? "" : "s", (unsigned long long)s->threads,
		   s->threads == 1 ? "" : "s", why);
	report_flat(&o, s);
	report_hierarchy(&o, s);
	report_details(&o, s);
	if (s->open || s->overflow || s->unbalanced || s->unregistered) {
		out_printf(&o, "\nNotes:");
		if (s->open)
			out_printf(&o, " %llu section%s still open at the end (timed up to it);",
				   (unsigned long long)s->open, s->open == 1 ? "" : "s");
		if (s->overflow)
			out_printf(&o, " %llu opened deeper than %d (not timed);",
				   (unsigned long long)s->overflow, NARWHAL_MAX_DEPTH);
		if (s->unbalanced)
			out_printf(&o, " %llu unbalanced (closed by an outer exit, or an end "
				       "without a begin);",
				   (unsigned long long)s->unbalanced);
		if (s->unregistered)
			out_printf(&o, " %llu opened past the limits of %d names / %d paths "
				       "(not timed);",
				   (unsigned long long)s->unregistered, NARWHAL_MAX_SECTIONS,
				   NARWHAL_MAX_PATHS);
		out_printf(&o, "\n");
	}
	out_flush(&o);
}

/* Where the report goes: -1 none, else a file descriptor (2: stderr). */
static int report_open(int *close_it)
{
	char path[sizeof(rt_state.report_path) + 32];
	size_t k = 0;

	*close_it = 0;
	if (!rt_state.report)
		return -1;
	if (!rt_state.report_path[0])
		return 2;
	/* "%p" becomes the process id, so that forked children keep their own. */
	for (const char *s = rt_state.report_path; *s && k + 24 < sizeof(path); s++) {
		if (s[0] == '%' && s[1] == 'p') {
			k += (size_t)snprintf(path + k, sizeof(path) - k, "%d", (int)getpid());
			s++;
		} else {
			path[k++] = *s;
		}
	}
	path[k] = 0;
	*close_it = 1;
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

/* Writes out every thread's buffered intervals; @final: open sections as closed @now. */
static void rt_log_flush_all(struct rt_cal_point now, int final)
{
	for (struct rt_thread *t = rt_state.threads; t; t = t->next) {
		struct rt_rec open[NARWHAL_MAX_DEPTH];
		uint32_t depth, n = 0;

		if (!t->log || pthread_mutex_trylock(&t->log_lock) != 0)
			continue;
		rt_log_flush(t);
		if (final) {
			/* Sections open now: one interval each up to the end. */
			depth = __atomic_load_n(&t->depth, __ATOMIC_RELAXED);
			if (depth > NARWHAL_MAX_DEPTH)
				depth = NARWHAL_MAX_DEPTH;
			for (uint32_t d = 0; d < depth; d++) {
				const struct rt_frame *f = &t->stack[d];

				if (f->section != NONE)
					open[n++] = (struct rt_rec){ f->start, now.ticks, f->section,
								     (uint16_t)d, NW_SECLOG_OPEN };
			}
			log_encode(t, open, n);
		}
		pthread_mutex_unlock(&t->log_lock);
	}
}

static void rt_log_end_block(const struct rt_snapshot *s, uint32_t reason, int sig)
{
	unsigned char b[NW_SECLOG_BLOCK_HEADER + NW_SECLOG_END_SIZE], *p = b;

	p = put_u32(p, NW_SECLOG_END);
	p = put_u32(p, NW_SECLOG_END_SIZE);
	p = put_u64(p, rt_state.start_ns + s->wall_ns);
	p = put_u64(p, s->overflow);
	p = put_u64(p, s->unbalanced);
	p = put_u64(p, __atomic_load_n(&rt_state.dropped, __ATOMIC_RELAXED));
	p = put_u64(p, s->unregistered);
	p = put_u32(p, reason);
	put_u32(p, (uint32_t)sig);
	log_write(b, sizeof(b), 0);
}

enum { RT_END_EXIT, RT_END_SIGNAL, RT_END_NOW };

/* The end of the image (or narwhal_report): the log's last blocks and the report. */
static void rt_finish(int reason, int sig)
{
	struct rt_snapshot s;
	struct rt_cal_point now;
	int locked, fd, close_it;
	const char *why = reason == RT_END_SIGNAL ? ", ended by a signal"
			  : reason == RT_END_NOW  ? ", so far"
					       : "";

	if (reason != RT_END_NOW) {
		int expect = 0;

		if (!__atomic_compare_exchange_n(&rt_state.finished, &expect, 1, 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return;
	}
	rt_tls_busy = 1;
	/* In a crash the lock may be held by this very thread: go on without it. */
	locked = reason == RT_END_SIGNAL ? pthread_mutex_trylock(&rt_state.lock) == 0
				      : pthread_mutex_lock(&rt_state.lock) == 0;
	if (reason == RT_END_SIGNAL ? pthread_mutex_trylock(&rt_state.cal_lock) == 0
				 : pthread_mutex_lock(&rt_state.cal_lock) == 0) {
		now = rt_cal_read();
		rt_cal_add(now);
		pthread_mutex_unlock(&rt_state.cal_lock);
	} else {
		now = rt_cal_read();
	}
	rt_log_flush_all(now, reason != RT_END_NOW);
	snapshot(&s, now);
	if (reason != RT_END_NOW) {
		/* A fork child that logged nothing leaves no file at all. */
		if (__atomic_load_n(&rt_state.log_fd, __ATOMIC_ACQUIRE) >= 0)
			rt_log_end_block(&s, reason == RT_END_SIGNAL ? 1 : 0, sig);
		__atomic_store_n(&rt_state.finished, 2, __ATOMIC_RELEASE);
	}
	if (s.nsections) {
		fd = report_open(&close_it);
		if (fd >= 0) {
			report_write(fd, &s, why);
			if (close_it)
				close(fd);
		}
	}
	if (locked)
		pthread_mutex_unlock(&rt_state.lock);
	rt_tls_busy = 0;
}

NW_EXPORT void narwhal_report(void)
{
	pthread_once(&rt_once, rt_init);
	if (__atomic_load_n(&rt_state.finished, __ATOMIC_ACQUIRE))
		return;
	rt_finish(RT_END_NOW, 0);
}

NW_EXPORT int narwhal_stats(const char *name, struct narwhal_stats *ret)
{
	struct rt_snapshot s;
	struct rt_cal_point now;
	int found = name ? -1 : 0;

	pthread_once(&rt_once, rt_init);
	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&rt_state.lock);
	pthread_mutex_lock(&rt_state.cal_lock);
	now = rt_cal_read();
	pthread_mutex_unlock(&rt_state.cal_lock);
	snapshot(&s, now);
	for (uint32_t i = 0; name && i < s.nsections; i++) {
		const struct rt_stats *st = &scratch.secs[i];

		if (strcmp(rt_state.sections[i].name, name) != 0)
			continue;
		found = 0;
		ret->count = st->count;
		ret->total_ns = (unsigned long long)((double)st->total * s.nspt);
		ret->self_ns = (unsigned long long)((double)scratch.sec_self[i] * s.nspt);
		ret->min_ns = st->count ? (unsigned long long)((double)st->min * s.nspt) : 0;
		ret->max_ns = (unsigned long long)((double)st->max * s.nspt);
		for (uint32_t p = 0; p < s.npaths; p++)
			if (rt_state.paths[p].section == i)
				ret->open += scratch.open[p];
	}
	ret->overflow = s.overflow;
	ret->unbalanced = s.unbalanced;
	ret->unregistered = s.unregistered;
	pthread_mutex_unlock(&rt_state.lock);
	return found;
}

/* ---- process life ---- */

static const int fatal_signals[] = { SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGABRT, SIGTRAP,
				     SIGSYS,  SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGPIPE,
				     SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ };

static void on_fatal(int sig)
{
	int saved = errno;

	rt_finish(RT_END_SIGNAL, sig);
	/* SA_RESETHAND made the action the default: the signal, pending until
	 * we return (or the fault, run again), ends the program as it would have. */
	raise(sig);
	errno = saved;
}

static void install_handlers(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		/* Only where nobody chose an action: never over the program's own. */
		if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
		    !(old.sa_flags & SA_SIGINFO))
			sigaction(fatal_signals[i], &sa, NULL);
	}
}

static void rt_log_open(void)
{
	const char *dir = getenv(NW_SECLOG_ENV);
	const char *limit = getenv("NARWHAL_SECTIONS_MAX_MB");

	rt_state.log_fd = -1;
	rt_state.logging = 0;
	if (!dir || !dir[0] ||
	    snprintf(rt_state.log_dir, sizeof(rt_state.log_dir), "%s", dir) >=
		    (int)sizeof(rt_state.log_dir))
		return;
	rt_state.log_limit = DEFAULT_LOG_LIMIT;
	if (limit && limit[0]) {
		char *end;
		unsigned long long mb = strtoull(limit, &end, 10);

		if (!*end)
			rt_state.log_limit = (uint64_t)mb << 20;
	}
	rt_state.logging = 1;
	/* The file now: the recorder learns at once that the program has sections. */
	log_fd_get();
}

static void at_fork_prepare(void)
{
	pthread_mutex_lock(&rt_state.lock);
	pthread_mutex_lock(&rt_state.cal_lock);
}

static void at_fork_parent(void)
{
	pthread_mutex_unlock(&rt_state.cal_lock);
	pthread_mutex_unlock(&rt_state.lock);
}

/*
 * In a child: only this thread goes on, with statistics and log of its own
 * (sections-<child pid>.bin).  Sections open across the fork count from it.
 */
static void at_fork_child(void)
{
	struct rt_thread *self = tls_thread, *t, *next;
	struct rt_cal_point now;

	pthread_mutex_init(&rt_state.cal_lock, NULL);
	pthread_mutex_init(&rt_state.lock, NULL);
	for (t = rt_state.threads; t; t = next) {
		next = t->next;
		if (t != self)
			thread_free(t);
	}
	rt_state.threads = self;
	rt_state.nthreads_seen = self ? 1 : 0;
	memset(rt_state.retired, 0, rt_state.npaths * sizeof(rt_state.retired[0]));
	rt_state.retired_overflow = rt_state.retired_unbalanced = rt_state.retired_unregistered = 0;
	rt_state.finished = 0;
	rt_state.pid = getpid();
	rt_state.ncal = 0;
	now = rt_cal_read();
	rt_cal_add(now);
	rt_state.start_ns = now.ns;
	pthread_mutex_init(&rt_state.open_lock, NULL);
	if (rt_state.log_fd >= 0)
		close(rt_state.log_fd);
	rt_state.log_fd = -1; /* opened at the child's first write: sections-<child pid>.bin */
	rt_state.log_bytes = 0;
	rt_state.log_broken = 0;
	rt_state.dropped = 0;
	if (!self)
		return;
	self->next = self->prev = NULL;
	pthread_mutex_init(&self->log_lock, NULL);
	self->nlog = self->flushed = 0;
	self->overflow = self->unbalanced = self->unregistered = 0;
	if (rt_state.logging && !self->log) {
		self->log = malloc(LOG_CAP * sizeof(*self->log));
		self->enc = malloc(ENCODE_BUF);
		if (!self->log || !self->enc) {
			free(self->log);
			free(self->enc);
			self->log = NULL;
			self->enc = NULL;
		}
	}
	for (uint32_t c = 0; c < NCHUNKS; c++) {
		if (!self->chunks[c])
			continue;
		memset(self->chunks[c], 0, CHUNK * sizeof(struct rt_stats));
		for (uint32_t i = 0; i < CHUNK; i++)
			self->chunks[c][i].min = UINT64_MAX;
	}
	for (uint32_t d = 0; d < self->depth && d < NARWHAL_MAX_DEPTH; d++)
		self->stack[d].start = now.ticks;
}

static void rt_init(void)
{
	const char *report = getenv("NARWHAL_REPORT");
	struct rt_cal_point now;

	rt_state.pid = getpid();
	rt_state.use_tsc = rt_counter_usable();
	now = rt_cal_read();
	pthread_mutex_lock(&rt_state.cal_lock);
	rt_cal_add(now);
	pthread_mutex_unlock(&rt_state.cal_lock);
	rt_state.start_ns = now.ns;
	pthread_key_create(&rt_state.key, thread_exit);
	rt_log_open();
	/*
	 * The text report: to stderr by default; under narwhal-record (the
	 * measurement holds the sections) only when NARWHAL_REPORT asks.
	 */
	if (report && strcmp(report, "off") == 0) {
		rt_state.report = 0;
	} else if (report && report[0] && strcmp(report, "stderr") != 0) {
		rt_state.report = snprintf(rt_state.report_path, sizeof(rt_state.report_path), "%s",
					   report) < (int)sizeof(rt_state.report_path);
	} else {
		rt_state.report = (report && report[0]) || !getenv(NW_SECLOG_ENV);
	}
	install_handlers();
	pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

__attribute__((constructor(101))) static void rt_constructor(void)
{
	pthread_once(&rt_once, rt_init);
}

__attribute__((destructor(101))) static void rt_destructor(void)
{
	rt_finish(RT_END_EXIT, 0);
}
