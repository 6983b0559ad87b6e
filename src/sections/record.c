/* SPDX-License-Identifier: MIT */
/*
 * The recorder's side of instrumented sections (doc/SECTIONS.md): the
 * staging directory the program writes its interval logs into, and the
 * time and calling context of every sample (samples.bin), collected
 * through the session's hook and written into DIR/sections at the end.
 */
#include "sections/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

static void put_u64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

/* ---- sample times: collecting ---- */

struct rec_thread {
	const struct nw_thread *th;
	struct nw_stime *v;     /* node and epoch as in memory until written */
	size_t n, cap;
};

struct nw_stimes_rec {
	struct rec_thread *threads;
	uint32_t n, cap;
	uint32_t *slots;        /* pointer hash: index + 1, 0 empty */
	uint32_t nslots;
	uint32_t last;
};

struct nw_stimes_rec *nw_stimes_rec_new(void)
{
	return calloc(1, sizeof(struct nw_stimes_rec));
}

void nw_stimes_rec_free(struct nw_stimes_rec *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->n; i++)
		free(r->threads[i].v);
	free(r->threads);
	free(r->slots);
	free(r);
}

static uint32_t ptr_hash(const void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(v >> 32);
}

static int rec_grow_slots(struct nw_stimes_rec *r)
{
	uint32_t n = r->nslots ? 2 * r->nslots : 64;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->n; i++) {
		uint32_t h = ptr_hash(r->threads[i].th) & (n - 1);

		while (s[h])
			h = (h + 1) & (n - 1);
		s[h] = i + 1;
	}
	free(r->slots);
	r->slots = s;
	r->nslots = n;
	return 0;
}

static struct rec_thread *rec_thread(struct nw_stimes_rec *r, const struct nw_thread *th)
{
	uint32_t h;

	if (r->n && r->threads[r->last].th == th)
		return &r->threads[r->last];
	if ((r->n + 1) * 2 > r->nslots && rec_grow_slots(r))
		return NULL;
	h = ptr_hash(th) & (r->nslots - 1);
	while (r->slots[h]) {
		if (r->threads[r->slots[h] - 1].th == th) {
			r->last = r->slots[h] - 1;
			return &r->threads[r->last];
		}
		h = (h + 1) & (r->nslots - 1);
	}
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 16;
		struct rec_thread *v = realloc(r->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		r->threads = v;
		r->cap = cap;
	}
	r->threads[r->n] = (struct rec_thread){ .th = th };
	r->slots[h] = r->n + 1;
	r->last = r->n++;
	return &r->threads[r->last];
}

int nw_stimes_rec_add(struct nw_stimes_rec *r, const struct nw_thread *th, uint32_t epoch,
		      uint32_t node, unsigned event, uint64_t time, uint64_t period)
{
	struct rec_thread *t = rec_thread(r, th);

	if (!t)
		return -ENOMEM;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct nw_stime *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	/* Epoch and event beyond 16 bits are kept as the maximum and skipped when written. */
	t->v[t->n++] = (struct nw_stime){ .time = time, .period = period, .node = node,
					  .epoch = epoch > UINT16_MAX ? UINT16_MAX : (uint16_t)epoch,
					  .event = event > UINT16_MAX ? UINT16_MAX : (uint16_t)event };
	return 0;
}

static int cmp_stime(const void *a, const void *b)
{
	const struct nw_stime *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

static const struct rec_thread *rec_find(const struct nw_stimes_rec *r, const struct nw_thread *th)
{
	uint32_t h;

	if (!r->nslots)
		return NULL;
	h = ptr_hash(th) & (r->nslots - 1);
	while (r->slots[h]) {
		if (r->threads[r->slots[h] - 1].th == th)
			return &r->threads[r->slots[h] - 1];
		h = (h + 1) & (r->nslots - 1);
	}
	return NULL;
}

/*
 * Writes thread @th's samples with node ids in file (preorder) numbering.
 * Returns the records written, or -ENOMEM.
 */
static int64_t write_thread_records(FILE *f, const struct nw_thread *th, struct nw_stime *v,
				    size_t n, bool count_only)
{
	uint32_t **id_of = calloc(th->nccts ? th->nccts : 1, sizeof(*id_of));
	uint32_t nepochs = th->proc->as.nepochs;
	int64_t written = 0;
	uint8_t rec[NW_STIMES_RECORD];

	if (!id_of)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t e = v[i].epoch;
		const struct nw_cct *cct = e < th->nccts ? th->ccts[e] : NULL;

		if (!cct || v[i].node >= cct->n || e >= nepochs || v[i].event == UINT16_MAX)
			continue;
		if (!id_of[e]) {
			uint32_t *order = malloc((size_t)cct->n * sizeof(*order));

			id_of[e] = malloc((size_t)cct->n * sizeof(**id_of));
			if (!order || !id_of[e]) {
				free(order);
				written = -ENOMEM;
				goto out;
			}
			nw_cct_preorder(cct, order);
			for (uint32_t k = 0; k < cct->n; k++)
				id_of[e][order[k]] = k;
			free(order);
		}
		written++;
		if (count_only)
			continue;
		put_u64(rec, v[i].time);
		put_u64(rec + 8, v[i].period);
		put_u32(rec + 16, id_of[e][v[i].node]);
		/* File epoch 0 is the newest (format/measurement.c). */
		put_u16(rec + 20, (uint16_t)(nepochs - 1 - e));
		put_u16(rec + 22, v[i].event);
		fwrite(rec, 1, sizeof(rec), f);
	}
out:
	for (uint32_t e = 0; e < th->nccts; e++)
		free(id_of[e]);
	free(id_of);
	return written;
}

