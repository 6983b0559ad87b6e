/* SPDX-License-Identifier: MIT */
#include "record/alloc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc/abi.h"
#include "elf/facts.h"
#include "util/strbuf.h"

#define UPROBE_PMU "/sys/bus/event_source/devices/uprobe"

/* The uprobe PMU's type, and the config bit that makes a uretprobe. */
static int uprobe_pmu(int *ret_type, int *ret_bit)
{
	FILE *f = fopen(UPROBE_PMU "/type", "r");
	int type = -1, bit = -1;

	if (!f)
		return -ENODEV;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	f = fopen(UPROBE_PMU "/format/retprobe", "r");
	if (f) {
		if (fscanf(f, "config:%d", &bit) != 1)
			bit = -1;
		fclose(f);
	}
	if (type < 0)
		return -ENODEV;
	*ret_type = type;
	*ret_bit = bit;
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
	ret = uprobe_pmu(&o->uprobe_type, &o->retprobe_bit);
	if (ret)
		return ret;
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

void nw_alloc_opts_fini(struct nw_alloc_opts *o)
{
	free(o->library);
	o->library = NULL;
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
