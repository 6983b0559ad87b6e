/* SPDX-License-Identifier: MIT */
/* The lock-contention listener: futex tracepoints into the trees; see locks.h. */
#include "record/locks.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/facts.h"
#include "format/locksfile.h"
#include "perf/tracefs.h"
#include "symbol/symbol.h"
#include "util/file.h"
#include "util/strbuf.h"

/* The futex commands (linux/futex.h), without the private and clock flags. */
#define FUTEX_CMD(op) ((op) & 127)
enum {
	CMD_WAIT = 0, CMD_WAKE = 1, CMD_REQUEUE = 3, CMD_CMP_REQUEUE = 4, CMD_WAKE_OP = 5,
	CMD_LOCK_PI = 6, CMD_UNLOCK_PI = 7, CMD_WAIT_BITSET = 9, CMD_WAKE_BITSET = 10,
	CMD_WAIT_REQUEUE_PI = 11, CMD_CMP_REQUEUE_PI = 12, CMD_LOCK_PI2 = 13,
};

/* The listener's events. */
enum { EV_ENTER, EV_EXIT, EV_COUNT };

/* The largest lock object (a pthread_rwlock_t is 56 bytes): larger ones hold locks. */
#define NW_LOCK_OBJECT_MAX 64

/* The first frames searched for a condition variable's function. */
#define COND_FRAMES 6

static int read_id(const char *tracefs, const char *event, uint64_t *ret)
{
	char path[512], *text = NULL;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "%s/events/syscalls/%s/id", tracefs, event);
	rc = nw_read_file(path, &text, &len);
	if (rc)
		return rc == -ENOENT ? -ENODEV : rc;
	*ret = strtoull(text, NULL, 10);
	free(text);
	return *ret ? 0 : -ENODEV;
}

int nw_lock_opts_init(struct nw_lock_opts *o, uint64_t rate)
{
	int rc;

	memset(o, 0, sizeof(*o));
	o->rate = rate ? rate : NW_LOCK_DEFAULT_RATE;
	rc = nw_tracefs_find(o->tracefs, sizeof(o->tracefs));
	if (!rc)
		rc = read_id(o->tracefs, "sys_enter_futex", &o->enter_id);
	if (!rc)
		rc = read_id(o->tracefs, "sys_exit_futex", &o->exit_id);
	return rc;
}

/* ---- the tables ---- */

static uint64_t key_hash(uint32_t pid, uint64_t addr)
{
	return nw_hash_add(nw_hash_u64(pid), addr);
}

struct key {
	uint32_t pid;
	uint64_t addr;
};

static bool word_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_lock_word *w = &((const struct nw_lock_listener *)ctx)->words[i];
	const struct key *k = key;

	return w->pid == k->pid && w->uaddr == k->addr;
}

static uint64_t word_hash(const void *ctx, uint32_t i)
{
	const struct nw_lock_word *w = &((const struct nw_lock_listener *)ctx)->words[i];

	return key_hash(w->pid, w->uaddr);
}

static bool lock_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_lock_entry *e = &((const struct nw_lock_listener *)ctx)->locks[i];
	const struct key *k = key;

	return e->pid == k->pid && e->addr == k->addr;
}

static uint64_t lock_hash(const void *ctx, uint32_t i)
{
	const struct nw_lock_entry *e = &((const struct nw_lock_listener *)ctx)->locks[i];

	return key_hash(e->pid, e->addr);
}

/* The state of thread @th, NULL on ENOMEM. */
static struct nw_lock_thread *thread_of(struct nw_lock_listener *l, const struct nw_thread *th)
{
	if (nw_grow_fill(&l->threads, &l->nthreads, &l->cap_threads, th->seq, sizeof(*l->threads),
			 0))
		return NULL;
	return &l->threads[th->seq];
}

/* ---- what a module's symbols say ---- */

