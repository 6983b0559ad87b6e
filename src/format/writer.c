/* SPDX-License-Identifier: MIT */
#include "format/writer.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/symtab.h"
#include "symbol/perfmap.h"
#include "symbol/symbol.h"

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) < 0 ? -1 : 0;
}

int nw_measurement_create_dir(const char *dir, char *err, size_t errlen)
{
	char old[PATH_MAX];
	struct stat st;

	if (snprintf(old, sizeof(old), "%s.old", dir) >= (int)sizeof(old)) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if (stat(dir, &st) == 0) {
		/* The older .old goes; the measurement it replaces moves aside. */
		if (lstat(old, &st) == 0 &&
		    nftw(old, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
			snprintf(err, errlen, "cannot remove the older copy %s", old);
			return -EIO;
		}
		if (rename(dir, old) < 0) {
			int e = errno;

			snprintf(err, errlen, "cannot move %s aside to %s: %s", dir, old, strerror(e));
			return -e;
		}
	}
	if (mkdir(dir, 0777) < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(e));
		return -e;
	}
	return 0;
}

/* Per-module facts looked up once: build-id and the map's ELF address. */
struct mod_info {
	char build_id[2 * NW_BUILD_ID_MAX + 1];
	int symtab_index;     /* -1 until used */
};

static void hex(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = 0;
}

/* The ELF virtual address of the first byte of @map. */
static uint64_t map_vaddr(struct nw_symbolizer *sym, const struct nw_module *mod,
			  const struct nw_map *map)
{
	uint64_t v;

	if ((mod->path[0] == '/' || !strcmp(mod->path, "[vdso]")) &&
	    nw_symbol_offset_to_vaddr(sym, mod->path, map->pgoff, &v) == 0)
		return v;
	/* File gone or no ELF (//anon): offsets stand for addresses. */
	return map->pgoff;
}

/* A set of (module, addr) keys already resolved. */
struct pc_set {
	uint64_t *keys;       /* module << 48 ^ addr, +1 so 0 is empty */
	size_t n, cap;
};

static int pc_set_add(struct pc_set *set, uint32_t module, uint64_t addr, int *added)
{
	uint64_t key = (((uint64_t)module << 48) ^ addr) + 1;
	size_t mask, h;

	if ((set->n + 1) * 2 > set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 4096;
		uint64_t *keys = calloc(cap, sizeof(*keys));

		if (!keys)
			return -ENOMEM;
		for (size_t i = 0; i < set->cap; i++) {
			if (!set->keys[i])
				continue;
			h = (set->keys[i] * 0x9e3779b97f4a7c15ULL) & (cap - 1);
			while (keys[h])
				h = (h + 1) & (cap - 1);
			keys[h] = set->keys[i];
		}
		free(set->keys);
		set->keys = keys;
		set->cap = cap;
	}
	mask = set->cap - 1;
	h = (key * 0x9e3779b97f4a7c15ULL) & mask;
	while (set->keys[h] && set->keys[h] != key)
		h = (h + 1) & mask;
	*added = !set->keys[h];
	if (*added) {
		set->keys[h] = key;
		set->n++;
	}
	return 0;
}

struct writer {
	const struct nw_measurement *m;
	struct nw_symbolizer *sym;
	struct nw_symtab *symtab;
	struct mod_info *mods;
	struct pc_set pcs;
	const char *dir;
	struct nw_perfmaps jit; /* /tmp/perf-<pid>.map of the processes, for JIT code */
	char *err;
	size_t errlen;
};

static int symtab_module(struct writer *w, uint32_t module)
{
	const struct nw_module *mod = &w->m->modules->v[module];
	struct mod_info *mi = &w->mods[module];

	if (mi->symtab_index < 0) {
		if (mod->build_id_size)
			hex(mi->build_id, mod->build_id, mod->build_id_size);
		else if (mod->path[0] == '/')
			nw_symbol_build_id(mod->path, mi->build_id, sizeof(mi->build_id));
		mi->symtab_index = nw_symtab_module(w->symtab, mod->path, mi->build_id);
	}
	return mi->symtab_index;
}

/*
 * Frames for @pc in anonymous memory of process @pid from its perf map, if
 * it has one; the first use copies the map to DIR/jit/perf-<pid>.map (best
 * effort: symbols.json holds the names either way).
 */
static int jit_symbolize(struct writer *w, uint32_t pid, uint64_t pc, struct nw_symframe **frames,
			 uint32_t *nframes)
{
	const struct nw_perfmap *map;
	char path[PATH_MAX];
	int ret;

	ret = nw_perfmaps_get(&w->jit, pid, &map);
	if (ret < 0 || !map)
		return ret < 0 ? ret : 0;
	if (ret == 1) {
		snprintf(path, sizeof(path), "%s/jit", w->dir);
		if (mkdir(path, 0777) == 0 || errno == EEXIST) {
			snprintf(path, sizeof(path), "%s/jit/perf-%u.map", w->dir, pid);
			nw_perfmap_save(map, path);
		}
	}
	return nw_perfmap_symbolize(map, pc, frames, nframes);
}

