/* SPDX-License-Identifier: MIT */
/* Where and when a recording writes its measurement; see output.h. */
#include "record/output.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/strbuf.h"

/* The first checkpoint comes within this, not only after a whole interval. */
#define FIRST_CHECKPOINT_NS 1000000000ull

static void set_target(struct nw_output *out)
{
	if (out->o.rotate_ns)
		snprintf(out->path, sizeof(out->path), "%s/%04u", out->o.dir, out->seq);
	else
		snprintf(out->path, sizeof(out->path), "%s", out->o.dir);
	out->wrote = false;
	/* A new target starts with a whole pack. */
	nw_journal_fini(&out->journal);
}

static uint64_t first_checkpoint(const struct nw_output *out, uint64_t now)
{
	uint64_t d = out->o.checkpoint_ns;

	if (!d)
		return 0;
	return now + (d < FIRST_CHECKPOINT_NS ? d : FIRST_CHECKPOINT_NS);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int nw_output_check(const char *dir, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	char *slash;

	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent)) {
		nw_set_err(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	while ((slash = strrchr(parent, '/')) && slash[1] == 0 && slash != parent)
		*slash = 0; /* trailing slashes */
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = 0;
	else
		*slash = 0;
	if (access(parent, W_OK | X_OK) < 0) {
		int e = errno;

		nw_set_err(err, errlen, "cannot write the measurement into %s: %s", parent,
			   strerror(e));
		return -e;
	}
	return 0;
}

int nw_output_init(struct nw_output *out, const struct nw_output_opts *o, uint64_t now,
		   char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->o = *o;
	nw_journal_init(&out->journal, o->journal);
	out->seq = 1;
	set_target(out);
	out->next_checkpoint = first_checkpoint(out, now);
	out->next_rotation = o->rotate_ns ? now + o->rotate_ns : 0;
	if (o->rotate_ns) {
		struct stat st;

		/* An older run's DIR (one measurement, or its intervals) goes aside first. */
		if (lstat(o->dir, &st) == 0) {
			char *old = nw_strdup_printf("%s.old", o->dir);

			if (!old)
				return -ENOMEM;
			remove_tree(old);
			if (rename(o->dir, old) < 0) {
				int e = errno;

				nw_set_err(err, errlen, "cannot move %s aside to %s: %s", o->dir, old,
					   strerror(e));
				free(old);
				return -e;
			}
			free(old);
		}
		if (mkdir(o->dir, 0777) < 0) {
			int e = errno;

			nw_set_err(err, errlen, "cannot create %s: %s", o->dir, strerror(e));
			return -e;
		}
	}
	return 0;
}

void nw_output_fini(struct nw_output *out)
{
	nw_journal_fini(&out->journal);
}

enum nw_output_due nw_output_due(const struct nw_output *out, uint64_t now)
{
	if (out->next_rotation && now >= out->next_rotation)
		return NW_DUE_ROTATION;
	if (out->next_checkpoint && now >= out->next_checkpoint)
		return NW_DUE_CHECKPOINT;
	return NW_DUE_NONE;
}

int nw_output_wait_ms(const struct nw_output *out, uint64_t now, int max)
{
	uint64_t next = 0;

	if (out->next_rotation)
		next = out->next_rotation;
	if (out->next_checkpoint && (!next || out->next_checkpoint < next))
		next = out->next_checkpoint;
	if (!next)
		return max;
	if (next <= now)
		return 0;
	return (next - now) / 1000000 < (uint64_t)max ? (int)((next - now) / 1000000) + 1 : max;
}

/* Bytes under @path. */
static uint64_t du(const char *path)
{
	struct stat st;
	uint64_t n = 0;
	DIR *d;
	struct dirent *de;

	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return (uint64_t)st.st_size;
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = nw_strdup_printf("%s/%s", path, de->d_name);
		if (sub)
			n += du(sub);
		free(sub);
	}
	closedir(d);
	return n;
}

