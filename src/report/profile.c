/* SPDX-License-Identifier: MIT */
/*
 * Loading a measurement directory: the manifest, the symbol table and each
 * thread's HPC_CSPROF file.  Every node of every (thread, epoch) tree is
 * mapped to its module through the tree's epoch, looked up in the symbol
 * table (at ip-1 for a caller frame, whose ip is a return address) and
 * expanded into its inline chain of symbolic frames, outermost nearest the
 * root.  Frames are interned by (name, module), so a function that moved
 * between epochs, or shows up in several threads, is one frame.
 */
#include "report/profile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/csprof.h"
#include "model/symtab.h"
#include "util/log.h"

#define SLOT_EMPTY UINT32_MAX

/* ---- frame interning ---- */

static uint64_t hash_str(uint64_t h, const char *s)
{
	if (!s)
		return (h ^ 0xff) * 0x100000001b3ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	/* A terminator keeps ("ab", "c") apart from ("a", "bc"). */
	return (h ^ 0x1ff) * 0x100000001b3ULL;
}

static uint64_t func_hash(const char *name, const char *module)
{
	uint64_t h = hash_str(hash_str(0xcbf29ce484222325ULL, name), module);

	return h ^ (h >> 32);
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static int grow_func_slots(struct nw_profile *p)
{
	uint32_t n = p->nfunc_slots ? p->nfunc_slots * 2 : 256, mask = n - 1;
	uint32_t *slots;

	if (n <= p->nfunc_slots)
		return -ENOMEM;
	slots = malloc((size_t)n * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, (size_t)n * sizeof(*slots));
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		uint32_t h = (uint32_t)func_hash(p->funcs[i].name, p->funcs[i].module) & mask;

		while (slots[h] != SLOT_EMPTY)
			h = (h + 1) & mask;
		slots[h] = i;
	}
	free(p->func_slots);
	p->func_slots = slots;
	p->nfunc_slots = n;
	return 0;
}

static char *dup_or_null(const char *s, bool *failed)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*failed = true;
	return d;
}

int64_t nw_profile_intern(struct nw_profile *p, const char *name, const char *file,
			  uint32_t line, const char *module)
{
	uint32_t mask, h;
	struct nw_func *f;
	bool failed = false;

	if (!name)
		return -EINVAL;
	if ((p->nfuncs + 1) * 2 > p->nfunc_slots && grow_func_slots(p))
		return -ENOMEM;
	mask = p->nfunc_slots - 1;
	h = (uint32_t)func_hash(name, module) & mask;
	for (;;) {
		uint32_t i = p->func_slots[h];

		if (i == SLOT_EMPTY)
			break;
		f = &p->funcs[i];
		if (strcmp(f->name, name) == 0 && str_eq(f->module, module)) {
			if (!f->file && file) {
				f->file = strdup(file);
				if (!f->file)
					return -ENOMEM;
			}
			if (!f->line)
				f->line = line;
			return i;
		}
		h = (h + 1) & mask;
	}
	if (p->nfuncs == p->cap_funcs) {
		uint32_t cap = p->cap_funcs ? p->cap_funcs * 2 : 64;
		struct nw_func *v;

		if (cap <= p->cap_funcs || cap == SLOT_EMPTY)
			return -ENOMEM;
		v = realloc(p->funcs, (size_t)cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->funcs = v;
		p->cap_funcs = cap;
	}
	f = &p->funcs[p->nfuncs];
	f->name = dup_or_null(name, &failed);
	f->file = dup_or_null(file, &failed);
	f->module = dup_or_null(module, &failed);
	f->line = line;
	if (failed) {
		free(f->name);
		free(f->file);
		free(f->module);
		return -ENOMEM;
	}
	p->func_slots[h] = p->nfuncs;
	return p->nfuncs++;
}

/* ---- the profile ---- */

static int set_metric_names(struct nw_profile *p, unsigned nmetrics, const char *const *names)
{
	char **v = nmetrics ? calloc(nmetrics, sizeof(*v)) : NULL;

	if (nmetrics && !v)
		return -ENOMEM;
	for (unsigned i = 0; i < nmetrics; i++) {
		if (names && names[i])
			v[i] = strdup(names[i]);
		else if (asprintf(&v[i], "metric%u", i) < 0)
			v[i] = NULL;
		if (!v[i]) {
			while (i-- > 0)
				free(v[i]);
			free(v);
			return -ENOMEM;
		}
	}
	p->nmetrics = nmetrics;
	p->metric_names = v;
	return 0;
}

struct nw_profile *nw_profile_new(unsigned nmetrics)
{
	struct nw_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (set_metric_names(p, nmetrics, NULL)) {
		free(p);
		return NULL;
	}
	return p;
}

/* Appends a thread; its tree is made only when @with_tree. */
static struct nw_prof_thread *add_thread(struct nw_profile *p, uint32_t pid, uint32_t tid,
					 const char *comm, bool with_tree)
{
	struct nw_prof_thread *v, *th;

	v = realloc(p->threads, ((size_t)p->nthreads + 1) * sizeof(*v));
	if (!v)
		return NULL;
	p->threads = v;
	th = &v[p->nthreads];
	memset(th, 0, sizeof(*th));
	th->pid = pid;
	th->tid = tid;
	th->comm = strdup(comm ? comm : "");
	if (!th->comm)
		return NULL;
	if (with_tree) {
		th->tree = nw_cct_new(p->nmetrics);
		if (!th->tree) {
			free(th->comm);
			return NULL;
		}
	}
	p->nthreads++;
	return th;
}

struct nw_prof_thread *nw_profile_add_thread(struct nw_profile *p, uint32_t pid, uint32_t tid,
					     const char *comm)
{
	return add_thread(p, pid, tid, comm, true);
}

void nw_profile_free(struct nw_profile *p)
{
	if (!p)
		return;
	nw_manifest_free(p->manifest);
	for (unsigned i = 0; p->metric_names && i < p->nmetrics; i++)
		free(p->metric_names[i]);
	free(p->metric_names);
	for (uint32_t i = 0; i < p->nfuncs; i++) {
		free(p->funcs[i].name);
		free(p->funcs[i].file);
		free(p->funcs[i].module);
	}
	free(p->funcs);
	free(p->func_slots);
	for (uint32_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].comm);
		nw_cct_free(p->threads[i].tree);
	}
	free(p->threads);
	free(p);
}

