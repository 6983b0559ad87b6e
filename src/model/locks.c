/* SPDX-License-Identifier: MIT */
/* The locks of a measurement; see locks.h. */
#include "model/locks.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void nw_lock_path_fini(struct nw_lock_path *p)
{
	for (uint32_t f = 0; f < p->nframes; f++)
		free(p->frames[f]);
	free(p->frames);
	memset(p, 0, sizeof(*p));
}

static void paths_free(struct nw_lock_path *p, uint32_t n)
{
	for (uint32_t i = 0; p && i < n; i++)
		nw_lock_path_fini(&p[i]);
	free(p);
}

void nw_locks_free(struct nw_locks *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		paths_free(l->v[i].waiters, l->v[i].nwaiters);
		paths_free(l->v[i].releasers, l->v[i].nreleasers);
	}
	free(l->v);
	free(l);
}

int nw_locks_merge(struct nw_locks **dst, struct nw_locks **src)
{
	struct nw_locks *d = *dst, *s = *src;
	struct nw_lock *v;

	if (!s)
		return 0;
	if (!d) {
		*dst = s;
		*src = NULL;
		return 0;
	}
	v = realloc(d->v, ((size_t)d->n + s->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	d->v = v;
	memcpy(d->v + d->n, s->v, (size_t)s->n * sizeof(*v));
	d->n += s->n;
	d->unknown_releaser_ns += s->unknown_releaser_ns;
	s->n = 0; /* the locks are @dst's now */
	nw_locks_free(s);
	*src = NULL;
	return 0;
}

/* Is @fn part of a lock's implementation rather than its user? */
static bool locking_function(const char *fn)
{
	static const char *const prefixes[] = {
		"pthread_", "__pthread_", "___pthread_", "__lll_", "lll_", "__futex", "futex",
		"sem_wait", "sem_timedwait", "sem_clockwait", "sem_post", "__new_sem", "__old_sem",
		"__sem_", "do_futex", "__GI_", "std::mutex::",
		"std::__mutex_base", "std::unique_lock", "std::lock_guard", "std::shared_mutex",
		"__gthread_", "std::timed_mutex", "std::recursive_mutex", "syscall",
	};

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(fn, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

const char *nw_lock_first_user(const struct nw_lock *k)
{
	const struct nw_lock_path *p = k->nwaiters ? &k->waiters[0] : NULL;

	for (uint32_t i = p ? p->nframes : 0; i > 0; i--)
		if (!locking_function(p->frames[i - 1]))
			return p->frames[i - 1];
	return NULL;
}
