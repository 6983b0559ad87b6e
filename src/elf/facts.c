/* SPDX-License-Identifier: MIT */
/* ELF facts through libelf, cached by path; see facts.h. */
#include "elf/facts.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "elf/vdso.h"
#include "util/hash.h"
#include "util/strbuf.h"

struct entry {
	char *path;
	int err;                /* < 0: the file could not be read */
	struct nw_module_facts facts;
};

struct nw_elf_cache {
	struct entry **v;       /* each entry allocated once: the facts handed out stay put */
	size_t n, cap;
	struct nw_index ix;     /* by path */
	struct nw_vdso vdso;
};

struct nw_elf_cache *nw_elf_cache_new(void)
{
	struct nw_elf_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	nw_vdso_init(&c->vdso);
	elf_version(EV_CURRENT);
	return c;
}

void nw_elf_cache_free(struct nw_elf_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i]->path);
		free(c->v[i]->facts.segs);
		free(c->v[i]);
	}
	free(c->v);
	nw_index_fini(&c->ix);
	nw_vdso_fini(&c->vdso);
	free(c);
}

static bool has_cfi(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".debug_frame")))
			return true;
	}
	return false;
}

/* Reads the facts of the ELF file open at @fd.  -ENOENT, -ENOMEM. */
static int read_facts(int fd, struct nw_module_facts *f)
{
	const void *id = NULL;
	size_t phnum, n = 0;
	GElf_Ehdr eh;
	ssize_t idlen;
	Elf *elf;
	int err = 0;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &phnum) != 0) {
		err = -ENOENT;
		goto out;
	}
	f->machine = eh.e_machine;
	f->dyn = eh.e_type == ET_DYN;
	f->entry = eh.e_entry;
	f->segs = calloc(phnum ? phnum : 1, sizeof(*f->segs));
	if (!f->segs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[n++] = (struct nw_segment){ .vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
							.offset = ph.p_offset,
							.filesz = ph.p_filesz,
							.exec = (ph.p_flags & PF_X) != 0 };
	}
	f->nsegs = (uint32_t)n;
	idlen = dwelf_elf_gnu_build_id(elf, &id);
	if (idlen > 0 && idlen <= NW_BUILD_ID_MAX) {
		memcpy(f->build_id, id, (size_t)idlen);
		f->build_id_size = (uint8_t)idlen;
	}
	f->has_cfi = has_cfi(elf);
	f->known = true;
out:
	if (elf)
		elf_end(elf);
	return err;
}

static uint64_t entry_hash(const void *ctx, uint32_t i)
{
	const struct nw_elf_cache *c = ctx;

	return nw_hash_str(NW_HASH_SEED, c->v[i]->path);
}

static bool entry_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_elf_cache *c = ctx;

	return strcmp(c->v[i]->path, key) == 0;
}

int nw_elf_facts_get(struct nw_elf_cache *c, const char *path,
		     const struct nw_module_facts **ret)
{
	uint32_t *slot = nw_index_slot(&c->ix, nw_hash_str(NW_HASH_SEED, path), entry_eq,
				       entry_hash, c, path);
	struct entry *e;
	int fd;

	if (!slot)
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE) {
		e = c->v[*slot];
		goto out;
	}
	if (nw_grow(&c->v, &c->cap, c->n + 1, sizeof(*c->v)))
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->path = strdup(path);
	if (!e->path) {
		free(e);
		return -ENOMEM;
	}
	if (!strcmp(path, "[vdso]"))
		fd = nw_vdso_dup_fd(&c->vdso);
	else
		fd = path[0] == '/' ? open(path, O_RDONLY | O_CLOEXEC) : -ENOENT;
	if (fd < 0) {
		e->err = -ENOENT;
	} else {
		e->err = read_facts(fd, &e->facts);
		close(fd);
	}
	if (e->err == -ENOMEM) {
		/* Not a property of the file: not remembered, so a later call retries. */
		free(e->facts.segs);
		free(e->path);
		free(e);
		return -ENOMEM;
	}
	c->v[c->n] = e;
	nw_index_fill(&c->ix, slot, (uint32_t)c->n++);
out:
	if (e->err)
		return e->err;
	*ret = &e->facts;
	return 0;
}

