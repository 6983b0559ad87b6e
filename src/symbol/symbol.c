/* SPDX-License-Identifier: MIT */
/*
 * Symbolizer on libdwfl.  One offline Dwfl holds one module per file, each
 * reported once at bias 0 so that module addresses are the file's ELF
 * virtual addresses.  Files are kept in an array sorted by path with their
 * PT_LOAD table; a file that could not be used is remembered too, so it is
 * not opened again.  Separate debug info is found by libdwfl's standard
 * find_debuginfo: first by build-id (DIR/.build-id/xx/rest.debug for each
 * absolute DIR of the debuginfo path, by default /usr/lib/debug, where
 * Debian's -dbg packages such as libc6-dbg put theirs), then by
 * .gnu_debuglink (next to the file, in its .debug/ and under
 * /usr/lib/debug/<its directory>), last through debuginfod when
 * DEBUGINFOD_URLS is set and libdebuginfod.so.1 can be loaded (libdw loads
 * it itself; its client keeps DEBUGINFOD_CACHE_PATH, DEBUGINFOD_TIMEOUT).
 * NARWHAL_DEBUG_PATH puts directories in front of that path.  The path
 * "[vdso]" is this process's vdso image (symbol/vdso.h).  Results are kept
 * between runs (symbol/symcache.h): a change here that resolves any
 * address differently must bump symcache.c's MAGIC.
 */
#include "symbol/symbol.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>

#include "elf/vdso.h"
#include "symbol/symcache.h"
#include "util/strbuf.h"

/* A function symbol of the ELF symbol table (the fallback without DWARF). */
struct nw_elfsym {
	uint64_t addr, size; /* size 0: extent unknown */
	uint64_t maxend;     /* the largest addr + size of this and all earlier entries */
	const char *name;    /* in the module's string table */
};

/* One address range of a function of a CU. */
struct nw_funcrange {
	Dwarf_Addr low, high; /* [low, high), in the DWARF file's addresses */
	Dwarf_Addr maxhigh;   /* the largest high of this and all earlier entries */
	Dwarf_Die die;	      /* the DW_TAG_subprogram */
};

/* The functions of one CU sorted by address, built at its first lookup. */
struct nw_cufuncs {
	const void *key; /* the CU DIE's data */
	struct nw_funcrange *v;
	size_t n;
};

struct nw_symfile {
	char *path;
	int err; /* < 0: the file is unusable, returned as is */
	Dwfl_Module *mod;
	const struct nw_module_facts *facts; /* the file's loadable segments, from the cache */
	bool syms_done;		/* syms built (possibly empty) */
	struct nw_elfsym *syms; /* sorted by addr, one per address */
	size_t nsyms;
	struct nw_cufuncs *cus; /* sorted by key */
	size_t ncus, cap_cus;
	bool cache_tried;
	struct nw_symcache *cache; /* NULL: not cached */
};

struct nw_symbolizer {
	Dwfl *dwfl;
	Dwfl_Callbacks callbacks; /* the Dwfl keeps a pointer to them */
	char *debuginfo_path;	  /* NULL: libdwfl's default */
	struct nw_vdso vdso;
	struct nw_elf_cache *elf; /* ELF facts, shared with the recorder */
	const struct nw_cache *cache; /* results between runs; NULL: none */
	struct nw_symfile *files; /* sorted by path */
	size_t nfiles, cap_files;
};

/* The bytes after e_entry named "_start" where no symbol names them (x86-64's is 37). */
#define ENTRY_SIZE 64

/* libdwfl's default (libdwflP.h): the file's directory, its .debug/, /usr/lib/debug. */
#define NW_DEFAULT_DEBUGINFO_PATH ":.debug:/usr/lib/debug"

