/* SPDX-License-Identifier: MIT */
/* The code store of a recording; see codecap.h and doc/DISASSEMBLY.md. */
#include "record/codecap.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "arch/arch.h"
#include "symbol/codeinfo.h"
#include "util/strbuf.h"

struct nw_codecap_func {
	uint32_t module;
	uint16_t machine;
	uint8_t status;          /* enum nw_code_status: STORED, or why it cannot be */
	uint8_t origin;
	uint64_t start, size;
	uint64_t weight;         /* its own samples, in the last update */
	uint8_t *bytes;          /* read; NULL: not (yet) */
	uint32_t nbytes;
	bool described;
	struct nw_code_line *lines;
	uint32_t nlines;
	struct nw_code_inline *inl;
	uint32_t ninl;
	uint32_t jit;            /* index in jit, NW_CODE_NONE: not JIT code */
};

struct nw_codecap_pc {
	uint32_t module;
	uint64_t addr;
	uint32_t func;           /* NW_CODE_NONE: none, for reason */
	uint32_t reason;
};

struct nw_codecap_jit {
	uint32_t pid;
	uint64_t start, end;     /* the perf map's range, in the process */
	uint8_t *bytes;          /* NULL: could not be read */
	uint32_t n;
	uint8_t status;
};

struct nw_codecap_map {
	uint32_t pid;
	struct nw_perfmap *map;  /* NULL: none or unusable */
	off_t size;              /* the file's size when read */
	uint64_t checked_ns;     /* CLOCK_MONOTONIC: when its size was last looked at */
};

/* A perf map is looked at again at most this often (a PC it does not name, per sample). */
#define MAP_RECHECK_NS 100000000ull

int nw_codecap_init(struct nw_codecap *cc, struct nw_symbolizer *sym)
{
	memset(cc, 0, sizeof(*cc));
	cc->sym = sym;
	cc->o.off = true; /* until nw_codecap_start() */
	cc->strings = nw_codestore_new();
	return cc->strings ? 0 : -ENOMEM;
}

static void func_fini(struct nw_codecap_func *f)
{
	free(f->bytes);
	free(f->lines);
	free(f->inl);
}

void nw_codecap_fini(struct nw_codecap *cc)
{
	for (size_t i = 0; i < cc->nfuncs; i++)
		func_fini(&cc->funcs[i]);
	free(cc->funcs);
	nw_index_fini(&cc->func_ix);
	free(cc->pcs);
	nw_index_fini(&cc->pc_ix);
	for (size_t i = 0; i < cc->njit; i++)
		free(cc->jit[i].bytes);
	free(cc->jit);
	free(cc->jit_order);
	for (size_t i = 0; i < cc->nmaps; i++)
		nw_perfmap_free(cc->maps[i].map);
	free(cc->maps);
	if (cc->kcore_state == 1)
		close(cc->kcore_fd);
	free(cc->kcore);
	nw_codestore_free(cc->strings);
	nw_codestore_free(cc->store);
	memset(cc, 0, sizeof(*cc));
}

/* ---- JIT code, read from the process ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * @pid's perf map; with @fresh, read again when the file grew since it was
 * read (looked at once per MAP_RECHECK_NS at most).  NULL: none.
 */
static const struct nw_perfmap *perf_map(struct nw_codecap *cc, uint32_t pid, bool fresh)
{
	struct nw_codecap_map *e = NULL;
	char path[64];
	struct stat st;
	uint64_t now;

	for (size_t i = 0; i < cc->nmaps && !e; i++)
		if (cc->maps[i].pid == pid)
			e = &cc->maps[i];
	if (e && !fresh)
		return e->map;
	now = now_ns();
	if (e && now - e->checked_ns < MAP_RECHECK_NS)
		return e->map;
	if (e)
		e->checked_ns = now;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	if (stat(path, &st) != 0)
		return e ? e->map : NULL;
	if (e && e->size == st.st_size)
		return e->map;
	if (!e) {
		if (nw_grow(&cc->maps, &cc->cap_maps, cc->nmaps + 1, sizeof(*cc->maps)))
			return NULL;
		e = &cc->maps[cc->nmaps++];
		memset(e, 0, sizeof(*e));
		e->pid = pid;
		e->checked_ns = now;
	}
	nw_perfmap_free(e->map);
	e->map = NULL;
	e->size = st.st_size;
	if (nw_perfmap_read(path, &e->map))
		e->map = NULL;
	return e->map;
}

