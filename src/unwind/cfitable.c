/* SPDX-License-Identifier: MIT */
/*
 * Compiling a module's CFI into the in-kernel unwinder's table; see
 * cfitable.h.
 *
 * libdw finds FDEs by address but cannot list them, so the FDEs are listed
 * here with dwarf_next_cfi, decoding only what libdw leaves raw: each
 * FDE's address range, in the pointer encoding its CIE's augmentation
 * names.  Each FDE is then walked row by row with libdw itself
 * (dwarf_cfi_addrframe at the row's start gives the row and where it
 * ends), so the table holds exactly what libdw would answer for every
 * address -- the rows dwarf.c compiles one PC at a time.
 */
#include "unwind/cfitable.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>

#include "arch/arch.h"
#include "unwind/cfirule.h"
#include "util/bsearch.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

_Static_assert(sizeof(struct nw_cfi_row) == 12, "bpf/abi.h: a row is 12 bytes");

/*
 * The cache file's format, and the compiler's way of making rows: bump it
 * when this file or cfirule.c would compile any row differently, so that no
 * table of an earlier version is used.
 */
#define MAGIC "NWCFIT3"   /* 2: NW_CFA_SIGNAL rows; 3: NW_CFA_REG */

/* A cache file: this header, then nrows rows as in memory (host byte order). */
struct file_header {
	char magic[8];
	uint32_t nrows;
	uint32_t flags;         /* 1: from_debug_frame */
	struct nw_cfi_table_stats stats;
};

struct load {
	uint64_t vaddr, end, offset;
};

/* A compiled CFI row over file offsets [off, end), before sorting and gaps. */
struct span {
	uint32_t off, end;
	struct nw_cfi_row row;
};

/* A CIE's pointer encoding, by section offset. */
struct cie {
	uint64_t offset;
	uint8_t enc;
	bool ok;                /* the augmentation was understood */
};

struct builder {
	Elf *elf;
	Dwarf_CFI *cfi;
	bool eh_frame;
	unsigned ptr_size;
	struct load *loads;
	size_t nloads;
	struct cie *cies;
	size_t ncies, cap_cies;
	struct span *spans;
	size_t nspans, cap_spans;
	struct nw_cfi_table_stats stats;
	struct nw_cfi_table *t;
	size_t cap_rows;
};

void nw_cfi_table_free(struct nw_cfi_table *t)
{
	if (!t)
		return;
	if (t->map)
		munmap(t->map, t->map_len);
	else
		free(t->rows);
	memset(t, 0, sizeof(*t));
}

static uint64_t row_off(const void *rows, size_t i)
{
	return ((const struct nw_cfi_row *)rows)[i].off;
}

int nw_cfi_table_find(const struct nw_cfi_table *t, uint32_t off)
{
	/* The last row that starts at or below @off. */
	size_t n = nw_bsearch_le(t->rows, t->nrows, off, row_off);

	return n ? (int)n - 1 : -1;
}

/* What the in-kernel unwinder can follow of @r (x86-64: RA at CFA - 8). */
static void row_from_rule(const struct nw_cfi_rule *r, struct nw_cfi_row *row)
{
	memset(row, 0, sizeof(*row));
	row->cfa = NW_CFA_COMPLEX;
	if (r->kind == NW_CFI_RULE_NONE) {
		row->cfa = NW_CFA_GAP;
		return;
	}
	if (r->kind == NW_CFI_RULE_COMPLEX || (r->kind == NW_CFI_RULE_PLT && r->plt_min != 11))
		return;
	if (r->ra == NW_CFI_REG_UNDEFINED) {
		row->cfa = NW_CFA_END;
		return;
	}
	if (r->ra != NW_CFI_REG_AT_CFA || r->ra_off != -8)
		return;
	if (r->fp == NW_CFI_REG_AT_CFA) {
		if (r->fp_off < INT16_MIN || r->fp_off > INT16_MAX)
			return;
		row->fp = NW_FP_AT_CFA;
		row->fp_off = (int16_t)r->fp_off;
	} else {
		row->fp = r->fp == NW_CFI_REG_SAME ? NW_FP_SAME : NW_FP_UNDEF;
	}
	row->cfa_off = r->cfa_off;
	if (r->kind == NW_CFI_RULE_PLT)
		row->cfa = NW_CFA_PLT;
	else
		row->cfa = r->cfa_from_fp ? NW_CFA_FP : NW_CFA_SP;
}