/*
 * libdwfl's standard search, then, for a separate debug file with
 * compressed sections, its uncompressed copy in the cache: the module's
 * userdata is the symbolizer (symfile_open() sets it).
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct nw_symbolizer *s = *userdata;
	const char *dirs = s && s->debuginfo_path ? s->debuginfo_path : NW_DEFAULT_DEBUGINFO_PATH;
	const unsigned char *id;
	GElf_Addr id_vaddr;
	int idlen = dwfl_module_build_id(mod, &id, &id_vaddr);
	char hex[2 * 64 + 1] = "";
	bool any = true;

	for (int i = 0; i < idlen && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	/* A leading + or - says whether to check CRCs: no directory. */
	if (*dirs == '+' || *dirs == '-')
		dirs++;
	/*
	 * By build-id first, as libdwfl does; done here because libdwfl's own
	 * lookup opens the file it finds itself (its ELF handle, not the fd
	 * returned, is used), so an uncompressed copy could not take its place.
	 */
	for (const char *p = dirs; s && nw_cache_on(s->cache) && idlen > 1 && p;) {
		const char *end = strchr(p, ':');
		int n = end ? (int)(end - p) : (int)strlen(p), fd;
		char path[PATH_MAX];

		if (n && p[0] == '/' &&
		    snprintf(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug", n, p, hex,
			     hex + 2) < (int)sizeof(path) &&
		    (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			int d = dup(fd), copy = nw_symcache_debug_fd(s->cache, d);

			close(fd);
			if (copy >= 0 && copy != d) {
				*debuginfo_file_name = strdup(path);
				return copy;
			}
			if (copy >= 0)
				close(copy);
			break; /* not compressed: libdwfl's own lookup takes it */
		}
		p = end ? end + 1 : NULL;
	}
	/*
	 * Nothing where libdwfl would look, and no debuginfod: its search
	 * would find nothing too, after loading libdebuginfod and its TLS
	 * and HTTP libraries (4 ms) only to learn that no server is set.
	 */
	if (file_name)
		nw_symcache_debug_sources(file_name, hex, debuglink_file, dirs, &any);
	if (!any) {
		errno = ENOENT;
		return -1;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

struct nw_symbolizer *nw_symbolizer_new(struct nw_elf_cache *elf, const struct nw_cache *cache)
{
	struct nw_symbolizer *s = calloc(1, sizeof(*s));
	const char *extra = getenv("NARWHAL_DEBUG_PATH");

	if (!s)
		return NULL;
	s->elf = elf;
	s->cache = cache;
	nw_vdso_init(&s->vdso);
	/* The user's directories first; the defaults still apply after them. */
	if (extra && *extra &&
	    asprintf(&s->debuginfo_path, "%s:%s", extra, NW_DEFAULT_DEBUGINFO_PATH) < 0) {
		free(s);
		return NULL;
	}
	s->callbacks.find_elf = dwfl_build_id_find_elf;
	s->callbacks.find_debuginfo = find_debuginfo;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = s->debuginfo_path ? &s->debuginfo_path : NULL;
	s->dwfl = dwfl_begin(&s->callbacks);
	if (!s->dwfl) {
		free(s->debuginfo_path);
		free(s);
		return NULL;
	}
	return s;
}

static void symfile_fini(struct nw_symfile *f)
{
	nw_symcache_close(f->cache);
	for (size_t i = 0; i < f->ncus; i++)
		free(f->cus[i].v);
	free(f->cus);
	free(f->syms);
	free(f->path);
}

void nw_symbolizer_free(struct nw_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfiles; i++)
		symfile_fini(&s->files[i]);
	if (nw_cache_on(s->cache))
		nw_cache_prune(s->cache);
	free(s->files);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	nw_vdso_fini(&s->vdso);
	free(s->debuginfo_path);
	free(s);
}

/* Opens @f->path, reports it to the Dwfl and finds its ELF facts; sets f->err. */
static void symfile_open(struct nw_symbolizer *s, struct nw_symfile *f)
{
	Dwarf_Addr bias;
	void **userdata;
	int fd;

	f->err = nw_elf_facts_get(s->elf, f->path, &f->facts);
	if (f->err)
		return;
	if (!strcmp(f->path, "[vdso]")) {
		/*
		 * The target mapped the image this process has (same kernel;
		 * a target of another ABI, such as a 32-bit one, would not).
		 */
		fd = nw_vdso_dup_fd(&s->vdso);
		if (fd < 0) {
			f->err = fd == -ENOMEM ? -ENOMEM : -ENOENT;
			return;
		}
	} else {
		fd = open(f->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			f->err = errno == ENOMEM ? -ENOMEM : -ENOENT;
			return;
		}
	}
	dwfl_report_begin_add(s->dwfl);
	/* Base 0 with add_p_vaddr: the bias is 0 for ET_EXEC and ET_DYN alike. */
	f->mod = dwfl_report_elf(s->dwfl, f->path, f->path, fd, 0, true);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!f->mod) {
		/* On failure the fd stays ours; on success the Dwfl owns it. */
		close(fd);
		f->err = -ENOENT;
		return;
	}
	/* For find_debuginfo(). */
	dwfl_module_info(f->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = s;
	if (!dwfl_module_getelf(f->mod, &bias))
		f->err = -ENOENT;
}

/*
 * The entry for @path, opened on first use (an unusable file gets an entry
 * with its error, so it is tried once).  Returns that error, or -ENOMEM.
 */
static int symfile_lookup(struct nw_symbolizer *s, const char *path, struct nw_symfile **ret)
{
	size_t lo = 0, hi = s->nfiles;
	struct nw_symfile *f;
	char *copy;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->files[mid].path, path);

		if (c == 0) {
			f = &s->files[mid];
			goto out_found;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->nfiles == s->cap_files) {
		size_t cap = s->cap_files ? s->cap_files * 2 : 16;
		struct nw_symfile *files = reallocarray(s->files, cap, sizeof(*files));

		if (!files)
			return -ENOMEM;
		s->files = files;
		s->cap_files = cap;
	}
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	memmove(&s->files[lo + 1], &s->files[lo], (s->nfiles - lo) * sizeof(s->files[0]));
	s->nfiles++;
	f = &s->files[lo];
	memset(f, 0, sizeof(*f));
	f->path = copy;
	symfile_open(s, f);
	if (f->err == -ENOMEM && !f->mod) {
		/* Not a property of the file: forget the entry so a later call retries. */
		symfile_fini(f);
		memmove(f, f + 1, (s->nfiles - lo - 1) * sizeof(*f));
		s->nfiles--;
		return -ENOMEM;
	}
out_found:
	if (f->err)
		return f->err;
	*ret = f;
	return 0;
}