static uint64_t func_cap(const struct nw_codecap *cc)
{
	return cc->o.func_cap ? cc->o.func_cap : NW_CODE_FUNC_CAP_DEFAULT;
}

static uint64_t total_cap(const struct nw_codecap *cc)
{
	return cc->o.total_cap ? cc->o.total_cap : NW_CODE_TOTAL_CAP_DEFAULT;
}

/*
 * The JIT code of @pid that holds PC @pc: read before, or now from the
 * process through its perf map's range.  Its index, -ENOENT when no perf
 * map entry names @pc, -ENOMEM.
 */
static int jit_code(struct nw_codecap *cc, uint32_t pid, uint64_t pc)
{
	const struct nw_perfmap_sym *sym = NULL;
	const struct nw_perfmap *map;
	struct nw_codecap_jit *j;
	uint64_t want;

	size_t lo = 0, hi = cc->njit;

	/* The last range of @pid starting at or below @pc (ranges of a process do not overlap). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct nw_codecap_jit *x = &cc->jit[cc->jit_order[mid]];

		if (x->pid < pid || (x->pid == pid && x->start <= pc))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct nw_codecap_jit *x = &cc->jit[cc->jit_order[lo - 1]];

		if (x->pid == pid && pc >= x->start && pc < x->end)
			return (int)cc->jit_order[lo - 1];
	}
	map = perf_map(cc, pid, false);
	sym = map ? nw_perfmap_find(map, pc) : NULL;
	if (!sym) {
		/* A JIT writes its map as it goes: read it again when it grew. */
		map = perf_map(cc, pid, true);
		sym = map ? nw_perfmap_find(map, pc) : NULL;
	}
	if (!sym)
		return -ENOENT;
	/* A range that overlaps one read before (the map changed): not read twice. */
	if (lo < cc->njit && cc->jit[cc->jit_order[lo]].pid == pid &&
	    cc->jit[cc->jit_order[lo]].start < sym->end)
		return -ENOENT;
	if (lo && cc->jit[cc->jit_order[lo - 1]].pid == pid &&
	    cc->jit[cc->jit_order[lo - 1]].end > sym->start)
		return -ENOENT;
	if (cc->njit >= INT32_MAX ||
	    nw_grow(&cc->jit, &cc->cap_jit, cc->njit + 1, sizeof(*cc->jit)) ||
	    nw_grow(&cc->jit_order, &cc->cap_order, cc->njit + 1, sizeof(*cc->jit_order)))
		return -ENOMEM;
	j = &cc->jit[cc->njit];
	memset(j, 0, sizeof(*j));
	j->pid = pid;
	j->start = sym->start;
	j->end = sym->end;
	want = j->end - j->start < func_cap(cc) ? j->end - j->start : func_cap(cc);
	j->status = NW_CODE_CAPPED;
	if (cc->jit_bytes + want <= total_cap(cc)) {
		struct iovec local, remote;

		j->bytes = malloc(want ? want : 1);
		if (!j->bytes)
			return -ENOMEM;
		local = (struct iovec){ j->bytes, want };
		remote = (struct iovec){ (void *)(uintptr_t)j->start, want };
		if (process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)want) {
			j->n = (uint32_t)want;
			j->status = NW_CODE_STORED;
			cc->jit_bytes += want;
		} else {
			free(j->bytes);
			j->bytes = NULL;
			j->status = NW_CODE_JIT_GONE;
		}
	}
	memmove(cc->jit_order + lo + 1, cc->jit_order + lo,
		(cc->njit - lo) * sizeof(*cc->jit_order));
	cc->jit_order[lo] = (uint32_t)cc->njit;
	return (int)cc->njit++;
}

/* Does @e map anonymous memory (where JIT code runs)? */
static bool epoch_has_anon(const struct nw_codecap *cc, const struct nw_epoch *e)
{
	const struct nw_module_table *mods = &cc->session->modules;

	for (uint32_t i = 0; i < e->n; i++)
		if (e->maps[i].module < mods->n &&
		    nw_perfmap_module_is_anon(mods->v[e->maps[i].module].path))
			return true;
	return false;
}