bool nw_filter_match(const struct nw_filter *f, const struct nw_prof_thread *th)
{
	if (!f)
		return true;
	if (f->tid >= 0 && (uint64_t)f->tid != th->tid)
		return false;
	if (f->comm && !str_eq(f->comm, th->comm))
		return false;
	return true;
}

struct nw_cct *nw_profile_merge(const struct nw_profile *p, const struct nw_filter *f)
{
	struct nw_cct *dst = nw_cct_new(p->nmetrics);

	if (!dst)
		return NULL;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct nw_prof_thread *th = &p->threads[i];

		if (!th->tree || !nw_filter_match(f, th))
			continue;
		if (nw_cct_merge(dst, th->tree, NULL, NULL)) {
			nw_cct_free(dst);
			return NULL;
		}
	}
	return dst;
}

/* Does metric @name belong to event @ev ("ev:..." or exactly "ev")? */
static bool metric_of_event(const char *name, const char *ev)
{
	size_t n = strlen(ev);

	return strncmp(name, ev, n) == 0 && (name[n] == ':' || name[n] == '\0');
}

static bool is_samples_metric(const char *name)
{
	const char *c = strrchr(name, ':');

	return strcmp(c ? c + 1 : name, "samples") == 0;
}

int nw_profile_find_metric(const struct nw_profile *p, const char *name)
{
	if (!p->nmetrics)
		return -ENOENT;
	if (!name) {
		for (unsigned i = 0; i < p->nmetrics; i++)
			if (is_samples_metric(p->metric_names[i]))
				return (int)i;
		return 0;
	}
	for (unsigned i = 0; i < p->nmetrics; i++)
		if (strcmp(p->metric_names[i], name) == 0)
			return (int)i;
	/* An event name: its samples metric, else its first one. */
	for (unsigned i = 0; i < p->nmetrics; i++)
		if (metric_of_event(p->metric_names[i], name) &&
		    is_samples_metric(p->metric_names[i]))
			return (int)i;
	for (unsigned i = 0; i < p->nmetrics; i++)
		if (metric_of_event(p->metric_names[i], name))
			return (int)i;
	/* The manifest's event names, where the metric table names differ. */
	for (uint32_t e = 0; p->manifest && e < p->manifest->nevents; e++)
		if (str_eq(p->manifest->events[e].name, name) && 2 * (uint64_t)e < p->nmetrics)
			return (int)(2 * e);
	return -ENOENT;
}