/* A malloc'd demangled copy of @name (C names come back unchanged), NULL on ENOMEM. */
static char *demangle(const char *name)
{
	char *d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);

	return d ? d : strdup(name);
}

/* The DIEs of subprograms and inlined subroutines whose code holds a PC, outermost first. */
struct nw_scopes {
	Dwarf_Die *v;
	size_t n, cap;
};

/* Bounds the recursion on DIE trees, which come from untrusted files. */
#define NW_DIE_MAX_DEPTH 256

static int scopes_push(struct nw_scopes *sc, const Dwarf_Die *die)
{
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 8;
		Dwarf_Die *v = reallocarray(sc->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		sc->v = v;
		sc->cap = cap;
	}
	sc->v[sc->n++] = *die;
	return 0;
}

/*
 * Descends from @parent along the DIEs whose address ranges hold @pc (the
 * pruning of dwarf_getscopes, but in the concrete tree, so an inlined
 * instance is followed by the code it was inlined into), pushing the
 * subprograms and inlined subroutines on @sc.  1 when a DIE holding @pc
 * was found below @parent, 0 when not, -ENOMEM.
 */
static int scopes_find(Dwarf_Die *parent, Dwarf_Addr pc, struct nw_scopes *sc, unsigned int depth)
{
	Dwarf_Die child;
	int r;

	if (depth >= NW_DIE_MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);

		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haspc(&child, pc) <= 0)
				break;
			if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
				r = scopes_push(sc, &child);
				if (r)
					return r;
			}
			r = scopes_find(&child, pc, sc, depth + 1);
			return r < 0 ? r : 1;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			/* No addresses of their own, but they can hold functions. */
			r = scopes_find(&child, pc, sc, depth + 1);
			if (r)
				return r;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

struct nw_funcvec {
	struct nw_funcrange *v;
	size_t n, cap;
};