/* The session's listener: JIT code at the first sample of each new PC in it. */
static int on_sample(void *arg, const struct nw_thread *th, uint32_t epoch, uint32_t node,
		     unsigned event, uint64_t time, uint64_t period)
{
	struct nw_codecap *cc = arg;
	const struct nw_addrspace *as = &th->proc->as;
	const struct nw_module_table *mods = &cc->session->modules;
	const struct nw_epoch *e;
	const struct nw_map *map;
	uint64_t pc;
	int rc;

	if (epoch >= as->nepochs || epoch >= th->nccts || !th->ccts[epoch] ||
	    node >= th->ccts[epoch]->n)
		return 0;
	e = as->epochs[epoch];
	if (e != cc->anon_epoch) {
		cc->anon_epoch = e;
		cc->anon_epoch_has = epoch_has_anon(cc, e);
	}
	if (!cc->anon_epoch_has)
		return 0;
	pc = nw_ip_pc(th->ccts[epoch]->nodes[node].ip);
	map = nw_epoch_find(e, pc);
	if (!map || map->module >= mods->n || !nw_perfmap_module_is_anon(mods->v[map->module].path))
		return 0;
	rc = jit_code(cc, th->pid, pc);
	return rc == -ENOMEM ? rc : 0;
}

int nw_codecap_start(struct nw_codecap *cc, struct nw_session *s,
		     const struct nw_codecap_opts *o)
{
	cc->o = *o;
	if (o->off)
		return 0;
	cc->session = s;
	cc->hooks = (struct nw_session_hooks){ .arg = cc, .sample = on_sample };
	return nw_session_listen(s, &cc->hooks);
}

/* ---- kernel code, from /proc/kcore ---- */

/* Opens /proc/kcore and reads its loadable segments, once.  false when it cannot be read. */
static bool kcore_open(struct nw_codecap *cc)
{
	Elf64_Ehdr eh;
	int fd;

	if (cc->kcore_state)
		return cc->kcore_state == 1;
	cc->kcore_state = -1;
	fd = open(cc->o.kcore ? cc->o.kcore : "/proc/kcore", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || !eh.e_phnum)
		goto fail;
	cc->kcore = calloc(eh.e_phnum, sizeof(*cc->kcore));
	if (!cc->kcore)
		goto fail;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			goto fail;
		if (ph.p_type == PT_LOAD && ph.p_filesz)
			cc->kcore[cc->nkcore++] = (typeof(*cc->kcore)){ ph.p_vaddr, ph.p_offset,
									ph.p_filesz };
	}
	cc->kcore_fd = fd;
	cc->kcore_state = 1;
	return true;
fail:
	free(cc->kcore);
	cc->kcore = NULL;
	cc->nkcore = 0;
	close(fd);
	return false;
}

static int kcore_read(struct nw_codecap *cc, uint64_t addr, uint8_t *buf, uint32_t n)
{
	if (!kcore_open(cc))
		return -EACCES;
	for (size_t i = 0; i < cc->nkcore; i++) {
		const typeof(*cc->kcore) *k = &cc->kcore[i];

		if (addr < k->vaddr || addr - k->vaddr >= k->size ||
		    n > k->size - (addr - k->vaddr))
			continue;
		return pread(cc->kcore_fd, buf, n, (off_t)(k->offset + (addr - k->vaddr))) ==
				       (ssize_t)n
			       ? 0
			       : -EIO;
	}
	return -ERANGE;
}

/* The kernel function that holds @pc: from its symbol to the next one's address. */
static bool kernel_extent(const struct nw_kallsyms *ks, uint64_t pc, uint64_t *start,
			  uint64_t *size)
{
	struct nw_ksym k;
	uint64_t next = 0;
	size_t lo = 0, hi;

	if (!ks || !nw_kallsyms_find(ks, pc, &k))
		return false;
	/* The first symbol above k.addr (aliases share an address). */
	hi = ks->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t a = ks->map ? ks->recs[mid].addr : ks->v[mid].addr;

		if (a <= k.addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ks->n)
		next = ks->map ? ks->recs[lo].addr : ks->v[lo].addr;
	if (ks->text_end > pc && (!next || (!k.module && ks->text_end < next)))
		next = ks->text_end;
	if (!next || next <= pc)
		return false;
	*start = k.addr;
	*size = next - k.addr;
	return true;
}

/* ---- functions and PCs ---- */

