/* SPDX-License-Identifier: MIT */
/*
 * Naming code from the ELF symbol tables (symfile.h), where DWARF knows
 * nothing: the function and untyped code symbols of .symtab (else
 * .dynsym) and of a MiniDebugInfo table, sorted once, one per address.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <elfutils/libdwfl.h>

#include "symbol/symfile.h"
#include "util/bsearch.h"

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

/*
 * The symbol holding @vaddr: the innermost sized symbol that contains it,
 * else the closest symbol below it when that one has no size and lies in
 * the same segment.  NULL when none.
 */
static uint64_t sym_addr(const void *syms, size_t i)
{
	return ((const struct nw_elfsym *)syms)[i].addr;
}

static const struct nw_elfsym *elfsyms_find(const struct nw_symfile *f, uint64_t vaddr)
{
	size_t lo = nw_bsearch_le(f->syms, f->nsyms, vaddr, sym_addr);
	const struct nw_elfsym *below;

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

/* One frame from the ELF symbol table at @vaddr; *ret_n is 0 when none holds it. */
int nw_symbolize_elf(struct nw_symfile *f, uint64_t vaddr, struct nw_symframe **ret_frames,
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
	fr->function = nw_demangle(sym->name);
	err = fr->function ? nw_symframe_pc_line(fr, f->mod, vaddr) : -ENOMEM;
	if (err) {
		nw_symframes_free(fr, 1);
		return err;
	}
	*ret_frames = fr;
	*ret_n = 1;
	return 0;
}

int nw_elfsyms_extent(struct nw_symfile *f, uint64_t vaddr, uint64_t *ret_start,
		      uint64_t *ret_size)
{
	const struct nw_elfsym *sym;
	int err;

	if (!f->syms_done && (err = elfsyms_build(f)))
		return err;
	sym = elfsyms_find(f, vaddr);
	if (!sym || !sym->size || vaddr - sym->addr >= sym->size)
		return -ENOENT;
	*ret_start = sym->addr;
	*ret_size = sym->size;
	return 0;
}
