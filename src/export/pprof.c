/* SPDX-License-Identifier: MIT */
/*
 * The pprof export.  The builder interns strings, mappings, locations and
 * functions as the thread files are walked, keeps samples as index lists,
 * and only builds protobuf-c messages when packing.
 *
 * Frames are named exactly as nw_profile's loader names them (profile.c,
 * add_frames), through nw_profile_intern(), so that a Function here is a
 * frame of narwhal-report's own views: "[unknown]" outside every module,
 * "module+0xADDR" where the symbol table knows nothing, else the inline
 * chain of the symbol table.
 */
#include "export/pprof.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "export/export.h"
#include "export/profile.pb-c.h"
#include "symbol/symbol.h"
#include "util/log.h"

#define EMPTY UINT32_MAX
#define PAGE 4096u

/* ---- a small open-addressing index over the entries of an array ---- */

struct index {
	uint32_t *slots;
	uint32_t nslots; /* a power of two, or 0 */
};

struct nw_pprof;
typedef uint64_t (*hash_fn)(const struct nw_pprof *b, uint32_t entry);
typedef bool (*eq_fn)(const struct nw_pprof *b, uint32_t entry, const void *key);

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t hash_bytes(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* Makes room for entry @n (the count after insertion) at most half full. */
static int index_reserve(struct index *ix, uint32_t n, hash_fn hash, const struct nw_pprof *b)
{
	uint32_t nslots, mask, *slots;

	if ((uint64_t)n * 2 <= ix->nslots)
		return 0;
	nslots = ix->nslots ? ix->nslots * 2 : 256;
	if (nslots <= ix->nslots || n >= EMPTY)
		return -ENOMEM;
	slots = malloc((size_t)nslots * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, (size_t)nslots * sizeof(*slots));
	mask = nslots - 1;
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint32_t h = (uint32_t)hash(b, i) & mask;

		while (slots[h] != EMPTY)
			h = (h + 1) & mask;
		slots[h] = i;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->nslots = nslots;
	return 0;
}

/* The slot holding the entry equal to @key, or the empty slot where it goes. */
static uint32_t *index_find(const struct index *ix, uint64_t hash, eq_fn eq,
			    const struct nw_pprof *b, const void *key)
{
	uint32_t mask = ix->nslots - 1, h = (uint32_t)hash & mask;

	while (ix->slots[h] != EMPTY && !eq(b, ix->slots[h], key))
		h = (h + 1) & mask;
	return &ix->slots[h];
}

/* Grows *@v (of *@cap elements of @size) to hold @need. */
static int grow(void *v, size_t *cap, size_t need, size_t size)
{
	void **pv = v;
	size_t c = *cap ? *cap : 16;
	void *nv;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return -ENOMEM;
		c *= 2;
	}
	nv = realloc(*pv, c * size);
	if (!nv)
		return -ENOMEM;
	*pv = nv;
	*cap = c;
	return 0;
}

/* ---- the builder ---- */

struct mapping {
	char *path;
	uint64_t start, vaddr, end; /* end: one past the highest address seen */
	int64_t filename, build_id;
	char *build_id_hex;         /* as recorded, "" or NULL when unknown */
};

struct line {
	uint32_t func; /* index in nw_profile.funcs */
	int64_t line;
};

struct location {
	uint32_t mapping; /* index + 1, 0: none */
	uint64_t address;
	size_t first_line;
	uint32_t nlines;
	bool symbolized;  /* the lines come from the symbol table */
};

struct sample {
	size_t first_loc;  /* in loc_ids */
	uint32_t nlocs;
	uint32_t thread;   /* in threads */
};

struct thread_label {
	int64_t comm;
	uint32_t pid, tid;
};

struct nw_pprof {
	struct nw_profile *p;
	unsigned nmetrics;

	char **strs;
	size_t nstrs, cap_strs;
	struct index str_ix;

	struct mapping *maps;
	size_t nmaps, cap_maps;
	struct index map_ix;

	struct location *locs;
	size_t nlocs, cap_locs;
	struct index loc_ix;

	struct line *lines;
	size_t nlines, cap_lines;

	struct sample *samples;
	size_t nsamples, cap_samples;
	uint32_t *loc_ids; /* location indexes, leaf first per sample */
	size_t nloc_ids, cap_loc_ids;
	uint64_t *values;  /* nmetrics per sample */
	size_t cap_values;

	struct thread_label *threads;
	size_t nthreads, cap_threads;

	uint64_t event0_samples, event0_period;
};

/* strings */

static uint64_t str_hash(const struct nw_pprof *b, uint32_t i)
{
	return mix64(hash_bytes(0xcbf29ce484222325ULL, b->strs[i]));
}

static bool str_eq(const struct nw_pprof *b, uint32_t i, const void *key)
{
	return strcmp(b->strs[i], key) == 0;
}

