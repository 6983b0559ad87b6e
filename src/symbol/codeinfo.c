/* SPDX-License-Identifier: MIT */
/* A sampled function's extent, bytes, lines and inlined ranges; see codeinfo.h. */
#include "symbol/codeinfo.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>

#include "util/strbuf.h"

int nw_code_extent(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
		   uint64_t *ret_start, uint64_t *ret_size)
{
	Dwfl_Module *mod = nw_symbolizer_module(s, path);
	Dwarf_Addr bias = 0, lo, hi;
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *cfi;
	int rc;

	if (!mod)
		return -ENOENT;
	/* The symbol that holds it, with its size, from the symbolizer's sorted table. */
	rc = nw_symbolizer_symbol_extent(s, path, vaddr, ret_start, ret_size);
	if (rc != -ENOENT)
		return rc;
	/* Code no symbol holds (a stripped file's own functions): the FDE that covers it. */
	for (int k = 0; k < 2; k++) {
		cfi = k ? dwfl_module_dwarf_cfi(mod, &bias) : dwfl_module_eh_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, vaddr - bias, &frame) != 0)
			continue;
		if (dwarf_frame_info(frame, &lo, &hi, NULL) >= 0 && lo < hi &&
		    vaddr - bias >= lo && vaddr - bias < hi) {
			free(frame);
			*ret_start = lo + bias;
			*ret_size = hi - lo;
			return 0;
		}
		free(frame);
		frame = NULL;
	}
	return -ENOENT;
}

int nw_code_read(struct nw_symbolizer *s, const char *path, uint64_t vaddr, void *buf,
		 uint32_t n)
{
	Dwfl_Module *mod = nw_symbolizer_module(s, path);
	Dwarf_Addr bias;
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	const char *image;
	size_t nph, size;

	if (!elf || elf_getphdrnum(elf, &nph) != 0 || !(image = elf_rawfile(elf, &size)))
		return -ENOENT;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		if (n > ph.p_filesz - (vaddr - ph.p_vaddr) || ph.p_offset > size ||
		    vaddr - ph.p_vaddr + n > size - ph.p_offset)
			return -ERANGE;
		memcpy(buf, image + ph.p_offset + (vaddr - ph.p_vaddr), n);
		return 0;
	}
	return -ERANGE;
}

/* ---- lines ---- */

struct lines {
	struct nw_code_line *v;
	size_t n, cap;
};

/* Appends (offset, file, line), or replaces the last entry at the same offset.  -ENOMEM. */
static int add_line(struct lines *l, uint32_t offset, uint32_t file, uint32_t line)
{
	if (l->n && l->v[l->n - 1].offset == offset) {
		l->v[l->n - 1] = (struct nw_code_line){ offset, file, line };
		return 0;
	}
	/* An entry that says what the one before says adds nothing. */
	if (l->n && l->v[l->n - 1].file == file && l->v[l->n - 1].line == line)
		return 0;
	if (l->n >= NW_CODEINFO_MAX_LINES)
		return 0;
	if (nw_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
		return -ENOMEM;
	l->v[l->n++] = (struct nw_code_line){ offset, file, line };
	return 0;
}

/* The file of line row @line as the symbolizer names it (relative ones under the CU's directory).
 */
static int64_t line_file(struct nw_codestore *cs, Dwarf_Line *line, const char *comp_dir)
{
	const char *file = dwarf_linesrc(line, NULL, NULL);
	char *joined;
	int64_t k;

	if (!file)
		return NW_CODE_NONE;
	if (file[0] == '/' || !comp_dir || comp_dir[0] != '/')
		return nw_codestore_string(cs, file);
	joined = nw_strdup_printf("%s/%s", comp_dir, file);
	if (!joined)
		return -ENOMEM;
	k = nw_codestore_string(cs, joined);
	free(joined);
	return k;
}

static int describe_lines(Dwarf_Die *cudie, Dwarf_Addr bias, uint64_t start, uint64_t size,
			  struct nw_codestore *cs, struct lines *out)
{
	Dwarf_Attribute attr;
	const char *comp_dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	Dwarf_Lines *lines;
	size_t n, lo = 0, hi;
	int rc = 0;

	if (dwarf_getsrclines(cudie, &lines, &n) != 0 || !n)
		return 0;
	/* The rows are sorted by address: the last at or below start, then the rest inside. */
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		Dwarf_Addr a = 0;

		dwarf_lineaddr(dwarf_onesrcline(lines, mid), &a);
		if (a + bias <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo ? lo - 1 : 0; i < n && !rc; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a = 0;
		bool end = false;
		int lineno = 0;
		int64_t file;

		if (!l || dwarf_lineaddr(l, &a) != 0)
			continue;
		a += bias;
		if (a >= start + size)
			break;
		dwarf_lineendsequence(l, &end);
		if (end) {
			/* The sequence ends: what follows has no line unless a row says. */
			if (a > start)
				rc = add_line(out, (uint32_t)(a - start), NW_CODE_NONE, 0);
			continue;
		}
		dwarf_lineno(l, &lineno);
		file = line_file(cs, l, comp_dir);
		if (file < 0)
			return (int)file;
		rc = add_line(out, a > start ? (uint32_t)(a - start) : 0, (uint32_t)file,
			      lineno > 0 ? (uint32_t)lineno : 0);
	}
	/* A sequence that ended at the very start leaves a first entry with nothing known. */
	if (!rc && out->n && out->v[0].file == NW_CODE_NONE && out->v[0].line == 0) {
		memmove(out->v, out->v + 1, (out->n - 1) * sizeof(*out->v));
		out->n--;
	}
	return rc;
}

/* ---- inlined ranges ---- */

struct inlines {
	struct nw_code_inline *v;
	size_t n, cap;
};

/* A malloc'd name of function DIE @die (the linkage name demangled, as the symbolizer's), or NULL.
 */
static char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	char *d;

	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	if (!name)
		return NULL;
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	return d ? d : strdup(name);
}

