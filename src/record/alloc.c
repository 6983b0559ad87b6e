/* SPDX-License-Identifier: MIT */
#include "record/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/abi.h"
#include "elf/facts.h"
#include "model/metric.h"
#include "perf/tracefs.h"
#include "util/strbuf.h"

#define UPROBE_PMU "/sys/bus/event_source/devices/uprobe"

/* The uprobe PMU's type. */
static int uprobe_pmu(int *ret_type)
{
	FILE *f = fopen(UPROBE_PMU "/type", "r");
	int type = -1;

	if (!f)
		return -ENODEV;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	if (type < 0)
		return -ENODEV;
	*ret_type = type;
	return 0;
}

/* @exe's directory + @rel, if that file exists. */
static char *beside(const char *exe, const char *rel)
{
	char *dir = strdup(exe), *slash, *path = NULL;

	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		path = nw_strdup_printf("%s/%s", dir, rel);
		if (path && access(path, R_OK) != 0) {
			free(path);
			path = NULL;
		}
	}
	free(dir);
	return path;
}

static char *find_library(const char *exe, const char *libdir)
{
	char *p = exe ? beside(exe, "../src/alloc/" NW_ALLOC_LIBRARY) : NULL;

	if (!p && libdir) {
		p = nw_strdup_printf("%s/narwhal/%s", libdir, NW_ALLOC_LIBRARY);
		if (p && access(p, R_OK) != 0) {
			free(p);
			p = NULL;
		}
	}
	return p;
}

int nw_alloc_opts_init(struct nw_alloc_opts *o, const char *library, const char *exe,
		       const char *libdir, uint64_t rate)
{
	char real[PATH_MAX];
	char *found;
	int ret;

	memset(o, 0, sizeof(*o));
	o->rate = rate ? rate : NW_ALLOC_DEFAULT_RATE;
	ret = uprobe_pmu(&o->uprobe_type);
	if (ret || (!library && !exe))
		return ret; /* attached: no library */
	found = library ? strdup(library) : find_library(exe, libdir);
	if (!found)
		return library ? -ENOMEM : -ENOENT;
	/* The absolute path: LD_PRELOAD is read after the program changes directory. */
	o->library = realpath(found, real) ? strdup(real) : NULL;
	free(found);
	if (!o->library)
		return -ENOENT;
	ret = nw_elf_symbol_offset(o->library, NW_ALLOC_SAMPLE_FN, &o->sample_off);
	if (!ret)
		ret = nw_elf_symbol_offset(o->library, NW_ALLOC_FREE_FN, &o->free_off);
	return ret;
}

static const char *const fn_names[NW_ALLOC_FNS] = {
	[NW_ALLOC_FN_MALLOC] = "malloc",
	[NW_ALLOC_FN_CALLOC] = "calloc",
	[NW_ALLOC_FN_REALLOC] = "realloc",
	[NW_ALLOC_FN_MEMALIGN] = "memalign",
	[NW_ALLOC_FN_FREE] = "free",
};

/* Appends @line to uprobe_events in tracefs @dir.  -errno. */
static int uprobe_events(const char *dir, const char *line)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/uprobe_events", dir);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Removes every probe of @group ("-:GROUP/EVENT" for each of its events):
 * the names are read first, then removed, until none is left (a directory
 * read while entries go may skip some, and a probe whose last perf event
 * was just closed is busy until the kernel has freed it: tries 10 ms
 * apart for up to 5 s).  0, or -EBUSY when some are left.
 */
