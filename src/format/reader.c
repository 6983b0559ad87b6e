/* SPDX-License-Identifier: MIT */
/* Reading a measurement directory into the model; see reader.h. */
#include "format/reader.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/codefile.h"
#include "format/csprof.h"
#include "format/locksfile.h"
#include "format/manifest.h"
#include "format/pack.h"
#include "format/symbols.h"
#include "format/tracefile.h"
#include "util/file.h"
#include "util/log.h"
#include "util/parallel.h"
#include "util/strbuf.h"

/* Makes sure a reader's message names @path. */
static void name_file(char *err, size_t errlen, const char *path, int rc)
{
	char msg[512];

	if (!err || !errlen)
		return;
	if (!err[0]) {
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
	} else if (!strstr(err, path)) {
		snprintf(msg, sizeof(msg), "%s", err);
		nw_set_err(err, errlen, "%s: %s", path, msg);
	}
}

/* The model's module of a file epoch's module @name (added when the manifest lacks it). */
static int module_of(struct nw_measurement *m, const char *name)
{
	int idx = nw_module_find(m->modules, name ? name : "");

	return idx >= 0 ? idx : nw_module_intern(m->modules, name ? name : "", NULL, 0);
}

/* How far past ELF address @vaddr module @mod's loadable segments reach; 0 unknown. */
static uint64_t module_extent(const struct nw_measurement *m, uint32_t mod, uint64_t vaddr)
{
	const struct nw_module_facts *f = &m->modules->v[mod].facts;
	uint64_t hi = 0;

	for (uint32_t i = 0; f->known && i < f->nsegs; i++)
		if (f->segs[i].vaddr + f->segs[i].memsz > hi)
			hi = f->segs[i].vaddr + f->segs[i].memsz;
	return hi > vaddr ? hi - vaddr : 0;
}

/* Appends the epoch @fe of a file as epoch @index of its process.  -ENOMEM. */
static int add_file_epoch(struct nw_measurement *m, const struct nw_csprof_epoch *fe,
			  uint32_t index)
{
	struct nw_map *maps = calloc(fe->nmodules ? fe->nmodules : 1, sizeof(*maps));
	struct nw_epoch *e = NULL;
	int ret = -ENOMEM;

	if (!maps)
		return -ENOMEM;
	for (uint32_t k = 0; k < fe->nmodules; k++) {
		const struct nw_csprof_module *fm = &fe->modules[k];
		int mod = module_of(m, fm->name);
		uint64_t off;

		if (mod < 0)
			goto out;
		maps[k] = (struct nw_map){ .start = fm->mapped, .vaddr = fm->vaddr,
					   .pgoff = fm->vaddr, .module = (uint32_t)mod };
		/* The file keeps the ELF address; the module's facts give the offset. */
		if (m->modules->v[mod].facts.known &&
		    nw_facts_vaddr_to_offset(&m->modules->v[mod].facts, fm->vaddr, &off) == 0)
			maps[k].pgoff = off;
	}
	e = nw_epoch_new(maps, fe->nmodules, index);
	if (!e)
		goto out;
	/*
	 * The file keeps no ends: a mapping reaches the next one, or the end
	 * of its module's last segment where the module's facts say so.
	 */
	for (uint32_t k = 0; k < e->n; k++) {
		const struct nw_map *mp = &e->maps[k];
		uint64_t end = k + 1 < e->n ? e->maps[k + 1].start : UINT64_MAX;
		uint64_t extent = module_extent(m, mp->module, mp->vaddr);

		if (extent && mp->start + extent > mp->start && mp->start + extent < end)
			end = mp->start + extent;
		e->maps[k].end = end;
	}
	ret = nw_measurement_add_epoch(m, e);
	if (ret < 0)
		free(e);
out:
	free(maps);
	return ret < 0 ? ret : 0;
}

/*
 * Where a measurement's files are: its directory, or the pack its
 * manifest names and the segments of its journal (a checkpoint), where a
 * file is the newest whole one and the deltas after it.
 */
struct source {
	const char *dir;
	struct nw_pack pack;
	struct nw_pack_segments journal;
	bool packed;
};