/* The row of @frame, compiled into *@r on the way. */
static void frame_row(Dwarf_Frame *frame, struct nw_cfi_rule *r, struct nw_cfi_row *row)
{
	bool signal = false;
	Dwarf_Op *ops;
	size_t nops;

	nw_cfi_rule_compile(&nw_arch_x86_64, frame, r);
	row_from_rule(r, row);
	/* A signal frame ('S' in its CIE): the in-kernel unwinder reads the rt_sigframe. */
	if (dwarf_frame_info(frame, NULL, NULL, &signal) >= 0 && signal) {
		row->cfa = NW_CFA_SIGNAL;
		return;
	}
	/*
	 * A CFA kept in a register but FP (DW_CFA_def_cfa): FP is not this
	 * frame's frame pointer, and the fallback would skip a frame.
	 */
	if (row->cfa == NW_CFA_COMPLEX && dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1) {
		int reg = ops[0].atom == DW_OP_bregx ? (int)ops[0].number
			  : ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31
				  ? ops[0].atom - DW_OP_breg0
				  : -1;

		if (reg >= 0 && reg != nw_arch_x86_64.dwarf_fp)
			row->cfa = NW_CFA_REG;
	}
}

void nw_cfi_table_row(Dwarf_Frame *frame, struct nw_cfi_row *row)
{
	struct nw_cfi_rule r = { .kind = NW_CFI_RULE_NONE };

	if (frame)
		frame_row(frame, &r, row);
	else
		row_from_rule(&r, row);
}

static bool same_rule(const struct nw_cfi_row *a, const struct nw_cfi_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off && a->fp == b->fp &&
	       a->fp_off == b->fp_off;
}

/* The PT_LOAD segments, by vaddr. */
static int read_loads(struct builder *b)
{
	size_t n;

	if (elf_getphdrnum(b->elf, &n) != 0)
		return -EINVAL;
	b->loads = calloc(n ? n : 1, sizeof(*b->loads));
	if (!b->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(b->elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_memsz)
			b->loads[b->nloads++] = (struct load){ ph.p_vaddr, ph.p_vaddr + ph.p_memsz,
							       ph.p_offset };
	}
	return 0;
}

static const struct load *load_of(const struct builder *b, uint64_t vaddr)
{
	for (size_t i = 0; i < b->nloads; i++)
		if (vaddr >= b->loads[i].vaddr && vaddr < b->loads[i].end)
			return &b->loads[i];
	return NULL;
}

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/*
 * Reads a pointer encoded as @enc (DW_EH_PE_*) at *@p, which lies at
 * @vaddr.  Only absolute and PC-relative fixed-size forms: the ones FDE
 * addresses use.
 */
static bool read_encoded(uint8_t enc, unsigned ptr_size, const uint8_t **p, const uint8_t *end,
			 uint64_t vaddr, uint64_t *ret)
{
	unsigned size;
	bool is_signed = enc & DW_EH_PE_signed;
	uint64_t v = 0;

	switch (enc & 0x07) {
	case DW_EH_PE_absptr:
		size = ptr_size;
		break;
	case DW_EH_PE_udata2:
		size = 2;
		break;
	case DW_EH_PE_udata4:
		size = 4;
		break;
	case DW_EH_PE_udata8:
		size = 8;
		break;
	default:
		return false; /* LEB128 forms: never an FDE's address */
	}
	if ((size_t)(end - *p) < size)
		return false;
	if (size == 2) {
		uint16_t x;

		memcpy(&x, *p, 2);
		v = is_signed ? (uint64_t)(int64_t)(int16_t)x : x;
	} else if (size == 4) {
		uint32_t x;

		memcpy(&x, *p, 4);
		v = is_signed ? (uint64_t)(int64_t)(int32_t)x : x;
	} else {
		memcpy(&v, *p, 8);
	}
	*p += size;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		v += vaddr;
	else if (enc & 0x70)
		return false;
	*ret = v;
	return true;
}

/* The FDE pointer encoding of a CIE: the 'R' of its "z..." augmentation. */
static struct cie parse_cie(const struct builder *b, uint64_t offset, const Dwarf_CIE *c)
{
	struct cie cie = { .offset = offset, .enc = DW_EH_PE_absptr, .ok = true };
	const uint8_t *p = c->augmentation_data;
	const uint8_t *end = p ? p + c->augmentation_data_size : NULL;
	uint64_t skip;

