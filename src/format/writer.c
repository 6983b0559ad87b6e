/* SPDX-License-Identifier: MIT */
/* Writing a measurement directory from the model, atomically; see writer.h. */
#include "format/writer.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/codefile.h"
#include "format/csprof.h"
#include "format/manifest.h"
#include "format/pack.h"
#include "format/symbols.h"
#include "format/tracefile.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

void nw_thread_file_name(char *buf, size_t len, const char *comm, uint32_t pid, uint32_t tid)
{
	char name[NW_COMM_MAX + 1];
	size_t i;

	for (i = 0; comm && comm[i] && i + 1 < sizeof(name); i++) {
		unsigned char c = (unsigned char)comm[i];

		name[i] = (c == '/' || c == ' ' || c < 32 || c == 127) ? '_' : (char)c;
	}
	name[i] = 0;
	snprintf(buf, len, "%s-%u-%u.csprof", i ? name : "thread", pid, tid);
}

/* What the user reads when a write fails: the cause named, then strerror. */
static void write_error(char *err, size_t errlen, const char *what, int e)
{
	const char *cause = e == ENOSPC ? "the file system is full (ENOSPC)"
			    : e == EDQUOT ? "the disk quota is exhausted (EDQUOT)"
			    : e == EROFS  ? "the file system is read-only (EROFS)"
					  : strerror(e);

	nw_set_err(err, errlen, "cannot write %s: %s", what, cause);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* The directory @path is in ("." for a bare name). */
static void parent_of(const char *path, char *buf, size_t len)
{
	const char *slash;

	snprintf(buf, len, "%s", path);
	while ((slash = strrchr(buf, '/')) && slash[1] == 0 && slash != buf)
		buf[slash - buf] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		snprintf(buf, len, ".");
	else if (slash == buf)
		buf[1] = 0;
	else
		buf[slash - buf] = 0;
}

/*
 * The periods a csprof reader multiplies @th's samples by, into @out: the
 * fixed one, or for an event sampled at a frequency the mean period this
 * file sampled (its metrics summed once, only then).  -ENOMEM.
 */
static int file_periods(const struct nw_measurement *m, const struct nw_mthread *th,
			struct nw_csprof_metric *out)
{
	uint64_t *sums = NULL;

	for (uint32_t i = 0; i < m->nmetrics; i++) {
		const struct nw_metric *d = &m->metrics[i];
		bool freq = false;
		int s = -1, p = -1;

		out[i].period = d->period;
		for (uint32_t e = 0; e < m->run.nevents; e++)
			if (!strcmp(m->run.events[e].name, d->event))
				freq = m->run.events[e].freq;
		for (uint32_t k = 0; freq && k < m->nmetrics; k++) {
			if (strcmp(m->metrics[k].event, d->event))
				continue;
			if (m->metrics[k].kind == NW_METRIC_SAMPLES)
				s = (int)k;
			else if (m->metrics[k].kind == NW_METRIC_PERIOD)
				p = (int)k;
		}
		if (s < 0 || p < 0)
			continue;
		if (!sums) {
			sums = malloc(m->nmetrics * sizeof(*sums));
			if (!sums)
				return -ENOMEM;
			nw_mthread_totals(th, m->nmetrics, sums);
		}
		if (sums[s])
			out[i].period = (sums[p] + sums[s] / 2) / sums[s];
	}
	free(sums);
	return 0;
}

static int cmp_tree_newest_first(const void *a, const void *b)
{
	const struct nw_csprof_tree *x = a, *y = b;

	return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

/* What thread_csprof() made for a file. */
static void thread_csprof_fini(struct nw_csprof *p)
{
	for (uint32_t e = 0; p->epochs && e < p->nepochs; e++)
		free(p->epochs[e].modules);
	free(p->epochs);
	free(p->trees);
	free(p->metrics);
}

/*
 * The HPC_CSPROF file of @th as a struct for the csprof writer, its trees
 * borrowed from the model; without the metrics' @periods, which cost a
 * pass over every node for events sampled at a frequency, unless asked.
 * -ENOMEM, -EINVAL for a tree outside its epochs.
 */
static int thread_csprof(const struct nw_measurement *m, const struct nw_mthread *th,
			 bool index_order, bool periods, struct nw_csprof *p)
{
	const struct nw_mprocess *proc = nw_measurement_process(m, th->pid);

	memset(p, 0, sizeof(*p));
	p->target = (char *)(proc ? proc->comm : th->comm);
	p->index_order = index_order;
	p->nmetrics = m->nmetrics;
	p->nepochs = th->nepochs;
	p->metrics = calloc(m->nmetrics ? m->nmetrics : 1, sizeof(*p->metrics));
	p->epochs = calloc(th->nepochs ? th->nepochs : 1, sizeof(*p->epochs));
	p->trees = calloc(th->ntrees ? th->ntrees : 1, sizeof(*p->trees));
	if (!p->metrics || !p->epochs || !p->trees)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nmetrics; i++)
		p->metrics[i] = (struct nw_csprof_metric){ .name = m->metrics[i].name,
							   .flags = m->metrics[i].flags };
	if (periods && file_periods(m, th, p->metrics))
		return -ENOMEM;
	/* File epoch 0 is the newest. */
	for (uint32_t e = 0; e < th->nepochs; e++) {
		const struct nw_epoch *ep = m->epochs[th->first_epoch + e];
		struct nw_csprof_epoch *fe = &p->epochs[th->nepochs - 1 - e];

		fe->nmodules = ep->n;
		fe->modules = calloc(ep->n ? ep->n : 1, sizeof(*fe->modules));
		if (!fe->modules)
			return -ENOMEM;
		for (uint32_t k = 0; k < ep->n; k++) {
			uint32_t mod = ep->maps[k].module;

			fe->modules[k].name = mod < m->modules->n ? m->modules->v[mod].path : "";
			fe->modules[k].vaddr = ep->maps[k].vaddr;
			fe->modules[k].mapped = ep->maps[k].start;
		}
	}
	for (uint32_t t = 0; t < th->ntrees; t++) {
		uint32_t e = th->trees[t].epoch;

		if (e < th->first_epoch || e - th->first_epoch >= th->nepochs)
			return -EINVAL;
		p->trees[p->ntrees].epoch = th->nepochs - 1 - (e - th->first_epoch);
		p->trees[p->ntrees++].cct = th->trees[t].cct;
	}
	/* Newest epoch first, as csprof's own writer did: old readers take the first as epoch 0. */
	qsort(p->trees, p->ntrees, sizeof(*p->trees), cmp_tree_newest_first);
	return 0;
}

/*
 * Writes the HPC_CSPROF file of @th to @f, or to the file @path when @f is
 * NULL.  -errno, -EINVAL for a tree outside its epochs.
 */
static int write_thread(const struct nw_measurement *m, const struct nw_mthread *th,
			const char *path, FILE *f, bool index_order)
{
	struct nw_csprof p;
	int ret = thread_csprof(m, th, index_order, true, &p);

	if (!ret)
		ret = f ? nw_csprof_write(f, &p) : nw_csprof_write_file(path, &p);
	thread_csprof_fini(&p);
	return ret;
}

/*
 * The files of a directory written whole: each goes through one stream
 * and is not synced by itself (write_files() syncs the file system once).
 */
enum file_kind { FILE_CSPROF, FILE_TRACE, FILE_SYMBOLS, FILE_CODE };

static int write_unsynced(const struct nw_measurement *m, const struct nw_mthread *th,
			  enum file_kind kind, const char *path)
{
	FILE *f = fopen(path, "we");
	int ret;

	if (!f)
		return -errno;
	switch (kind) {
	case FILE_CSPROF:
		ret = write_thread(m, th, NULL, f, false);
		break;
	case FILE_TRACE:
		ret = nw_tracefile_write_fp(f, m, th, true);
		break;
	case FILE_CODE:
		ret = nw_codefile_write_fp(f, m->code, m->modules);
		break;
	default:
		ret = nw_symbols_write_fp(f, m->modules, m->symtab);
		break;
	}
	errno = 0;
	if ((fflush(f) != 0 || ferror(f)) && !ret)
		ret = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !ret)
		ret = errno ? -errno : -EIO;
	return ret;
}