static int cmp_symbol(const void *a, const void *b)
{
	const struct nw_lock_symbol *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct symbol_scan {
	struct nw_lock_module *mod;
	size_t cap_objects, cap_conds;
	bool symtab; /* a .symtab's symbols came (not only .dynsym's) */
};

/*
 * Does a futex wait in @name wait for something other than a lock: a
 * condition variable (glibc: pthread_cond_*, __condvar_*), a thread's end
 * (pthread_join and its kin), a barrier, a once-only initialisation?
 */
static bool cond_function(const char *name)
{
	return strstr(name, "pthread_cond_") || !strncmp(name, "__condvar_", 10) ||
	       strstr(name, "join") || strstr(name, "pthread_barrier_") ||
	       strstr(name, "pthread_once");
}

static int scan_symbol(void *arg, const struct nw_elf_symbol *sym)
{
	struct symbol_scan *sc = arg;
	struct nw_lock_module *md = sc->mod;
	struct nw_lock_symbol v = { sym->value, sym->value + (sym->size ? sym->size : 1), NULL };

	sc->symtab |= !sym->dynamic;
	if (sym->type == 1 /* STT_OBJECT */ && sym->size) {
		v.name = strdup(sym->name);
		if (!v.name || nw_grow(&md->objects, &sc->cap_objects, md->nobjects + 1,
				       sizeof(*md->objects))) {
			free(v.name);
			return -ENOMEM;
		}
		md->objects[md->nobjects++] = v;
	} else if (sym->type == 2 /* STT_FUNC */ && sym->size && cond_function(sym->name)) {
		if (nw_grow(&md->conds, &sc->cap_conds, md->nconds + 1, sizeof(*md->conds)))
			return -ENOMEM;
		md->conds[md->nconds++] = v;
	}
	return 0;
}

/*
 * Module @index's symbols, read at its first use: its own, and where it
 * has only .dynsym, its separate debug file's .symtab (glibc's
 * pthread_join is a jump to __pthread_clockjoin_ex, its condition
 * variables' helpers are static: only there).  NULL on ENOMEM.
 */
static struct nw_lock_module *module_of(struct nw_lock_listener *l, const struct nw_session *s,
					uint32_t index)
{
	struct nw_lock_module *md;

	if (nw_grow_fill(&l->mods, &l->nmods, &l->cap_mods, index, sizeof(*l->mods), 0))
		return NULL;
	md = &l->mods[index];
	if (!md->read && index < s->modules.n) {
		const struct nw_module *mod = &s->modules.v[index];
		struct symbol_scan sc = { .mod = md };
		char debug[PATH_MAX];

		md->read = true;
		if (nw_elf_symbols(nw_module_source(mod), scan_symbol, &sc) == -ENOMEM)
			return NULL;
		if (!sc.symtab && mod->build_id_size &&
		    nw_debug_file_by_build_id(mod->build_id, mod->build_id_size, debug,
					      sizeof(debug)) &&
		    nw_elf_symbols(debug, scan_symbol, &sc) == -ENOMEM)
			return NULL;
		if (md->nobjects)
			qsort(md->objects, md->nobjects, sizeof(*md->objects), cmp_symbol);
		if (md->nconds)
			qsort(md->conds, md->nconds, sizeof(*md->conds), cmp_symbol);
	}
	return md;
}

/* The symbol of @v holding @addr (the last that starts at or below it), or NULL. */
static const struct nw_lock_symbol *symbol_at(const struct nw_lock_symbol *v, size_t n,
					      uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < v[lo - 1].end ? &v[lo - 1] : NULL;
}

/*
 * The first of the first frames of the sample just unwound (@n) that lies
 * in a condition variable's function: its index, or -1.
 */
static int cond_frame(struct nw_lock_listener *l, const struct nw_session *s,
		      const struct nw_epoch *epoch, size_t n)
{
	for (size_t i = 0; i < n && i < COND_FRAMES; i++) {
		uint64_t pc = nw_ip_pc(s->frames[i].ip) - (i ? 1 : 0);
		const struct nw_map *map = nw_epoch_find(epoch, pc);
		const struct nw_lock_module *md = map ? module_of(l, s, map->module) : NULL;

		if (md && symbol_at(md->conds, md->nconds, pc - map->start + map->vaddr))
			return (int)i;
	}
	return -1;
}

/*
 * Names the lock of futex word @uaddr: the global or static object of a
 * module mapped in @epoch that holds it, a lock object ("name", its
 * address in *@ret_addr) or a larger one ("name+off", @uaddr); else NULL
 * and @uaddr itself.
 */
static char *name_lock(struct nw_lock_listener *l, const struct nw_session *s,
		       const struct nw_epoch *epoch, uint64_t uaddr, uint64_t *ret_addr)
{
	*ret_addr = uaddr;
	for (uint32_t i = 0; epoch && i < epoch->n; i++) {
		const struct nw_map *map = &epoch->maps[i];
		const struct nw_module *mod = map->module < s->modules.n
						      ? &s->modules.v[map->module] : NULL;
		uint64_t bias = map->start - map->vaddr, a = uaddr - bias;
		const struct nw_lock_symbol *sym;
		const struct nw_lock_module *md;
		bool inside = false;

		for (uint32_t k = 0; mod && mod->facts.known && k < mod->facts.nsegs; k++)
			inside |= a >= mod->facts.segs[k].vaddr &&
				  a < mod->facts.segs[k].vaddr + mod->facts.segs[k].memsz;
		if (!inside || !(md = module_of(l, s, map->module)))
			continue;
		sym = symbol_at(md->objects, md->nobjects, a);
		if (!sym)
			return NULL;
		/*
		 * A lock object itself: one lock whichever of its futex words
		 * (an rwlock's readers and writers wait on two).  Else a word
		 * of a larger object (a struct, an array of locks): its own.
		 */
		if (sym->end - sym->start <= NW_LOCK_OBJECT_MAX) {
			*ret_addr = sym->start + bias;
			return strdup(sym->name);
		}
		return a == sym->start ? strdup(sym->name)
				       : nw_strdup_printf("%s+%llu", sym->name,
							  (unsigned long long)(a - sym->start));
	}
	return NULL;
}

/* The lock of (@pid, @addr), made when new (taking @name).  Its index, or -ENOMEM. */
static int64_t lock_of(struct nw_lock_listener *l, uint32_t pid, uint64_t addr, char *name)
{
	struct key k = { pid, addr };
	uint32_t *slot = nw_index_slot(&l->lock_ix, key_hash(pid, addr), lock_eq, lock_hash, l, &k);

	if (!slot) {
		free(name);
		return -ENOMEM;
	}
	if (*slot != NW_INDEX_NONE) {
		free(name);
		return *slot;
	}
	if (nw_grow(&l->locks, &l->cap_locks, l->nlocks + 1, sizeof(*l->locks))) {
		free(name);
		return -ENOMEM;
	}
	l->locks[l->nlocks] = (struct nw_lock_entry){ .pid = pid, .addr = addr, .name = name };
	nw_index_fill(&l->lock_ix, slot, l->nlocks);
	return l->nlocks++;
}

/* The word (@pid, @uaddr); made (with its lock, named) when @make.  Its index, -ENOENT, -ENOMEM. */
static int64_t word_of(struct nw_lock_listener *l, const struct nw_session *s,
		       const struct nw_epoch *epoch, uint32_t pid, uint64_t uaddr, bool make)
{
	struct key k = { pid, uaddr };
	uint32_t w = nw_index_find(&l->word_ix, key_hash(pid, uaddr), word_eq, l, &k), *slot;
	uint64_t addr;
	int64_t lock;
	char *name;

	if (w != NW_INDEX_NONE || !make)
		return w == NW_INDEX_NONE ? -ENOENT : (int64_t)w;
	name = name_lock(l, s, epoch, uaddr, &addr);
	lock = lock_of(l, pid, addr, name);
	if (lock < 0 || nw_grow(&l->words, &l->cap_words, l->nwords + 1, sizeof(*l->words)))
		return -ENOMEM;
	slot = nw_index_slot(&l->word_ix, key_hash(pid, uaddr), word_eq, word_hash, l, &k);
	if (!slot)
		return -ENOMEM;
	l->words[l->nwords] = (struct nw_lock_word){ .pid = pid, .uaddr = uaddr,
						     .lock = (uint32_t)lock };
	nw_index_fill(&l->word_ix, slot, l->nwords);
	return l->nwords++;
}

/* ---- the events ---- */

/* Adds (@cct, @node) with its weight to @r (one entry per path). */
static int add_ref(struct nw_lock_refs *r, struct nw_cct *cct, uint32_t node, double count,
		   double ns)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].cct == cct && r->v[i].node == node) {
			r->v[i].contentions += count;
			r->v[i].ns += ns;
			return 0;
		}
	}
	if (nw_grow(&r->v, &r->cap, r->n + 1, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n++] = (struct nw_lock_ref){ cct, node, count, ns };
	return 0;
}