	if (!b->eh_frame || !c->augmentation[0])
		return cie;
	if (c->augmentation[0] != 'z') {
		cie.ok = !strcmp(c->augmentation, "eh"); /* an old GCC's; absolute pointers */
		return cie;
	}
	for (const char *a = c->augmentation + 1; *a && cie.ok; a++) {
		switch (*a) {
		case 'R':
			cie.ok = p < end;
			if (cie.ok)
				cie.enc = *p++;
			break;
		case 'P':
			/* The personality routine: skipped, in its own encoding. */
			cie.ok = p < end;
			if (cie.ok) {
				uint8_t enc = *p++;

				cie.ok = (enc & 0x0f) == DW_EH_PE_uleb128
						 ? read_uleb(&p, end, &skip)
						 : read_encoded(enc & 0x0f, b->ptr_size, &p, end, 0, &skip);
			}
			break;
		case 'L':
			p++;
			cie.ok = p <= end;
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			cie.ok = false;
		}
	}
	return cie;
}

static const struct cie *cie_at(const struct builder *b, uint64_t offset)
{
	size_t lo = 0, hi = b->ncies;

	/* CIEs are added as the section is read, so by offset. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->cies[mid].offset == offset)
			return &b->cies[mid];
		if (b->cies[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int add_span(struct builder *b, uint64_t start, uint64_t end, const struct nw_cfi_row *row)
{
	const struct load *l = load_of(b, start);
	uint64_t off, off_end;

	if (!l)
		return 0; /* not mapped: nothing will ever run there */
	if (end > l->end)
		end = l->end;
	off = start - l->vaddr + l->offset;
	off_end = end - l->vaddr + l->offset;
	if (off_end > UINT32_MAX)
		return -EFBIG;
	if (nw_grow(&b->spans, &b->cap_spans, b->nspans + 1, sizeof(*b->spans)))
		return -ENOMEM;
	b->spans[b->nspans++] = (struct span){ (uint32_t)off, (uint32_t)off_end, *row };
	return 0;
}

/* Compiles the rows of the FDE over [lo, hi), as libdw reads them. */
static int walk_fde(struct builder *b, uint64_t lo, uint64_t hi)
{
	uint64_t addr = lo;
	int err = 0;

	while (addr < hi && !err) {
		Dwarf_Frame *frame;
		Dwarf_Addr start, end;
		struct nw_cfi_rule r;
		struct nw_cfi_row row;

		if (dwarf_cfi_addrframe(b->cfi, addr, &frame) != 0)
			break; /* libdw does not find it either: a gap */
		frame_row(frame, &r, &row);
		dwarf_frame_info(frame, &start, &end, NULL);
		free(frame);
		if (end <= addr)
			break;
		if (r.kind == NW_CFI_RULE_PLT && r.plt_min != 11)
			b->stats.plt_other++;
		if (end > hi)
			end = hi;
		err = add_span(b, addr, end, &row);
		addr = end;
	}
	return err;
}

/* Every FDE of the CFI section @data (at vaddr @sh_addr) compiled into spans. */
static int walk_section(struct builder *b, Elf_Data *data, uint64_t sh_addr)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(b->elf, NULL);
	Dwarf_Off offset = 0, next;
	Dwarf_CFI_Entry e;
	int err = 0;

	while (!err && offset < data->d_size &&
	       dwarf_next_cfi(ident, data, b->eh_frame, offset, &next, &e) == 0) {
		if (dwarf_cfi_cie_p(&e)) {
			if (nw_grow(&b->cies, &b->cap_cies, b->ncies + 1, sizeof(*b->cies)))
				return -ENOMEM;
			b->cies[b->ncies++] = parse_cie(b, offset, &e.cie);
		} else {
			const struct cie *cie = cie_at(b, e.fde.CIE_pointer);
			const uint8_t *p = e.fde.start;
			uint64_t vaddr = sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf);
			uint64_t lo, len;

			if (cie && cie->ok &&
			    read_encoded(cie->enc, b->ptr_size, &p, e.fde.end, vaddr, &lo) &&
			    read_encoded(cie->enc & 0x0f, b->ptr_size, &p, e.fde.end, 0, &len)) {
				if (len) {
					b->stats.fdes++;
					err = walk_fde(b, lo, lo + len);
				}
			} else {
				b->stats.fdes_skipped++;
			}
		}
		if (next == (Dwarf_Off)-1)
			break;
		offset = next;
	}
	return err;
}