/* Adds the address ranges of every function defined under @parent to @out.  -ENOMEM. */
static int cufuncs_collect(Dwarf_Die *parent, struct nw_funcvec *out, unsigned int depth)
{
	Dwarf_Die child;
	int r;

	if (depth >= NW_DIE_MAX_DEPTH || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		Dwarf_Addr base, low, high;
		ptrdiff_t off = 0;

		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			while ((off = dwarf_ranges(&child, off, &base, &low, &high)) > 0) {
				if (low >= high)
					continue;
				if (out->n == out->cap) {
					size_t cap = out->cap ? out->cap * 2 : 64;
					struct nw_funcrange *v =
					    reallocarray(out->v, cap, sizeof(*v));

					if (!v)
						return -ENOMEM;
					out->v = v;
					out->cap = cap;
				}
				out->v[out->n].low = low;
				out->v[out->n].high = high;
				out->v[out->n].die = child;
				out->n++;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			r = cufuncs_collect(&child, out, depth + 1);
			if (r)
				return r;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int funcrange_cmp(const void *a, const void *b)
{
	const struct nw_funcrange *x = a, *y = b;

	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	/* The longer range first, so that a range nested in it comes later. */
	if (x->high != y->high)
		return x->high > y->high ? -1 : 1;
	return 0;
}

/* The function index of CU @cudie in @f, built on first use.  -ENOMEM. */
static int cufuncs_get(struct nw_symfile *f, Dwarf_Die *cudie, struct nw_cufuncs **ret)
{
	const void *key = cudie->addr;
	struct nw_funcvec vec = {0};
	struct nw_cufuncs *cu;
	size_t lo = 0, hi = f->ncus;
	int err;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uintptr_t k = (uintptr_t)f->cus[mid].key;

		if (k == (uintptr_t)key) {
			*ret = &f->cus[mid];
			return 0;
		}
		if (k < (uintptr_t)key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (f->ncus == f->cap_cus) {
		size_t cap = f->cap_cus ? f->cap_cus * 2 : 16;
		struct nw_cufuncs *cus = reallocarray(f->cus, cap, sizeof(*cus));

		if (!cus)
			return -ENOMEM;
		f->cus = cus;
		f->cap_cus = cap;
	}
	err = cufuncs_collect(cudie, &vec, 0);
	if (err) {
		free(vec.v);
		return err;
	}
	if (vec.n)
		qsort(vec.v, vec.n, sizeof(vec.v[0]), funcrange_cmp);
	for (size_t i = 0; i < vec.n; i++) {
		Dwarf_Addr prev = i ? vec.v[i - 1].maxhigh : 0;

		vec.v[i].maxhigh = vec.v[i].high > prev ? vec.v[i].high : prev;
	}
	memmove(&f->cus[lo + 1], &f->cus[lo], (f->ncus - lo) * sizeof(f->cus[0]));
	f->ncus++;
	cu = &f->cus[lo];
	cu->key = key;
	cu->v = vec.v;
	cu->n = vec.n;
	*ret = cu;
	return 0;
}

/* The innermost function range of @cu holding @pc, or NULL. */
static struct nw_funcrange *cufuncs_find(const struct nw_cufuncs *cu, Dwarf_Addr pc)
{
	size_t lo = 0, hi = cu->n;

	/* lo becomes the number of ranges that start at or below pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cu->v[mid].low <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && cu->v[i].maxhigh > pc;) {
		if (pc < cu->v[i].high)
			return &cu->v[i];
	}
	return NULL;
}

static int elfsym_cmp(const void *a, const void *b)
{
	const struct nw_elfsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address: the sized symbol first, then the better binding. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	if (x->maxend != y->maxend)
		return x->maxend < y->maxend ? -1 : 1;
	return 0;
}

/* 0 for GLOBAL, 1 WEAK, 2 for the rest: the order in which aliases are preferred. */
static uint64_t elfsym_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* True when section @shndx of @elf holds code. */
static bool elfsym_in_code(Elf *elf, GElf_Word shndx)
{
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (!elf || shndx == SHN_UNDEF || (shndx >= SHN_LORESERVE && shndx <= SHN_HIRESERVE))
		return false;
	scn = elf_getscn(elf, shndx);
	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

/*
 * Sorts @v (@n entries) as qsort() with elfsym_cmp() would: by address with
 * an LSD radix sort of (address, index) pairs, 11 bits a pass, passes
 * where every address has the same digit skipped; then the few entries
 * at one address by elfsym_cmp().  A large program's .symtab (186 K
 * symbols in rustc's driver) sorts in a tenth of qsort's time.  -ENOMEM.
 */
static int elfsyms_sort(struct nw_elfsym *v, size_t n)
{
	struct pair { uint64_t addr; size_t i; } *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
	struct nw_elfsym *out = malloc(n * sizeof(*out));
	size_t count[2048];

	if (!a || !b || !out) {
		free(a);
		free(b);
		free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		a[i] = (struct pair){ v[i].addr, i };
	for (unsigned shift = 0; shift < 64; shift += 11) {
		struct pair *t;
		size_t sum = 0;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(a[i].addr >> shift) & 2047]++;
		if (count[(a[0].addr >> shift) & 2047] == n)
			continue; /* one digit for all: the order stands */
		for (size_t d = 0; d < 2048; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[(a[i].addr >> shift) & 2047]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = v[a[i].i];
	/* Runs of one address, in elfsym_cmp()'s order (insertion: they are short). */
	for (size_t i = 1; i < n; i++) {
		struct nw_elfsym x = out[i];
		size_t j = i;

		while (j > 0 && out[j - 1].addr == x.addr && elfsym_cmp(&out[j - 1], &x) > 0) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = x;
	}
	memcpy(v, out, n * sizeof(*v));
	free(a);
	free(b);
	free(out);
	return 0;
}

/*
 * Builds f->syms from the module's symbol tables (.symtab, else .dynsym,
 * and a MiniDebugInfo table): the function and untyped code symbols,
 * sorted, one per address.  -ENOMEM.
 */
static int elfsyms_build(struct nw_symfile *f)
{
	int count = dwfl_module_getsymtab(f->mod);
	struct nw_elfsym *v;
	size_t n = 0, m = 0;

	f->syms_done = true;
	if (count <= 0)
		return 0;
	v = calloc((size_t)count, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int i = 1; i < count; i++) {
		GElf_Word shndx = 0;
		Elf *elf = NULL;
		GElf_Addr addr;
		Dwarf_Addr bias;
		GElf_Sym sym;
		const char *name;
		int type;

		name = dwfl_module_getsym_info(f->mod, i, &sym, &addr, &shndx, &elf, &bias);
		if (!name || !*name)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		if (!elfsym_in_code(elf, shndx))
			continue;
		v[n].addr = addr;
		v[n].size = sym.st_size;
		v[n].maxend = elfsym_rank(&sym) * 2 + (type == STT_NOTYPE); /* sort key for now */
		v[n].name = name;
		n++;
	}
	if (n && elfsyms_sort(v, n)) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t end;

		if (m && v[m - 1].addr == v[i].addr)
			continue;
		v[m] = v[i];
		end = v[m].addr + v[m].size;
		if (end < v[m].addr)
			end = UINT64_MAX;
		v[m].maxend = m && v[m - 1].maxend > end ? v[m - 1].maxend : end;
		m++;
	}
	f->syms = v;
	f->nsyms = m;
	return 0;
}

/* The index of the PT_LOAD holding @vaddr, or -1. */
static int symfile_load_of(const struct nw_symfile *f, uint64_t vaddr)
{
	return nw_facts_segment_of(f->facts, vaddr);
}

/*
 * The symbol holding @vaddr: the innermost sized symbol that contains it,
 * else the closest symbol below it when that one has no size and lies in
 * the same segment.  NULL when none.
 */
static const struct nw_elfsym *elfsyms_find(const struct nw_symfile *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->nsyms;
	const struct nw_elfsym *below;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	below = &f->syms[lo - 1];
	for (size_t i = lo; i-- > 0 && f->syms[i].maxend > vaddr;) {
		if (f->syms[i].size && vaddr - f->syms[i].addr < f->syms[i].size)
			return &f->syms[i];
	}
	if (below->size == 0 && symfile_load_of(f, below->addr) == symfile_load_of(f, vaddr))
		return below;
	return NULL;
}

static const char *die_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

/* A malloc'd name for the function of @die (through its abstract origin), NULL when none. */
static char *die_function_name(Dwarf_Die *die, int *err)
{
	const char *name = die_string(die, DW_AT_linkage_name);
	char *ret;

	if (!name)
		name = die_string(die, DW_AT_MIPS_linkage_name);
	if (!name)
		name = die_string(die, DW_AT_name);
	if (!name)
		return NULL;
	ret = demangle(name);
	if (!ret)
		*err = -ENOMEM;
	return ret;
}

static int set_str(char **dst, const char *src)
{
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

static void frames_free(struct nw_symframe *frames, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(frames[i].function);
		free(frames[i].file);
		free(frames[i].decl_file);
	}
	free(frames);
}

/*
 * Drops the "." components of absolute @path and each ".." with the
 * component before it, in place, as debuggers show a CU's files
 * (comp_dir "/src/build", file "../lib/x.c": /src/lib/x.c).
 */
static void normalize_path(char *path)
{
	char *out = path, *in = path;

	while (*in) {
		size_t n;

		while (*in == '/')
			in++;
		n = strcspn(in, "/");
		if (n == 0)
			break;
		if (n == 1 && in[0] == '.') {
			/* nothing */
		} else if (n == 2 && in[0] == '.' && in[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, in, n);
			out += n;
		}
		in += n;
	}
	if (out == path)
		*out++ = '/';
	*out = 0;
}

/*
 * Sets *@dst to @file made absolute with the compilation directory
 * @comp_dir when it is relative (so that a report finds the source from
 * anywhere).  -ENOMEM.
 */
static int set_path(char **dst, const char *file, const char *comp_dir)
{
	char *joined;
	int err;

	if (!file || file[0] == '/' || !comp_dir || comp_dir[0] != '/')
		return set_str(dst, file);
	joined = nw_strdup_printf("%s/%s", comp_dir, file);
	if (!joined)
		return -ENOMEM;
	normalize_path(joined);
	err = set_str(dst, joined);
	free(joined);
	return err;
}

/* The DW_AT_comp_dir of the CU @die is in, or NULL. */
static const char *comp_dir_of(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die cu;

	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return NULL;
	return dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr));
}

/* Fills @fr (zeroed) for the function of @die.  0 when it has a name, 1 when not, -ENOMEM. */
static int frame_from_die(struct nw_symframe *fr, Dwarf_Die *die)
{
	int err = 0, line;

	fr->function = die_function_name(die, &err);
	if (err)
		return err;
	if (dwarf_decl_line(die, &line) == 0 && line > 0)
		fr->decl_line = (uint32_t)line;
	err = set_path(&fr->decl_file, dwarf_decl_file(die), comp_dir_of(die));
	if (err)
		return err;
	return fr->function ? 0 : 1;
}

/* The call site of inlined instance @die: file and line in its caller. */
static int frame_call_site(struct nw_symframe *fr, Dwarf_Die *die, Dwarf_Files *files,
			   size_t nfiles)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &v) == 0 && v <= UINT32_MAX)
		fr->line = (uint32_t)v;
	if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &v) == 0 &&
	    v < nfiles)
		return set_path(&fr->file, dwarf_filesrc(files, v, NULL, NULL), comp_dir_of(die));
	return 0;
}