/* ---- turning an HPC_CSPROF tree into a symbolic one ---- */

struct epoch_mod {
	uint64_t mapped, vaddr;
	const char *path;
	int symmod; /* module index in the symbol table, or -1 */
};

struct epoch_map {
	bool ready;
	uint32_t n;
	struct epoch_mod *mods; /* sorted by mapped */
};

static int cmp_mod(const void *a, const void *b)
{
	const struct epoch_mod *x = a, *y = b;

	return x->mapped < y->mapped ? -1 : x->mapped > y->mapped;
}

static int epoch_map_init(struct epoch_map *em, const struct nw_csprof_epoch *ep,
			  const struct nw_symtab *st)
{
	em->n = ep->nmodules;
	em->mods = ep->nmodules ? calloc(ep->nmodules, sizeof(*em->mods)) : NULL;
	if (ep->nmodules && !em->mods)
		return -ENOMEM;
	for (uint32_t i = 0; i < ep->nmodules; i++) {
		const struct nw_csprof_module *m = &ep->modules[i];
		int idx = m->name ? nw_symtab_find_module(st, m->name) : -ENOENT;

		em->mods[i] = (struct epoch_mod){ .mapped = m->mapped, .vaddr = m->vaddr,
						  .path = m->name ? m->name : "",
						  .symmod = idx >= 0 ? idx : -1 };
	}
	qsort(em->mods, em->n, sizeof(*em->mods), cmp_mod);
	em->ready = true;
	return 0;
}