/* The string-table index of @s (made valid UTF-8); 0 for NULL; -ENOMEM. */
static int64_t str_intern(struct nw_pprof *b, const char *s)
{
	int failed = 0;
	char *c;
	uint32_t *slot;

	if (!s)
		return 0;
	c = nw_export_clean(s, &failed);
	if (!c)
		return -ENOMEM;
	if (index_reserve(&b->str_ix, (uint32_t)b->nstrs + 1, str_hash, b) ||
	    grow(&b->strs, &b->cap_strs, b->nstrs + 1, sizeof(*b->strs))) {
		free(c);
		return -ENOMEM;
	}
	slot = index_find(&b->str_ix, mix64(hash_bytes(0xcbf29ce484222325ULL, c)), str_eq, b, c);
	if (*slot != EMPTY) {
		free(c);
		return *slot;
	}
	b->strs[b->nstrs] = c;
	*slot = (uint32_t)b->nstrs;
	return (int64_t)b->nstrs++;
}

/* mappings */

struct map_key {
	const char *path;
	uint64_t start, vaddr;
};

static uint64_t map_key_hash(const char *path, uint64_t start, uint64_t vaddr)
{
	return mix64(hash_bytes(0xcbf29ce484222325ULL, path) ^ mix64(start) ^ (vaddr * 31));
}

static uint64_t map_hash(const struct nw_pprof *b, uint32_t i)
{
	return map_key_hash(b->maps[i].path, b->maps[i].start, b->maps[i].vaddr);
}

static bool map_eq(const struct nw_pprof *b, uint32_t i, const void *key)
{
	const struct map_key *k = key;
	const struct mapping *m = &b->maps[i];

	return m->start == k->start && m->vaddr == k->vaddr && strcmp(m->path, k->path) == 0;
}

/* The recorded build-id of module @path, or NULL. */
static const char *build_id_of(const struct nw_profile *p, const struct nw_symtab *st,
			       const char *path)
{
	for (uint32_t i = 0; p->manifest && i < p->manifest->nmodules; i++)
		if (p->manifest->modules[i].path && strcmp(p->manifest->modules[i].path, path) == 0)
			return p->manifest->modules[i].build_id;
	for (uint32_t i = 0; st && i < st->nmodules; i++)
		if (st->modules[i].path && strcmp(st->modules[i].path, path) == 0)
			return st->modules[i].build_id;
	return NULL;
}

/* Index + 1 of the mapping of module @m, added when new; -ENOMEM. */
static int64_t mapping_of(struct nw_pprof *b, const struct nw_symtab *st,
			  const struct nw_csprof_module *m)
{
	const char *path = m->name ? m->name : "";
	struct map_key key = { .path = path, .start = m->mapped, .vaddr = m->vaddr };
	const char *bid;
	struct mapping *mp;
	uint32_t *slot;

	if (index_reserve(&b->map_ix, (uint32_t)b->nmaps + 1, map_hash, b) ||
	    grow(&b->maps, &b->cap_maps, b->nmaps + 1, sizeof(*b->maps)))
		return -ENOMEM;
	slot = index_find(&b->map_ix, map_key_hash(path, m->mapped, m->vaddr), map_eq, b, &key);
	if (*slot != EMPTY)
		return (int64_t)*slot + 1;
	mp = &b->maps[b->nmaps];
	memset(mp, 0, sizeof(*mp));
	mp->start = m->mapped;
	mp->vaddr = m->vaddr;
	mp->end = m->mapped;
	mp->path = strdup(path);
	bid = build_id_of(b->p, st, path);
	mp->build_id_hex = bid ? strdup(bid) : NULL;
	if (!mp->path || (bid && !mp->build_id_hex)) {
		free(mp->path);
		free(mp->build_id_hex);
		return -ENOMEM;
	}
	mp->filename = str_intern(b, path);
	mp->build_id = str_intern(b, bid && bid[0] ? bid : NULL);
	if (mp->filename < 0 || mp->build_id < 0) {
		free(mp->path);
		free(mp->build_id_hex);
		return -ENOMEM;
	}
	*slot = (uint32_t)b->nmaps;
	return (int64_t)b->nmaps++ + 1;
}

/* locations */

struct loc_key {
	uint32_t mapping;
	uint64_t address;
};

static uint64_t loc_key_hash(uint32_t mapping, uint64_t address)
{
	return mix64(address ^ ((uint64_t)mapping << 48) ^
		     ((uint64_t)mapping * 0x9e3779b97f4a7c15ULL));
}

static uint64_t loc_hash(const struct nw_pprof *b, uint32_t i)
{
	return loc_key_hash(b->locs[i].mapping, b->locs[i].address);
}