static uint64_t func_hash(uint32_t module, uint64_t start)
{
	return nw_hash_add(nw_hash_u64(start), module);
}

static uint64_t func_rehash(const void *ctx, uint32_t i)
{
	const struct nw_codecap *cc = ctx;

	return func_hash(cc->funcs[i].module, cc->funcs[i].start);
}

static bool func_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_codecap *cc = ctx;
	const struct nw_codecap_func *k = key;

	return cc->funcs[i].module == k->module && cc->funcs[i].start == k->start;
}

/* The function (@key's module and start), added as @key when new; its index or -ENOMEM. */
static int64_t func_of(struct nw_codecap *cc, const struct nw_codecap_func *key)
{
	uint32_t *slot = nw_index_slot(&cc->func_ix, func_hash(key->module, key->start), func_eq,
				       func_rehash, cc, key);

	if (!slot)
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	if (cc->nfuncs >= INT32_MAX ||
	    nw_grow(&cc->funcs, &cc->cap_funcs, cc->nfuncs + 1, sizeof(*cc->funcs)))
		return -ENOMEM;
	cc->funcs[cc->nfuncs] = *key;
	nw_index_fill(&cc->func_ix, slot, (uint32_t)cc->nfuncs);
	return (int64_t)cc->nfuncs++;
}

static uint64_t pc_rehash(const void *ctx, uint32_t i)
{
	const struct nw_codecap *cc = ctx;

	return func_hash(cc->pcs[i].module, cc->pcs[i].addr);
}

static bool pc_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_codecap *cc = ctx;
	const struct nw_codecap_pc *k = key;

	return cc->pcs[i].module == k->module && cc->pcs[i].addr == k->addr;
}

/*
 * The function of a new PC (@r located from ip @ip of a tree of process
 * @pid) into @pc: found through its module's file, the kernel's symbols
 * or the process's perf map.  -ENOMEM.
 */
static int resolve_pc(struct nw_codecap *cc, const struct nw_resolved *r, uint32_t pid, uint64_t ip,
		      const struct nw_kallsyms *ksyms, struct nw_codecap_pc *pc)
{
	const struct nw_module *mod = r->module;
	struct nw_codecap_func key = { .module = r->module_index, .jit = NW_CODE_NONE };
	const struct nw_arch_ops *host = nw_arch_host();
	int64_t f;

	pc->func = NW_CODE_NONE;
	pc->reason = NW_CODE_NO_EXTENT;
	key.machine = mod->facts.known ? mod->facts.machine : host ? host->elf_machine : 0;
	if (!strcmp(mod->path, NW_KERNEL_MODULE)) {
		if (!kernel_extent(ksyms, r->addr, &key.start, &key.size))
			return 0;
		key.machine = host ? host->elf_machine : 0;
		key.origin = NW_CODE_KCORE;
	} else if (nw_perfmap_module_is_anon(mod->path)) {
		uint64_t runtime = nw_ip_pc(ip) - (r->caller ? 1 : 0);
		int j = jit_code(cc, pid, runtime);

		if (j == -ENOMEM)
			return j;
		if (j < 0) {
			pc->reason = NW_CODE_NO_PERFMAP;
			return 0;
		}
		key.machine = host ? host->elf_machine : 0;
		key.origin = NW_CODE_PROCESS;
		key.start = cc->jit[j].start - r->map->start + r->map->vaddr;
		key.size = cc->jit[j].end - cc->jit[j].start;
		key.status = cc->jit[j].status;
		key.jit = (uint32_t)j;
	} else {
		int rc = nw_code_extent(cc->sym, nw_module_source(mod), r->addr, &key.start,
					&key.size);

		if (rc)
			return rc == -ENOMEM ? rc : 0;
		key.origin = NW_CODE_FILE;
	}
	f = func_of(cc, &key);
	if (f < 0)
		return (int)f;
	pc->func = (uint32_t)f;
	return 0;
}