/* "DIR/NAME", or "DIR/PACK:NAME" for an entry of the pack; NULL on ENOMEM. */
static char *shown_name(const struct source *src, const struct nw_measurement *m,
			const char *name)
{
	if (!src->packed)
		return nw_strdup_printf("%s/%s", src->dir, name);
	if (m->run.journal)
		return nw_strdup_printf("%s/%s+%s:%s", src->dir, m->run.pack, m->run.journal,
					name);
	return nw_strdup_printf("%s/%s:%s", src->dir, m->run.pack, name);
}

/* Opens the pack @m's manifest names and its journal, where it names one (once).  -errno with a message. */
static int open_pack(struct source *src, const struct nw_measurement *m, char *err,
		     size_t errlen)
{
	char *path;
	int rc;

	if (!m->run.pack || src->packed)
		return 0;
	path = nw_strdup_printf("%s/%s", src->dir, m->run.pack);
	rc = path ? nw_pack_open(path, &src->pack, err, errlen) : -ENOMEM;
	free(path);
	if (!rc && m->run.journal) {
		path = nw_strdup_printf("%s/%s", src->dir, m->run.journal);
		rc = path ? nw_pack_open_segments(path, m->run.segments, m->run.nsegments,
						  &src->journal, err, errlen)
			  : -ENOMEM;
		free(path);
		if (rc)
			nw_pack_close(&src->pack);
	}
	src->packed = !rc;
	return rc;
}

static void close_pack(struct source *src)
{
	nw_pack_close(&src->pack);
	nw_pack_close_segments(&src->journal);
	src->packed = false;
}

/*
 * The newest whole entry @name: in the journal's last segment that has
 * one, else in the pack.  *@seg is that segment's index (-1 the pack).
 * NULL with a message when there is none.
 */
static const struct nw_pack_entry *entry_of(const struct source *src, const char *shown,
					    const char *name, int *seg, char *err, size_t errlen)
{
	const struct nw_pack_entry *e = NULL;
	int i;

	for (i = (int)src->journal.n - 1; i >= 0 && !e; i--)
		e = nw_pack_find(&src->journal.v[i], name);
	if (!e)
		e = nw_pack_find(&src->pack, name);
	if (seg)
		*seg = e ? i : -1;
	if (!e)
		nw_set_err(err, errlen, "%s: not in the pack", shown);
	return e;
}

/* Segment @seg's delta of the file @name, or NULL. */
static const struct nw_pack_entry *delta_of(const struct source *src, uint32_t seg,
					    const char *name)
{
	char buf[NAME_MAX + 2];

	if (snprintf(buf, sizeof(buf), "%s" NW_PACK_DELTA_SUFFIX, name) >= (int)sizeof(buf))
		return NULL;
	return nw_pack_find(&src->journal.v[seg], buf);
}

/* Reads @th's csprof: the newest whole file and the deltas after it.  -errno. */
static int read_csprof(const struct source *src, const struct nw_mthread *th, const char *path,
		       struct nw_csprof **cp, struct nw_csprof_error *cerr, char *err,
		       size_t errlen)
{
	const struct nw_pack_entry *e;
	int seg, ret;

	if (!src->packed)
		return nw_csprof_read_file(path, cp, cerr);
	e = entry_of(src, path, th->file, &seg, err, errlen);
	if (!e)
		return -ENOENT;
	ret = nw_csprof_read(e->data, e->size, cp, cerr);
	for (uint32_t i = (uint32_t)(seg + 1); !ret && i < src->journal.n; i++) {
		const struct nw_pack_entry *d = delta_of(src, i, th->file);

		if (d)
			ret = nw_csprof_apply_delta(*cp, d->data, d->size, cerr);
		if (ret == -EBADMSG)
			snprintf(cerr->msg + strlen(cerr->msg), sizeof(cerr->msg) - strlen(cerr->msg),
				 " (journal segment %u)", i + 1);
	}
	return ret;
}

/*
 * A thread's file, parsed by one of the workers: files are independent,
 * and parsing them (node records into trees, the pages of the trees) is
 * most of reading a large measurement.
 */
struct parse_job {
	struct nw_mthread *th;
	char *path;                 /* for messages */
	struct nw_csprof *cp;
	int ret;
	char err[512];
};

/* The files of the threads, read side by side: their trees, or their traces. */
struct file_pool {
	const struct source *src;
	const struct nw_measurement *m;
	struct parse_job *jobs;
	uint32_t n;
};

