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
 * "[vdso]" is this process's vdso image (elf/vdso.h).  A PC is named by
 * the first of DWARF (dwarfsyms.c), the ELF symbol tables (elfsyms.c), the
 * entry point of a stripped program (here) and its CFI (cfinames.c) that
 * knows it.  Results are kept between runs (symbol/symcache.h): a change
 * to any of them that resolves an address differently must bump
 * symcache.c's MAGIC.
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

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>

#include "elf/vdso.h"
#include "symbol/symcache.h"
#include "symbol/symfile.h"
#include "util/strbuf.h"

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
 * The first DIR/.build-id/xx/rest.debug, for each absolute DIR of @dirs
 * (a debuginfo path) and the build-id @hex: opened read-only (its name in
 * @path), or -1 when none is there.
 */
static int build_id_file(const char *dirs, const char *hex, char *path, size_t size)
{
	/* A leading + or - says whether to check CRCs: no directory. */
	if (*dirs == '+' || *dirs == '-')
		dirs++;
	for (const char *p = dirs; strlen(hex) > 2 && p;) {
		const char *end = strchr(p, ':');
		int n = end ? (int)(end - p) : (int)strlen(p), fd;

		if (n && p[0] == '/' &&
		    snprintf(path, size, "%.*s/.build-id/%.2s/%s.debug", n, p, hex, hex + 2) <
			    (int)size &&
		    (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
			return fd;
		p = end ? end + 1 : NULL;
	}
	return -1;
}

static void hex_of(const unsigned char *id, int idlen, char *hex)
{
	hex[0] = 0;
	for (int i = 0; i < idlen && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
}

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
	char hex[2 * 64 + 1], path[PATH_MAX];
	bool any = true;
	int fd;

	hex_of(id, idlen, hex);
	/*
	 * By build-id first, as libdwfl does; done here because libdwfl's own
	 * lookup opens the file it finds itself (its ELF handle, not the fd
	 * returned, is used), so an uncompressed copy could not take its place.
	 * Not compressed: libdwfl's own lookup takes it.
	 */
	if (s && nw_cache_on(s->cache) && (fd = build_id_file(dirs, hex, path, sizeof(path))) >= 0) {
		int d = dup(fd), copy = nw_symcache_debug_fd(s->cache, d);

		close(fd);
		if (copy >= 0 && copy != d) {
			*debuginfo_file_name = strdup(path);
			return copy;
		}
		if (copy >= 0)
			close(copy);
	}
	if (*dirs == '+' || *dirs == '-')
		dirs++;
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

bool nw_debug_file_by_build_id(const uint8_t *id, unsigned idlen, char *path, size_t size)
{
	const char *extra = getenv("NARWHAL_DEBUG_PATH");
	char hex[2 * 64 + 1];
	int fd = -1;

	hex_of(id, (int)idlen, hex);
	if (extra && *extra)
		fd = build_id_file(extra, hex, path, size);
	if (fd < 0)
		fd = build_id_file(NW_DEFAULT_DEBUGINFO_PATH, hex, path, size);
	if (fd < 0)
		return false;
	close(fd);
	return true;
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
	if (nw_grow(&s->files, &s->cap_files, s->nfiles + 1, sizeof(*s->files)))
		return -ENOMEM;
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
char *nw_demangle(const char *name)
{
	char *d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);

	return d ? d : strdup(name);
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
		err = nw_symbolize_dwarf(f, vaddr, &frames, &n);
		if (!err && n == 0)
			err = nw_symbolize_elf(f, vaddr, &frames, &n);
		if (!err && n == 0)
			err = symbolize_entry(f, vaddr, &frames, &n);
		if (!err && n == 0)
			err = nw_symbolize_cfi(f, vaddr, &frames, &n);
		if (err)
			return err;
	}
	if (f->cache && nw_symcache_put(f->cache, vaddr, frames, n)) {
		nw_symframes_free(frames, n);
		return -ENOMEM;
	}
	*ret_frames = n ? frames : NULL;
	*ret_n = n;
	return 0;
}

/* ---- for the code store (symbol/codeinfo.c) ---- */

Dwfl_Module *nw_symbolizer_module(struct nw_symbolizer *s, const char *path)
{
	struct nw_symfile *f;

	return symfile_lookup(s, path, &f) ? NULL : f->mod;
}

int nw_symbolizer_symbol_extent(struct nw_symbolizer *s, const char *path, uint64_t vaddr,
				uint64_t *ret_start, uint64_t *ret_size)
{
	struct nw_symfile *f;
	int err = symfile_lookup(s, path, &f);

	return err ? err : nw_elfsyms_extent(f, vaddr, ret_start, ret_size);
}