static bool loc_eq(const struct nw_pprof *b, uint32_t i, const void *key)
{
	const struct loc_key *k = key;

	return b->locs[i].mapping == k->mapping && b->locs[i].address == k->address;
}

static int add_line(struct nw_pprof *b, int64_t func, int64_t line)
{
	if (func < 0)
		return -ENOMEM;
	if (grow(&b->lines, &b->cap_lines, b->nlines + 1, sizeof(*b->lines)))
		return -ENOMEM;
	b->lines[b->nlines++] = (struct line){ .func = (uint32_t)func, .line = line };
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* One module of an epoch, with what the builder learnt about it. */
struct emod {
	const struct nw_csprof_module *m;
	int symmod;        /* in the symbol table, or -1 */
	uint32_t mapping;  /* index + 1 once known, else 0 */
};

struct epoch {
	bool ready;
	uint32_t n;
	struct emod *mods; /* sorted by mapped address */
};

static int cmp_emod(const void *a, const void *b)
{
	const struct emod *x = a, *y = b;

	return x->m->mapped < y->m->mapped ? -1 : x->m->mapped > y->m->mapped;
}

static int epoch_init(struct epoch *ep, const struct nw_csprof_epoch *ce,
		      const struct nw_symtab *st)
{
	ep->n = ce->nmodules;
	ep->mods = ce->nmodules ? calloc(ce->nmodules, sizeof(*ep->mods)) : NULL;
	if (ce->nmodules && !ep->mods)
		return -ENOMEM;
	for (uint32_t i = 0; i < ce->nmodules; i++) {
		int idx = ce->modules[i].name ? nw_symtab_find_module(st, ce->modules[i].name)
					      : -ENOENT;

		ep->mods[i] = (struct emod){ .m = &ce->modules[i], .symmod = idx >= 0 ? idx : -1 };
	}
	qsort(ep->mods, ep->n, sizeof(*ep->mods), cmp_emod);
	ep->ready = true;
	return 0;
}

/* The module with the greatest mapped address <= @ip (as profile.c finds it), or NULL. */
static struct emod *epoch_find(const struct epoch *ep, uint64_t ip)
{
	uint32_t lo = 0, hi = ep->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ep->mods[mid].m->mapped <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &ep->mods[lo - 1] : NULL;
}

/* The lines of a new location at @ip of module @em (NULL: none). */
static int location_lines(struct nw_pprof *b, const struct nw_symtab *st, const struct emod *em,
			  uint64_t ip, bool caller, struct location *loc)
{
	const struct nw_symentry *e = NULL;
	const char *path;
	uint64_t addr;
	char *name;
	int64_t f;

	if (!em) {
		loc->nlines = 1;
		return add_line(b, nw_profile_intern(b->p, "[unknown]", NULL, 0, NULL), 0);
	}
	path = em->m->name ? em->m->name : "";
	addr = ip - em->m->mapped + em->m->vaddr - (caller ? 1 : 0);
	if (em->symmod >= 0)
		e = nw_symtab_lookup(st, (uint32_t)em->symmod, addr);
	if (!e || !e->nframes) {
		if (asprintf(&name, "%s+0x%llx", base_name(path), (unsigned long long)addr) < 0)
			return -ENOMEM;
		f = nw_profile_intern(b->p, name, NULL, 0, path);
		free(name);
		loc->nlines = 1;
		return add_line(b, f, 0);
	}
	/* The symbol table's order, innermost first, is pprof's. */
	for (uint32_t k = 0; k < e->nframes; k++) {
		const struct nw_symframe *fr = &e->frames[k];

		f = nw_profile_intern(b->p, fr->function ? fr->function : "[unknown]",
				      fr->decl_file ? fr->decl_file : fr->file, fr->decl_line,
				      path);
		if (add_line(b, f, fr->line))
			return -ENOMEM;
	}
	loc->nlines = e->nframes;
	loc->symbolized = true;
	return 0;
}

/* The index of the location of node ip @ip in epoch @ep; -ENOMEM. */
static int64_t location_of(struct nw_pprof *b, const struct nw_symtab *st, struct epoch *ep,
			   uint64_t ip, bool caller)
{
	struct emod *em = epoch_find(ep, ip);
	struct loc_key key = { .mapping = 0, .address = ip - (caller ? 1 : 0) };
	struct location *loc;
	uint32_t *slot;
	int64_t m;

	if (em) {
		if (!em->mapping) {
			m = mapping_of(b, st, em->m);
			if (m < 0)
				return m;
			em->mapping = (uint32_t)m;
		}
		key.mapping = em->mapping;
		if (key.address + 1 > b->maps[key.mapping - 1].end)
			b->maps[key.mapping - 1].end = key.address + 1;
	}
	if (index_reserve(&b->loc_ix, (uint32_t)b->nlocs + 1, loc_hash, b) ||
	    grow(&b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*b->locs)))
		return -ENOMEM;
	slot = index_find(&b->loc_ix, loc_key_hash(key.mapping, key.address), loc_eq, b, &key);
	if (*slot != EMPTY)
		return *slot;
	loc = &b->locs[b->nlocs];
	*loc = (struct location){ .mapping = key.mapping, .address = key.address,
				  .first_line = b->nlines };
	if (location_lines(b, st, em, ip, caller, loc))
		return -ENOMEM;
	*slot = (uint32_t)b->nlocs;
	return (int64_t)b->nlocs++;
}

