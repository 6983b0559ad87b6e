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

#include "format/csprof.h"
#include "format/manifest.h"
#include "format/pack.h"
#include "format/symbols.h"
#include "format/tracefile.h"
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

/* The period a csprof reader multiplies samples by: fixed, or the mean this file sampled. */
static uint64_t file_period(const struct nw_measurement *m, const struct nw_mthread *th,
			    unsigned metric)
{
	const struct nw_metric *d = &m->metrics[metric];
	uint64_t samples = 0, period = 0;
	int s = -1, p = -1;

	for (uint32_t e = 0; e < m->run.nevents; e++)
		if (!strcmp(m->run.events[e].name, d->event) && !m->run.events[e].freq)
			return d->period;
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		if (strcmp(m->metrics[i].event, d->event))
			continue;
		if (m->metrics[i].kind == NW_METRIC_SAMPLES)
			s = (int)i;
		else if (m->metrics[i].kind == NW_METRIC_PERIOD)
			p = (int)i;
	}
	if (s < 0 || p < 0)
		return d->period;
	samples = nw_mthread_total(th, (unsigned)s);
	period = nw_mthread_total(th, (unsigned)p);
	return samples ? (period + samples / 2) / samples : d->period;
}

static int cmp_tree_newest_first(const void *a, const void *b)
{
	const struct nw_csprof_tree *x = a, *y = b;

	return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

/*
 * Writes the HPC_CSPROF file of @th to @f, or to the file @path when @f is
 * NULL.  -errno, -EINVAL for a tree outside its epochs.
 */
static int write_thread(const struct nw_measurement *m, const struct nw_mthread *th,
			const char *path, FILE *f, bool index_order)
{
	const struct nw_mprocess *proc = nw_measurement_process(m, th->pid);
	struct nw_csprof p = { 0 };
	struct nw_csprof_metric *metrics;
	int ret = -ENOMEM;

	p.target = (char *)(proc ? proc->comm : th->comm);
	p.index_order = index_order;
	p.nmetrics = m->nmetrics;
	p.nepochs = th->nepochs;
	metrics = calloc(m->nmetrics ? m->nmetrics : 1, sizeof(*metrics));
	p.epochs = calloc(th->nepochs ? th->nepochs : 1, sizeof(*p.epochs));
	p.trees = calloc(th->ntrees ? th->ntrees : 1, sizeof(*p.trees));
	if (!metrics || !p.epochs || !p.trees)
		goto out;
	p.metrics = metrics;
	for (uint32_t i = 0; i < m->nmetrics; i++)
		metrics[i] = (struct nw_csprof_metric){ .name = m->metrics[i].name,
							.flags = m->metrics[i].flags,
							.period = file_period(m, th, i) };
	/* File epoch 0 is the newest. */
	for (uint32_t e = 0; e < th->nepochs; e++) {
		const struct nw_epoch *ep = m->epochs[th->first_epoch + e];
		struct nw_csprof_epoch *fe = &p.epochs[th->nepochs - 1 - e];

		fe->nmodules = ep->n;
		fe->modules = calloc(ep->n ? ep->n : 1, sizeof(*fe->modules));
		if (!fe->modules)
			goto out;
		for (uint32_t k = 0; k < ep->n; k++) {
			uint32_t mod = ep->maps[k].module;

			fe->modules[k].name = mod < m->modules->n ? m->modules->v[mod].path : "";
			fe->modules[k].vaddr = ep->maps[k].vaddr;
			fe->modules[k].mapped = ep->maps[k].start;
		}
	}
	for (uint32_t t = 0; t < th->ntrees; t++) {
		uint32_t e = th->trees[t].epoch;

		if (e < th->first_epoch || e - th->first_epoch >= th->nepochs) {
			ret = -EINVAL;
			goto out;
		}
		p.trees[p.ntrees].epoch = th->nepochs - 1 - (e - th->first_epoch);
		p.trees[p.ntrees++].cct = th->trees[t].cct;
	}
	/* Newest epoch first, as csprof's own writer did: old readers take the first as epoch 0. */
	qsort(p.trees, p.ntrees, sizeof(*p.trees), cmp_tree_newest_first);
	ret = f ? nw_csprof_write(f, &p) : nw_csprof_write_file(path, &p);
out:
	for (uint32_t e = 0; p.epochs && e < p.nepochs; e++)
		free(p.epochs[e].modules);
	free(p.epochs);
	free(p.trees);
	free(metrics);
	return ret;
}

/* Writes @data to @dir/@name, making its directories.  -errno. */
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
	for (size_t off = 0; off < x->size && !ret;) {
		ssize_t n = write(fd, (const char *)x->data + off, x->size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ret = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (!ret && fsync(fd) < 0)
		ret = -errno;
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
		ret = write_thread(m, th, path, NULL, false);
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
		ret = nw_tracefile_write(path, m, th);
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
	ret = nw_symbols_write(path, m->modules, m->symtab);
	if (ret < 0) {
		snprintf(shown, sizeof(shown), "%s/symbols.json", dir);
		write_error(err, errlen, shown, -ret);
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

/* Writes every file of @m but the manifest into the pack @w.  -errno with a message. */
static int write_entries(const struct nw_measurement *m, const struct nw_extra_file *extra,
			 size_t nextra, struct nw_pack_writer *w, const char *shown, char *err,
			 size_t errlen)
{
	const char *what = "symbols.json";
	FILE *f;
	int ret = 0;

	for (uint32_t i = 0; i < m->nthreads && !ret; i++) {
		const struct nw_mthread *th = &m->threads[i];

		if (!th->file)
			continue;
		what = th->file;
		f = nw_pack_begin(w, th->file);
		/* Index order: the trace's node ids need no renumbering. */
		ret = f ? write_thread(m, th, NULL, f, true) : w->err;
		if (!ret)
			ret = nw_pack_end(w);
		if (ret || !th->trace || !th->trace_file)
			continue;
		what = th->trace_file;
		f = nw_pack_begin(w, th->trace_file);
		ret = f ? nw_tracefile_write_fp(f, m, th, false) : w->err;
		if (!ret)
			ret = nw_pack_end(w);
	}
	for (size_t i = 0; i < nextra && !ret; i++) {
		what = extra[i].name;
		f = nw_pack_begin(w, extra[i].name);
		errno = 0;
		ret = !f ? w->err
		      : extra[i].size && fwrite(extra[i].data, 1, extra[i].size, f) != extra[i].size
			  ? (errno ? -errno : -EIO)
			  : 0;
		if (!ret)
			ret = nw_pack_end(w);
	}
	if (!ret) {
		what = "symbols.json";
		f = nw_pack_begin(w, "symbols.json");
		ret = f ? nw_symbols_write_fp(f, m->modules, m->symtab) : w->err;
		if (!ret)
			ret = nw_pack_end(w);
	}
	if (ret == -EINVAL)
		nw_set_err(err, errlen, "cannot write %s:%s: a tree or event outside its epochs",
			   shown, what);
	else if (ret < 0)
		write_error(err, errlen, shown, -ret ? -ret : EIO);
	return ret ? ret : 0;
}

/* Removes the packs and half-written files in @dir but @keep. */
static void remove_packs(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char path[PATH_MAX];

		if (keep && !strcmp(de->d_name, keep))
			continue;
		if (!(strncmp(de->d_name, PACK_PREFIX, strlen(PACK_PREFIX)) == 0 &&
		      n > strlen(PACK_SUFFIX) && !strcmp(de->d_name + n - strlen(PACK_SUFFIX),
							 PACK_SUFFIX)) &&
		    strncmp(de->d_name, ".manifest.json.", 15))
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

int nw_measurement_write_pack(const struct nw_measurement *m, const struct nw_extra_file *extra,
			      size_t nextra, const char *dir, enum nw_write_mode mode, char *err,
			      size_t errlen)
{
	char old[PATH_MAX], pack[PATH_MAX], man[PATH_MAX], final[PATH_MAX];
	struct nw_measurement named = *m;
	struct nw_pack_writer w;
	const char *base;
	mode_t mask;
	int fd, ret;

	nw_set_err(err, errlen, "%s", "");
	if (snprintf(old, sizeof(old), "%s.old", dir) >= (int)sizeof(old) ||
	    snprintf(pack, sizeof(pack), "%s/" PACK_PREFIX "XXXXXX" PACK_SUFFIX, dir) >=
		    (int)sizeof(pack) ||
	    snprintf(man, sizeof(man), "%s/.manifest.json.XXXXXX", dir) >= (int)sizeof(man) ||
	    snprintf(final, sizeof(final), "%s/manifest.json", dir) >= (int)sizeof(final)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	ret = pack_dir(dir, old, mode, err, errlen);
	if (ret)
		return ret;
	fd = mkstemps(pack, strlen(PACK_SUFFIX));
	if (fd < 0) {
		ret = -errno;
		write_error(err, errlen, dir, -ret);
		return ret;
	}
	/* mkstemps makes it private; a measurement's files are made as creat(2) would. */
	mask = creation_mask();
	fchmod(fd, 0666 & ~mask);
	close(fd);
	ret = nw_pack_create(&w, pack);
	if (ret) {
		write_error(err, errlen, pack, -ret);
		goto fail;
	}
	ret = write_entries(m, extra, nextra, &w, pack, err, errlen);
	if (ret) {
		nw_pack_abort(&w);
		goto fail;
	}
	ret = nw_pack_finish(&w);
	if (ret) {
		write_error(err, errlen, pack, -ret);
		goto fail;
	}
	/* The manifest names the pack, and its rename commits the checkpoint. */
	base = strrchr(pack, '/') + 1;
	named.run.pack = (char *)base;
	fd = mkstemp(man);
	if (fd < 0) {
		ret = -errno;
		write_error(err, errlen, final, -ret);
		goto fail;
	}
	fchmod(fd, 0666 & ~mask);
	close(fd);
	ret = nw_manifest_write(man, &named);
	if (!ret && rename(man, final) < 0)
		ret = -errno;
	if (ret) {
		write_error(err, errlen, final, -ret);
		unlink(man);
		goto fail;
	}
	fsync_path(dir);
	remove_packs(dir, base);
	return 0;
fail:
	unlink(pack);
	return ret;
}
