/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal's report: every thread's statistics merged (snapshot), the
 * text report printed at exit or on narwhal_report() (Narwhalyzer's flat
 * summary, hierarchy and details), and narwhal_stats().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

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

/* The sections entered at least once into scratch.order, most total time first; how many. */
static uint32_t sections_by_total(const struct rt_snapshot *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nsections; i++)
		if (scratch.secs[i].count)
			scratch.order[n++] = i;
	sort_desc(scratch.order, n, &scratch.secs[0].total, sizeof(scratch.secs[0]));
	return n;
}

static void report_flat(struct out *o, const struct rt_snapshot *s)
{
	char a[32], b[32], c[32], d[32], e[32];
	uint32_t n = sections_by_total(s);

	out_printf(o, "\nFlat summary (by cumulative time):\n");
	out_printf(o, "%8s %12s %12s %10s %12s %12s %12s  %s\n", "CUMUL%", "CUMULATIVE", "SELF",
		   "CALLS", "AVERAGE", "MIN", "MAX", "SECTION");
	for (uint32_t k = 0; k < n; k++) {
		const struct rt_stats *st = &scratch.secs[scratch.order[k]];
		double total = (double)st->total * s->nspt;

		out_printf(o, "%7.2f%% %12s %12s %10llu %12s %12s %12s  %s\n",
			   pct(total, (double)s->wall_ns), fmt_time(a, sizeof(a), total),
			   fmt_time(b, sizeof(b),
				    (double)scratch.sec_self[scratch.order[k]] * s->nspt),
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
	uint32_t n = sections_by_total(s);

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


/* The end of the image (or narwhal_report): the log's last blocks and the report. */
void rt_finish(int reason, int sig)
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