/* Symbolizes every distinct PC of one tree of process @pid (caller frames at ip - 1). */
static int symbolize_tree(struct writer *w, uint32_t pid, const struct nw_epoch *epoch,
			  const struct nw_cct *cct, const uint64_t *vaddrs)
{
	for (uint32_t i = 1; i < cct->n; i++) {
		const struct nw_cct_node *node = &cct->nodes[i];
		uint64_t pc = node->first_child != NW_CCT_NONE ? node->ip - 1 : node->ip;
		const struct nw_map *map = nw_epoch_find(epoch, node->ip);
		struct nw_symframe *frames = NULL;
		uint32_t nframes = 0;
		uint64_t addr;
		int added, ret, mi;

		if (!map)
			continue;
		addr = pc - map->start + vaddrs[map - epoch->maps];
		mi = symtab_module(w, map->module);
		if (mi < 0)
			return mi;
		ret = pc_set_add(&w->pcs, (uint32_t)mi, addr, &added);
		if (ret < 0)
			return ret;
		if (!added)
			continue;
		ret = nw_symbolize(w->sym, w->m->modules->v[map->module].path, addr, &frames,
				   &nframes);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0) {
			frames = NULL;
			nframes = 0;
		}
		if (!nframes && nw_perfmap_module_is_anon(w->m->modules->v[map->module].path)) {
			ret = jit_symbolize(w, pid, pc, &frames, &nframes);
			if (ret < 0)
				return ret;
		}
		ret = nw_symtab_add(w->symtab, (uint32_t)mi, addr, frames, nframes);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static void safe_name(char *out, size_t len, const char *comm)
{
	size_t i;

	for (i = 0; comm[i] && i + 1 < len; i++) {
		char c = comm[i];

		out[i] = (c == '/' || c == ' ' || c < 32 || c == 127) ? '_' : c;
	}
	out[i] = 0;
	if (!i)
		snprintf(out, len, "thread");
}

/* Writes one thread's file and symbolizes its trees. */
static int write_thread(struct writer *w, const char *dir, const struct nw_thread *th,
			char *file, size_t filelen)
{
	const struct nw_addrspace *as = &th->proc->as;
	struct nw_csprof p = { 0 };
	uint64_t **vaddrs = NULL;
	char path[PATH_MAX], name[NW_COMM_LEN];
	int ret = -ENOMEM;

	safe_name(name, sizeof(name), th->comm);
	snprintf(file, filelen, "%s-%u-%u.csprof", name, th->pid, th->tid);
	snprintf(path, sizeof(path), "%s/%s", dir, file);

	p.target = th->proc->comm;
	p.nmetrics = w->m->nmetrics;
	p.metrics = (struct nw_csprof_metric *)w->m->metrics;
	p.nepochs = as->nepochs;
	p.epochs = calloc(as->nepochs ? as->nepochs : 1, sizeof(*p.epochs));
	p.trees = calloc(th->nccts ? th->nccts : 1, sizeof(*p.trees));
	vaddrs = calloc(as->nepochs ? as->nepochs : 1, sizeof(*vaddrs));
	if (!p.epochs || !p.trees || !vaddrs)
		goto out;
	/* File epoch 0 is the newest. */
	for (uint32_t e = 0; e < as->nepochs; e++) {
		const struct nw_epoch *ep = as->epochs[e];
		struct nw_csprof_epoch *fe = &p.epochs[as->nepochs - 1 - e];

		fe->nmodules = ep->n;
		fe->modules = calloc(ep->n ? ep->n : 1, sizeof(*fe->modules));
		vaddrs[e] = calloc(ep->n ? ep->n : 1, sizeof(uint64_t));
		if (!fe->modules || !vaddrs[e])
			goto out;
		for (uint32_t k = 0; k < ep->n; k++) {
			const struct nw_module *mod = &w->m->modules->v[ep->maps[k].module];

			vaddrs[e][k] = map_vaddr(w->sym, mod, &ep->maps[k]);
			fe->modules[k].name = mod->path;
			fe->modules[k].vaddr = vaddrs[e][k];
			fe->modules[k].mapped = ep->maps[k].start;
		}
	}
	for (uint32_t e = 0; e < th->nccts && e < as->nepochs; e++) {
		if (!th->ccts[e])
			continue;
		p.trees[p.ntrees].epoch = as->nepochs - 1 - e;
		p.trees[p.ntrees].cct = th->ccts[e];
		p.ntrees++;
		ret = symbolize_tree(w, th->pid, as->epochs[e], th->ccts[e], vaddrs[e]);
		if (ret < 0)
			goto out;
	}
	ret = nw_csprof_write_file(path, &p);
	if (ret < 0)
		snprintf(w->err, w->errlen, "cannot write %s: %s", path, strerror(-ret));
out:
	if (ret == -ENOMEM)
		snprintf(w->err, w->errlen, "out of memory writing %s", path);
	for (uint32_t e = 0; e < as->nepochs; e++) {
		if (p.epochs)
			free(p.epochs[as->nepochs - 1 - e].modules);
		if (vaddrs)
			free(vaddrs[e]);
	}
	free(p.epochs);
	free(p.trees);
	free(vaddrs);
	return ret;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

/* Fills the manifest's process, thread and module lists from the tables. */
static int fill_manifest(struct writer *w, char **files)
{
	const struct nw_task_table *t = w->m->tasks;
	struct nw_manifest *mf = w->m->manifest;
	uint32_t nthreads = 0;

	mf->procs = calloc(t->nprocs ? t->nprocs : 1, sizeof(*mf->procs));
	mf->threads = calloc(t->nthreads ? t->nthreads : 1, sizeof(*mf->threads));
	mf->modules = calloc(w->symtab->nmodules ? w->symtab->nmodules : 1, sizeof(*mf->modules));
	if (!mf->procs || !mf->threads || !mf->modules)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nprocs; i++) {
		mf->procs[i].pid = t->procs[i]->pid;
		mf->procs[i].ppid = t->procs[i]->ppid;
		mf->procs[i].comm = dup_or_empty(t->procs[i]->comm);
		mf->nprocs++;
		if (!mf->procs[i].comm)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nthreads; i++) {
		const struct nw_thread *th = t->threads[i];
		struct nw_manifest_thread *mt = &mf->threads[nthreads];

		if (!files[i])
			continue;
		mt->pid = th->pid;
		mt->tid = th->tid;
		mt->samples = th->samples;
		mt->comm = dup_or_empty(th->comm);
		mt->file = dup_or_empty(files[i]);
		mf->nthreads = ++nthreads;
		if (!mt->comm || !mt->file)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < w->symtab->nmodules; i++) {
		mf->modules[i].path = dup_or_empty(w->symtab->modules[i].path);
		mf->modules[i].build_id = dup_or_empty(w->symtab->modules[i].build_id);
		mf->nmodules++;
		if (!mf->modules[i].path || !mf->modules[i].build_id)
			return -ENOMEM;
	}
	return 0;
}

int nw_measurement_write(const char *dir, const struct nw_measurement *m, char *err,
			 size_t errlen)
{
	const struct nw_task_table *t = m->tasks;
	struct writer w = { .m = m, .dir = dir, .err = err, .errlen = errlen };
	char **files = NULL, path[PATH_MAX];
	int ret = -ENOMEM;

	err[0] = 0;
	nw_perfmaps_init(&w.jit, "/tmp");
	w.sym = nw_symbolizer_new();
	w.symtab = nw_symtab_new();
	w.mods = malloc((m->modules->n ? m->modules->n : 1) * sizeof(*w.mods));
	files = calloc(t->nthreads ? t->nthreads : 1, sizeof(*files));
	if (!w.sym || !w.symtab || !w.mods || !files)
		goto out;
	for (uint32_t i = 0; i < m->modules->n; i++) {
		w.mods[i].build_id[0] = 0;
		w.mods[i].symtab_index = -1;
	}
	for (uint32_t i = 0; i < t->nthreads; i++) {
		char file[NW_COMM_LEN + 48];

		if (!t->threads[i]->samples)
			continue;
		ret = write_thread(&w, dir, t->threads[i], file, sizeof(file));
		if (ret < 0)
			goto out;
		files[i] = strdup(file);
		if (!files[i]) {
			ret = -ENOMEM;
			goto out;
		}
	}
	nw_symtab_sort(w.symtab);
	snprintf(path, sizeof(path), "%s/symbols.json", dir);
	ret = nw_symtab_write(path, w.symtab);
	if (ret < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		goto out;
	}
	ret = fill_manifest(&w, files);
	if (ret < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	ret = nw_manifest_write(path, m->manifest);
	if (ret < 0)
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
out:
	if (ret == -ENOMEM && !err[0])
		snprintf(err, errlen, "out of memory writing %s", dir);
	for (uint32_t i = 0; files && i < t->nthreads; i++)
		free(files[i]);
	free(files);
	free(w.mods);
	free(w.pcs.keys);
	nw_perfmaps_fini(&w.jit);
	nw_symtab_free(w.symtab);
	nw_symbolizer_free(w.sym);
	return ret;
}