/* samples */

static int add_sample(struct nw_pprof *b, const struct nw_cct *t, uint32_t node,
		      const uint32_t *locof, uint32_t thread)
{
	const uint64_t *m = nw_cct_metrics(t, node);
	unsigned nm = t->nmetrics < b->nmetrics ? t->nmetrics : b->nmetrics;
	struct sample *s;
	uint32_t depth = 0;

	for (uint32_t i = node; i != NW_CCT_ROOT; i = t->nodes[i].parent)
		depth++;
	if (grow(&b->samples, &b->cap_samples, b->nsamples + 1, sizeof(*b->samples)) ||
	    grow(&b->loc_ids, &b->cap_loc_ids, b->nloc_ids + depth, sizeof(*b->loc_ids)) ||
	    grow(&b->values, &b->cap_values, (b->nsamples + 1) * b->nmetrics, sizeof(*b->values)))
		return -ENOMEM;
	s = &b->samples[b->nsamples];
	*s = (struct sample){ .first_loc = b->nloc_ids, .nlocs = depth, .thread = thread };
	for (uint32_t i = node; i != NW_CCT_ROOT; i = t->nodes[i].parent)
		b->loc_ids[b->nloc_ids++] = locof[i];
	for (unsigned k = 0; k < b->nmetrics; k++)
		b->values[b->nsamples * b->nmetrics + k] = k < nm ? m[k] : 0;
	if (nm >= 2) {
		b->event0_samples += m[0];
		b->event0_period += m[1];
	}
	b->nsamples++;
	return 0;
}

static bool has_weight(const struct nw_cct *t, uint32_t node)
{
	const uint64_t *m = nw_cct_metrics(t, node);

	for (unsigned k = 0; k < t->nmetrics; k++)
		if (m[k])
			return true;
	return false;
}

static int add_tree(struct nw_pprof *b, const struct nw_symtab *st, struct epoch *ep,
		    const struct nw_cct *t, uint32_t thread)
{
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint32_t *locof = malloc((size_t)t->n * sizeof(*locof));
	uint32_t n;
	int ret = 0;

	if (!order || !locof) {
		ret = -ENOMEM;
		goto out;
	}
	n = nw_cct_preorder(t, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];

		if (i != NW_CCT_ROOT) {
			int64_t loc = location_of(b, st, ep, t->nodes[i].ip,
						  t->nodes[i].first_child != NW_CCT_NONE);

			if (loc < 0) {
				ret = -ENOMEM;
				goto out;
			}
			locof[i] = (uint32_t)loc;
		}
		if (has_weight(t, i)) {
			ret = add_sample(b, t, i, locof, thread);
			if (ret)
				goto out;
		}
	}
out:
	free(order);
	free(locof);
	return ret;
}

int nw_pprof_add(struct nw_pprof *b, const struct nw_csprof *cp, const struct nw_symtab *st,
		 uint32_t pid, uint32_t tid, const char *comm)
{
	struct epoch *eps = NULL;
	int64_t c;
	int ret = 0;

	c = str_intern(b, comm ? comm : "");
	if (c < 0 || grow(&b->threads, &b->cap_threads, b->nthreads + 1, sizeof(*b->threads)))
		return -ENOMEM;
	b->threads[b->nthreads] = (struct thread_label){ .comm = c, .pid = pid, .tid = tid };
	if (cp->nepochs) {
		eps = calloc(cp->nepochs, sizeof(*eps));
		if (!eps)
			return -ENOMEM;
	}
	for (uint32_t t = 0; t < cp->ntrees; t++) {
		const struct nw_csprof_tree *tr = &cp->trees[t];

		if (tr->epoch >= cp->nepochs || !tr->cct) {
			ret = -EBADMSG;
			goto out;
		}
		if (!eps[tr->epoch].ready) {
			ret = epoch_init(&eps[tr->epoch], &cp->epochs[tr->epoch], st);
			if (ret)
				goto out;
		}
		ret = add_tree(b, st, &eps[tr->epoch], tr->cct, (uint32_t)b->nthreads);
		if (ret)
			goto out;
	}
	b->nthreads++;
out:
	for (uint32_t e = 0; eps && e < cp->nepochs; e++)
		free(eps[e].mods);
	free(eps);
	return ret;
}

