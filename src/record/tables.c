/* SPDX-License-Identifier: MIT */
/*
 * -g bpf: the unwind table of each module a process maps, compiled from
 * its CFI (unwind/cfitable.h, kept between runs in the cache by build-id)
 * and loaded into the in-kernel unwinder when the module is first seen,
 * keyed by the (device, inode) the kernel sees in the mapping's VMA.  A
 * module without CFI, or whose file cannot be read, gets an empty table:
 * the program then walks its frames by frame pointers, and counts them.
 */
#include "record/session.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "elf/vdso.h"
#include "unwind/cfitable.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The key the program finds the table of the file at @path by (the vdso's
 * image when @vdso), as its VMA shows it: NW_VMA_FILE, or NW_VMA_ANON for
 * memory no regular file backs (frame pointers).
 */
static enum nw_bpf_vma_kind file_key(const char *path, bool vdso, struct nw_bpf_module_key *k)
{
	struct stat st;

	if (vdso) {
		k->dev = NW_BPF_VDSO_DEV;
		k->ino = NW_BPF_VDSO_INO;
	} else if (path[0] == '/' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		/* The kernel's dev_t, as the VMA's inode's super block holds it. */
		k->dev = (uint64_t)major(st.st_dev) << 20 | minor(st.st_dev);
		k->ino = st.st_ino;
	} else {
		return NW_VMA_ANON;
	}
	return NW_VMA_FILE;
}

/*
 * Loads the table of the file at @path (the vdso's image when @vdso),
 * with build-id @id (@idlen bytes; 0: unknown), unless the file's is
 * loaded already.  Its key, kind NW_VMA_ANON for anonymous memory, into
 * @key when not NULL.
 */
static void load_file(struct nw_session *s, const char *path, bool vdso, const uint8_t *id,
		      unsigned idlen, struct nw_bpf_vma *key)
{
	struct nw_cfi_table t = { 0 };
	struct nw_bpf_module_key k;
	uint64_t dev, ino, start;
	struct nw_vdso v;
	int fd = -1, ret;
	enum nw_bpf_vma_kind kind = file_key(path, vdso, &k);

	if (key) {
		key->kind = kind;
		key->key = k;
	}
	if (kind != NW_VMA_FILE)
		return; /* anonymous memory: frame pointers */
	dev = k.dev;
	ino = k.ino;
	if (nw_bpf_has_module(s->bpf, dev, ino))
		return;
	start = mono_ns();
	/* Preloaded files: their build-id, so that the cache file is the mapped module's. */
	if (!idlen && !vdso) {
		const struct nw_module_facts *f;

		if (!nw_elf_facts_get(s->elf, path, &f) && f->known) {
			id = f->build_id;
			idlen = f->build_id_size;
		}
	}
	if (vdso) {
		nw_vdso_init(&v);
		fd = nw_vdso_dup_fd(&v);
		nw_vdso_fini(&v);
	}
	ret = nw_cfi_table_get(s->cache, fd, path, id, idlen, &t);
	if (fd >= 0)
		close(fd);
	if (ret) {
		nw_debug("bpf: no unwind table for %s: %s", path, strerror(-ret));
		s->bpf_tables_failed++;
	}
	ret = nw_bpf_add_module(s->bpf, dev, ino, t.rows, t.nrows);
	if (ret) {
		nw_debug("bpf: cannot load the unwind table of %s: %s", path, strerror(-ret));
		s->bpf_tables_failed++;
		if (!s->bpf_refused++)
			snprintf(s->bpf_refused_why, sizeof(s->bpf_refused_why), "%s: %s", path,
				 ret == -ENOSPC ? "the kernel's rows are full" : strerror(-ret));
	}
	nw_debug("bpf: table of %s: %u rows%s in %.1f ms", path, t.nrows,
		 t.from_cache ? " from the cache" : "", (double)(mono_ns() - start) / 1e6);
	nw_cfi_table_free(&t);
	s->bpf_table_ns += mono_ns() - start;
}

void nw_session_load_table(struct nw_session *s, uint32_t module)
{
	const struct nw_module *mod = &s->modules.v[module];

	/* What the launched program maps once started, for its next run's preload. */
	if (s->bpf_cmd[0] && mod->path[0] == '/' &&
	    !nw_grow(&s->bpf_seen, &s->cap_seen, s->nseen + 1, sizeof(*s->bpf_seen)))
		s->bpf_seen[s->nseen++] = module;
	if (nw_grow(&s->bpf_keys, &s->cap_keys, (size_t)module + 1, sizeof(*s->bpf_keys)))
		return;
	while (s->nkeys <= module)
		s->bpf_keys[s->nkeys++] = (struct nw_bpf_vma){ .kind = NW_VMA_NONE };
	load_file(s, nw_module_source(mod), !strcmp(mod->path, "[vdso]"), mod->build_id,
		  mod->build_id_size, &s->bpf_keys[module]);
}