/* The PC (@r, from @ip of process @pid): its entry, resolved when new.  NULL on ENOMEM. */
static const struct nw_codecap_pc *pc_of(struct nw_codecap *cc, const struct nw_resolved *r,
					 uint32_t pid, uint64_t ip, const struct nw_kallsyms *ksyms)
{
	struct nw_codecap_pc key = { .module = r->module_index, .addr = r->addr };
	uint32_t *slot = nw_index_slot(&cc->pc_ix, func_hash(key.module, key.addr), pc_eq,
				       pc_rehash, cc, &key);

	if (!slot)
		return NULL;
	if (*slot != NW_INDEX_NONE) {
		struct nw_codecap_pc *have = &cc->pcs[*slot];

		/* JIT code its perf map did not name yet: the map may name it now. */
		if (have->func == NW_CODE_NONE && have->reason == NW_CODE_NO_PERFMAP &&
		    resolve_pc(cc, r, pid, ip, ksyms, have))
			return NULL;
		return have;
	}
	if (resolve_pc(cc, r, pid, ip, ksyms, &key))
		return NULL;
	/* resolve_pc() may have grown the function index, never this one. */
	if (cc->npcs >= INT32_MAX ||
	    nw_grow(&cc->pcs, &cc->cap_pcs, cc->npcs + 1, sizeof(*cc->pcs)))
		return NULL;
	slot = nw_index_slot(&cc->pc_ix, func_hash(key.module, key.addr), pc_eq, pc_rehash, cc,
			     &key);
	if (!slot)
		return NULL;
	cc->pcs[cc->npcs] = key;
	nw_index_fill(&cc->pc_ix, slot, (uint32_t)cc->npcs);
	return &cc->pcs[cc->npcs++];
}

/* ---- selection ---- */

/* Reads @f's bytes (@n from its start) where they come from.  0, or the status that says why not.
 */
static int read_bytes(struct nw_codecap *cc, const struct nw_measurement *m,
		      struct nw_codecap_func *f, uint32_t n)
{
	const struct nw_module *mod = &m->modules->v[f->module];
	int rc;

	if (f->bytes && f->nbytes >= n)
		return 0;
	free(f->bytes);
	f->nbytes = 0;
	f->bytes = malloc(n ? n : 1);
	if (!f->bytes)
		return -ENOMEM;
	if (f->origin == NW_CODE_KCORE) {
		rc = kcore_read(cc, f->start, f->bytes, n);
		rc = rc ? NW_CODE_NO_KCORE : 0;
	} else {
		rc = nw_code_read(cc->sym, nw_module_source(mod), f->start, f->bytes, n);
		rc = rc ? NW_CODE_UNREADABLE : 0;
	}
	if (rc) {
		free(f->bytes);
		f->bytes = NULL;
		return rc;
	}
	f->nbytes = n;
	return 0;
}

/* Its lines and inlined ranges, looked up once (files only).  -ENOMEM. */
static int describe(struct nw_codecap *cc, const struct nw_measurement *m,
		    struct nw_codecap_func *f)
{
	if (f->described)
		return 0;
	f->described = true;
	if (f->origin != NW_CODE_FILE)
		return 0;
	return nw_code_describe(cc->sym, nw_module_source(&m->modules->v[f->module]), f->start,
				f->size, cc->strings, &f->lines, &f->nlines, &f->inl, &f->ninl);
}

struct order_ctx {
	const struct nw_codecap_func *funcs;
};

static int by_weight(const void *a, const void *b, void *arg)
{
	const struct nw_codecap_func *v = ((const struct order_ctx *)arg)->funcs;
	const struct nw_codecap_func *x = &v[*(const uint32_t *)a], *y = &v[*(const uint32_t *)b];

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int by_place(const void *a, const void *b, void *arg)
{
	const struct nw_codecap_func *v = ((const struct order_ctx *)arg)->funcs;
	const struct nw_codecap_func *x = &v[*(const uint32_t *)a], *y = &v[*(const uint32_t *)b];

	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Lines and inlined ranges of @f that lie within its first @size bytes. */
static uint32_t lines_within(const struct nw_codecap_func *f, uint64_t size)
{
	uint32_t n = f->nlines;

	while (n && f->lines[n - 1].offset >= size)
		n--;
	return n;
}

/* Inlined ranges of @f that begin within its first @size bytes. */
static uint32_t inlines_within(const struct nw_codecap_func *f, uint64_t size)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < f->ninl; i++)
		n += f->inl[i].lo < size;
	return n;
}