static int walk_inlines(Dwarf_Die *parent, unsigned depth, Dwarf_Addr bias, uint64_t start,
			uint64_t size, struct nw_codestore *cs, struct inlines *out)
{
	Dwarf_Die child;
	int rc = 0;

	if (depth > 64 || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_inlined_subroutine) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;
			char *name = die_name(&child);
			int64_t k =
			    name ? nw_codestore_string(cs, name) : nw_codestore_string(cs, "??");

			free(name);
			if (k < 0)
				return (int)k;
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				lo += bias;
				hi += bias;
				if (hi <= start || lo >= start + size || lo >= hi)
					continue;
				if (out->n >= NW_CODEINFO_MAX_INLINES)
					break;
				if (nw_grow(&out->v, &out->cap, out->n + 1, sizeof(*out->v)))
					return -ENOMEM;
				out->v[out->n++] = (struct nw_code_inline){
				    .lo = lo > start ? (uint32_t)(lo - start) : 0,
				    .hi =
					(uint32_t)((hi < start + size ? hi : start + size) - start),
				    .name = (uint32_t)k,
				    .depth = depth + 1};
			}
			rc = walk_inlines(&child, depth + 1, bias, start, size, cs, out);
		} else if (tag == DW_TAG_lexical_block) {
			rc = walk_inlines(&child, depth, bias, start, size, cs, out);
		}
	} while (!rc && dwarf_siblingof(&child, &child) == 0);
	return rc;
}

static int inline_cmp(const void *a, const void *b)
{
	const struct nw_code_inline *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi;
}

/* The DW_TAG_subprogram under @parent whose code holds @pc, into @ret.  false: none. */
static bool find_subprogram(Dwarf_Die *parent, Dwarf_Addr pc, unsigned depth, Dwarf_Die *ret)
{
	Dwarf_Die child;

	if (depth > 16 || dwarf_child(parent, &child) != 0)
		return false;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			if (dwarf_haspc(&child, pc) == 1) {
				*ret = child;
				return true;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (find_subprogram(&child, pc, depth + 1, ret))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/*
 * The ranges inlined into the function that starts at @start, found by
 * walking its own DIE (dwarf_getscopes() would leave the concrete
 * function out: past an inlined instance it goes on with the abstract
 * definition's scopes).
 */
static int describe_inlines(Dwarf_Die *cudie, Dwarf_Addr bias, uint64_t start, uint64_t size,
			    struct nw_codestore *cs, struct inlines *out)
{
	Dwarf_Die fn;
	int rc;

	if (!find_subprogram(cudie, start - bias, 0, &fn))
		return 0;
	rc = walk_inlines(&fn, 0, bias, start, size, cs, out);
	if (!rc && out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), inline_cmp);
	return rc;
}

int nw_code_describe(struct nw_symbolizer *s, const char *path, uint64_t start, uint64_t size,
		     struct nw_codestore *cs, struct nw_code_line **ret_lines, uint32_t *ret_nlines,
		     struct nw_code_inline **ret_inl, uint32_t *ret_ninl)
{
	Dwfl_Module *mod = nw_symbolizer_module(s, path);
	struct lines l = { 0 };
	struct inlines in = { 0 };
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie;
	int rc = 0;

	*ret_lines = NULL;
	*ret_inl = NULL;
	*ret_nlines = *ret_ninl = 0;
	cudie = mod && size ? dwfl_module_addrdie(mod, start, &bias) : NULL;
	if (!cudie)
		return 0;
	rc = describe_lines(cudie, bias, start, size, cs, &l);
	if (!rc)
		rc = describe_inlines(cudie, bias, start, size, cs, &in);
	if (rc) {
		free(l.v);
		free(in.v);
		return rc;
	}
	*ret_lines = l.v;
	*ret_nlines = (uint32_t)l.n;
	*ret_inl = in.v;
	*ret_ninl = (uint32_t)in.n;
	return 0;
}