static int remove_group(const char *tracefs, const char *group)
{
	char path[PATH_MAX], line[512], names[32][256];

	snprintf(path, sizeof(path), "%s/events/%s", tracefs, group);
	for (int pass = 0; pass < 500; pass++) {
		DIR *dir = opendir(path);
		struct dirent *de;
		int n = 0;

		if (!dir)
			return 0;
		while (n < 32 && (de = readdir(dir))) {
			if (de->d_name[0] == '.' || !strcmp(de->d_name, "enable") ||
			    !strcmp(de->d_name, "filter"))
				continue;
			snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
		}
		closedir(dir);
		if (!n)
			return 0;
		for (int i = 0; i < n; i++) {
			snprintf(line, sizeof(line), "-:%.200s/%.255s\n", group, names[i]);
			uprobe_events(tracefs, line);
		}
		if (pass)
			usleep(10000);
	}
	return -EBUSY;
}

/* The groups of recorders that ended without removing theirs (killed). */
static void remove_stale_groups(const char *tracefs)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/events", tracefs);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char proc[64];
		int pid;

		if (sscanf(de->d_name, "narwhal_%d", &pid) != 1)
			continue;
		snprintf(proc, sizeof(proc), "/proc/%d", pid);
		if (access(proc, F_OK) != 0)
			remove_group(tracefs, de->d_name);
	}
	closedir(dir);
}

/* The path of the C library @pid maps executable, or NULL. */
static char *libc_of(int pid)
{
	char path[64], line[PATH_MAX + 128];
	char *found = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		char perms[5], *file = NULL, *nl;
		int n = 0;

		if (sscanf(line, "%*x-%*x %4s %*x %*s %*s %n", perms, &n) < 1 || !n ||
		    perms[2] != 'x')
			continue;
		file = line + n;
		nl = strchr(file, '\n');
		if (nl)
			*nl = 0;
		if (!strcmp(nw_basename(file), "libc.so.6"))
			found = strdup(file);
	}
	fclose(f);
	return found;
}

static int read_id(const char *dir, const char *group, const char *event, uint64_t *ret)
{
	char path[PATH_MAX];
	unsigned long long id;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/events/%s/%s/id", dir, group, event);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", &id) == 1;
	fclose(f);
	if (!ok)
		return -EINVAL;
	*ret = id;
	return 0;
}

int nw_alloc_probe_libc(struct nw_alloc_opts *o, int pid)
{
	struct nw_alloc_libc *lc = &o->libc;
	char *path = libc_of(pid);
	int ret = 0;

	if (!path)
		return -ENOENT;
	if (lc->path) {
		ret = strcmp(lc->path, path) ? -EXDEV : 0;
		free(path);
		return ret;
	}
	ret = nw_tracefs_find(lc->tracefs, sizeof(lc->tracefs));
	if (ret) {
		free(path);
		return ret == -ENOENT ? -ENODEV : ret;
	}
	lc->path = path;
	snprintf(lc->group, sizeof(lc->group), "narwhal_%d", (int)getpid());
	remove_stale_groups(lc->tracefs);
	remove_group(lc->tracefs, lc->group);
	lc->defined = true;
	for (int fn = 0; fn < NW_ALLOC_FNS && !ret; fn++) {
		uint64_t off;

		ret = nw_elf_symbol_offset(path, fn_names[fn], &off);
		for (int r = 0; !ret && r < (fn == NW_ALLOC_FN_FREE ? 1 : 2); r++) {
			char line[PATH_MAX + 128], event[32];

			snprintf(event, sizeof(event), "%s%s", fn_names[fn], r ? "_ret" : "");
			snprintf(line, sizeof(line), "%c:%s/%s %s:0x%llx\n", r ? 'r' : 'p', lc->group,
				 event, path, (unsigned long long)off);
			ret = uprobe_events(lc->tracefs, line);
			if (!ret)
				ret = read_id(lc->tracefs, lc->group, event, &lc->ids[fn][r]);
		}
	}
	return ret;
}

int nw_alloc_unprobe(struct nw_alloc_opts *o)
{
	int ret = o->libc.defined ? remove_group(o->libc.tracefs, o->libc.group) : 0;

	o->libc.defined = ret != 0;
	return ret;
}