/* Builds the store of the selection @sel (@n functions, by place); m->code becomes it. */
static int build_store(struct nw_codecap *cc, const uint32_t *sel, size_t n, const uint8_t *status,
		       const uint32_t *nbytes, uint64_t notes[][NW_CODE_REASON_MAX],
		       uint32_t nmodules, uint64_t signature)
{
	struct nw_codestore *cs = nw_codestore_new();
	int rc = -ENOMEM;

	if (!cs)
		return -ENOMEM;
	cs->func_cap = func_cap(cc);
	cs->total_cap = total_cap(cc);
	/* The same strings at the same indices. */
	for (uint32_t i = 0; i < cc->strings->nstrings; i++)
		if (nw_codestore_string(cs, cc->strings->strings[i]) != i)
			goto out;
	for (size_t k = 0; k < n; k++) {
		const struct nw_codecap_func *f = &cc->funcs[sel[k]];
		uint64_t size = f->size;
		uint32_t nl = f->nlines;
		struct nw_code_inline *inl = NULL;
		uint32_t ninl = 0, stored;
		struct nw_code_func *out;

		/* A function that reaches into the next one (sizes that lie): cut at its start. */
		if (k + 1 < n && cc->funcs[sel[k + 1]].module == f->module &&
		    cc->funcs[sel[k + 1]].start - f->start < size)
			size = cc->funcs[sel[k + 1]].start - f->start;
		stored = status[k] == NW_CODE_STORED
			     ? (nbytes[k] < size ? nbytes[k] : (uint32_t)size)
			     : 0;
		if (stored) {
			/* What describes the stored bytes: nw_code_func_cost() counts it. */
			nl = lines_within(f, stored);
			inl = malloc((f->ninl ? f->ninl : 1) * sizeof(*inl));
			if (!inl)
				goto out;
			for (uint32_t i = 0; i < f->ninl; i++) {
				if (f->inl[i].lo >= stored)
					continue;
				inl[ninl] = f->inl[i];
				if (inl[ninl].hi > size)
					inl[ninl].hi = (uint32_t)size;
				ninl++;
			}
		}
		out = nw_codestore_add(cs, f->module, f->machine, status[k], f->origin, f->start,
				       size, stored ? f->bytes : NULL, stored,
				       stored ? f->lines : NULL, stored ? nl : 0, inl, ninl);
		free(inl);
		if (!out)
			goto out;
	}
	for (uint32_t mo = 0; mo < nmodules; mo++)
		for (int r = 0; r < NW_CODE_REASON_MAX; r++)
			if (notes[mo][r] && nw_codestore_note(cs, mo, r, notes[mo][r]))
				goto out;
	nw_codestore_sort(cs);
	cs->generation = ++cc->generation;
	nw_codestore_free(cc->store);
	cc->store = cs;
	cc->signature = signature;
	return 0;
out:
	nw_codestore_free(cs);
	return rc;
}