struct nw_pprof *nw_pprof_new(struct nw_profile *p)
{
	struct nw_pprof *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->p = p;
	b->nmetrics = p->nmetrics;
	/* Entry 0 of the string table is "". */
	if (index_reserve(&b->str_ix, 1, str_hash, b) ||
	    grow(&b->strs, &b->cap_strs, 1, sizeof(*b->strs)) || !(b->strs[0] = strdup(""))) {
		nw_pprof_free(b);
		return NULL;
	}
	*index_find(&b->str_ix, mix64(0xcbf29ce484222325ULL), str_eq, b, "") = 0;
	b->nstrs = 1;
	return b;
}

void nw_pprof_free(struct nw_pprof *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	free(b->str_ix.slots);
	for (size_t i = 0; i < b->nmaps; i++) {
		free(b->maps[i].path);
		free(b->maps[i].build_id_hex);
	}
	free(b->maps);
	free(b->map_ix.slots);
	free(b->locs);
	free(b->loc_ix.slots);
	free(b->lines);
	free(b->samples);
	free(b->loc_ids);
	free(b->values);
	free(b->threads);
	free(b);
}

/* ---- packing ---- */

/*
 * The file offset of ELF address @vaddr in @path, when the file is here,
 * is ELF and has the recorded build-id (@build_id, "" or NULL: unknown).
 * 0 when it cannot be known.
 */
static uint64_t file_offset(const char *path, const char *build_id, uint64_t vaddr)
{
	char id[2 * 20 + 1];
	uint64_t off = 0;
	size_t n = 0;
	Elf *e;
	int fd;

	if (path[0] != '/')
		return 0;
	if (build_id && build_id[0] &&
	    (nw_symbol_build_id(path, id, sizeof(id)) || strcmp(id, build_id) != 0))
		return 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_memsz) {
				off = vaddr - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
	return off;
}

/* pprof's name and unit of metric @name ("event:kind"), as string indexes. */
static int value_type(struct nw_pprof *b, const char *name, unsigned nevents,
		      Perftools__Profiles__ValueType *vt)
{
	const char *kind = strrchr(name, ':');
	char ev[256], buf[300];
	const char *type, *unit = "count";

	nw_export_event_of(name, ev, sizeof(ev));
	if (kind && strcmp(kind + 1, "samples") == 0) {
		if (nevents > 1) {
			snprintf(buf, sizeof(buf), "%s-samples", ev);
			type = buf;
		} else {
			type = "samples";
		}
	} else if (kind && strcmp(kind + 1, "period") == 0) {
		type = ev;
		if (nw_export_metric_is_ns(name)) {
			unit = "nanoseconds";
			if (nevents == 1)
				type = "cpu";
		}
	} else if (kind && strcmp(kind + 1, "switches") == 0) {
		/* off-cpu: context switches, and the time off the CPU after them */
		snprintf(buf, sizeof(buf), "%s-switches", ev);
		type = buf;
	} else if (kind && strcmp(kind + 1, "nanoseconds") == 0) {
		type = ev;
		unit = "nanoseconds";
	} else {
		type = name;
	}
	vt->type = str_intern(b, type);
	vt->unit = str_intern(b, unit);
	return vt->type < 0 || vt->unit < 0 ? -ENOMEM : 0;
}

static unsigned count_events(const struct nw_profile *p)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->nmetrics; i++) {
		const char *k = strrchr(p->metric_names[i], ':');

		n += k && (strcmp(k + 1, "samples") == 0 || strcmp(k + 1, "switches") == 0);
	}
	return n ? n : 1;
}

/* Mapping order: the program first (pprof takes mapping 1 for the main binary). */
static uint32_t *mapping_order(const struct nw_pprof *b)
{
	const struct nw_manifest *mf = b->p->manifest;
	const char *prog = mf && mf->argc && mf->argv[0] ? base_name(mf->argv[0]) : NULL;
	uint32_t *order = malloc((b->nmaps ? b->nmaps : 1) * sizeof(*order));
	size_t n = 0;

	if (!order)
		return NULL;
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < b->nmaps; i++) {
			bool is_prog = prog && strcmp(base_name(b->maps[i].path), prog) == 0;

			if (is_prog == (pass == 0))
				order[n++] = (uint32_t)i;
		}
	return order;
}

/* Everything packing allocates, freed in one place. */
struct pack {
	Perftools__Profiles__ValueType *vts, **vtp, period_type;
	Perftools__Profiles__Sample *ss, **ssp;
	Perftools__Profiles__Label *labs, **labp;
	uint64_t *loc_ids;
	int64_t *values, comments[2];
	Perftools__Profiles__Mapping *ms, **msp;
	Perftools__Profiles__Location *ls, **lsp;
	Perftools__Profiles__Line *lns, **lnp;
	Perftools__Profiles__Function *fs, **fsp;
	uint32_t *map_order, *map_id;
	uint64_t *func_id;
};