/* Syncs the file system that holds the directory @path.  -errno. */
static int sync_dir_fs(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (syncfs(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Writes @data to @dir/@name, making its directories (not synced: see write_files()).  -errno. */
static int write_extra(const char *dir, const struct nw_extra_file *x)
{
	char *path = nw_strdup_printf("%s/%s", dir, x->name), *slash;
	int fd, ret = 0;

	if (!path)
		return -ENOMEM;
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = 0;
		if (mkdir(path, 0777) < 0 && errno != EEXIST)
			ret = -errno;
		*slash = '/';
		if (ret)
			goto out;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = nw_write_all(fd, x->data, x->size);
	if (close(fd) < 0 && !ret)
		ret = -errno;
out:
	free(path);
	return ret;
}

/* The process's umask (read by setting it, so set back at once). */
static mode_t creation_mask(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return mask;
}

/* Writes every file of @m into the empty directory @tmp.  -errno with a message. */
static int write_files(const struct nw_measurement *m, const struct nw_extra_file *extra,
		       size_t nextra, const char *tmp, const char *dir, char *err, size_t errlen)
{
	char path[2 * PATH_MAX], shown[2 * PATH_MAX];
	int ret;

	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *th = &m->threads[i];

		if (!th->file)
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp, th->file);
		ret = write_unsynced(m, th, FILE_CSPROF, path);
		if (ret < 0) {
			snprintf(shown, sizeof(shown), "%s/%s", dir, th->file);
			if (ret == -EINVAL)
				nw_set_err(err, errlen, "cannot write %s: a tree outside its epochs",
					   shown);
			else
				write_error(err, errlen, shown, -ret);
			return ret;
		}
		if (!th->trace || !th->trace_file)
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp, th->trace_file);
		ret = write_unsynced(m, th, FILE_TRACE, path);
		if (ret < 0) {
			snprintf(shown, sizeof(shown), "%s/%s", dir, th->trace_file);
			if (ret == -EINVAL)
				nw_set_err(err, errlen,
					   "cannot write %s: an event outside the thread's trees",
					   shown);
			else
				write_error(err, errlen, shown, -ret);
			return ret;
		}
	}
	for (size_t i = 0; i < nextra; i++) {
		ret = write_extra(tmp, &extra[i]);
		if (ret < 0) {
			snprintf(shown, sizeof(shown), "%s/%s", dir, extra[i].name);
			write_error(err, errlen, shown, -ret);
			return ret;
		}
	}
	snprintf(path, sizeof(path), "%s/symbols.json", tmp);
	ret = write_unsynced(m, NULL, FILE_SYMBOLS, path);
	if (ret < 0) {
		snprintf(shown, sizeof(shown), "%s/symbols.json", dir);
		write_error(err, errlen, shown, -ret);
		return ret;
	}
	/* The code of the sampled functions (doc/DISASSEMBLY.md). */
	if (m->code) {
		snprintf(path, sizeof(path), "%s/" NW_CODEFILE_NAME, tmp);
		ret = write_unsynced(m, NULL, FILE_CODE, path);
		if (ret < 0) {
			snprintf(shown, sizeof(shown), "%s/" NW_CODEFILE_NAME, dir);
			write_error(err, errlen, shown, -ret);
			return ret;
		}
	}
	/*
	 * Everything on disk before the manifest that makes it a measurement:
	 * one sync of the file system, not one per file (a build's thousand
	 * threads wrote two thousand files, each sync a device flush).  A full
	 * disk shows here at the latest.
	 */
	ret = sync_dir_fs(tmp);
	if (ret < 0) {
		write_error(err, errlen, dir, -ret);
		return ret;
	}
	/* The manifest last: a measurement with a manifest is complete. */
	snprintf(path, sizeof(path), "%s/manifest.json", tmp);
	ret = nw_manifest_write(path, m);
	if (ret < 0) {
		snprintf(shown, sizeof(shown), "%s/manifest.json", dir);
		write_error(err, errlen, shown, -ret);
		return ret;
	}
	ret = fsync_path(tmp);
	if (ret < 0)
		write_error(err, errlen, dir, -ret);
	return ret;
}