int nw_codecap_update(struct nw_codecap *cc, struct nw_measurement *m,
		      const struct nw_kallsyms *ksyms)
{
	uint64_t (*notes)[NW_CODE_REASON_MAX] = NULL;
	uint32_t *order = NULL, *nbytes = NULL, *sel_nbytes = NULL;
	uint8_t *status = NULL, *sel_status = NULL;
	size_t nsel = 0;
	uint64_t used = 0, sig = NW_HASH_SEED;
	int metric, rc = -ENOMEM;

	if (cc->o.off)
		return 0;
	metric = nw_measurement_find_metric(m, NULL);
	for (size_t i = 0; i < cc->nfuncs; i++)
		cc->funcs[i].weight = 0;
	for (uint32_t t = 0; t < m->nthreads; t++) {
		const struct nw_mthread *th = &m->threads[t];

		for (uint32_t k = 0; k < th->ntrees; k++) {
			const struct nw_tree *tr = &th->trees[k];

			for (uint32_t i = 1; i < tr->cct->n; i++) {
				const struct nw_codecap_pc *pc;
				struct nw_resolved r;

				nw_measurement_locate_node(m, tr, i, &r);
				if (!r.map)
					continue;
				pc = pc_of(cc, &r, th->pid, tr->cct->nodes[i].ip, ksyms);
				if (!pc)
					goto out;
				if (pc->func != NW_CODE_NONE && metric >= 0)
					cc->funcs[pc->func].weight +=
						nw_cct_metrics(tr->cct, i)[metric];
			}
		}
	}
	notes = calloc(m->modules->n ? m->modules->n : 1, sizeof(*notes));
	order = malloc((cc->nfuncs ? cc->nfuncs : 1) * sizeof(*order));
	status = malloc(cc->nfuncs ? cc->nfuncs : 1);
	nbytes = malloc((cc->nfuncs ? cc->nfuncs : 1) * sizeof(*nbytes));
	sel_status = malloc(cc->nfuncs ? cc->nfuncs : 1);
	sel_nbytes = malloc((cc->nfuncs ? cc->nfuncs : 1) * sizeof(*sel_nbytes));
	if (!notes || !order || !status || !nbytes || !sel_status || !sel_nbytes)
		goto out;
	for (size_t i = 0; i < cc->npcs; i++)
		if (cc->pcs[i].func == NW_CODE_NONE && cc->pcs[i].module < m->modules->n)
			notes[cc->pcs[i].module][cc->pcs[i].reason]++;
	/* The hottest first, each whole (up to the per-function cap) while the total allows. */
	for (size_t i = 0; i < cc->nfuncs; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, cc->nfuncs, sizeof(*order), by_weight,
		&(struct order_ctx){ cc->funcs });
	for (size_t k = 0; k < cc->nfuncs; k++) {
		struct nw_codecap_func *f = &cc->funcs[order[k]];
		uint32_t want = (uint32_t)(f->size < func_cap(cc) ? f->size : func_cap(cc));
		uint64_t cost;
		int st = f->status;

		if (st == NW_CODE_STORED && f->jit != NW_CODE_NONE) {
			/* Read by the listener already, from a process that may be gone. */
			const struct nw_codecap_jit *j = &cc->jit[f->jit];

			want = j->n;
			if (!f->bytes && j->bytes) {
				f->bytes = malloc(j->n ? j->n : 1);
				if (!f->bytes)
					goto out;
				memcpy(f->bytes, j->bytes, j->n);
				f->nbytes = j->n;
			}
		}
		if (st == NW_CODE_STORED && describe(cc, m, f))
			goto out;
		/* What the store will hold of it: nw_code_func_cost(). */
		cost = 40 + (uint64_t)want + 3 * (uint64_t)lines_within(f, want) +
		       16 * (uint64_t)inlines_within(f, want);
		if (st == NW_CODE_STORED && used + cost > total_cap(cc)) {
			st = NW_CODE_CAPPED;
			if (f->jit == NW_CODE_NONE) {
				/* Read again if it comes back; JIT code could not be. */
				free(f->bytes);
				f->bytes = NULL;
				f->nbytes = 0;
			}
		}
		if (st == NW_CODE_STORED && f->jit == NW_CODE_NONE) {
			int r = read_bytes(cc, m, f, want);

			if (r == -ENOMEM)
				goto out;
			if (r)
				st = f->status =
				    (uint8_t)r; /* for good: the file or kcore refuses */
		}
		if (st == NW_CODE_STORED)
			used += cost;
		status[order[k]] = (uint8_t)st;
		nbytes[order[k]] = st == NW_CODE_STORED ? f->nbytes : 0;
	}
	/* The store by place (build_store() cuts a function that reaches into the next). */
	qsort_r(order, cc->nfuncs, sizeof(*order), by_place, &(struct order_ctx){ cc->funcs });
	for (size_t k = 0; k < cc->nfuncs; k++) {
		const struct nw_codecap_func *f = &cc->funcs[order[k]];

		sel_status[k] = status[order[k]];
		sel_nbytes[k] = nbytes[order[k]];
		sig = nw_hash_add(nw_hash_add(nw_hash_add(sig, f->module), f->start),
				  (uint64_t)sel_status[k] << 32 | sel_nbytes[k]);
	}
	nsel = cc->nfuncs;
	for (uint32_t mo = 0; mo < m->modules->n; mo++)
		for (int r = 0; r < NW_CODE_REASON_MAX; r++)
			sig = nw_hash_add(sig, notes[mo][r]);
	if (!cc->store || sig != cc->signature) {
		rc = build_store(cc, order, nsel, sel_status, sel_nbytes, notes, m->modules->n,
				 sig);
		if (rc)
			goto out;
	}
	m->code = cc->store;
	rc = 0;
out:
	free(notes);
	free(order);
	free(status);
	free(nbytes);
	free(sel_status);
	free(sel_nbytes);
	return rc;
}