static void pack_fini(struct pack *k)
{
	free(k->vts);
	free(k->vtp);
	free(k->ss);
	free(k->ssp);
	free(k->labs);
	free(k->labp);
	free(k->loc_ids);
	free(k->values);
	free(k->ms);
	free(k->msp);
	free(k->ls);
	free(k->lsp);
	free(k->lns);
	free(k->lnp);
	free(k->fs);
	free(k->fsp);
	free(k->map_order);
	free(k->map_id);
	free(k->func_id);
}

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int pack_samples(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	int64_t key_thread = str_intern(b, "thread"), key_tid = str_intern(b, "tid");
	int64_t key_pid = str_intern(b, "pid");

	if (key_thread < 0 || key_tid < 0 || key_pid < 0)
		return -ENOMEM;
	k->ss = alloc_n(b->nsamples, sizeof(*k->ss));
	k->ssp = alloc_n(b->nsamples, sizeof(*k->ssp));
	k->labs = alloc_n(3 * b->nsamples, sizeof(*k->labs));
	k->labp = alloc_n(3 * b->nsamples, sizeof(*k->labp));
	k->loc_ids = alloc_n(b->nloc_ids, sizeof(*k->loc_ids));
	k->values = alloc_n(b->nsamples * b->nmetrics, sizeof(*k->values));
	if (!k->ss || !k->ssp || !k->labs || !k->labp || !k->loc_ids || !k->values)
		return -ENOMEM;
	for (size_t i = 0; i < b->nloc_ids; i++)
		k->loc_ids[i] = (uint64_t)b->loc_ids[i] + 1;
	for (size_t i = 0; i < b->nsamples * b->nmetrics; i++)
		k->values[i] = b->values[i] > INT64_MAX ? INT64_MAX : (int64_t)b->values[i];
	for (size_t i = 0; i < b->nsamples; i++) {
		const struct sample *s = &b->samples[i];
		const struct thread_label *th = &b->threads[s->thread];
		Perftools__Profiles__Sample *ps = &k->ss[i];
		Perftools__Profiles__Label *l = &k->labs[3 * i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = s->nlocs;
		ps->location_id = &k->loc_ids[s->first_loc];
		ps->n_value = b->nmetrics;
		ps->value = &k->values[i * b->nmetrics];
		for (int j = 0; j < 3; j++) {
			perftools__profiles__label__init(&l[j]);
			k->labp[3 * i + j] = &l[j];
		}
		l[0].key = key_thread;
		l[0].str = th->comm;
		l[1].key = key_tid;
		l[1].num = th->tid;
		l[2].key = key_pid;
		l[2].num = th->pid;
		ps->n_label = 3;
		ps->label = &k->labp[3 * i];
		k->ssp[i] = ps;
	}
	prof->n_sample = b->nsamples;
	prof->sample = k->ssp;
	return 0;
}

static int pack_mappings(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	k->map_order = mapping_order(b);
	k->map_id = alloc_n(b->nmaps, sizeof(*k->map_id));
	k->ms = alloc_n(b->nmaps, sizeof(*k->ms));
	k->msp = alloc_n(b->nmaps, sizeof(*k->msp));
	if (!k->map_order || !k->map_id || !k->ms || !k->msp)
		return -ENOMEM;
	for (size_t j = 0; j < b->nmaps; j++) {
		const struct mapping *m = &b->maps[k->map_order[j]];
		Perftools__Profiles__Mapping *pm = &k->ms[j];
		uint64_t end = m->end > m->start ? m->end : m->start + 1;

		k->map_id[k->map_order[j]] = (uint32_t)j + 1;
		perftools__profiles__mapping__init(pm);
		pm->id = j + 1;
		pm->memory_start = m->start;
		/* The end is not recorded: the page after the highest address sampled. */
		pm->memory_limit = end > UINT64_MAX - PAGE
					   ? UINT64_MAX
					   : (end + PAGE - 1) & ~(uint64_t)(PAGE - 1);
		pm->file_offset = file_offset(m->path, m->build_id_hex, m->vaddr);
		pm->filename = m->filename;
		pm->build_id = m->build_id;
		k->msp[j] = pm;
	}
	prof->n_mapping = b->nmaps;
	prof->mapping = k->msp;
	return 0;
}

static int pack_locations(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	k->ls = alloc_n(b->nlocs, sizeof(*k->ls));
	k->lsp = alloc_n(b->nlocs, sizeof(*k->lsp));
	k->lns = alloc_n(b->nlines, sizeof(*k->lns));
	k->lnp = alloc_n(b->nlines, sizeof(*k->lnp));
	k->func_id = alloc_n(b->p->nfuncs, sizeof(*k->func_id));
	if (!k->ls || !k->lsp || !k->lns || !k->lnp || !k->func_id)
		return -ENOMEM;
	for (size_t i = 0; i < b->nlocs; i++) {
		const struct location *l = &b->locs[i];
		Perftools__Profiles__Location *pl = &k->ls[i];
		Perftools__Profiles__Mapping *pm = NULL;

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->address = l->address;
		/*
		 * A mapping's flags say how far symbolization got for its module:
		 * set when one of its locations has functions (from the symbol
		 * table), file names, line numbers (DWARF, which also expands
		 * inline chains).  A PLT stub without lines does not unset them.
		 */
		if (l->mapping) {
			pl->mapping_id = k->map_id[l->mapping - 1];
			pm = &k->ms[pl->mapping_id - 1];
			if (l->symbolized)
				pm->has_functions = true;
			else
				pm = NULL;
		}
		for (uint32_t j = 0; j < l->nlines; j++) {
			const struct line *ln = &b->lines[l->first_line + j];
			Perftools__Profiles__Line *pn = &k->lns[l->first_line + j];

			perftools__profiles__line__init(pn);
			pn->function_id = (uint64_t)ln->func + 1;
			pn->line = ln->line;
			k->lnp[l->first_line + j] = pn;
			k->func_id[ln->func] = (uint64_t)ln->func + 1;
			if (pm && b->p->funcs[ln->func].file)
				pm->has_filenames = true;
			if (pm && ln->line)
				pm->has_line_numbers = pm->has_inline_frames = true;
		}
		pl->n_line = l->nlines;
		pl->line = l->nlines ? &k->lnp[l->first_line] : NULL;
		k->lsp[i] = pl;
	}
	prof->n_location = b->nlocs;
	prof->location = k->lsp;
	return 0;
}

static int pack_functions(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	size_t n = 0;

	k->fs = alloc_n(b->p->nfuncs, sizeof(*k->fs));
	k->fsp = alloc_n(b->p->nfuncs, sizeof(*k->fsp));
	if (!k->fs || !k->fsp)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->p->nfuncs; i++) {
		const struct nw_func *f = &b->p->funcs[i];
		Perftools__Profiles__Function *pf = &k->fs[n];

		if (!k->func_id[i])
			continue;
		perftools__profiles__function__init(pf);
		pf->id = k->func_id[i];
		pf->name = str_intern(b, f->name);
		/* Names are demangled by the symbolizer; the raw one is not kept. */
		pf->system_name = pf->name;
		pf->filename = str_intern(b, f->file);
		pf->start_line = f->line;
		if (pf->name < 0 || pf->filename < 0)
			return -ENOMEM;
		k->fsp[n++] = pf;
	}
	prof->n_function = n;
	prof->function = k->fsp;
	return 0;
}