/*
 * Puts the complete directory @tmp in @dir's place.  Where @dir exists, the
 * two swap in one step (renameat2 RENAME_EXCHANGE), so @dir never stops
 * being a complete measurement; the old one then goes to @old, or away.
 */
static int publish(const char *tmp, const char *dir, const char *old, enum nw_write_mode mode,
		   char *err, size_t errlen)
{
	char parent[PATH_MAX], aside[PATH_MAX + 8];
	const char *to = old;
	struct stat st;
	int e;

	if (lstat(dir, &st) == 0) {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) < 0) {
			/*
			 * No exchange on this file system: two renames, the old one
			 * first: to @old for a new run; for the same run beside
			 * @tmp, so that what an older run left in @old stays.
			 */
			if (mode == NW_WRITE_REPLACE) {
				snprintf(aside, sizeof(aside), "%s.prev", tmp);
				to = aside;
			} else {
				remove_tree(old);
			}
			if (rename(dir, to) < 0)
				goto fail_old;
			if (rename(tmp, dir) < 0) {
				e = errno;
				rename(to, dir);
				nw_set_err(err, errlen, "cannot move the new measurement to %s: %s",
					   dir, strerror(e));
				return -e;
			}
			if (mode == NW_WRITE_REPLACE)
				remove_tree(to);
		} else if (mode == NW_WRITE_NEW) {
			/* @tmp now holds the older run: it becomes @old. */
			remove_tree(old);
			if (rename(tmp, old) < 0)
				remove_tree(tmp);
		} else {
			remove_tree(tmp);
		}
	} else if (rename(tmp, dir) < 0) {
		e = errno;
		nw_set_err(err, errlen, "cannot move the new measurement to %s: %s", dir,
			   strerror(e));
		return -e;
	}
	parent_of(dir, parent, sizeof(parent));
	fsync_path(parent);
	return 0;