/* Keeps @smp of @th at @epoch in @c (its stack copy's used part only).  -ENOMEM. */
static int keep(struct nw_lock_copy *c, const struct nw_sample *smp, struct nw_thread *th,
		const struct nw_epoch *epoch)
{
	size_t ips = (size_t)smp->nr * 8, regs = (size_t)smp->nregs * 8;
	size_t stack = smp->dyn_size < smp->stack_size ? smp->dyn_size : smp->stack_size;
	unsigned char *p;

	if (nw_grow(&c->buf, &c->cap, ips + regs + stack + 1, 1))
		return -ENOMEM;
	c->smp = *smp;
	p = c->buf;
	c->smp.ips = p;
	c->smp.regs = p + ips;
	c->smp.stack = p + ips + regs;
	if (ips)
		memcpy(p, smp->ips, ips);
	if (regs)
		memcpy(p + ips, smp->regs, regs);
	if (stack)
		memcpy(p + ips + regs, smp->stack, stack);
	c->smp.stack_size = c->smp.dyn_size = stack;
	c->th = th;
	c->epoch = epoch;
	c->cct = NULL;
	return 0;
}

/* Unwinds the sample kept in @c (once): its frame count, 0 when it has none (counted). */
static size_t unwind_kept(struct nw_session *s, const struct nw_lock_copy *c)
{
	size_t n = nw_session_unwind(s, c->th, c->epoch, &c->smp);

	if (!n)
		s->stats.empty_stacks++;
	return n;
}