static int pack_header(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	const struct nw_manifest *mf = b->p->manifest;
	unsigned nevents = count_events(b->p);
	char *cmd = NULL;
	size_t len = 0;
	FILE *f;
	int ret;

	k->vts = alloc_n(b->nmetrics, sizeof(*k->vts));
	k->vtp = alloc_n(b->nmetrics, sizeof(*k->vtp));
	if (!k->vts || !k->vtp)
		return -ENOMEM;
	for (unsigned i = 0; i < b->nmetrics; i++) {
		perftools__profiles__value_type__init(&k->vts[i]);
		if (value_type(b, b->p->metric_names[i], nevents, &k->vts[i]))
			return -ENOMEM;
		k->vtp[i] = &k->vts[i];
	}
	prof->n_sample_type = b->nmetrics;
	prof->sample_type = k->vtp;

	/* The period: event 0's fixed period, else its mean period. */
	perftools__profiles__value_type__init(&k->period_type);
	if (b->nmetrics >= 2) {
		if (value_type(b, b->p->metric_names[1], nevents, &k->period_type))
			return -ENOMEM;
		prof->period_type = &k->period_type;
		if (mf && mf->nevents && !mf->events[0].freq)
			prof->period = (int64_t)mf->events[0].value;
		else if (b->event0_samples)
			prof->period = (int64_t)((b->event0_period + b->event0_samples / 2) /
						 b->event0_samples);
	}
	if (mf) {
		prof->time_nanos = (int64_t)mf->start_ns;
		if (mf->end_ns > mf->start_ns)
			prof->duration_nanos = (int64_t)(mf->end_ns - mf->start_ns);
		f = open_memstream(&cmd, &len);
		if (!f)
			return -ENOMEM;
		fputs("narwhal-record", f);
		for (uint32_t i = 0; i < mf->argc; i++)
			fprintf(f, " %s", mf->argv[i] ? mf->argv[i] : "");
		ret = fclose(f);
		if (ret || !cmd) {
			free(cmd);
			return -ENOMEM;
		}
		k->comments[0] = str_intern(b, cmd);
		free(cmd);
		k->comments[1] = str_intern(b, "narwhal " NW_VERSION);
		if (k->comments[0] < 0 || k->comments[1] < 0)
			return -ENOMEM;
		prof->n_comment = 2;
		prof->comment = k->comments;
	}
	return 0;
}