/* The PC's own file and line (from the line table) into @fr. */
static int frame_pc_line(struct nw_symframe *fr, Dwfl_Module *mod, uint64_t vaddr)
{
	Dwfl_Line *line = dwfl_module_getsrc(mod, vaddr);
	const char *file;
	int lineno = 0;

	if (!line)
		return 0;
	file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
	if (!file)
		return 0;
	if (lineno > 0)
		fr->line = (uint32_t)lineno;
	return set_path(&fr->file, file, dwfl_line_comp_dir(line));
}

/*
 * The inline chain at @vaddr from DWARF, innermost first: *ret_n is 0 when
 * the DWARF does not know the address or the function has no name.  -ENOMEM.
 */
static int symbolize_dwarf(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
			   uint32_t *ret_n)
{
	struct nw_scopes sc = {0};
	struct nw_symframe *frames = NULL;
	struct nw_funcrange *func;
	struct nw_cufuncs *cu;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0, first;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie;
	uint32_t n = 0;
	int err;

	*ret_n = 0;
	cudie = dwfl_module_addrdie(f->mod, vaddr, &bias);
	if (!cudie)
		return 0;
	err = cufuncs_get(f, cudie, &cu);
	if (err)
		return err;
	func = cufuncs_find(cu, vaddr - bias);
	if (!func)
		return 0;
	err = scopes_push(&sc, &func->die);
	if (!err)
		err = scopes_find(&func->die, vaddr - bias, &sc, 0);
	if (err < 0)
		goto out;
	/* Frames run from the innermost DIE out to the innermost subprogram. */
	first = sc.n;
	while (first-- > 0) {
		if (dwarf_tag(&sc.v[first]) == DW_TAG_subprogram)
			break;
	}
	frames = calloc(sc.n - first, sizeof(*frames));
	err = -ENOMEM;
	if (!frames)
		goto out;
	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		files = NULL;
	for (size_t i = sc.n; i-- > first; n++) {
		struct nw_symframe *fr = &frames[n];

		err = frame_from_die(fr, &sc.v[i]);
		if (err < 0)
			goto out;
		if (err > 0) {
			/* A function without a name: let the ELF symbol table speak. */
			err = 0;
			n++;
			goto out;
		}
		if (n == 0)
			err = frame_pc_line(fr, f->mod, vaddr);
		else
			err = frame_call_site(fr, &sc.v[i + 1], files, nfiles);
		if (err)
			goto out;
	}
	*ret_frames = frames;
	*ret_n = n;
	frames = NULL;
	n = 0;
	err = 0;
out:
	frames_free(frames, n);
	free(sc.v);
	return err;
}

