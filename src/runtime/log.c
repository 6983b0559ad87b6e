/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal's interval log under narwhal-record:
 * $NARWHAL_SECTIONS_DIR/sections-<pid>.bin, a START block, a NAME block per
 * section, INTERVALS blocks of each thread's closed sections in
 * CLOCK_MONOTONIC nanoseconds, and an END block (src/sections/seclog.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sections/seclog.h"
#include "util/varint.h"

#include "rt.h"

#define CAL_GAP_NS 10000000ull  /* a new calibration point every 10 ms of flushes */
#define DEFAULT_LOG_LIMIT (512ull << 20)

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

/* The NAME block of section @id, not counted against the size limit. */
void rt_log_name_block(uint32_t id)
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
		slope = (double)(int64_t)(last.ns - seg.ns) /
			(double)(int64_t)(last.ticks - seg.ticks);
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
			p = nw_put_varint(p, r->section);
			p = nw_put_varint(p, r->depth);
			p = nw_put_varint(p, r->flags);
			p = nw_put_varint(p, nw_zigzag(delta));
			p = nw_put_varint(p, e - s);
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
void rt_log_flush(struct rt_thread *t)
{
	uint32_t n = __atomic_load_n(&t->nlog, __ATOMIC_ACQUIRE);

	if (n > t->flushed)
		log_encode(t, t->log + t->flushed, n - t->flushed);
	t->flushed = n;
}

/* Writes out every thread's buffered intervals; @final: open sections as closed @now. */
void rt_log_flush_all(struct rt_cal_point now, int final)
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
					open[n++] = (struct rt_rec){ f->start, now.ticks,
								     f->section, (uint16_t)d,
								     NW_SECLOG_OPEN };
			}
			log_encode(t, open, n);
		}
		pthread_mutex_unlock(&t->log_lock);
	}
}

/*
 * The END block: the counts of @s, why it ended (0 exit, 1 signal @sig).
 * Not where no file was made: a fork child that logged nothing leaves none.
 */
void rt_log_end_block(const struct rt_snapshot *s, uint32_t reason, int sig)
{
	unsigned char b[NW_SECLOG_BLOCK_HEADER + NW_SECLOG_END_SIZE], *p = b;

	if (__atomic_load_n(&rt_state.log_fd, __ATOMIC_ACQUIRE) < 0)
		return;
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

/* Under narwhal-record ($NARWHAL_SECTIONS_DIR set): logging on, the file made. */
void rt_log_open(void)
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

/* In a fork child: a log of its own, sections-<child pid>.bin, from zero. */
void rt_log_fork_child(void)
{
	pthread_mutex_init(&rt_state.open_lock, NULL);
	if (rt_state.log_fd >= 0)
		close(rt_state.log_fd);
	rt_state.log_fd = -1; /* opened at the child's first write: sections-<child pid>.bin */
	rt_state.log_bytes = 0;
	rt_state.log_broken = 0;
	rt_state.dropped = 0;
}