int nw_stimes_write(const char *path, const struct nw_stimes_rec *r,
		    const struct nw_task_table *tasks)
{
	uint8_t hdr[NW_STIMES_THREAD];
	uint32_t nthreads = 0;
	FILE *f;
	int ret = 0;

	for (uint32_t i = 0; i < tasks->nthreads; i++)
		nthreads += tasks->threads[i]->samples && rec_find(r, tasks->threads[i]);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	memcpy(hdr, NW_STIMES_MAGIC, 8);
	put_u32(hdr + 8, NW_STIMES_VERSION);
	put_u32(hdr + 12, nthreads);
	fwrite(hdr, 1, NW_STIMES_HEADER, f);
	/*
	 * Threads as the measurement writer lists them in the manifest: every
	 * thread with samples, in order of appearance; occurrence tells apart
	 * two threads with one (pid, tid).
	 */
	for (uint32_t i = 0; i < tasks->nthreads && !ret; i++) {
		const struct nw_thread *th = tasks->threads[i];
		const struct rec_thread *t = th->samples ? rec_find(r, th) : NULL;
		uint32_t occurrence = 0;
		int64_t n;

		if (!t)
			continue;
		for (uint32_t j = 0; j < i; j++)
			occurrence += tasks->threads[j]->samples && tasks->threads[j]->pid == th->pid &&
				      tasks->threads[j]->tid == th->tid;
		qsort(t->v, t->n, sizeof(*t->v), cmp_stime);
		n = write_thread_records(NULL, th, t->v, t->n, true);
		if (n < 0) {
			ret = (int)n;
			break;
		}
		put_u32(hdr, th->pid);
		put_u32(hdr + 4, th->tid);
		put_u32(hdr + 8, occurrence);
		put_u32(hdr + 12, 0);
		put_u64(hdr + 16, (uint64_t)n);
		fwrite(hdr, 1, NW_STIMES_THREAD, f);
		n = write_thread_records(f, th, t->v, t->n, false);
		if (n < 0)
			ret = (int)n;
	}
	if (ferror(f) && !ret)
		ret = -EIO;
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
	return ret;
}

/* ---- the staging directory ---- */

int nw_seclog_stage_create(const char *output, char *buf, size_t len)
{
	char cwd[PATH_MAX], out[PATH_MAX];
	size_t n;

	if (snprintf(out, sizeof(out), "%s", output) >= (int)sizeof(out))
		return -ENAMETOOLONG;
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = 0;
	if (out[0] == '/') {
		if (snprintf(buf, len, "%s.sections-XXXXXX", out) >= (int)len)
			return -ENAMETOOLONG;
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (snprintf(buf, len, "%s/%s.sections-XXXXXX", cwd, out) >= (int)len)
			return -ENAMETOOLONG;
	}
	if (!mkdtemp(buf))
		return -errno;
	return 0;
}

bool nw_seclog_stage_used(const char *stage)
{
	struct dirent *de;
	bool used = false;
	DIR *d = opendir(stage);

	if (!d)
		return false;
	while (!used && (de = readdir(d)))
		used = nw_seclog_is_log_name(de->d_name);
	closedir(d);
	return used;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

void nw_seclog_stage_remove(const char *stage)
{
	if (stage && stage[0])
		nftw(stage, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int nw_seclog_stage_finish(const char *stage, const char *dir, const struct nw_stimes_rec *r,
			   const struct nw_task_table *tasks, char *err, size_t errlen)
{
	char target[PATH_MAX], path[PATH_MAX];
	int rc;

	if (!nw_seclog_stage_used(stage)) {
		nw_seclog_stage_remove(stage);
		return 0;
	}
	if (snprintf(target, sizeof(target), "%s/%s", dir, NW_SECLOG_SUBDIR) >=
		    (int)sizeof(target) ||
	    snprintf(path, sizeof(path), "%s/%s", target, NW_STIMES_FILE) >= (int)sizeof(path)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (rename(stage, target) < 0) {
		rc = -errno;
		nw_set_err(err, errlen, "cannot move the sections %s to %s: %s", stage, target,
			strerror(-rc));
		return rc;
	}
	if (!r)
		return 0;
	rc = nw_stimes_write(path, r, tasks);
	if (rc)
		nw_set_err(err, errlen, "cannot write %s: %s", path, strerror(-rc));
	return rc;
}


static int hook_sample(void *arg, const struct nw_thread *th, uint32_t epoch, uint32_t node,
		       unsigned event, uint64_t time, uint64_t period)
{
	return nw_stimes_rec_add(arg, th, epoch, node, event, time, period);
}

void nw_stimes_rec_hooks(struct nw_stimes_rec *r, struct nw_session_hooks *hooks)
{
	hooks->arg = r;
	hooks->sample = hook_sample;
}