/* Folds the frames just unwound (@n) into @c's thread's tree: false on ENOMEM (counted). */
static bool fold(struct nw_session *s, struct nw_lock_copy *c, size_t n)
{
	struct nw_cct *cct = nw_thread_cct(c->th, c->epoch, s->nmetrics);
	uint32_t node = cct ? nw_cct_insert(cct, s->frames, n) : NW_CCT_NONE;

	if (node == NW_CCT_NONE) {
		s->stats.alloc_failures++;
		return false;
	}
	c->cct = cct;
	c->node = node;
	return true;
}

/*
 * Is the wait pthread_join's (and its kin's): on the thread's tid word,
 * which the kernel clears and wakes when the thread ends, a shared futex
 * whose expected value is a live thread of the same process?
 */
static bool join_wait(const struct nw_session *s, const struct nw_sample *smp, uint64_t op)
{
	const struct nw_thread *t;
	uint64_t val;

	if ((op & 128 /* FUTEX_PRIVATE_FLAG */) ||
	    !nw_session_reg(s, smp, s->arch->perf_args[2], &val) || !val || val > INT32_MAX)
		return false;
	t = nw_tasks_find_thread(&s->tasks, (uint32_t)val);
	return t && t->pid == smp->sid.pid;
}

/* The entry of a futex wait: its sample kept until it ends. */
static void wait_entry(struct nw_lock_listener *l, struct nw_session *s,
		       const struct nw_sample *smp, struct nw_thread *th,
		       const struct nw_epoch *epoch, uint64_t uaddr, uint64_t op)
{
	struct nw_lock_thread *t = thread_of(l, th);
	uint64_t val;
	int64_t w;

	if (!t) {
		l->failed = true;
		return;
	}
	t->waiting = false;
	if (FUTEX_CMD((unsigned)op) == CMD_WAIT_REQUEUE_PI || join_wait(s, smp, op)) {
		l->stats.cond_waits++;
		return;
	}
	w = word_of(l, s, epoch, smp->sid.pid, uaddr, true);
	if (w < 0 || keep(&t->entry, smp, th, epoch)) {
		l->failed = true;
		return;
	}
	t->word = (uint32_t)w;
	t->since = smp->sid.time;
	t->waiting = true;
	t->lll = FUTEX_CMD((unsigned)op) == CMD_WAIT &&
		 nw_session_reg(s, smp, s->arch->perf_args[2], &val) && (uint32_t)val == 2;
	l->words[w].pending++;
}

/* The entry of a futex wake: a release, when a thread waits on that word now. */
static void wake_entry(struct nw_lock_listener *l, const struct nw_session *s,
		       const struct nw_sample *smp, struct nw_thread *th,
		       const struct nw_epoch *epoch, uint64_t uaddr)
{
	int64_t w = word_of(l, s, epoch, smp->sid.pid, uaddr, false);
	struct nw_lock_word *word;

	if (w < 0 || !l->words[w].pending)
		return;
	word = &l->words[w];
	word->woken = !keep(&word->wake, smp, th, epoch);
	word->wake_time = smp->sid.time;
	if (!word->woken)
		l->failed = true;
	l->stats.releases++;
}