/*
 * A job for each thread whose tree file the manifest names, or with
 * @traces, whose trace file it names and that has no trace yet.  -ENOMEM.
 */
static int list_files(struct file_pool *pool, struct nw_measurement *m, bool traces)
{
	pool->m = m;
	pool->jobs = calloc(m->nthreads ? m->nthreads : 1, sizeof(*pool->jobs));
	if (!pool->jobs)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nthreads; i++) {
		struct nw_mthread *th = &m->threads[i];
		struct parse_job *j = &pool->jobs[pool->n];
		const char *file = traces ? (th->trace ? NULL : th->trace_file) : th->file;

		if (!file)
			continue;
		j->th = th;
		j->path = shown_name(pool->src, m, file);
		if (!j->path)
			return -ENOMEM;
		pool->n++;
	}
	return 0;
}

/* Runs @job for every file on the workers: the first failure in thread order, with its message. */
static int run_files(struct file_pool *pool, void (*job)(void *arg, uint32_t i), char *err,
		     size_t errlen)
{
	nw_parallel_for(pool->n, 0, job, pool);
	for (uint32_t i = 0; i < pool->n; i++)
		if (pool->jobs[i].ret) {
			nw_set_err(err, errlen, "%s", pool->jobs[i].err);
			return pool->jobs[i].ret;
		}
	return 0;
}

static void free_files(struct file_pool *pool)
{
	for (uint32_t i = 0; pool->jobs && i < pool->n; i++) {
		nw_csprof_free(pool->jobs[i].cp);
		free(pool->jobs[i].path);
	}
	free(pool->jobs);
}

static void parse_one(const struct source *src, struct parse_job *j)
{
	struct nw_csprof_error cerr = { 0 };

	j->ret = read_csprof(src, j->th, j->path, &j->cp, &cerr, j->err, sizeof(j->err));
	if (j->ret == -ENOENT && src->packed)
		return;
	if (j->ret == -EBADMSG)
		nw_set_err(j->err, sizeof(j->err), "%s: %s at offset %llu", j->path, cerr.msg,
			   (unsigned long long)cerr.offset);
	else if (j->ret == -ENOMEM)
		nw_set_err(j->err, sizeof(j->err), "%s: out of memory", j->path);
	else if (j->ret) {
		nw_set_err(j->err, sizeof(j->err), "%s", cerr.msg);
		name_file(j->err, sizeof(j->err), j->path, j->ret);
	}
}

static void parse_job(void *arg, uint32_t i)
{
	struct file_pool *pool = arg;

	parse_one(pool->src, &pool->jobs[i]);
}

/* Moves a parsed file's epochs and trees into the model, as @th's.  -errno with a message. */
static int adopt_thread(struct nw_measurement *m, struct parse_job *j, char *err, size_t errlen)
{
	struct nw_mthread *th = j->th;
	struct nw_csprof *cp = j->cp;
	int ret = 0;

	if (cp->nmetrics != m->nmetrics) {
		nw_set_err(err, errlen, "%s: %u metrics, but the manifest describes %u", j->path,
			   cp->nmetrics, m->nmetrics);
		return -EBADMSG;
	}
	th->first_epoch = m->nepochs;
	th->nepochs = cp->nepochs;
	/* File epoch 0 is the newest: the model lists them oldest first. */
	for (uint32_t e = cp->nepochs; e-- > 0 && !ret;)
		ret = add_file_epoch(m, &cp->epochs[e], cp->nepochs - 1 - e);
	th->samples = 0;
	for (uint32_t t = 0; t < cp->ntrees && !ret; t++) {
		struct nw_csprof_tree *tr = &cp->trees[t];

		ret = nw_mthread_add_tree(th, th->first_epoch + cp->nepochs - 1 - tr->epoch, tr->cct);
		if (!ret)
			tr->cct = NULL; /* the model's now */
	}
	/* Summed as the file was read, beside the nodes. */
	for (uint32_t i = 0; !ret && i < m->nmetrics; i++)
		if (nw_metric_counts_samples(&m->metrics[i]))
			th->samples += cp->totals[i];
	if (ret == -ENOMEM)
		nw_set_err(err, errlen, "%s: out of memory", j->path);
	return ret;
}