/* The program's view of process mapping @m, from its module's key; false when unknown. */
static bool bpf_vma(const struct nw_session *s, const struct nw_map *m, struct nw_bpf_vma *v)
{
	if (m->module >= s->nkeys || s->bpf_keys[m->module].kind == NW_VMA_NONE)
		return false;
	*v = s->bpf_keys[m->module];
	v->start = m->start;
	v->end = m->end;
	/* File offset = pc + bias; the vdso's rows are by offset in its image. */
	v->bias = v->key.dev == NW_BPF_VDSO_DEV && v->key.ino == NW_BPF_VDSO_INO
			  ? -m->start
			  : m->pgoff - m->start;
	return true;
}

void nw_session_bpf_map(struct nw_session *s, struct nw_process *p, const struct nw_map *m)
{
	struct nw_bpf_vma v = { .start = m->start, .end = m->end, .kind = NW_VMA_NONE };

	/* Unknown to the program (no key): only what it knew there goes. */
	bpf_vma(s, m, &v);
	nw_bpf_map(s->bpf, p->pid, &v);
}

void nw_session_bpf_mappings(struct nw_session *s, struct nw_process *p)
{
	struct nw_bpf_vma v[NW_BPF_PROC_WAYS];
	unsigned n = 0;

	if (!p)
		return;
	for (uint32_t i = 0; i < p->as.n && n < NW_BPF_PROC_WAYS; i++)
		if (bpf_vma(s, &p->as.cur[i], &v[n]))
			n++;
	nw_bpf_set_mappings(s->bpf, p->pid, v, n);
}

/* The directories the loader searches by default (no ld.so.cache read here). */
static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib",
	"/usr/lib",
};

/* nw_elf_needs() callback: the table of the interpreter, or of a library found where ld.so looks. */
static void load_need(void *arg, const char *name, bool interp)
{
	struct nw_session *s = arg;

	/* The interpreter, or a path (DT_NEEDED and LD_PRELOAD may name one). */
	if (interp || strchr(name, '/')) {
		load_file(s, name, false, NULL, 0, NULL);
		return;
	}
	for (size_t j = 0; j < sizeof(lib_dirs) / sizeof(lib_dirs[0]); j++) {
		char lib[PATH_MAX];

		snprintf(lib, sizeof(lib), "%s/%s", lib_dirs[j], name);
		if (access(lib, R_OK) == 0) {
			load_file(s, lib, false, NULL, 0, NULL);
			return;
		}
	}
}

/*
 * The cache file naming what the program at @path (as it is now: device,
 * inode, size, time) mapped after its start last time.  False when it
 * cannot be named.
 */
static bool preload_name(const char *path, char *name, size_t len)
{
	struct stat st;
	uint64_t h;

	if (stat(path, &st))
		return false;
	h = nw_hash_str(nw_hash_add(nw_hash_add(0, (uint64_t)st.st_dev), (uint64_t)st.st_ino),
			path);
	h = nw_hash_add(nw_hash_add(h, (uint64_t)st.st_size), (uint64_t)st.st_mtim.tv_sec);
	snprintf(name, len, "bpf-preload-%016llx", (unsigned long long)h);
	return true;
}

/* Loads the tables the last run of @path needed after its start (the run cache's list). */
static void preload_learned(struct nw_session *s, const char *path)
{
	char name[64], *buf = NULL, *line, *save = NULL;
	size_t len;

	if (!nw_cache_on(s->cache) || !preload_name(path, name, sizeof(name)) ||
	    nw_cache_read(s->cache, name, &buf, &len))
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		load_file(s, line, false, NULL, 0, NULL);
	free(buf);
}

void nw_session_save_preload(struct nw_session *s)
{
	struct nw_strbuf list = { 0 };
	char name[64];

	if (!s->bpf || !s->bpf_cmd[0] || !s->nseen || !nw_cache_on(s->cache) ||
	    !preload_name(s->bpf_cmd, name, sizeof(name)))
		return;
	for (size_t i = 0; i < s->nseen; i++) {
		nw_sb_puts(&list, s->modules.v[s->bpf_seen[i]].path);
		nw_sb_putc(&list, '\n');
	}
	if (list.len && !list.failed)
		nw_cache_write(s->cache, name, list.s, list.len);
	nw_sb_fini(&list);
}