void nw_alloc_opts_fini(struct nw_alloc_opts *o)
{
	nw_alloc_unprobe(o);
	free(o->libc.path);
	free(o->library);
	memset(o, 0, sizeof(*o));
}

char *nw_alloc_preload(const struct nw_alloc_opts *o, const char *old)
{
	return old && *old ? nw_strdup_printf("%s:%s", o->library, old) : strdup(o->library);
}

struct key {
	uint32_t pid;
	uint64_t ptr;
};

static uint64_t key_hash(uint32_t pid, uint64_t ptr)
{
	return nw_hash_add(nw_hash_u64(ptr), pid);
}

static bool entry_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_alloc_live *l = ctx;
	const struct key *k = key;

	return l->v[i].ptr == k->ptr && l->v[i].pid == k->pid;
}

static uint64_t entry_hash(const void *ctx, uint32_t i)
{
	const struct nw_alloc_live *l = ctx;

	return key_hash(l->v[i].pid, l->v[i].ptr);
}

void nw_alloc_live_init(struct nw_alloc_live *l)
{
	memset(l, 0, sizeof(*l));
}

void nw_alloc_live_fini(struct nw_alloc_live *l)
{
	free(l->v);
	free(l->free_list);
	nw_index_fini(&l->index);
	memset(l, 0, sizeof(*l));
}

int nw_alloc_live_add(struct nw_alloc_live *l, const struct nw_alloc_entry *e,
		      struct nw_alloc_entry *ret_old)
{
	struct key k = {e->pid, e->ptr};
	uint32_t *slot, id;

	/* Room first, so that a failure changes nothing. */
	if (!l->nfree && nw_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
		return -ENOMEM;
	if (nw_grow(&l->free_list, &l->cap_free, l->n + 1, sizeof(*l->free_list)))
		return -ENOMEM;
	slot = nw_index_slot(&l->index, key_hash(e->pid, e->ptr), entry_eq, entry_hash, l, &k);
	if (!slot)
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE) {
		*ret_old = l->v[*slot];
		l->v[*slot] = *e;
		return 1;
	}
	id = l->nfree ? l->free_list[--l->nfree] : (uint32_t)l->n++;
	l->v[id] = *e;
	nw_index_fill(&l->index, slot, id);
	return 0;
}

bool nw_alloc_live_remove(struct nw_alloc_live *l, uint32_t pid, uint64_t ptr,
			  struct nw_alloc_entry *ret)
{
	struct key k = {pid, ptr};
	uint32_t id;

	id = nw_index_remove(&l->index, key_hash(pid, ptr), entry_eq, entry_hash, l, &k);
	if (id == NW_INDEX_NONE)
		return false;
	*ret = l->v[id];
	l->v[id].ptr = 0;
	l->v[id].cct = NULL;
	l->free_list[l->nfree++] = id; /* room was made when it was added */
	return true;
}

void nw_alloc_live_drop_pid(struct nw_alloc_live *l, uint32_t pid,
			    void (*fn)(void *arg, const struct nw_alloc_entry *e), void *arg)
{
	for (size_t i = 0; i < l->n; i++) {
		struct nw_alloc_entry e;

		if (!l->v[i].cct || l->v[i].pid != pid)
			continue;
		if (nw_alloc_live_remove(l, pid, l->v[i].ptr, &e))
			fn(arg, &e);
	}
}

void nw_alloc_live_orphan(struct nw_alloc_live *l, uint32_t pid, uint64_t ptr, uint64_t time)
{
	unsigned i = l->next_orphan++ % NW_ALLOC_ORPHANS;

	l->orphans[i].pid = pid;
	l->orphans[i].ptr = ptr;
	l->orphans[i].time = time;
}

bool nw_alloc_live_freed(struct nw_alloc_live *l, uint32_t pid, uint64_t ptr, uint64_t time)
{
	for (unsigned i = 0; i < NW_ALLOC_ORPHANS; i++) {
		if (l->orphans[i].ptr != ptr || l->orphans[i].pid != pid || !ptr ||
		    l->orphans[i].time < time)
			continue;
		l->orphans[i].ptr = 0;
		return true;
	}
	return false;
}