/* Adds @v to the listener's metric @k of (@cct, @node). */
static void add_metric(const struct nw_lock_listener *l, const struct nw_session *s,
		       struct nw_cct *cct, uint32_t node, unsigned k, uint64_t v)
{
	nw_cct_metrics(cct, node)[s->source_metric + l->metric_offset + k] += v;
	nw_cct_mark_changed(cct, node);
}

/*
 * The release of @word that woke a sampled wait of [@since, @until],
 * unwound (once) into its thread's tree: NULL when none was seen then.
 */
static const struct nw_lock_copy *releaser(struct nw_session *s, struct nw_lock_word *word,
					   uint64_t since, uint64_t until)
{
	struct nw_lock_copy *c = &word->wake;
	size_t n;

	if (!word->woken || word->wake_time < since || word->wake_time > until)
		return NULL;
	if (!c->cct && (!(n = unwind_kept(s, c)) || !fold(s, c, n)))
		return NULL;
	return c;
}

/* Weighs a sampled wait of @wait ns at the waiter's node, its lock and its releaser's. */
static void weigh(struct nw_lock_listener *l, struct nw_session *s, struct nw_lock_thread *t,
		  uint64_t wait, uint64_t until)
{
	struct nw_lock_word *word = &l->words[t->word];
	struct nw_lock_entry *lock = &l->locks[word->lock];
	const struct nw_lock_copy *r;
	double count, ns;

	nw_alloc_weight(wait, l->o->rate, &count, &ns);
	add_metric(l, s, t->entry.cct, t->entry.node, 0, (uint64_t)(ns + 0.5));
	add_metric(l, s, t->entry.cct, t->entry.node, 1, (uint64_t)(count + 0.5));
	lock->contentions += count;
	lock->ns += ns;
	if (wait > lock->max_ns)
		lock->max_ns = wait;
	if (add_ref(&lock->waiters, t->entry.cct, t->entry.node, count, ns))
		l->failed = true;
	r = releaser(s, word, t->since, until);
	if (r) {
		add_metric(l, s, r->cct, r->node, 2, (uint64_t)(ns + 0.5));
		if (add_ref(&lock->releasers, r->cct, r->node, 0, ns))
			l->failed = true;
	} else {
		l->unknown_ns += ns;
		l->stats.no_releaser++;
	}
}

/* A wait of @wait ns that ended at @until: sampled, and a sampled one unwound and weighed. */
static void wait_ended(struct nw_lock_listener *l, struct nw_session *s, struct nw_thread *th,
		       struct nw_lock_thread *t, uint64_t wait, uint64_t until)
{
	size_t n;
	int cond;

	l->stats.waits++;
	if (!t->sampler.rng)
		nw_alloc_sampler_seed(&t->sampler, nw_hash_add(th->tid, t->since), l->o->rate);
	if (!nw_alloc_sample(&t->sampler, wait, l->o->rate))
		return;
	l->stats.sampled++;
	n = unwind_kept(s, &t->entry);
	if (!n)
		return;
	/*
	 * glibc's low-level lock wait is a mutex's even when a condition
	 * variable's function called it (the mutex pthread_cond_wait takes
	 * back); but the futex call made in that function itself is the
	 * condition variable's internal lock (__condvar_acquire_lock, inlined:
	 * it waits for the value (size << 2) | 2, which is 2 at size 0).
	 */
	cond = cond_frame(l, s, t->entry.epoch, n);
	if (cond == 0 || (cond > 0 && !t->lll)) {
		l->stats.cond_waits++;
		return;
	}
	if (!fold(s, &t->entry, n))
		return;
	weigh(l, s, t, wait, until);
	th->samples++;
	if (!th->first_time)
		th->first_time = until;
	th->last_time = until;
}

/*
 * The end of a futex call: a wait's end.  Once nobody waits on its word,
 * the word's last release is forgotten (its copy freed: memory follows
 * the words waited on now, not every word ever waited on).
 */
static void call_exit(struct nw_lock_listener *l, struct nw_session *s,
		      const struct nw_sample *smp, struct nw_thread *th)
{
	struct nw_lock_thread *t = th->seq < l->nthreads ? &l->threads[th->seq] : NULL;
	struct nw_lock_word *word;
	uint64_t ret;

	if (!t || !t->waiting)
		return;
	t->waiting = false;
	/*
	 * -EAGAIN: the word no longer held the value the caller expected (the
	 * lock came free, the thread waited for had ended), so the thread
	 * never slept.  No contention, and no wait to classify: a join that
	 * lost the race with its thread's end meets a thread the recorder
	 * already saw exit.
	 */
	if (nw_session_reg(s, smp, s->arch->perf_ret, &ret) && (int64_t)ret == -EAGAIN)
		l->stats.at_once++;
	else
		wait_ended(l, s, th, t, smp->sid.time > t->since ? smp->sid.time - t->since : 0,
			   smp->sid.time);
	word = &l->words[t->word];
	if (word->pending && --word->pending == 0) {
		free(word->wake.buf);
		word->wake = (struct nw_lock_copy){ 0 };
		word->woken = false;
	}
}