fail_old:
	e = errno;
	nw_set_err(err, errlen, "cannot move %s aside to %s: %s", dir, to, strerror(e));
	return -e;
}

int nw_measurement_write(const struct nw_measurement *m, const struct nw_extra_file *extra,
			 size_t nextra, const char *dir, enum nw_write_mode mode, char *err,
			 size_t errlen)
{
	char tmp[PATH_MAX], old[PATH_MAX];
	int ret;

	nw_set_err(err, errlen, "%s", "");
	if (snprintf(tmp, sizeof(tmp), "%s.new-XXXXXX", dir) >= (int)sizeof(tmp) ||
	    snprintf(old, sizeof(old), "%s.old", dir) >= (int)sizeof(old)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(tmp)) {
		ret = -errno;
		write_error(err, errlen, dir, -ret);
		return ret;
	}
	/* mkdtemp makes it private; a measurement directory is made as mkdir(2) would. */
	chmod(tmp, 0777 & ~creation_mask());
	ret = write_files(m, extra, nextra, tmp, dir, err, errlen);
	if (!ret)
		ret = publish(tmp, dir, old, mode, err, errlen);
	if (ret)
		remove_tree(tmp);
	return ret;
}

/* ---- checkpoints: the files in one pack, the manifest beside it ---- */

#define PACK_PREFIX "checkpoint-"
#define PACK_SUFFIX ".nwpack"
#define JOURNAL_SUFFIX ".nwjournal"

/* Ends the entry begun as @f: -errno of whatever failed first. */
static int end_entry(struct nw_pack_writer *w, FILE *f, int ret)
{
	if (!f)
		return w->err ? w->err : -ENOMEM;
	return ret ? ret : nw_pack_end(w);
}

/* Starts entry @name, or its delta's (NW_PACK_DELTA_SUFFIX) when @delta. */
static FILE *begin_entry(struct nw_pack_writer *w, const char *name, bool delta)
{
	char buf[NAME_MAX + 2];

	if (!delta)
		return nw_pack_begin(w, name);
	if (snprintf(buf, sizeof(buf), "%s" NW_PACK_DELTA_SUFFIX, name) >= (int)sizeof(buf)) {
		w->err = w->err ? w->err : -ENAMETOOLONG;
		return NULL;
	}
	return nw_pack_begin(w, buf);
}

/* The journal's record of the thread whose file is @file, or NULL. */
static struct nw_journal_thread *journal_thread(const struct nw_journal *j, const char *file);