void nw_session_preload_tables(struct nw_session *s, const char *cmd, const char *preload)
{
	char path[PATH_MAX];
	const char *dirs = getenv("PATH");

	if (!s->bpf || !cmd)
		return;
	load_file(s, "[vdso]", true, NULL, 0, NULL);
	/* LD_PRELOAD's libraries (--alloc's interposer): separated by colons or spaces. */
	for (const char *p = preload ? preload : ""; *p;) {
		size_t len = strcspn(p, ": ");

		if (len && len < sizeof(path)) {
			snprintf(path, sizeof(path), "%.*s", (int)len, p);
			load_need(s, path, false);
		}
		p += len + (p[len] != 0);
	}
	if (strchr(cmd, '/')) {
		snprintf(path, sizeof(path), "%s", cmd);
	} else {
		/* As execvp() finds it. */
		path[0] = 0;
		for (const char *d = dirs ? dirs : "/usr/bin:/bin"; *d;) {
			size_t len = strcspn(d, ":");

			snprintf(path, sizeof(path), "%.*s/%s", (int)len, len ? d : ".", cmd);
			if (access(path, X_OK) == 0)
				break;
			path[0] = 0;
			d += len + (d[len] == ':');
		}
	}
	if (!path[0])
		return;
	load_file(s, path, false, NULL, 0, NULL);
	/* Its interpreter and the libraries it names (not theirs). */
	nw_elf_needs(path, load_need, s);
	preload_learned(s, path);
	snprintf(s->bpf_cmd, sizeof(s->bpf_cmd), "%s", path);
}

void nw_session_bpf_note(const struct nw_session *s, struct nw_strbuf *out)
{
	const struct nw_unwind_stats *u = &s->unwinder.stats;
	struct nw_bpf_stats st;

	nw_bpf_get_stats(s->bpf, &st);
	nw_sb_printf(out,
		"bpf: %llu samples unwound in the kernel (%llu lost: ring buffer "
		"full), %llu handed back for a table not loaded yet; %llu user frames, %llu by "
		"frame pointers; walks ended: %llu at the entry, %llu at the depth limit, %llu "
		"on unreadable stack, %llu outside mappings, %llu without frame pointer, "
		"%llu (check mode) at a table not loaded, %llu at a mapping not seen yet\n",
		(unsigned long long)st.v[NW_BPF_SAMPLES], (unsigned long long)st.v[NW_BPF_LOST],
		(unsigned long long)st.v[NW_BPF_HANDED_BACK], (unsigned long long)st.v[NW_BPF_FRAMES],
		(unsigned long long)st.v[NW_BPF_FP_FRAMES],
		(unsigned long long)u->bpf_ends[NW_BPF_END_ENTRY],
		(unsigned long long)u->bpf_ends[NW_BPF_END_DEPTH],
		(unsigned long long)u->bpf_ends[NW_BPF_END_READ],
		(unsigned long long)u->bpf_ends[NW_BPF_END_NO_VMA],
		(unsigned long long)u->bpf_ends[NW_BPF_END_FP],
		(unsigned long long)u->bpf_ends[NW_BPF_END_NO_TABLE],
		(unsigned long long)u->bpf_ends[NW_BPF_END_UNSEEN]);
	if (u->bpf_checked)
		nw_sb_printf(out,
			"bpf check: %llu samples unwound both in the kernel and from "
			"a stack copy: %llu agree (%llu of them deeper in the kernel), %llu differ, "
			"%llu met a mapping or table not known yet (perf's copy outside check "
			"mode); %llu of those agreeing, up to an address the kernel keeps for a "
			"uprobe (a pending uretprobe's return address, an instruction stepped out "
			"of line) where the copy holds the uprobe page's; %llu not compared, "
			"their twin not next\n",
			(unsigned long long)u->bpf_checked, (unsigned long long)u->bpf_agree,
			(unsigned long long)u->bpf_deeper, (unsigned long long)u->bpf_mismatch,
			(unsigned long long)u->bpf_unknown, (unsigned long long)u->bpf_uprobe,
			(unsigned long long)u->bpf_unpaired);
	nw_sb_printf(out,
		"bpf: tables of %llu modules, %llu rows (of %llu at most) in "
		"%.1f MiB of kernel memory, built in %.1f ms (%llu failed); program: %u "
		"instructions verified, %.0f ns per run (%llu runs; kernel.bpf_stats_enabled=1 "
		"to measure); mappings %s\n",
		(unsigned long long)st.modules, (unsigned long long)st.rows,
		(unsigned long long)st.max_rows, (double)st.table_bytes / (1 << 20),
		(double)s->bpf_table_ns / 1e6, (unsigned long long)s->bpf_tables_failed, st.insns,
		st.runs ? (double)st.run_ns / (double)st.runs : 0.0, (unsigned long long)st.runs,
		nw_bpf_finds(s->bpf) ? "told by the recorder, the rest found by the program "
				       "(bpf_find_vma)"
				     : "told by the recorder only");
}