static enum nw_source_scope event_attr(void *arg, const struct nw_session *s, unsigned which,
				       struct perf_event_attr *a)
{
	const struct nw_lock_listener *l = arg;

	(void)s;
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = which == EV_ENTER ? l->o->enter_id : l->o->exit_id;
	a->sample_period = 1;
	a->exclude_callchain_kernel = 1;
	if (which == EV_EXIT) {
		/* The time and the result: no stack. */
		a->exclude_callchain_user = 1;
		if (a->sample_stack_user)
			a->sample_stack_user = 8;
	}
	return NW_SOURCE_TASK;
}

static void on_sample(void *arg, struct nw_session *s, unsigned which, const struct nw_sample *smp,
		      struct nw_thread *th, const struct nw_epoch *epoch)
{
	struct nw_lock_listener *l = arg;
	uint64_t uaddr, op;
	unsigned cmd;

	if (which == EV_EXIT) {
		call_exit(l, s, smp, th);
		return;
	}
	/* The system call's arguments: (uaddr, op, val, ...) in the argument registers. */
	if (!nw_session_reg(s, smp, s->arch->perf_args[0], &uaddr) ||
	    !nw_session_reg(s, smp, s->arch->perf_args[1], &op))
		return;
	cmd = FUTEX_CMD((unsigned)op);
	switch (cmd) {
	case CMD_WAIT:
	case CMD_WAIT_BITSET:
	case CMD_LOCK_PI:
	case CMD_LOCK_PI2:
	case CMD_WAIT_REQUEUE_PI:
		wait_entry(l, s, smp, th, epoch, uaddr, op);
		break;
	case CMD_WAKE:
	case CMD_WAKE_BITSET:
	case CMD_WAKE_OP:
	case CMD_UNLOCK_PI:
	case CMD_REQUEUE:
	case CMD_CMP_REQUEUE:
	case CMD_CMP_REQUEUE_PI:
		wake_entry(l, s, smp, th, epoch, uaddr);
		break;
	default:
		break;
	}
}

/* Process @pid replaced its image: its words and locks are another program's now. */
static void on_exec(void *arg, struct nw_session *s, uint32_t pid)
{
	struct nw_lock_listener *l = arg;

	(void)s;
	for (uint32_t i = 0; i < l->nwords; i++) {
		struct nw_lock_word *w = &l->words[i];
		struct key k = { w->pid, w->uaddr };

		if (w->pid != pid)
			continue;
		nw_index_remove(&l->word_ix, key_hash(k.pid, k.addr), word_eq, word_hash, l, &k);
		w->pid = UINT32_MAX; /* no process has it */
		w->pending = 0;
	}
	for (uint32_t i = 0; i < l->nlocks; i++) {
		struct nw_lock_entry *e = &l->locks[i];
		struct key k = { e->pid, e->addr };

		if (e->pid == pid)
			nw_index_remove(&l->lock_ix, key_hash(k.pid, k.addr), lock_eq, lock_hash, l,
					&k);
	}
}

static int describe(void *arg, const struct nw_session *s, struct nw_measurement *m)
{
	const struct nw_lock_listener *l = arg;

	(void)s;
	for (int k = NW_METRIC_LOCK_WAIT; k <= NW_METRIC_LOCK_DELAY; k++) {
		int ret = nw_measurement_add_metric(m, NW_LOCK_EVENT, (enum nw_metric_kind)k,
						    l->o->rate);

		if (ret < 0)
			return ret;
	}
	return 0;
}

void nw_lock_listener_init(struct nw_lock_listener *l, const struct nw_lock_opts *o)
{
	const struct nw_arch_ops *arch = nw_arch_host();

	memset(l, 0, sizeof(*l));
	l->o = o;
	l->source = (struct nw_session_source){
		.arg = l,
		.nevents = EV_COUNT,
		.nmetrics = 3,
		.bursty = true,
		.attr = event_attr,
		.sample = on_sample,
		.exec = on_exec,
		.describe = describe,
	};
	/* The system call's first three arguments, at its entry; its result, at its exit. */
	for (unsigned i = 0; arch && i < 3; i++)
		l->source.regs_mask |= 1ull << arch->perf_args[i];
	if (arch)
		l->source.regs_mask |= 1ull << arch->perf_ret;
}