/* Can the trees of @p go as a delta of what @jt says the last checkpoint holds? */
static bool trees_extend(const struct nw_csprof *p, const struct nw_journal_thread *jt)
{
	if (!jt || jt->nepochs != p->nepochs || jt->ntrees != p->ntrees)
		return false;
	for (uint32_t t = 0; t < p->ntrees; t++)
		if (p->trees[t].epoch != jt->epochs[t] || !p->trees[t].cct->changed ||
		    p->trees[t].cct->n < jt->nodes[t] || !jt->nodes[t])
			return false;
	return true;
}

/*
 * Writes every file of @m but the manifest into the pack @w: whole, or with
 * @j, as deltas of what the last checkpoint holds where they can be.
 * -errno with a message.
 */
static int write_entries(const struct nw_measurement *m, const struct nw_extra_file *extra,
			 size_t nextra, const struct nw_journal *j, struct nw_pack_writer *w,
			 const char *shown, char *err, size_t errlen)
{
	const char *what = "symbols.json";
	FILE *f;
	int ret = 0;

	for (uint32_t i = 0; i < m->nthreads && !ret; i++) {
		const struct nw_mthread *th = &m->threads[i];
		const struct nw_journal_thread *jt = j ? journal_thread(j, th->file) : NULL;
		const struct nw_trace *tr = th->trace;
		struct nw_csprof p;
		bool delta;

		if (!th->file)
			continue;
		what = th->file;
		/* Index order: the trace's node ids need no renumbering. */
		ret = thread_csprof(m, th, true, false, &p);
		delta = !ret && trees_extend(&p, jt);
		/* A delta leaves the periods of the whole file it extends. */
		if (!ret && !delta)
			ret = file_periods(m, th, p.metrics);
		f = ret ? NULL : begin_entry(w, th->file, delta);
		if (f)
			ret = delta ? nw_csprof_write_delta(f, &p, jt->nodes) : nw_csprof_write(f, &p);
		thread_csprof_fini(&p);
		ret = ret ? ret : end_entry(w, f, ret);
		if (ret || !tr || !th->trace_file)
			continue;
		what = th->trace_file;
		delta = jt && jt->traced && tr->n >= jt->trace_events &&
			tr->size >= jt->trace_bytes;
		f = begin_entry(w, th->trace_file, delta);
		if (f)
			ret = delta ? nw_tracefile_write_delta(f, th, jt->trace_events,
							       jt->trace_bytes)
				    : nw_tracefile_write_fp(f, m, th, false);
		ret = end_entry(w, f, ret);
	}
	for (size_t i = 0; i < nextra && !ret; i++) {
		what = extra[i].name;
		f = nw_pack_begin(w, extra[i].name);
		errno = 0;
		if (f && extra[i].size && fwrite(extra[i].data, 1, extra[i].size, f) != extra[i].size)
			ret = errno ? -errno : -EIO;
		ret = end_entry(w, f, ret);
	}
	/* The symbols, unless the last checkpoint wrote the same (the reader takes the newest). */
	if (!ret && !(j && j->symbol_modules == m->modules->n &&
		      j->symbol_entries == m->symtab->nentries)) {
		what = "symbols.json";
		f = nw_pack_begin(w, "symbols.json");
		ret = end_entry(w, f, f ? nw_symbols_write_fp(f, m->modules, m->symtab) : 0);
	}
	/* The code, unless the last checkpoint wrote the same (doc/DISASSEMBLY.md). */
	if (!ret && m->code && !(j && j->code_generation == m->code->generation)) {
		what = NW_CODEFILE_NAME;
		f = nw_pack_begin(w, NW_CODEFILE_NAME);
		ret = end_entry(w, f, f ? nw_codefile_write_fp(f, m->code, m->modules) : 0);
	}
	if (ret == -EINVAL)
		nw_set_err(err, errlen, "cannot write %s:%s: a tree or event outside its epochs",
			   shown, what);
	else if (ret < 0)
		write_error(err, errlen, shown, -ret ? -ret : EIO);
	return ret ? ret : 0;
}

/*
 * Writes @m's entries into the pack @w (created with result @created) and
 * finishes it, synced; @shown names it in messages.  -errno with a message.
 */
