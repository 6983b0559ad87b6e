/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal's sections: registration of names and nesting paths, the
 * per-thread state, the fast path of narwhal.h (enter, exit, begin, end),
 * and the process life (init, fatal signals, fork, exit).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sections/seclog.h"

#include "rt.h"

#define LOG_CAP 2048            /* intervals buffered per thread */

/* The process-wide state (struct rt_state, rt.h). */
struct rt_state rt_state = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cal_lock = PTHREAD_MUTEX_INITIALIZER,
	.log_fd = -1,
	.open_lock = PTHREAD_MUTEX_INITIALIZER,
};

pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static __thread struct rt_thread *tls_thread __attribute__((tls_model("initial-exec")));
__thread int rt_tls_busy __attribute__((tls_model("initial-exec")));

/* ---- the interval buffer of a thread (written out by log.c) ---- */

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

/*
 * This thread's state where it has none yet (its first section): made
 * now, unless the thread is already making or freeing it (rt_tls_busy),
 * then NULL, as when it cannot be made.
 */
static __attribute__((noinline)) struct rt_thread *thread_first(void)
{
	struct rt_thread *t;

	if (rt_tls_busy)
		return NULL;
	rt_tls_busy = 1;
	t = thread_new();
	rt_tls_busy = 0;
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
static inline __attribute__((always_inline)) void close_frame(struct rt_thread *t, uint32_t d,
							      uint64_t end, uint16_t flags)
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

/* Adds @src (read with relaxed loads: its owner may be writing) into @dst. */
void rt_stats_merge(struct rt_stats *dst, const struct rt_stats *src)
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

	if (!t && !(t = thread_first()))
		return -1;
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
	if (unlikely(!t) && !(t = thread_first()))
		return -1;
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

	if (unlikely(!t))
		t = thread_first();
	if (!t || !t->depth) {
		if (t)
			t->unbalanced++;
		return;
	}
	narwhal_exit((int)t->depth - 1);
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
	rt_log_fork_child();
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

/*
 * Once, through pthread_once(&rt_once, rt_init): the environment read, the
 * clock calibrated, the log opened, the signal and fork handlers installed.
 */
void rt_init(void)
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