/* ---- the listener: allocation samples into the session's trees ---- */

/* Argument @i of the function a uprobe sample stopped at; false without registers. */
static bool marker_arg(const struct nw_session *s, const struct nw_sample *smp, unsigned i,
		       uint64_t *ret)
{
	return nw_session_reg(s, smp, s->arch->perf_args[i], ret);
}

/* What a live allocation added to the live metrics of its node (from @metric on), taken back. */
static void take_back(unsigned metric, const struct nw_alloc_entry *e)
{
	uint64_t *m = nw_cct_metrics(e->cct, e->node) + metric;

	m[2] -= e->objects < m[2] ? e->objects : m[2];
	m[3] -= e->bytes < m[3] ? e->bytes : m[3];
	nw_cct_mark_changed(e->cct, e->node);
}

static void drop_one(void *arg, const struct nw_alloc_entry *e)
{
	take_back(*(const unsigned *)arg, e);
}

/*
 * Pointer @ptr of process @pid freed at @time: if sampled, its live
 * metrics go; else the free is noted, in case its allocation's sample
 * comes in a later read round (another CPU's ring).
 */
static void free_ptr(struct nw_alloc_listener *l, const struct nw_session *s, uint32_t pid,
		     uint64_t ptr, uint64_t time)
{
	struct nw_alloc_entry e;

	if (nw_alloc_live_remove(&l->live, pid, ptr, &e)) {
		take_back(s->source_metric + l->metric_offset, &e);
		l->stats.frees++;
	} else if (!l->o->libc.path) {
		/* Attached, most frees are of unsampled blocks: nothing to note. */
		nw_alloc_live_orphan(&l->live, pid, ptr, time);
	}
}

/* A free of a sampled allocation (the interposer's marker). */
static void process_free(struct nw_alloc_listener *l, struct nw_session *s,
			 const struct nw_sample *smp)
{
	uint64_t ptr;

	if (!marker_arg(s, smp, 0, &ptr)) {
		s->stats.bad_records++;
		return;
	}
	free_ptr(l, s, smp->sid.pid, ptr, smp->sid.time);
}

/* The live table's part of fold(): @m is the node's metrics from the listener's on. */
static void keep_live(struct nw_alloc_listener *l, struct nw_session *s,
		      const struct nw_alloc_entry *e, uint64_t time, uint64_t *m)
{
	struct nw_alloc_entry old;
	int ret;

	/* Its free was read first (from another CPU's ring, a round earlier). */
	if (nw_alloc_live_freed(&l->live, e->pid, e->ptr, time)) {
		l->stats.frees++;
		return;
	}
	ret = nw_alloc_live_add(&l->live, e, &old);
	if (ret < 0) {
		s->stats.alloc_failures++;
		return;
	}
	if (ret == 1)
		/* its free was lost: the address is used again */
		take_back(s->source_metric + l->metric_offset, &old);
	m[2] += e->objects;
	m[3] += e->bytes;
}

/*
 * A sampled allocation of @ptr, @size bytes at @rate, with @flags
 * (alloc/abi.h), whose stack is s->frames[@skip, @n): weighed into the
 * node of that stack in the thread's tree, and into the live table unless
 * its free cannot be seen.
 */