static int fill_pack(struct nw_pack_writer *w, int created, const struct nw_measurement *m,
		     const struct nw_extra_file *extra, size_t nextra, const struct nw_journal *j,
		     const char *shown, char *err, size_t errlen)
{
	int ret = created;

	if (ret) {
		write_error(err, errlen, shown, -ret);
		return ret;
	}
	ret = write_entries(m, extra, nextra, j, w, shown, err, errlen);
	if (ret) {
		nw_pack_abort(w);
		return ret;
	}
	ret = nw_pack_finish(w);
	if (ret)
		write_error(err, errlen, shown, -ret);
	return ret;
}

/* Is @name one of the files a checkpoint writes (its pack, journal, or a manifest to be)? */
static bool checkpoint_file(const char *name)
{
	size_t n = strlen(name), p = strlen(PACK_SUFFIX), j = strlen(JOURNAL_SUFFIX);

	if (!strncmp(name, ".manifest.json.", 15))
		return true;
	if (strncmp(name, PACK_PREFIX, strlen(PACK_PREFIX)))
		return false;
	return (n > p && !strcmp(name + n - p, PACK_SUFFIX)) ||
	       (n > j && !strcmp(name + n - j, JOURNAL_SUFFIX));
}

/* Removes the packs, journals and half-written files in @dir but @keep and @keep2. */
static void remove_packs(const char *dir, const char *keep, const char *keep2)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];

		if ((keep && !strcmp(de->d_name, keep)) || (keep2 && !strcmp(de->d_name, keep2)) ||
		    !checkpoint_file(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
			unlink(path);
	}
	closedir(d);
}

/* Makes @dir a directory of this run: an older run's moves aside to @old first.  -errno. */
static int pack_dir(const char *dir, const char *old, enum nw_write_mode mode, char *err,
		    size_t errlen)
{
	struct stat st;
	int e;

	if (lstat(dir, &st) == 0) {
		if (mode == NW_WRITE_REPLACE && S_ISDIR(st.st_mode))
			return 0;
		remove_tree(old);
		if (rename(dir, old) < 0) {
			e = errno;
			nw_set_err(err, errlen, "cannot move %s aside to %s: %s", dir, old,
				   strerror(e));
			return -e;
		}
	}
	if (mkdir(dir, 0777) < 0) {
		e = errno;
		write_error(err, errlen, dir, e);
		return -e;
	}
	return 0;
}

/*
 * A new file of @dir from the template @path ("DIR/NAME-XXXXXX" + @suffix),
 * made as creat(2) would make it.  Its fd, or -errno.
 */