static int span_cmp(const void *pa, const void *pb)
{
	const struct span *a = pa, *b = pb;

	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

static int emit(struct builder *b, uint32_t off, const struct nw_cfi_row *row)
{
	struct nw_cfi_table *t = b->t;

	/* A row that covers nothing gives way to the one at its offset. */
	if (t->nrows && t->rows[t->nrows - 1].off == off)
		t->nrows--;
	if (t->nrows && same_rule(&t->rows[t->nrows - 1], row))
		return 0;
	if (nw_grow(&t->rows, &b->cap_rows, (size_t)t->nrows + 1, sizeof(*t->rows)))
		return -ENOMEM;
	t->rows[t->nrows] = *row;
	t->rows[t->nrows++].off = off;
	return 0;
}

/* The spans, sorted, into rows: overlaps cut, gaps marked, equal rules merged. */
static int make_rows(struct builder *b)
{
	const struct nw_cfi_row gap = { .cfa = NW_CFA_GAP };
	uint32_t covered = 0;
	bool any = false;
	int err = 0;

	qsort(b->spans, b->nspans, sizeof(*b->spans), span_cmp);
	for (size_t i = 0; i < b->nspans && !err; i++) {
		struct span s = b->spans[i];

		if (any && s.off < covered)
			s.off = covered; /* FDEs that overlap: the earlier one wins */
		if (s.off >= s.end)
			continue;
		if (any && s.off > covered)
			err = emit(b, covered, &gap);
		if (!err)
			err = emit(b, s.off, &s.row);
		covered = s.end;
		any = true;
	}
	if (any && !err)
		err = emit(b, covered, &gap);
	return err;
}

static void count_rows(struct nw_cfi_table *t)
{
	for (uint32_t i = 0; i < t->nrows; i++) {
		const struct nw_cfi_row *r = &t->rows[i];

		t->stats.complex += r->cfa == NW_CFA_COMPLEX;
		t->stats.gap += r->cfa == NW_CFA_GAP;
		t->stats.plt += r->cfa == NW_CFA_PLT;
		t->stats.end += r->cfa == NW_CFA_END;
		t->stats.reg += r->cfa == NW_CFA_REG;
		if (r->cfa == NW_CFA_COMPLEX && i + 1 < t->nrows)
			t->stats.complex_bytes += t->rows[i + 1].off - r->off;
	}
}

/*
 * The CFI to compile: .eh_frame, else the file's own .debug_frame.  Sets
 * b->cfi (and *@dw, which owns it for .debug_frame); NULL section: none.
 */
static Elf_Scn *open_cfi(struct builder *b, Dwarf **dw)
{
	Elf_Scn *scn = nw_cfi_section(b->elf, ".eh_frame");

	*dw = NULL;
	if (scn) {
		b->eh_frame = true;
		b->cfi = dwarf_getcfi_elf(b->elf);
		return b->cfi ? scn : NULL;
	}
	scn = nw_cfi_section(b->elf, ".debug_frame");
	if (!scn)
		return NULL;
	/* libdw inflates a compressed section in place; the walk then reads the same bytes. */
	*dw = dwarf_begin_elf(b->elf, DWARF_C_READ, NULL);
	b->cfi = *dw ? dwarf_getcfi(*dw) : NULL;
	if (!b->cfi && *dw) {
		dwarf_end(*dw);
		*dw = NULL;
	}
	return b->cfi ? scn : NULL;
}

static int build_elf(Elf *elf, struct nw_cfi_table *t)
{
	struct builder b = { .elf = elf, .t = t };
	GElf_Ehdr eh;
	Elf_Scn *scn;
	Dwarf *dw = NULL;
	int err;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64)
		return -EINVAL;
	b.ptr_size = eh.e_ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
	err = read_loads(&b);
	scn = err ? NULL : open_cfi(&b, &dw);
	if (scn) {
		GElf_Shdr sh;
		Elf_Data *data = elf_getdata(scn, NULL);

		t->from_debug_frame = !b.eh_frame;
		if (data && data->d_buf && gelf_getshdr(scn, &sh))
			err = walk_section(&b, data, b.eh_frame ? sh.sh_addr : 0);
		if (!err)
			err = make_rows(&b);
	}
	if (b.eh_frame && b.cfi)
		dwarf_cfi_end(b.cfi);
	if (dw)
		dwarf_end(dw);
	free(b.loads);
	free(b.cies);
	free(b.spans);
	t->stats.fdes = b.stats.fdes;
	t->stats.fdes_skipped = b.stats.fdes_skipped;
	t->stats.plt_other = b.stats.plt_other;
	count_rows(t);
	return err;
}