/* One frame from the ELF symbol table at @vaddr; *ret_n is 0 when none holds it. */
static int symbolize_elf(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
			 uint32_t *ret_n)
{
	const struct nw_elfsym *sym;
	struct nw_symframe *fr;
	int err;

	*ret_n = 0;
	if (!f->syms_done) {
		err = elfsyms_build(f);
		if (err)
			return err;
	}
	sym = elfsyms_find(f, vaddr);
	if (!sym)
		return 0;
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	fr->function = demangle(sym->name);
	err = fr->function ? frame_pc_line(fr, f->mod, vaddr) : -ENOMEM;
	if (err) {
		frames_free(fr, 1);
		return err;
	}
	*ret_frames = fr;
	*ret_n = 1;
	return 0;
}

/*
 * A stripped executable (no .symtab: Debian's /usr/bin programs) does not
 * name its entry point, where every thread of its main program starts:
 * the first bytes after e_entry are "_start", so its stacks are complete.
 */
static int symbolize_entry(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
			   uint32_t *ret_n)
{
	struct nw_symframe *fr;

	if (!f->facts->entry || vaddr < f->facts->entry || vaddr - f->facts->entry >= ENTRY_SIZE)
		return 0;
	fr = calloc(1, sizeof(*fr));
	if (!fr || !(fr->function = strdup("_start"))) {
		free(fr);
		return -ENOMEM;
	}
	*ret_frames = fr;
	*ret_n = 1;
	return 0;
}