/* The module with the greatest mapped address <= @ip, or NULL. */
static const struct epoch_mod *epoch_find(const struct epoch_map *em, uint64_t ip)
{
	uint32_t lo = 0, hi = em->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (em->mods[mid].mapped <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &em->mods[lo - 1] : NULL;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* Child of @parent for frame @f with sp tag @sp, or NW_CCT_NONE. */
static uint32_t func_child(struct nw_cct *dst, uint32_t parent, int64_t f, uint64_t sp)
{
	if (f < 0)
		return NW_CCT_NONE;
	return nw_cct_child(dst, parent, (uint64_t)f, sp);
}

/*
 * Adds the symbolic frames of @ip below @parent in @dst and returns the
 * innermost one, or NW_CCT_NONE on ENOMEM.  Each of them gets the sp tag
 * @sp: an inline chain lives in one physical frame, so its frames share it.
 */
static uint32_t add_frames(struct nw_profile *p, const struct nw_symtab *st,
			   const struct epoch_map *em, struct nw_cct *dst, uint32_t parent,
			   uint64_t ip, uint64_t sp, bool caller)
{
	const struct epoch_mod *m = epoch_find(em, ip);
	const struct nw_symentry *e = NULL;
	uint64_t addr;
	uint32_t node = parent;
	char *name;
	int64_t f;

	if (!m)
		return func_child(dst, parent, nw_profile_intern(p, "[unknown]", NULL, 0, NULL),
				  sp);
	addr = ip - m->mapped + m->vaddr;
	if (caller)
		addr -= 1;
	if (m->symmod >= 0)
		e = nw_symtab_lookup(st, (uint32_t)m->symmod, addr);
	if (!e || !e->nframes) {
		if (asprintf(&name, "%s+0x%llx", base_name(m->path), (unsigned long long)addr) < 0)
			return NW_CCT_NONE;
		f = nw_profile_intern(p, name, NULL, 0, m->path);
		free(name);
		return func_child(dst, parent, f, sp);
	}
	/* frames[] is innermost first: the outermost goes nearest the root. */
	for (uint32_t k = e->nframes; k-- > 0;) {
		const struct nw_symframe *fr = &e->frames[k];

		f = nw_profile_intern(p, fr->function ? fr->function : "[unknown]",
				      fr->decl_file ? fr->decl_file : fr->file, fr->decl_line,
				      m->path);
		node = func_child(dst, node, f, sp);
		if (node == NW_CCT_NONE)
			return NW_CCT_NONE;
	}
	return node;
}

static int add_tree(struct nw_profile *p, const struct nw_symtab *st, const struct epoch_map *em,
		    const struct nw_cct *src, struct nw_cct *dst)
{
	unsigned nm = src->nmetrics < dst->nmetrics ? src->nmetrics : dst->nmetrics;
	uint32_t *order = malloc((size_t)src->n * sizeof(*order));
	uint32_t *to = malloc((size_t)src->n * sizeof(*to));
	uint32_t n;
	int ret = 0;

	if (!order || !to) {
		ret = -ENOMEM;
		goto out;
	}
	n = nw_cct_preorder(src, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = order[k], d;
		const struct nw_cct_node *sn = &src->nodes[s];
		const uint64_t *sm = nw_cct_metrics(src, s);
		uint64_t *dm;

		if (s == NW_CCT_ROOT)
			d = NW_CCT_ROOT;
		else
			d = add_frames(p, st, em, dst, to[sn->parent], sn->ip, sn->sp,
				       sn->first_child != NW_CCT_NONE);
		if (d == NW_CCT_NONE) {
			ret = -ENOMEM;
			goto out;
		}
		to[s] = d;
		dm = nw_cct_metrics(dst, d);
		for (unsigned i = 0; i < nm; i++)
			dm[i] += sm[i];
	}
out:
	free(order);
	free(to);
	return ret;
}

/* Adds every tree of @cp to @dst.  -ENOMEM, -EBADMSG for a bad epoch index. */
static int add_csprof(struct nw_profile *p, const struct nw_symtab *st,
		      const struct nw_csprof *cp, struct nw_cct *dst)
{
	struct epoch_map *maps = NULL;
	int ret = 0;

	if (cp->nepochs) {
		maps = calloc(cp->nepochs, sizeof(*maps));
		if (!maps)
			return -ENOMEM;
	}
	for (uint32_t t = 0; t < cp->ntrees; t++) {
		const struct nw_csprof_tree *tr = &cp->trees[t];

		if (tr->epoch >= cp->nepochs || !tr->cct) {
			ret = -EBADMSG;
			goto out;
		}
		if (!maps[tr->epoch].ready) {
			ret = epoch_map_init(&maps[tr->epoch], &cp->epochs[tr->epoch], st);
			if (ret)
				goto out;
		}
		ret = add_tree(p, st, &maps[tr->epoch], tr->cct, dst);
		if (ret)
			goto out;
	}
out:
	for (uint32_t e = 0; e < cp->nepochs; e++)
		free(maps[e].mods);
	free(maps);
	return ret;
}

/* Samples of every event (metrics 0, 2, 4, ...) over the whole tree. */
static uint64_t tree_samples(const struct nw_cct *t)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < t->n; i++)
		for (unsigned m = 0; m < t->nmetrics; m += 2)
			sum += nw_cct_metrics(t, i)[m];
	return sum;
}

/* ---- loading ---- */

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

static char *join_path(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s/%s", dir, name) < 0)
		return NULL;
	return s;
}

static int set_metrics_from(struct nw_profile *p, const struct nw_csprof *cp)
{
	const char **names = cp->nmetrics ? calloc(cp->nmetrics, sizeof(*names)) : NULL;
	int ret;

	if (cp->nmetrics && !names)
		return -ENOMEM;
	for (uint32_t i = 0; i < cp->nmetrics; i++)
		names[i] = cp->metrics[i].name;
	ret = set_metric_names(p, cp->nmetrics, names);
	free(names);
	return ret;
}

/* Without any HPC_CSPROF file: two metrics per manifest event. */
static int set_metrics_from_manifest(struct nw_profile *p)
{
	const struct nw_manifest *m = p->manifest;
	unsigned nev = m->nevents ? m->nevents : 1;
	char **names = calloc(2 * (size_t)nev, sizeof(*names));
	int ret = -ENOMEM;

	if (!names)
		return -ENOMEM;
	for (unsigned e = 0; e < nev; e++) {
		const char *ev = m->nevents && m->events[e].name ? m->events[e].name : "event";

		if (asprintf(&names[2 * e], "%s:samples", ev) < 0 ||
		    asprintf(&names[2 * e + 1], "%s:period", ev) < 0)
			goto out;
	}
	ret = set_metric_names(p, 2 * nev, (const char *const *)names);
out:
	for (unsigned i = 0; i < 2 * nev; i++)
		free(names[i]);
	free(names);
	return ret;
}