int nw_cfi_table_build(int fd, const char *path, struct nw_cfi_table *ret)
{
	struct nw_cfi_table t = { 0 };
	int own = -1, err;
	Elf *elf;

	if (fd < 0) {
		own = fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf && elf_kind(elf) == ELF_K_ELF ? build_elf(elf, &t) : -EINVAL;
	if (elf)
		elf_end(elf);
	if (own >= 0)
		close(own);
	if (err) {
		nw_debug("cfi table of %s: %s", path, strerror(-err));
		nw_cfi_table_free(&t);
		return err;
	}
	*ret = t;
	return 0;
}

/* The cache file's name: build-id (or the file as make knows it), size, format. */
static bool cache_name(int fd, const char *path, const uint8_t *id, unsigned idlen,
		       char *name, size_t size)
{
	struct stat st;
	uint64_t h;
	char hex[2 * 64 + 1] = "";

	if (idlen > 64 || (fd >= 0 ? fstat(fd, &st) : stat(path, &st)) != 0)
		return false;
	h = nw_hash_str(nw_hash_add(0, (uint64_t)st.st_size), MAGIC);
	for (unsigned i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	if (idlen) {
		snprintf(name, size, "cfi-%s-%016llx", hex, (unsigned long long)h);
	} else {
		h = nw_hash_add(nw_hash_add(h, (uint64_t)st.st_dev), (uint64_t)st.st_ino);
		h = nw_hash_add(nw_hash_add(h, (uint64_t)st.st_mtim.tv_sec),
				(uint64_t)st.st_mtim.tv_nsec);
		snprintf(name, size, "cfi-file-%016llx", (unsigned long long)h);
	}
	return true;
}

/*
 * A cached table, checked whole: a file that is short or wrong is not
 * used.  Its rows are read in place, in a mapping of the file (rustc's
 * driver's 1.1 million rows: no copy on the way to the kernel's maps).
 */
static bool load_cached(const struct nw_cache *cache, const char *name, struct nw_cfi_table *t)
{
	struct file_header h;
	void *map = NULL;
	size_t len = 0;
	bool ok = false;

	if (nw_cache_map(cache, name, &map, &len) || len < sizeof(h))
		goto out;
	memcpy(&h, map, sizeof(h));
	/* The header is a multiple of the rows' alignment: the rows can be read in place. */
	if (memcmp(h.magic, MAGIC, sizeof(h.magic)) || h.flags > 1 ||
	    (len - sizeof(h)) / sizeof(*t->rows) != h.nrows ||
	    (len - sizeof(h)) % sizeof(*t->rows) || sizeof(h) % _Alignof(struct nw_cfi_row))
		goto out;
	/* Read whole, next: the pages in at once (MADV_POPULATE_READ, Linux 5.14). */
#ifdef MADV_POPULATE_READ
	madvise(map, len, MADV_POPULATE_READ);
#endif
	memset(t, 0, sizeof(*t));
	t->rows = (struct nw_cfi_row *)((char *)map + sizeof(h));
	t->nrows = h.nrows;
	t->map = map;
	t->map_len = len;
	map = NULL;
	ok = true;
	for (uint32_t i = 0; i < t->nrows && ok; i++)
		ok = t->rows[i].cfa <= NW_CFA_REG && t->rows[i].fp <= NW_FP_UNDEF &&
		     (!i || t->rows[i].off > t->rows[i - 1].off);
	t->from_debug_frame = h.flags & 1;
	t->from_cache = true;
	t->stats = h.stats;
	if (!ok)
		nw_cfi_table_free(t);
out:
	if (map)
		munmap(map, len);
	return ok;
}

static void store(const struct nw_cache *cache, const char *name, const struct nw_cfi_table *t)
{
	struct file_header h = { .nrows = t->nrows, .flags = t->from_debug_frame,
				 .stats = t->stats };
	size_t rows = (size_t)t->nrows * sizeof(*t->rows);
	char *buf = malloc(sizeof(h) + rows);

	if (!buf)
		return;
	memcpy(h.magic, MAGIC, sizeof(h.magic));
	memcpy(buf, &h, sizeof(h));
	if (rows)
		memcpy(buf + sizeof(h), t->rows, rows);
	if (nw_cache_write(cache, name, buf, sizeof(h) + rows) == 0)
		nw_cache_prune(cache);
	free(buf);
}

int nw_cfi_table_get(const struct nw_cache *cache, int fd, const char *path,
		     const uint8_t *build_id, unsigned idlen, struct nw_cfi_table *t)
{
	char name[NAME_MAX + 1];
	bool cached = nw_cache_on(cache) && cache_name(fd, path, build_id, idlen, name,
							sizeof(name));
	int err;

	if (cached && load_cached(cache, name, t))
		return 0;
	err = nw_cfi_table_build(fd, path, t);
	if (!err && cached)
		store(cache, name, t);
	return err;
}