/* @f's results of earlier runs, looked for once (none without a build-id).  -ENOMEM. */
static int symfile_cache(struct nw_symbolizer *s, struct nw_symfile *f)
{
	const char *debuglink = NULL;
	GElf_Word crc;
	Dwarf_Addr bias;
	struct stat st;
	Elf *elf;

	f->cache_tried = true;
	if (!nw_cache_on(s->cache))
		return 0;
	elf = dwfl_module_getelf(f->mod, &bias);
	if (elf)
		debuglink = dwelf_elf_gnu_debuglink(elf, &crc);
	if (strcmp(f->path, "[vdso]") && stat(f->path, &st) != 0)
		return 0;
	return nw_symcache_open(s->cache, f->path, strcmp(f->path, "[vdso]") ? (uint64_t)st.st_size : 0,
				f->facts->build_id, f->facts->build_id_size, debuglink,
				s->debuginfo_path ? s->debuginfo_path : NW_DEFAULT_DEBUGINFO_PATH,
				&f->cache);
}

/*
 * The file name a report shows for the file read as @path: the recorder
 * reads most files through a descriptor it kept ("/proc/self/fd/N"),
 * whose link names the file.  Into @buf (@len bytes).
 */
static const char *shown_name(const char *path, char *buf, size_t len)
{
	char link[PATH_MAX];
	ssize_t n;

	if (strncmp(path, "/proc/self/fd/", 14) ||
	    (n = readlink(path, link, sizeof(link) - 1)) <= 0)
		return nw_basename(path);
	link[n] = 0;
	if (n > 10 && !strcmp(link + n - 10, " (deleted)"))
		link[n - 10] = 0;
	snprintf(buf, len, "%s", nw_basename(link));
	return buf;
}