static int load_thread(struct nw_profile *p, const char *dir, const struct nw_symtab *st,
		       const struct nw_manifest_thread *mt, char *err, size_t errlen)
{
	struct nw_csprof_error cerr = { 0 };
	struct nw_csprof *cp = NULL;
	struct nw_prof_thread *th;
	char *path;
	int ret;

	if (!mt->file || !mt->file[0])
		return add_thread(p, mt->pid, mt->tid, mt->comm, false) ? 0 : -ENOMEM;
	path = join_path(dir, mt->file);
	if (!path)
		return -ENOMEM;
	ret = nw_csprof_read_file(path, &cp, &cerr);
	if (ret == -EBADMSG) {
		nw_set_err(err, errlen, "%s: %s at offset %llu", path, cerr.msg,
			(unsigned long long)cerr.offset);
		goto out;
	} else if (ret) {
		nw_set_err(err, errlen, "%s", cerr.msg);
		name_file(err, errlen, path, ret);
		goto out;
	}
	if (!p->metric_names) {
		ret = set_metrics_from(p, cp);
		if (ret)
			goto out;
	}
	ret = -ENOMEM;
	th = add_thread(p, mt->pid, mt->tid, mt->comm, true);
	if (!th)
		goto out;
	ret = add_csprof(p, st, cp, th->tree);
	if (ret == -EBADMSG)
		nw_set_err(err, errlen, "%s: tree with a bad epoch index", path);
	th->samples = tree_samples(th->tree);
out:
	if (ret == -ENOMEM)
		nw_set_err(err, errlen, "%s: out of memory", path);
	nw_csprof_free(cp);
	free(path);
	return ret;
}

int nw_profile_load(const char *dir, struct nw_profile **ret, char *err, size_t errlen)
{
	struct nw_profile *p;
	struct nw_symtab *st = NULL;
	struct stat sb;
	char *path = NULL;
	int rc;

	nw_set_err(err, errlen, "%s", "");
	if (stat(dir, &sb) < 0) {
		rc = -errno;
		nw_set_err(err, errlen, "%s: %s", dir, strerror(-rc));
		return rc;
	}
	if (!S_ISDIR(sb.st_mode)) {
		nw_set_err(err, errlen, "%s: not a measurement directory", dir);
		return -ENOTDIR;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;

	rc = -ENOMEM;
	path = join_path(dir, "manifest.json");
	if (!path)
		goto out_free;
	rc = nw_manifest_read(path, &p->manifest, err, errlen);
	if (rc) {
		name_file(err, errlen, path, rc);
		goto out_free;
	}
	free(path);

	rc = -ENOMEM;
	path = join_path(dir, "symbols.json");
	if (!path)
		goto out_free;
	nw_set_err(err, errlen, "%s", "");
	rc = nw_symtab_read(path, &st, err, errlen);
	if (rc == -ENOENT) {
		/* No symbol table: every frame shows as module+0xADDR. */
		nw_set_err(err, errlen, "%s", "");
		st = nw_symtab_new();
		rc = st ? 0 : -ENOMEM;
	} else if (rc) {
		name_file(err, errlen, path, rc);
		goto out_free;
	}
	if (rc)
		goto out_free;

	for (uint32_t i = 0; i < p->manifest->nthreads; i++) {
		nw_set_err(err, errlen, "%s", "");
		rc = load_thread(p, dir, st, &p->manifest->threads[i], err, errlen);
		if (rc)
			goto out_free;
	}
	if (!p->metric_names) {
		rc = set_metrics_from_manifest(p);
		if (rc)
			goto out_free;
	}
	/* Threads without a file get an empty tree, now that nmetrics is known. */
	for (uint32_t i = 0; i < p->nthreads; i++) {
		if (p->threads[i].tree)
			continue;
		p->threads[i].tree = nw_cct_new(p->nmetrics);
		if (!p->threads[i].tree) {
			rc = -ENOMEM;
			goto out_free;
		}
	}
	nw_set_err(err, errlen, "%s", "");
	nw_symtab_free(st);
	free(path);
	*ret = p;
	return 0;

out_free:
	if (rc == -ENOMEM && err && !err[0])
		nw_set_err(err, errlen, "%s: out of memory", dir);
	nw_symtab_free(st);
	free(path);
	nw_profile_free(p);
	return rc;
}