static void fold(struct nw_alloc_listener *l, struct nw_session *s, const struct nw_sample *smp,
		 struct nw_thread *th, const struct nw_epoch *epoch, size_t skip, size_t n,
		 uint64_t ptr, uint64_t size, uint64_t rate, uint64_t flags)
{
	struct nw_alloc_entry e = { .pid = smp->sid.pid, .ptr = ptr };
	uint64_t *m;
	double ow, bw;

	if (skip == n) {
		s->stats.empty_stacks++;
		return;
	}
	e.cct = nw_thread_cct(th, epoch, s->nmetrics);
	e.node = e.cct ? nw_cct_insert(e.cct, s->frames + skip, n - skip) : NW_CCT_NONE;
	if (e.node == NW_CCT_NONE) {
		s->stats.alloc_failures++;
		return;
	}
	nw_alloc_weight(size, rate, &ow, &bw);
	e.objects = (uint64_t)(ow + 0.5);
	e.bytes = (uint64_t)(bw + 0.5);
	m = nw_cct_metrics(e.cct, e.node) + s->source_metric + l->metric_offset;
	m[0] += e.objects;
	m[1] += e.bytes;
	nw_cct_mark_changed(e.cct, e.node);
	l->stats.samples++;
	th->samples++;
	if (!th->first_time)
		th->first_time = smp->sid.time;
	th->last_time = smp->sid.time;
	if (flags & NW_ALLOC_UNTRACKED)
		l->stats.untracked++;
	else
		keep_live(l, s, &e, smp->sid.time, m);
}

/*
 * A sampled allocation reported by the interposer: its stack unwound,
 * the interposer's own frames (the marker at the leaf) cut so that the
 * leaf is the allocator's caller.
 */
static void process_alloc(struct nw_alloc_listener *l, struct nw_session *s,
			  const struct nw_sample *smp, struct nw_thread *th,
			  const struct nw_epoch *epoch)
{
	const struct nw_map *marker = nw_epoch_find(epoch, smp->ip);
	uint64_t ptr, size, rate, flags;
	size_t skip = 0, n = nw_session_unwind(s, th, epoch, smp);

	if (!n) {
		s->stats.empty_stacks++;
		return;
	}
	if (!marker_arg(s, smp, 0, &ptr) || !marker_arg(s, smp, 1, &size) ||
	    !marker_arg(s, smp, 2, &rate) || !marker_arg(s, smp, 3, &flags)) {
		s->stats.bad_records++;
		return;
	}
	while (marker && skip < n) {
		const struct nw_map *map = nw_epoch_find(epoch, s->frames[skip].ip);

		if (!map || map->module != marker->module)
			break;
		skip++;
	}
	fold(l, s, smp, th, epoch, skip, n, ptr, size, rate, flags);
}

/* Attached: the entry of C library function @fn noted in @t (free frees at once). */
static void libc_entry(struct nw_alloc_listener *l, struct nw_session *s,
		       const struct nw_sample *smp, struct nw_alloc_thread *t, enum nw_alloc_fn fn,
		       uint64_t sp, uint64_t a0, uint64_t a1)
{
	uint32_t k;

	/* Calls under way at or above this stack depth returned unseen (records lost). */
	while (t->npending && t->pending[t->npending - 1].sp <= sp)
		t->npending--;
	if (fn == NW_ALLOC_FN_FREE) {
		if (!t->npending)
			free_ptr(l, s, smp->sid.pid, a0, smp->sid.time);
		return;
	}
	if (t->npending == NW_ALLOC_PENDING)
		memmove(t->pending, t->pending + 1, sizeof(t->pending[0]) * --t->npending);
	k = t->npending++;
	t->pending[k].sp = sp;
	t->pending[k].fn = fn;
	t->pending[k].old = fn == NW_ALLOC_FN_REALLOC ? a0 : 0;
	t->pending[k].size = fn == NW_ALLOC_FN_MALLOC		  ? a0
			     : fn != NW_ALLOC_FN_CALLOC		  ? a1
			     : a1 && a0 > UINT64_MAX / a1 ? UINT64_MAX
							  : a0 * a1;
}

/*
 * Attached: the entry or return (@ret) of C library function @fn in
 * thread @th.  An entry notes the call (its stack pointer, size, old
 * pointer) or, for free, frees; a return finds its entry by the stack
 * pointer, and when it is the outermost allocator call under way (glibc's
 * realloc calls malloc, say) and the recorder's byte sampler picks it,
 * the caller's stack is unwound and the allocation folded in.
 */