/* Reads every thread's file into the model.  -errno with a message (the first thread's, in order). */
static int load_threads(struct nw_measurement *m, const struct source *src, char *err,
			size_t errlen)
{
	struct file_pool pool = { .src = src };
	int rc = list_files(&pool, m, false);

	/* The files side by side, each on one thread. */
	if (!rc)
		rc = run_files(&pool, parse_job, err, errlen);
	for (uint32_t i = 0; i < pool.n && !rc; i++)
		rc = adopt_thread(m, &pool.jobs[i], err, errlen);
	free_files(&pool);
	return rc;
}

int nw_measurement_open(const char *dir, struct nw_measurement **ret, char *err, size_t errlen)
{
	struct nw_measurement *m;
	struct stat sb;
	char *path;
	int rc;

	nw_set_err(err, errlen, "%s", "");
	if (stat(dir, &sb) < 0) {
		rc = -errno;
		nw_set_err(err, errlen, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(sb.st_mode)) {
		size_t n = strlen(dir);

		nw_set_err(err, errlen, "%s: not a measurement directory%s", dir,
			   n > 6 && !strcmp(dir + n - 6, ".pb.gz")
				   ? " (a pprof profile: go tool pprof reads it)"
				   : "");
		return -ENOTDIR;
	}
	m = nw_measurement_new();
	path = m ? nw_strdup_printf("%s/manifest.json", dir) : NULL;
	if (!path) {
		nw_measurement_free(m);
		nw_set_err(err, errlen, "%s: out of memory", dir);
		return -ENOMEM;
	}
	rc = nw_manifest_read(path, m, err, errlen);
	if (rc) {
		name_file(err, errlen, path, rc);
		nw_measurement_free(m);
	} else {
		*ret = m;
	}
	free(path);
	return rc;
}

/* locks.json, where the run recorded locks (--locks): into m->locks.  -errno with a message. */
static int load_locks(struct nw_measurement *m, const struct source *src, char *err,
		      size_t errlen)
{
	char *path = shown_name(src, m, NW_LOCKS_FILE), *text = NULL;
	size_t len = 0;
	int rc;

	if (!path)
		return -ENOMEM;
	if (src->packed) {
		const struct nw_pack_entry *e = entry_of(src, path, NW_LOCKS_FILE, NULL, NULL, 0);

		rc = !e ? -ENOENT : !(text = strndup(e->data, e->size)) ? -ENOMEM : 0;
		len = e ? e->size : 0;
	} else {
		rc = nw_read_file(path, &text, &len);
	}
	if (!rc) {
		nw_locks_free(m->locks);
		m->locks = NULL;
		rc = nw_locks_read_buf(path, text, len, &m->locks, err, errlen);
		if (rc)
			name_file(err, errlen, path, rc);
	} else if (rc == -ENOENT) {
		rc = 0; /* no locks recorded */
	} else {
		name_file(err, errlen, path, rc);
	}
	free(text);
	free(path);
	return rc;
}

int nw_measurement_load(struct nw_measurement *m, const char *dir, char *err, size_t errlen)
{
	struct source src = { .dir = dir };
	char *path = NULL;
	int rc;

	nw_set_err(err, errlen, "%s", "");
	rc = open_pack(&src, m, err, errlen);
	if (rc)
		goto out;
	rc = -ENOMEM;
	path = shown_name(&src, m, "symbols.json");
	if (!path)
		goto out;
	nw_set_err(err, errlen, "%s", "");
	if (src.packed) {
		const struct nw_pack_entry *e = entry_of(&src, path, "symbols.json", NULL, NULL, 0);
		char *text = e ? strndup(e->data, e->size) : NULL;

		/* The JSON reader wants the text NUL-terminated. */
		rc = !e ? -ENOENT : !text ? -ENOMEM
				   : nw_symbols_read_buf(path, text, e->size, m->modules, m->symtab,
							 err, errlen);
		free(text);
	} else {
		rc = nw_symbols_read(path, m->modules, m->symtab, err, errlen);
	}
	if (rc == -ENOENT) {
		/* No symbol table: every frame shows as module+0xADDR. */
		nw_set_err(err, errlen, "%s", "");
		rc = 0;
	} else if (rc) {
		name_file(err, errlen, path, rc);
		goto out;
	}
	nw_set_err(err, errlen, "%s", "");
	rc = load_locks(m, &src, err, errlen);
	if (!rc)
		rc = load_threads(m, &src, err, errlen);
	if (!rc)
		nw_set_err(err, errlen, "%s", "");
out:
	if (rc == -ENOMEM && err && !err[0])
		nw_set_err(err, errlen, "%s: out of memory", dir);
	free(path);
	close_pack(&src);
	return rc;
}

int nw_measurement_read(const char *dir, struct nw_measurement **ret, char *err, size_t errlen)
{
	struct nw_measurement *m;
	int rc = nw_measurement_open(dir, &m, err, errlen);

	if (rc)
		return rc;
	rc = nw_measurement_load(m, dir, err, errlen);
	if (rc) {
		nw_measurement_free(m);
		return rc;
	}
	*ret = m;
	return 0;
}

/* Reads @th's trace from the pack: the newest whole file and the deltas after it.  -errno. */
static int read_trace(const struct source *src, struct nw_mthread *th, const char *path,
		      const struct nw_measurement *m, char *err, size_t errlen)
{
	const struct nw_pack_entry *e;
	uint8_t *file;
	size_t size;
	int seg, rc = 0;

	e = entry_of(src, path, th->trace_file, &seg, err, errlen);
	if (!e)
		return -ENOENT;
	if (seg + 1 == (int)src->journal.n)
		return nw_tracefile_parse(e->data, e->size, path, m, th, &th->trace, err, errlen);
	/* Deltas after it: the events of all, back to back, in one copy. */
	size = e->size;
	file = malloc(size ? size : 1);
	if (!file)
		return -ENOMEM;
	memcpy(file, e->data, size);
	for (uint32_t i = (uint32_t)(seg + 1); !rc && i < src->journal.n; i++) {
		const struct nw_pack_entry *d = delta_of(src, i, th->trace_file);

		if (d)
			rc = nw_tracefile_apply_delta(&file, &size, d->data, d->size, path, err,
						      errlen);
	}
	if (!rc)
		rc = nw_tracefile_parse(file, size, path, m, th, &th->trace, err, errlen);
	free(file);
	return rc;
}

static void trace_job(void *arg, uint32_t i)
{
	struct file_pool *pool = arg;
	struct parse_job *j = &pool->jobs[i];

	if (pool->src->packed)
		j->ret = read_trace(pool->src, j->th, j->path, pool->m, j->err, sizeof(j->err));
	else
		j->ret = nw_tracefile_read(j->path, pool->m, j->th, &j->th->trace, j->err,
					   sizeof(j->err));
}

int nw_measurement_read_traces(struct nw_measurement *m, const char *dir, char *err,
			       size_t errlen)
{
	struct source src = { .dir = dir };
	struct file_pool pool = { .src = &src };
	int rc = 0;

	for (uint32_t i = 0; i < m->nthreads && !rc; i++)
		if (!m->threads[i].trace && m->threads[i].trace_file)
			rc = open_pack(&src, m, err, errlen);
	if (!rc)
		rc = list_files(&pool, m, true);
	/* Each trace decoded and checked on its own, side by side. */
	if (!rc)
		rc = run_files(&pool, trace_job, err, errlen);
	if (!rc)
		rc = (int)pool.n;
	free_files(&pool);
	close_pack(&src);
	return rc;
}

int nw_measurement_read_parts(const char *dir,
			      unsigned (*parts)(void *arg, const struct nw_measurement *m),
			      void *arg, struct nw_measurement **ret, char *err, size_t errlen)
{
	for (int attempt = 0;; attempt++) {
		struct nw_measurement *m = NULL;
		unsigned want = 0;
		int rc = nw_measurement_open(dir, &m, err, errlen);
		bool again;

		if (!rc)
			want = parts(arg, m);
		if (!rc && (want & NW_READ_TREES))
			rc = nw_measurement_load(m, dir, err, errlen);
		/* (Traces and code: a count, or whether there is any.) */
		if (rc >= 0 && (want & NW_READ_TRACES))
			rc = nw_measurement_read_traces(m, dir, err, errlen);
		if (rc >= 0 && (want & NW_READ_CODE))
			rc = nw_measurement_read_code(m, dir, err, errlen);
		if (rc >= 0) {
			*ret = m;
			return 0;
		}
		/* A checkpoint replaced the pack while it was read: the new manifest names the new one. */
		again = rc == -ENOENT && m && m->run.pack && attempt < 5;
		nw_measurement_free(m);
		if (!again)
			return rc;
	}
}