/* A 4-byte little- or big-endian field of @elf's byte order at @p. */
static uint32_t rd32(const unsigned char *p, bool msb)
{
	return msb ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		   : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/*
 * The start of the function whose FDE covers @vaddr, from the binary
 * search table of .eh_frame_hdr (the one layout every toolchain writes:
 * datarel sdata4 pairs; FDEs with pcrel sdata4 pc_begin, checked against
 * the table).  false where there is none.
 */
static bool fde_start(Elf *elf, uint64_t vaddr, uint64_t *ret)
{
	bool msb = elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB;
	Elf_Scn *scn = NULL, *hdr = NULL, *eh = NULL;
	Elf_Data *hd, *ed;
	GElf_Shdr hs, es;
	size_t shstrndx, lo, hi, n;
	const unsigned char *t;
	uint64_t loc, fde, begin, range;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (name && !strcmp(name, ".eh_frame_hdr"))
			hdr = scn;
		else if (name && !strcmp(name, ".eh_frame"))
			eh = scn;
	}
	if (!hdr || !eh || !gelf_getshdr(hdr, &hs) || !gelf_getshdr(eh, &es) ||
	    !(hd = elf_rawdata(hdr, NULL)) || !(ed = elf_rawdata(eh, NULL)) || hd->d_size < 12)
		return false;
	t = hd->d_buf;
	/* version 1; fde_count udata4 (0x03); table datarel|sdata4 (0x3b). */
	if (t[0] != 1 || t[2] != 0x03 || t[3] != 0x3b)
		return false;
	n = rd32(t + 8, msb);
	if (n > (hd->d_size - 12) / 8 || !n)
		return false;
	t += 12;
	/* The last entry whose initial location is at or below @vaddr. */
	lo = 0;
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (hs.sh_addr + (uint64_t)(int64_t)(int32_t)rd32(t + 8 * mid, msb) <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	loc = hs.sh_addr + (uint64_t)(int64_t)(int32_t)rd32(t + 8 * (lo - 1), msb);
	fde = hs.sh_addr + (uint64_t)(int64_t)(int32_t)rd32(t + 8 * (lo - 1) + 4, msb);
	/* The FDE: length, CIE pointer, pc_begin (pcrel sdata4), pc_range. */
	if (fde < es.sh_addr || fde - es.sh_addr + 16 > ed->d_size)
		return false;
	{
		const unsigned char *f = (const unsigned char *)ed->d_buf + (fde - es.sh_addr);

		begin = fde + 8 + (uint64_t)(int64_t)(int32_t)rd32(f + 8, msb);
		range = rd32(f + 12, msb);
	}
	if (begin != loc || vaddr - loc >= range)
		return false;
	*ret = loc;
	return true;
}

/*
 * Code no symbol names (a stripped program's or library's own functions,
 * the vdso's static ones): named after the start of the function its
 * .eh_frame covers, "module+0xSTART", so that its samples gather in one
 * frame per function, not one per address as perf shows them.  No debug
 * file is loaded for it.  *ret_n is 0 where no FDE covers @vaddr.
 */
static int symbolize_cfi(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
			 uint32_t *ret_n)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(f->mod, &bias);
	struct nw_symframe *fr;
	char name[NAME_MAX + 1];
	uint64_t start;

	*ret_n = 0;
	if (!elf || !fde_start(elf, vaddr, &start))
		return 0;
	fr = calloc(1, sizeof(*fr));
	if (!fr || !(fr->function = nw_strdup_printf("%s+0x%llx", shown_name(f->path, name,
										 sizeof(name)),
						     (unsigned long long)start))) {
		free(fr);
		return -ENOMEM;
	}
	*ret_frames = fr;
	*ret_n = 1;
	return 0;
}

int nw_symbolize(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
		 struct nw_symframe **ret_frames, uint32_t *ret_n)
{
	struct nw_symframe *frames = NULL;
	struct nw_symfile *f;
	uint32_t n = 0;
	int err;

	err = symfile_lookup(s, path, &f);
	if (err)
		return err;
	if (!f->cache_tried && symfile_cache(s, f) == -ENOMEM)
		return -ENOMEM;
	if (f->cache) {
		err = nw_symcache_get(f->cache, vaddr, ret_frames, ret_n);
		if (err)
			return err < 0 ? err : 0;
	}
	if (symfile_load_of(f, vaddr) >= 0) {
		err = symbolize_dwarf(f, vaddr, &frames, &n);
		if (!err && n == 0)
			err = symbolize_elf(f, vaddr, &frames, &n);
		if (!err && n == 0)
			err = symbolize_entry(f, vaddr, &frames, &n);
		if (!err && n == 0)
			err = symbolize_cfi(f, vaddr, &frames, &n);
		if (err)
			return err;
	}
	if (f->cache && nw_symcache_put(f->cache, vaddr, frames, n)) {
		frames_free(frames, n);
		return -ENOMEM;
	}
	*ret_frames = n ? frames : NULL;
	*ret_n = n;
	return 0;
}