int nw_pprof_pack(struct nw_pprof *b, uint8_t **ret_buf, size_t *ret_len)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pack k = { 0 };
	uint8_t *buf;
	size_t len;
	int ret;

	ret = pack_header(b, &k, &prof);
	if (!ret)
		ret = pack_samples(b, &k, &prof);
	if (!ret)
		ret = pack_mappings(b, &k, &prof);
	if (!ret)
		ret = pack_locations(b, &k, &prof);
	if (!ret)
		ret = pack_functions(b, &k, &prof);
	if (ret)
		goto out;
	/* The string table last: everything above may have added to it. */
	prof.n_string_table = b->nstrs;
	prof.string_table = b->strs;
	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&prof, buf);
	*ret_buf = buf;
	*ret_len = len;
out:
	pack_fini(&k);
	return ret;
}

/* ---- the export ---- */

static int write_gzip(const char *path, const uint8_t *buf, size_t len)
{
	gzFile gz;
	int ret = 0;

	errno = 0;
	gz = gzopen(path, "wb");
	if (!gz)
		return errno ? -errno : -ENOMEM;
	while (len > 0) {
		unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;

		if (gzwrite(gz, buf, chunk) != (int)chunk) {
			ret = -EIO;
			break;
		}
		buf += chunk;
		len -= chunk;
	}
	if (gzclose(gz) != Z_OK && !ret)
		ret = -EIO;
	return ret;
}

static char *join_path(const char *dir, const char *name)
{
	char *s;

	return asprintf(&s, "%s/%s", dir, name) < 0 ? NULL : s;
}

int nw_pprof_export(const char *path, const char *dir, struct nw_profile *p,
		    const struct nw_filter *f, char *err, size_t errlen)
{
	struct nw_csprof_error cerr = { 0 };
	struct nw_symtab *st = NULL;
	struct nw_pprof *b = NULL;
	struct nw_csprof *cp;
	uint8_t *buf = NULL;
	char *file;
	size_t len;
	int ret;

	nw_set_err(err, errlen, "%s", "");
	file = join_path(dir, "symbols.json");
	if (!file)
		return -ENOMEM;
	ret = nw_symtab_read(file, &st, err, errlen);
	if (ret == -ENOENT) {
		nw_set_err(err, errlen, "%s", "");
		st = nw_symtab_new();
		ret = st ? 0 : -ENOMEM;
	} else if (ret && (!err || !err[0])) {
		nw_set_err(err, errlen, "%s: %s", file, strerror(-ret));
	}
	free(file);
	if (ret)
		goto out;
	ret = -ENOMEM;
	b = nw_pprof_new(p);
	if (!b)
		goto out;
	for (uint32_t i = 0; p->manifest && i < p->manifest->nthreads; i++) {
		const struct nw_manifest_thread *mt = &p->manifest->threads[i];
		struct nw_prof_thread th = { .pid = mt->pid, .tid = mt->tid, .comm = mt->comm };

		if (!mt->file || !mt->file[0] || !nw_filter_match(f, &th))
			continue;
		file = join_path(dir, mt->file);
		if (!file) {
			ret = -ENOMEM;
			goto out;
		}
		ret = nw_csprof_read_file(file, &cp, &cerr);
		if (ret) {
			nw_set_err(err, errlen, "%s: %s", file,
				cerr.msg[0] ? cerr.msg : strerror(-ret));
			free(file);
			goto out;
		}
		ret = nw_pprof_add(b, cp, st, mt->pid, mt->tid, mt->comm);
		nw_csprof_free(cp);
		if (ret) {
			nw_set_err(err, errlen, "%s: %s", file,
				ret == -EBADMSG ? "tree with a bad epoch index" : strerror(-ret));
			free(file);
			goto out;
		}
		free(file);
	}
	ret = nw_pprof_pack(b, &buf, &len);
	if (ret) {
		nw_set_err(err, errlen, "%s: %s", path, strerror(-ret));
		goto out;
	}
	ret = write_gzip(path, buf, len);
	if (ret)
		nw_set_err(err, errlen, "%s: %s", path, strerror(-ret));
out:
	if (ret == -ENOMEM && err && !err[0])
		nw_set_err(err, errlen, "%s: out of memory", path);
	free(buf);
	nw_pprof_free(b);
	nw_symtab_free(st);
	return ret;
}