static int make_file(char *path, size_t suffix)
{
	int fd = mkostemps(path, (int)suffix, O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* mkstemps makes it private; a measurement's files are made as creat(2) would. */
	fchmod(fd, 0666 & ~creation_mask());
	return fd;
}

/* Writes @named's manifest and renames it into place: the commit of a checkpoint.  -errno. */
static int commit_manifest(const char *dir, const struct nw_measurement *named, char *err,
			   size_t errlen)
{
	char man[PATH_MAX], final[PATH_MAX];
	int fd, ret;

	snprintf(man, sizeof(man), "%s/.manifest.json.XXXXXX", dir);
	snprintf(final, sizeof(final), "%s/manifest.json", dir);
	fd = make_file(man, 0);
	if (fd < 0) {
		write_error(err, errlen, final, -fd);
		return fd;
	}
	close(fd);
	ret = nw_manifest_write(man, named);
	if (!ret && rename(man, final) < 0)
		ret = -errno;
	if (ret) {
		write_error(err, errlen, final, -ret);
		unlink(man);
		return ret;
	}
	fsync_path(dir);
	return 0;
}

/* ---- the journal: later checkpoints append what changed ---- */

static bool thread_eq(const void *ctx, uint32_t entry, const void *key)
{
	const struct nw_journal *j = ctx;

	return !strcmp(j->threads[entry].file, key);
}

static uint64_t thread_hash(const void *ctx, uint32_t entry)
{
	const struct nw_journal *j = ctx;

	return nw_hash_str(NW_HASH_SEED, j->threads[entry].file);
}

static struct nw_journal_thread *journal_thread(const struct nw_journal *j, const char *file)
{
	uint32_t i;

	if (!file)
		return NULL;
	i = nw_index_find(&j->ix, nw_hash_str(NW_HASH_SEED, file), thread_eq, j, file);
	return i == NW_INDEX_NONE ? NULL : &j->threads[i];
}

void nw_journal_init(struct nw_journal *j, bool on)
{
	memset(j, 0, sizeof(*j));
	j->on = on;
}

void nw_journal_fini(struct nw_journal *j)
{
	for (size_t i = 0; i < j->nthreads; i++) {
		free(j->threads[i].file);
		free(j->threads[i].epochs);
		free(j->threads[i].nodes);
	}
	free(j->threads);
	free(j->segments);
	nw_index_fini(&j->ix);
	nw_journal_init(j, j->on);
}

/* The journal's record of @th, made when missing.  NULL on ENOMEM. */
static struct nw_journal_thread *journal_add(struct nw_journal *j, const char *file)
{
	uint64_t h = nw_hash_str(NW_HASH_SEED, file);
	uint32_t *slot = nw_index_slot(&j->ix, h, thread_eq, thread_hash, j, file);
	struct nw_journal_thread *jt;

	if (!slot)
		return NULL;
	if (*slot != NW_INDEX_NONE)
		return &j->threads[*slot];
	if (nw_grow(&j->threads, &j->cap_threads, j->nthreads + 1, sizeof(*j->threads)))
		return NULL;
	jt = &j->threads[j->nthreads];
	memset(jt, 0, sizeof(*jt));
	jt->file = strdup(file);
	if (!jt->file)
		return NULL;
	nw_index_fill(&j->ix, slot, (uint32_t)j->nthreads++);
	return jt;
}

/*
 * Records what the checkpoint just written holds of each thread of @m.
 * -ENOMEM (the journal then forgets everything: the next write is whole).
 */
static int journal_record(struct nw_journal *j, const struct nw_measurement *m)
{
	j->symbol_modules = m->modules->n;
	j->symbol_entries = m->symtab->nentries;
	j->code_generation = m->code ? m->code->generation : 0;
	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *th = &m->threads[i];
		struct nw_journal_thread *jt;
		struct nw_csprof p;
		int ret;

		if (!th->file)
			continue;
		jt = journal_add(j, th->file);
		ret = jt ? thread_csprof(m, th, true, false, &p) : -ENOMEM;
		if (!ret && p.ntrees > jt->ntrees) {
			uint32_t *e = realloc(jt->epochs, p.ntrees * sizeof(*e));

			if (e)
				jt->epochs = e;
			e = e ? realloc(jt->nodes, p.ntrees * sizeof(*e)) : NULL;
			if (e)
				jt->nodes = e;
			ret = e ? 0 : -ENOMEM;
		}
		if (!ret) {
			jt->nepochs = p.nepochs;
			jt->ntrees = p.ntrees;
			for (uint32_t t = 0; t < p.ntrees; t++) {
				jt->epochs[t] = p.trees[t].epoch;
				jt->nodes[t] = p.trees[t].cct->n;
			}
			jt->traced = th->trace && th->trace_file;
			jt->trace_events = jt->traced ? th->trace->n : 0;
			jt->trace_bytes = jt->traced ? th->trace->size : 0;
		}
		if (jt)
			thread_csprof_fini(&p);
		if (ret) {
			nw_journal_fini(j);
			return ret;
		}
	}
	return 0;
}

/*
 * Appends to @dir's journal a segment with what changed since the last
 * checkpoint, then commits it with a manifest naming the pack, the journal
 * and its segments.  -errno with a message; what the directory held stays.
 */