void nw_lock_listener_fini(struct nw_lock_listener *l)
{
	for (uint32_t i = 0; i < l->nlocks; i++) {
		free(l->locks[i].name);
		free(l->locks[i].waiters.v);
		free(l->locks[i].releasers.v);
	}
	for (size_t i = 0; i < l->nmods; i++) {
		for (size_t k = 0; k < l->mods[i].nobjects; k++)
			free(l->mods[i].objects[k].name);
		free(l->mods[i].objects);
		free(l->mods[i].conds);
	}
	for (size_t i = 0; i < l->nthreads; i++)
		free(l->threads[i].entry.buf);
	for (uint32_t i = 0; i < l->nwords; i++)
		free(l->words[i].wake.buf);
	free(l->mods);
	free(l->locks);
	free(l->words);
	free(l->threads);
	nw_index_fini(&l->word_ix);
	nw_index_fini(&l->lock_ix);
	memset(l, 0, sizeof(*l));
}

/* ---- the locks as a table of the model ---- */

struct tree_at {
	const struct nw_cct *cct;
	const struct nw_tree *tree;
};

static int cmp_tree_at(const void *a, const void *b)
{
	const struct nw_cct *x = ((const struct tree_at *)a)->cct;
	const struct nw_cct *y = ((const struct tree_at *)b)->cct;

	return x < y ? -1 : x > y;
}

/* The model's tree that is the session's @cct, or NULL. */
static const struct nw_tree *tree_of(const struct tree_at *v, size_t n, const struct nw_cct *cct)
{
	struct tree_at key = { cct, NULL };
	const struct tree_at *t = bsearch(&key, v, n, sizeof(*v), cmp_tree_at);

	return t ? t->tree : NULL;
}

/* Appends @s (taken) to @p's frames.  -ENOMEM. */
static int push_frame(struct nw_lock_path *p, size_t *cap, char *s)
{
	if (!s || nw_grow(&p->frames, cap, p->nframes + 1, sizeof(*p->frames))) {
		free(s);
		return -ENOMEM;
	}
	p->frames[p->nframes++] = s;
	return 0;
}

/* The function names of node @node of @tr, root first, into @p.  -ENOMEM. */
static int path_frames(const struct nw_measurement *m, const struct nw_tree *tr, uint32_t node,
		       struct nw_lock_path *p)
{
	size_t cap = 0;
	int ret = 0;

	for (uint32_t n = node; !ret && n != NW_CCT_NONE && n != 0;
	     n = tr->cct->nodes[n].parent) {
		struct nw_resolved r;

		nw_measurement_resolve_node(m, tr, n, &r);
		if (r.sym && r.sym->nframes) {
			/* Innermost first, as the walk goes: reversed below. */
			for (uint32_t k = 0; !ret && k < r.sym->nframes; k++)
				ret = push_frame(p, &cap, strdup(r.sym->frames[k].function));
		} else if (r.module) {
			const char *slash = strrchr(r.module->path, '/');

			ret = push_frame(p, &cap,
					 nw_strdup_printf("%s+0x%llx",
							  slash ? slash + 1 : r.module->path,
							  (unsigned long long)r.addr));
		} else {
			ret = push_frame(p, &cap, strdup("[unknown]"));
		}
	}
	for (uint32_t i = 0; i < p->nframes / 2; i++) {
		char *t = p->frames[i];

		p->frames[i] = p->frames[p->nframes - 1 - i];
		p->frames[p->nframes - 1 - i] = t;
	}
	return ret;
}

static bool same_frames(const struct nw_lock_path *a, const struct nw_lock_path *b)
{
	if (a->nframes != b->nframes)
		return false;
	for (uint32_t i = 0; i < a->nframes; i++)
		if (strcmp(a->frames[i], b->frames[i]))
			return false;
	return true;
}