int nw_elf_facts_for(struct nw_elf_cache *c, const char *path, const uint8_t *build_id,
		     size_t size, struct nw_module_facts *dst)
{
	const struct nw_module_facts *f;
	int err = nw_elf_facts_get(c, path, &f);

	memset(dst, 0, sizeof(*dst));
	if (err == -ENOMEM)
		return err;
	/* Not there, or another build than the one that was mapped. */
	if (err || (size && (f->build_id_size != size || memcmp(f->build_id, build_id, size))))
		return 0;
	return nw_module_facts_copy(dst, f);
}

/* Opens @path with libelf: 0 with *@ret_elf and *@ret_fd, -ENOENT when not ELF, -errno. */
static int open_elf(const char *path, Elf **ret_elf, int *ret_fd)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -ENOENT;
	}
	*ret_elf = elf;
	*ret_fd = fd;
	return 0;
}

/* Calls @fn for each defined symbol of the tables of type @type (SHT_SYMTAB, SHT_DYNSYM). */
static int walk_symbols(Elf *elf, uint32_t type, nw_elf_symbol_fn fn, void *arg)
{
	Elf_Scn *scn = NULL;
	int ret = 0;

	while (!ret && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; !ret && data && i < sh.sh_size / sh.sh_entsize; i++) {
			struct nw_elf_symbol es;
			GElf_Sym sym;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			es.name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!es.name || !*es.name)
				continue;
			es.value = sym.st_value;
			es.size = sym.st_size;
			es.type = GELF_ST_TYPE(sym.st_info);
			es.dynamic = type == SHT_DYNSYM;
			ret = fn(arg, &es);
		}
	}
	return ret;
}

int nw_elf_symbols(const char *path, nw_elf_symbol_fn fn, void *arg)
{
	Elf *elf;
	int fd, ret = open_elf(path, &elf, &fd);

	if (ret)
		return ret;
	ret = walk_symbols(elf, SHT_SYMTAB, fn, arg);
	if (!ret)
		ret = walk_symbols(elf, SHT_DYNSYM, fn, arg);
	elf_end(elf);
	close(fd);
	return ret;
}

struct find_func {
	const char *name;
	uint64_t value;
};

static int match_func(void *arg, const struct nw_elf_symbol *sym)
{
	struct find_func *f = arg;

	if (sym->type != STT_FUNC || strcmp(sym->name, f->name))
		return 0;
	f->value = sym->value;
	return 1;
}

int nw_elf_needs(const char *path, void (*fn)(void *arg, const char *name, bool interp),
		 void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t nphdr = 0;
	int ret = 0;

	if (!elf || elf_getphdrnum(elf, &nphdr)) {
		ret = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		Elf_Scn *scn;
		Elf_Data *data;
		GElf_Shdr sh;
		char interp[4096];

		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		if (ph.p_type == PT_INTERP && ph.p_filesz && ph.p_filesz < sizeof(interp) &&
		    pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz) {
			interp[ph.p_filesz - 1] = 0;
			fn(arg, interp, true);
		}
		if (ph.p_type != PT_DYNAMIC)
			continue;
		/* DT_NEEDED names are in the dynamic section's string table. */
		scn = gelf_offscn(elf, ph.p_offset);
		data = scn && gelf_getshdr(scn, &sh) ? elf_getdata(scn, NULL) : NULL;
		for (size_t k = 0; data && k < sh.sh_size / sizeof(GElf_Dyn); k++) {
			GElf_Dyn dyn;
			const char *name;

			if (gelf_getdyn(data, (int)k, &dyn) && dyn.d_tag == DT_NEEDED &&
			    (name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val)))
				fn(arg, name, false);
		}
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ret;
}

int nw_elf_symbol_offset(const char *path, const char *name, uint64_t *ret_off)
{
	struct find_func f = { .name = name };
	Elf *elf;
	int fd, err = open_elf(path, &elf, &fd);
	bool found;
	size_t phnum;

	if (err)
		return err;
	err = -ENOENT;
	found = elf_getphdrnum(elf, &phnum) == 0 && walk_symbols(elf, SHT_DYNSYM, match_func, &f);
	for (size_t i = 0; found && i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    f.value < ph.p_vaddr || f.value >= ph.p_vaddr + ph.p_filesz)
			continue;
		*ret_off = f.value - ph.p_vaddr + ph.p_offset;
		err = 0;
		break;
	}
	elf_end(elf);
	close(fd);
	return err;
}
