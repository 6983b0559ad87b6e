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
