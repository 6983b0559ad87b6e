/* SPDX-License-Identifier: MIT */
/* narwhal-report --locks; see locks.h. */
#include "report/locks.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/names.h"

/* Frames shown of a path: the innermost of the program's own, and the lock call below them. */
#define PATH_FRAMES 4

static int cmp_lock_wait(const void *a, const void *b)
{
	const struct nw_lock *x = *(const struct nw_lock *const *)a;
	const struct nw_lock *y = *(const struct nw_lock *const *)b;

	return x->wait_ns > y->wait_ns ? -1 : x->wait_ns < y->wait_ns;
}

static int cmp_path_ns(const void *a, const void *b)
{
	const struct nw_lock_path *x = *(const struct nw_lock_path *const *)a;
	const struct nw_lock_path *y = *(const struct nw_lock_path *const *)b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/*
 * The frames of @p worth a line: up to PATH_FRAMES of the program's,
 * ending with the first of the locking functions below them.
 */
static void print_path(FILE *out, const struct nw_lock_path *p, bool full)
{
	char buf[512];
	struct nw_lock k = { .nwaiters = 1, .waiters = (struct nw_lock_path *)p };
	const char *user = nw_lock_first_user(&k);
	uint32_t end = p->nframes, start;

	for (uint32_t i = 0; user && i < p->nframes; i++)
		if (p->frames[i] == user)
			end = i + 2 < p->nframes ? i + 2 : p->nframes;
	start = end > PATH_FRAMES + 1 ? end - PATH_FRAMES - 1 : 0;
	fputs(start ? "... > " : "", out);
	for (uint32_t i = start; i < end; i++)
		fprintf(out, "%s%s", i > start ? " > " : "",
			full ? p->frames[i] : nw_short_name(p->frames[i], buf, sizeof(buf)));
	fputc('\n', out);
}

/* The @kind paths of a lock, heaviest first, with their share of @total. */
static int print_paths(FILE *out, const char *kind, const struct nw_lock_path *v, uint32_t n,
		       uint64_t total, bool full)
{
	const struct nw_lock_path **order = malloc((n ? n : 1) * sizeof(*order));

	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		order[i] = &v[i];
	qsort(order, n, sizeof(*order), cmp_path_ns);
	fprintf(out, "      %s:%s\n", kind, n ? "" : " (none seen)");
	for (uint32_t i = 0; i < n && i < NW_LOCKS_VIEW_PATHS; i++) {
		fprintf(out, "        %5.1f%%  ",
			total ? 100.0 * (double)order[i]->ns / (double)total : 0.0);
		print_path(out, order[i], full);
	}
	free(order);
	return 0;
}

/* The threads' time the run covered: each selected thread from its start to its end. */
static uint64_t thread_time(const struct nw_measurement *m, const struct nw_filter *f)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *th = &m->threads[i];

		if (f && !nw_filter_thread(f, th))
			continue;
		/* A thread never sampled: the run's length. */
		if (th->last_ns > th->first_ns)
			sum += th->last_ns - th->first_ns;
		else if (m->run.clock_end_ns > m->run.clock_start_ns)
			sum += m->run.clock_end_ns - m->run.clock_start_ns;
	}
	return sum;
}

static void print_name(FILE *out, const struct nw_lock *k, bool pids, bool full)
{
	const char *user = nw_lock_first_user(k);
	char where[64] = "", buf[512];

	if (pids)
		snprintf(where, sizeof(where), " (pid %u)", k->pid);
	if (k->name)
		fprintf(out, "%s%s\n", k->name, where);
	else
		fprintf(out, "0x%llx, first locked in %s%s\n", (unsigned long long)k->addr,
			!user ? "?" : full ? user : nw_short_name(user, buf, sizeof(buf)), where);
}

int nw_view_locks(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
		  bool full_names)
{
	const struct nw_locks *l = m->locks;
	const struct nw_lock **v;
	uint64_t total = 0, busy = thread_time(m, f);
	uint32_t n = 0;
	bool pids = false;
	int ret = 0;

	if (!l)
		return -ENOENT;
	v = malloc((l->n ? l->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < l->n; i++) {
		if (f && f->pid >= 0 && (uint32_t)f->pid != l->v[i].pid)
			continue;
		pids |= n && v[0]->pid != l->v[i].pid;
		v[n++] = &l->v[i];
		total += l->v[i].wait_ns;
	}
	qsort(v, n, sizeof(*v), cmp_lock_wait);
	fprintf(out, "Locks: %u, %.6f s waited in all (%.2f%% of the threads' %.3f s); "
		     "sampled every %llu ns of waiting on average\n",
		n, (double)total / 1e9, busy ? 100.0 * (double)total / (double)busy : 0.0,
		(double)busy / 1e9, (unsigned long long)l->rate);
	fprintf(out, "%12s %7s %11s %11s %11s  %s\n", "WAIT s", "SHARE%", "CONTENDED", "MEAN us",
		"MAX us", "LOCK");
	for (uint32_t i = 0; i < n && !ret; i++) {
		const struct nw_lock *k = v[i];

		fprintf(out, "%12.6f %7.2f %11llu %11.1f %11.1f  ", (double)k->wait_ns / 1e9,
			busy ? 100.0 * (double)k->wait_ns / (double)busy : 0.0,
			(unsigned long long)k->contentions,
			k->contentions ? (double)k->wait_ns / (double)k->contentions / 1e3 : 0.0,
			(double)k->max_ns / 1e3);
		print_name(out, k, pids, full_names);
		ret = print_paths(out, "waiting", k->waiters, k->nwaiters, k->wait_ns, full_names);
		if (!ret)
			ret = print_paths(out, "releasing", k->releasers, k->nreleasers, k->wait_ns,
					  full_names);
	}
	free(v);
	if (!ret && ferror(out))
		ret = -EIO;
	return ret;
}