static int cmp_path_ns(const void *a, const void *b)
{
	const struct nw_lock_path *x = a, *y = b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/*
 * @r's paths named and merged into @ret (at most NW_LOCK_PATHS: the first
 * ref's path first when @keep_first, then the heaviest).  -ENOMEM.
 */
static int model_paths(const struct nw_measurement *m, const struct tree_at *trees, size_t ntrees,
		       const struct nw_lock_refs *r, bool keep_first, struct nw_lock_path **ret,
		       uint32_t *ret_n)
{
	struct nw_lock_path *v = calloc(r->n ? r->n : 1, sizeof(*v));
	uint32_t n = 0, first = UINT32_MAX;
	int ret_code = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; !ret_code && i < r->n; i++) {
		const struct nw_tree *tr = tree_of(trees, ntrees, r->v[i].cct);
		struct nw_lock_path p = { (uint64_t)(r->v[i].contentions + 0.5),
					  (uint64_t)(r->v[i].ns + 0.5), 0, NULL };
		uint32_t k;

		if (!tr)
			continue;
		ret_code = path_frames(m, tr, r->v[i].node, &p);
		for (k = 0; k < n && !same_frames(&v[k], &p); k++)
			;
		if (k < n) {
			v[k].contentions += p.contentions;
			v[k].ns += p.ns;
			nw_lock_path_fini(&p);
		} else {
			v[n++] = p;
		}
		if (i == 0 && keep_first)
			first = k;
	}
	if (first != UINT32_MAX && first != 0) {
		struct nw_lock_path t = v[0];

		v[0] = v[first];
		v[first] = t;
	}
	if (n > 1)
		qsort(v + (first != UINT32_MAX), n - (first != UINT32_MAX), sizeof(*v), cmp_path_ns);
	while (n > NW_LOCK_PATHS)
		nw_lock_path_fini(&v[--n]);
	*ret = v;
	*ret_n = n;
	return ret_code;
}

int nw_lock_listener_model(const struct nw_lock_listener *l, const struct nw_measurement *m,
			   struct nw_locks **ret)
{
	struct nw_locks *out = calloc(1, sizeof(*out));
	struct tree_at *trees;
	size_t ntrees = 0;
	int rc = 0;

	for (uint32_t i = 0; i < m->nthreads; i++)
		ntrees += m->threads[i].ntrees;
	trees = malloc((ntrees ? ntrees : 1) * sizeof(*trees));
	if (out)
		out->v = calloc(l->nlocks ? l->nlocks : 1, sizeof(*out->v));
	if (!out || !trees || !out->v) {
		free(trees);
		nw_locks_free(out);
		return -ENOMEM;
	}
	ntrees = 0;
	for (uint32_t i = 0; i < m->nthreads; i++)
		for (uint32_t t = 0; t < m->threads[i].ntrees; t++)
			trees[ntrees++] = (struct tree_at){ m->threads[i].trees[t].cct,
							    &m->threads[i].trees[t] };
	qsort(trees, ntrees, sizeof(*trees), cmp_tree_at);
	out->rate = l->o->rate;
	out->unknown_releaser_ns = (uint64_t)(l->unknown_ns + 0.5);
	for (uint32_t i = 0; !rc && i < l->nlocks; i++) {
		const struct nw_lock_entry *e = &l->locks[i];
		struct nw_lock *k = &out->v[out->n];

		if (!e->waiters.n)
			continue; /* a word waited on, no wait sampled */
		out->n++;
		*k = (struct nw_lock){ .pid = e->pid, .addr = e->addr,
				       .contentions = (uint64_t)(e->contentions + 0.5),
				       .wait_ns = (uint64_t)(e->ns + 0.5), .max_ns = e->max_ns };
		if (e->name && !(k->name = strdup(e->name)))
			rc = -ENOMEM;
		if (!rc)
			rc = model_paths(m, trees, ntrees, &e->waiters, true, &k->waiters,
					 &k->nwaiters);
		if (!rc)
			rc = model_paths(m, trees, ntrees, &e->releasers, false, &k->releasers,
					 &k->nreleasers);
	}
	free(trees);
	if (rc) {
		nw_locks_free(out);
		return rc;
	}
	*ret = out;
	return 0;
}

int nw_lock_listener_file(const struct nw_lock_listener *l, struct nw_measurement *m,
			  struct nw_extra_file *ret)
{
	struct nw_locks *locks;
	int rc = nw_lock_listener_model(l, m, &locks);

	if (rc)
		return rc;
	nw_locks_free(m->locks);
	m->locks = locks;
	ret->name = NW_LOCKS_FILE;
	ret->data = nw_locks_to_json(locks, &ret->size);
	return ret->data ? 0 : -ENOMEM;
}