static void process_libc(struct nw_alloc_listener *l, struct nw_session *s,
			 const struct nw_sample *smp, struct nw_thread *th,
			 const struct nw_epoch *epoch, enum nw_alloc_fn fn, bool ret)
{
	struct nw_alloc_thread *t = th->alloc ? th->alloc : calloc(1, sizeof(*t));
	uint64_t sp, a0 = 0, a1 = 0, ptr, rate = l->o->rate;
	uint32_t k;

	th->alloc = t;
	if (!t) {
		s->stats.alloc_failures++;
		return;
	}
	if (!nw_session_reg(s, smp, s->arch->perf_sp, &sp) || !marker_arg(s, smp, 0, &a0) ||
	    !marker_arg(s, smp, 1, &a1) || !nw_session_reg(s, smp, s->arch->perf_ret, &ptr)) {
		s->stats.bad_records++;
		return;
	}
	if (!ret) {
		libc_entry(l, s, smp, t, fn, sp, a0, a1);
		return;
	}
	for (k = t->npending; k > 0; k--)
		if (t->pending[k - 1].sp == sp - (uint64_t)s->arch->ret_sp_adjust &&
		    t->pending[k - 1].fn == fn)
			break;
	if (!k)
		return; /* its entry was lost */
	t->npending = k - 1;
	if (t->npending)
		return; /* inside another allocator call, which counts */
	if (t->pending[k - 1].old)
		free_ptr(l, s, smp->sid.pid, t->pending[k - 1].old, smp->sid.time);
	if (!ptr)
		return;
	if (rate > 1) {
		if (!t->sampler.rng)
			nw_alloc_sampler_seed(&t->sampler, nw_hash_u64(th->tid ^ smp->sid.time), rate);
		if (!nw_alloc_sample(&t->sampler, t->pending[k - 1].size, rate))
			return;
	}
	/* The return's sample: the caller's registers and stack, at the return address. */
	fold(l, s, smp, th, epoch, 0, nw_session_unwind(s, th, epoch, smp), ptr,
	     t->pending[k - 1].size, rate, 0);
}

/*
 * The markers' uprobes, opened per CPU for every task, not inherited:
 * the kernel reads the library's path from the user memory of the task an
 * event is inherited into, where our pointer means nothing (clone and fork
 * then fail with EFAULT); samples of processes not ours are dropped.  A
 * free needs only its argument: no stack copy.  Attached, a tracefs uprobe
 * on the C library, inherited like the sampled events: an entry needs its
 * arguments only; a return, the pointer and the caller's stack.
 */
static enum nw_source_scope event_attr(void *arg, const struct nw_session *s, unsigned which,
				       struct perf_event_attr *a)
{
	const struct nw_alloc_listener *l = arg;
	const struct nw_alloc_event *ev = &l->events[which];

	(void)s;
	a->sample_period = 1;
	a->exclude_callchain_kernel = 1;
	if (ev->kind == NW_ALLOC_EV_LIBC) {
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = l->o->libc.ids[ev->fn][ev->ret];
		if (!ev->ret) {
			a->exclude_callchain_user = 1;
			if (a->sample_stack_user)
				a->sample_stack_user = 8;
		}
		return NW_SOURCE_TASK;
	}
	a->type = (uint32_t)l->o->uprobe_type;
	a->config1 = (uint64_t)(uintptr_t)l->o->library;
	a->config2 = ev->kind == NW_ALLOC_EV_SAMPLE ? l->o->sample_off : l->o->free_off;
	a->inherit = 0;
	a->enable_on_exec = 0;
	a->exclude_kernel = 1;
	if (ev->kind == NW_ALLOC_EV_FREE && a->sample_stack_user)
		a->sample_stack_user = 8;
	return NW_SOURCE_CPU;
}