static int append_segment(const struct nw_measurement *m, const struct nw_extra_file *extra,
			  size_t nextra, const char *dir, struct nw_journal *j, char *err,
			  size_t errlen)
{
	struct nw_measurement named = *m;
	struct nw_pack_writer w;
	char path[PATH_MAX];
	uint64_t *segs;
	bool made = !j->file[0];
	int fd, ret;

	if (nw_grow(&j->segments, &j->cap_segments, j->nsegments + 1, sizeof(*j->segments))) {
		nw_set_err(err, errlen, "%s: out of memory", dir);
		return -ENOMEM;
	}
	segs = j->segments;
	if (made)
		snprintf(path, sizeof(path), "%s/" PACK_PREFIX "XXXXXX" JOURNAL_SUFFIX, dir);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, j->file);
	fd = made ? make_file(path, strlen(JOURNAL_SUFFIX)) : open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = made ? fd : -errno;
		write_error(err, errlen, path, -ret);
		return ret;
	}
	/* What a write that did not finish left after the last segment goes first. */
	if (ftruncate(fd, (off_t)j->bytes) < 0 || lseek(fd, (off_t)j->bytes, SEEK_SET) < 0) {
		ret = -errno;
		close(fd);
		write_error(err, errlen, path, -ret);
		goto fail;
	}
	ret = nw_pack_create_fd(&w, fd);
	ret = fill_pack(&w, ret, m, extra, nextra, j, path, err, errlen);
	if (ret)
		goto fail;
	segs[j->nsegments] = w.pos;
	named.run.pack = j->pack;
	named.run.journal = strrchr(path, '/') + 1;
	named.run.segments = segs;
	named.run.nsegments = j->nsegments + 1;
	ret = commit_manifest(dir, &named, err, errlen);
	if (ret)
		goto fail;
	if (made)
		snprintf(j->file, sizeof(j->file), "%s", strrchr(path, '/') + 1);
	j->bytes += segs[j->nsegments++];
	return journal_record(j, m);
fail:
	if (made)
		unlink(path);
	return ret;
}

/* About the bytes of a whole pack of @m: its trees' node records and its traces. */
static uint64_t pack_size(const struct nw_measurement *m)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < m->nthreads; i++) {
		const struct nw_mthread *th = &m->threads[i];

		if (!th->file)
			continue;
		for (uint32_t t = 0; t < th->ntrees; t++)
			n += (uint64_t)th->trees[t].cct->n * (32 + 8 * (uint64_t)m->nmetrics);
		if (th->trace && th->trace_file)
			n += th->trace->size;
	}
	return n;
}

int nw_measurement_write_pack(const struct nw_measurement *m, const struct nw_extra_file *extra,
			      size_t nextra, const char *dir, enum nw_write_mode mode,
			      struct nw_journal *j, char *err, size_t errlen)
{
	char old[PATH_MAX], pack[PATH_MAX];
	struct nw_measurement named = *m;
	struct nw_pack_writer w;
	const char *base;
	int fd, ret;

	nw_set_err(err, errlen, "%s", "");
	if (snprintf(old, sizeof(old), "%s.old", dir) >= (int)sizeof(old) ||
	    snprintf(pack, sizeof(pack), "%s/" PACK_PREFIX "XXXXXX" PACK_SUFFIX, dir) >=
		    (int)sizeof(pack) - 32) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	/*
	 * The same run's directory, with a pack: what changed goes to the
	 * journal, until the journal outgrows what a whole pack would hold
	 * now (or the pack, for small ones, whose symbols count most); then
	 * a new pack (all of it again) is cheaper to read than the pack and
	 * its journal, and no dearer to write.
	 */
	if (j && j->on && mode == NW_WRITE_REPLACE && j->pack[0] &&
	    (j->bytes <= j->pack_bytes || j->bytes <= pack_size(m))) {
		ret = append_segment(m, extra, nextra, dir, j, err, errlen);
		/* The journal as the directory holds it is not known: the next write is whole. */
		if (ret)
			nw_journal_fini(j);
		return ret;
	}
	ret = pack_dir(dir, old, mode, err, errlen);
	if (ret)
		return ret;
	fd = make_file(pack, strlen(PACK_SUFFIX));
	if (fd < 0) {
		write_error(err, errlen, dir, -fd);
		return fd;
	}
	close(fd);
	ret = nw_pack_create(&w, pack);
	ret = fill_pack(&w, ret, m, extra, nextra, NULL, pack, err, errlen);
	if (ret)
		goto fail;
	/* The manifest names the pack, and its rename commits the checkpoint. */
	base = strrchr(pack, '/') + 1;
	named.run.pack = (char *)base;
	named.run.journal = NULL;
	named.run.nsegments = 0;
	ret = commit_manifest(dir, &named, err, errlen);
	if (ret)
		goto fail;
	remove_packs(dir, base, NULL);
	if (j) {
		nw_journal_fini(j);
		snprintf(j->pack, sizeof(j->pack), "%s", base);
		j->pack_bytes = w.pos;
		journal_record(j, m);
	}
	return 0;
fail:
	unlink(pack);
	return ret;
}