/* The number of DIR entry @name ("0012", "0012.pb.gz"), 0 for anything else. */
static uint32_t interval_of(const char *name)
{
	char *end;
	unsigned long v = strtoul(name, &end, 10);

	if (end == name || end - name < 4 || (*end && strcmp(end, ".pb.gz")))
		return 0;
	return v > UINT32_MAX ? 0 : (uint32_t)v;
}

int nw_output_prune(struct nw_output *out)
{
	uint32_t *seqs = NULL, n = 0, nuniq = 0;
	size_t cap = 0;
	uint64_t total;
	int removed = 0;
	DIR *d;
	struct dirent *de;

	if (!out->o.rotate_ns || (!out->o.max_files && !out->o.max_bytes))
		return 0;
	d = opendir(out->o.dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		uint32_t s = interval_of(de->d_name);

		if (!s || nw_grow(&seqs, &cap, n + 1, sizeof(*seqs)))
			continue;
		seqs[n++] = s;
	}
	closedir(d);
	/* The intervals present, oldest first (a directory and its .pb.gz are one). */
	for (uint32_t i = 1; i < n; i++)
		for (uint32_t j = i; j > 0 && seqs[j - 1] > seqs[j]; j--) {
			uint32_t x = seqs[j];

			seqs[j] = seqs[j - 1];
			seqs[j - 1] = x;
		}
	for (uint32_t i = 0; i < n; i++)
		if (!nuniq || seqs[nuniq - 1] != seqs[i])
			seqs[nuniq++] = seqs[i];
	total = du(out->o.dir);
	for (uint32_t i = 0; i + 1 < nuniq; i++) {
		char dir[PATH_MAX + 16], pb[PATH_MAX + 32];

		if (!(out->o.max_files && nuniq - i > out->o.max_files) &&
		    !(out->o.max_bytes && total > out->o.max_bytes))
			break;
		snprintf(dir, sizeof(dir), "%s/%04u", out->o.dir, seqs[i]);
		snprintf(pb, sizeof(pb), "%s/%04u.pb.gz", out->o.dir, seqs[i]);
		total -= du(dir) + du(pb);
		remove_tree(dir);
		unlink(pb);
		removed++;
	}
	free(seqs);
	return removed;
}

int nw_output_write(struct nw_output *out, const struct nw_measurement *m,
		    const struct nw_extra_file *extra, size_t nextra, uint64_t now, char *err,
		    size_t errlen)
{
	enum nw_run_written w = m->run.written;
	enum nw_write_mode mode = out->wrote ? NW_WRITE_REPLACE : NW_WRITE_NEW;
	/*
	 * While recording, one pack and a manifest: a directory of files per
	 * thread costs a created, synced and unlinked file each, every time.
	 */
	int rc = w == NW_RUN_CHECKPOINT || w == NW_RUN_SNAPSHOT
			 ? nw_measurement_write_pack(m, extra, nextra, out->path, mode,
						     &out->journal, err, errlen)
			 : nw_measurement_write(m, extra, nextra, out->path, mode, err, errlen);

	if (rc) {
		out->failures++;
		/* Tried again at the next checkpoint, not at once. */
		if (out->next_checkpoint && now >= out->next_checkpoint)
			out->next_checkpoint = now + out->o.checkpoint_ns;
		return rc;
	}
	out->wrote = true;
	memcpy(out->last, out->path, sizeof(out->last));
	if (w == NW_RUN_CHECKPOINT)
		out->checkpoints++;
	else if (w == NW_RUN_SNAPSHOT)
		out->snapshots++;
	if (out->next_checkpoint && (w == NW_RUN_CHECKPOINT || now >= out->next_checkpoint))
		out->next_checkpoint = now + out->o.checkpoint_ns;
	if (out->o.rotate_ns && (w == NW_RUN_ROTATION || w == NW_RUN_END)) {
		out->rotations++;
		nw_output_prune(out);
		if (w == NW_RUN_ROTATION) {
			out->seq++;
			set_target(out);
			out->next_rotation = now + out->o.rotate_ns;
			out->next_checkpoint = first_checkpoint(out, now);
		}
	}
	return 0;
}