/*
 * -g bpf: a sampled allocation's stack is unwound in the kernel, and an
 * attached process's C library returns' (every one: whether it is
 * sampled is decided here, from the entry's size).
 */
static bool in_kernel(void *arg, unsigned which)
{
	const struct nw_alloc_event *ev = &((const struct nw_alloc_listener *)arg)->events[which];

	return ev->kind == NW_ALLOC_EV_SAMPLE || (ev->kind == NW_ALLOC_EV_LIBC && ev->ret);
}

static void on_sample(void *arg, struct nw_session *s, unsigned which, const struct nw_sample *smp,
		      struct nw_thread *th, const struct nw_epoch *epoch)
{
	struct nw_alloc_listener *l = arg;
	const struct nw_alloc_event *ev = &l->events[which];

	switch (ev->kind) {
	case NW_ALLOC_EV_SAMPLE:
		process_alloc(l, s, smp, th, epoch);
		break;
	case NW_ALLOC_EV_FREE:
		process_free(l, s, smp);
		break;
	case NW_ALLOC_EV_LIBC:
		process_libc(l, s, smp, th, epoch, ev->fn, ev->ret);
		break;
	}
}

/* The image that held them is gone: its allocations are no longer live. */
static void on_exec(void *arg, struct nw_session *s, uint32_t pid)
{
	struct nw_alloc_listener *l = arg;
	unsigned metric = s->source_metric + l->metric_offset;

	nw_alloc_live_drop_pid(&l->live, pid, drop_one, &metric);
}

/* alloc-objects, alloc-bytes, inuse-objects, inuse-bytes; their period: the rate in bytes. */
static int describe(void *arg, const struct nw_session *s, struct nw_measurement *m)
{
	const struct nw_alloc_listener *l = arg;

	(void)s;
	for (int k = NW_METRIC_ALLOC_OBJECTS; k <= NW_METRIC_INUSE_BYTES; k++) {
		int ret = nw_measurement_add_metric(m, NW_ALLOC_EVENT, (enum nw_metric_kind)k,
						    l->o->rate);

		if (ret < 0)
			return ret;
	}
	return 0;
}

void nw_alloc_listener_init(struct nw_alloc_listener *l, const struct nw_alloc_opts *o)
{
	const struct nw_arch_ops *arch = nw_arch_host();

	memset(l, 0, sizeof(*l));
	l->o = o;
	nw_alloc_live_init(&l->live);
	if (o->libc.path) {
		for (unsigned fn = 0; fn < NW_ALLOC_FNS; fn++)
			for (unsigned r = 0; r < 2; r++)
				if (o->libc.ids[fn][r])
					l->events[l->nevents++] = (struct nw_alloc_event){
						.kind = NW_ALLOC_EV_LIBC, .fn = fn, .ret = r };
	} else {
		l->events[l->nevents++].kind = NW_ALLOC_EV_SAMPLE;
		l->events[l->nevents++].kind = NW_ALLOC_EV_FREE;
	}
	l->source = (struct nw_session_source){
		.arg = l,
		.nevents = l->nevents,
		.nmetrics = 4,
		.bursty = true,
		.attr = event_attr,
		.sample = on_sample,
		.exec = on_exec,
		.in_kernel = in_kernel,
		.describe = describe,
	};
	/* The markers' (and the C library's) arguments, read at their entry;
	 * the return value and the stack pointer, at a return. */
	for (unsigned i = 0; arch && i < 4; i++)
		l->source.regs_mask |= 1ull << arch->perf_args[i];
	if (arch)
		l->source.regs_mask |= 1ull << arch->perf_ret | 1ull << arch->perf_sp;
}

void nw_alloc_listener_fini(struct nw_alloc_listener *l)
{
	nw_alloc_live_fini(&l->live);
	memset(l, 0, sizeof(*l));
}
