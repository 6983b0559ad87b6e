/* SPDX-License-Identifier: MIT */
/*
 * Naming code from DWARF (symfile.h): the function whose address ranges
 * hold a PC, found in an index of its CU's functions built at the CU's
 * first lookup; the inlined subroutines below it that hold the PC, from
 * the concrete DIE tree; each frame's name, declaration and call site,
 * the PC's own file:line from the line table.  Relative file names are
 * made absolute with the CU's compilation directory.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "symbol/symfile.h"
#include "util/bsearch.h"
#include "util/strbuf.h"

/* The DIEs of subprograms and inlined subroutines whose code holds a PC, outermost first. */
struct nw_scopes {
	Dwarf_Die *v;
	size_t n, cap;
};

/* Bounds the recursion on DIE trees, which come from untrusted files. */
#define NW_DIE_MAX_DEPTH 256

static int scopes_push(struct nw_scopes *sc, const Dwarf_Die *die)
{
	if (nw_grow(&sc->v, &sc->cap, sc->n + 1, sizeof(*sc->v)))
		return -ENOMEM;
	sc->v[sc->n++] = *die;
	return 0;
}

/* DIEs of @tag have no addresses of their own, but can hold functions: search below them. */
static bool holds_functions(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
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
		default:
			if (!holds_functions(tag))
				break;
			r = scopes_find(&child, pc, sc, depth + 1);
			if (r)
				return r;
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
		int tag = dwarf_tag(&child);
		ptrdiff_t off = 0;

		switch (tag) {
		case DW_TAG_subprogram:
			while ((off = dwarf_ranges(&child, off, &base, &low, &high)) > 0) {
				if (low >= high)
					continue;
				if (nw_grow(&out->v, &out->cap, out->n + 1, sizeof(*out->v)))
					return -ENOMEM;
				out->v[out->n].low = low;
				out->v[out->n].high = high;
				out->v[out->n].die = child;
				out->n++;
			}
			break;
		default:
			if (!holds_functions(tag))
				break;
			r = cufuncs_collect(&child, out, depth + 1);
			if (r)
				return r;
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
	if (nw_grow(&f->cus, &f->cap_cus, f->ncus + 1, sizeof(*f->cus)))
		return -ENOMEM;
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
static uint64_t range_low(const void *v, size_t i)
{
	return ((const struct nw_funcrange *)v)[i].low;
}

static struct nw_funcrange *cufuncs_find(const struct nw_cufuncs *cu, Dwarf_Addr pc)
{
	/* The ranges that start at or below pc. */
	size_t lo = nw_bsearch_le(cu->v, cu->n, pc, range_low);

	for (size_t i = lo; i-- > 0 && cu->v[i].maxhigh > pc;) {
		if (pc < cu->v[i].high)
			return &cu->v[i];
	}
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
	ret = nw_demangle(name);
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
int nw_symframe_pc_line(struct nw_symframe *fr, Dwfl_Module *mod, uint64_t vaddr)
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
int nw_symbolize_dwarf(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
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
			err = nw_symframe_pc_line(fr, f->mod, vaddr);
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
	nw_symframes_free(frames, n);
	free(sc.v);
	return err;
}
