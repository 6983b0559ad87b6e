/* SPDX-License-Identifier: MIT */
/*
 * Perf map files.  The lines are parsed into entries in file order, then
 * flattened once into disjoint ranges by a sweep over their starts and
 * ends with a heap that keeps the latest line covering the current address
 * on top; a lookup is then a binary search, whatever the overlaps.
 */
#include "symbol/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/bsearch.h"
#include "util/file.h"
#include "util/strbuf.h"

/* One usable line: [start, end) named names[name_off], seq its line order. */
struct entry {
	uint64_t start, end;
	size_t name_off;
	size_t seq;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Parses hex at @p (up to @end) into *ret; the position after it, or NULL. */
static const char *parse_hex(const char *p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	int digits = 0, d;

	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	while (p < end && (d = nw_hex_digit(*p)) >= 0) {
		if (++digits > 16)
			return NULL;
		v = v << 4 | (uint64_t)d;
		p++;
	}
	if (!digits)
		return NULL;
	*ret = v;
	return p;
}

/*
 * Parses the line [p, end) (no newline) into @e, copying its name to
 * @names at *names_len.  False when it is malformed.
 */
static bool parse_line(const char *p, const char *end, struct entry *e, char *names,
		       size_t *names_len)
{
	uint64_t start, size;
	size_t len;

	if (memchr(p, '\0', (size_t)(end - p)))
		return false;
	while (p < end && is_blank(*p))
		p++;
	p = parse_hex(p, end, &start);
	if (!p || p == end || !is_blank(*p))
		return false;
	while (p < end && is_blank(*p))
		p++;
	p = parse_hex(p, end, &size);
	if (!p || p == end || !is_blank(*p))
		return false;
	while (p < end && is_blank(*p))
		p++;
	while (end > p && (is_blank(end[-1]) || end[-1] == '\r'))
		end--;
	len = (size_t)(end - p);
	if (len == 0 || len > NW_PERFMAP_MAX_NAME || size == 0 || size > UINT64_MAX - start)
		return false;
	e->start = start;
	e->end = start + size;
	e->name_off = *names_len;
	memcpy(names + *names_len, p, len);
	names[*names_len + len] = '\0';
	*names_len += len + 1;
	return true;
}

/* Max-heap of entry indexes by seq. */
struct heap {
	size_t *v;
	size_t n;
};

static void heap_push(struct heap *h, const struct entry *es, size_t idx)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (es[h->v[parent]].seq >= es[idx].seq)
			break;
		h->v[i] = h->v[parent];
		i = parent;
	}
	h->v[i] = idx;
}

static void heap_pop(struct heap *h, const struct entry *es)
{
	size_t last = h->v[--h->n], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && es[h->v[c + 1]].seq > es[h->v[c]].seq)
			c++;
		if (es[h->v[c]].seq <= es[last].seq)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
}

static int entry_cmp_start(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Appends [start, end) owned by @e to m->v, merging with the previous range. */
static void emit(struct nw_perfmap *m, const struct entry *e, uint64_t start, uint64_t end)
{
	struct nw_perfmap_sym *last = m->n ? &m->v[m->n - 1] : NULL;
	const char *name = m->names + e->name_off;

	if (last && last->end == start && last->name == name) {
		last->end = end;
		return;
	}
	m->v[m->n].start = start;
	m->v[m->n].end = end;
	m->v[m->n].name = name;
	m->n++;
}

/* Flattens @es (sorted by start) into disjoint ranges in m->v.  -ENOMEM. */
static int flatten(struct nw_perfmap *m, const struct entry *es, size_t n)
{
	struct heap h = {0};
	size_t i = 0;
	uint64_t cur = 0;

	if (n == 0)
		return 0;
	/* Every range boundary is an entry's start or end: at most 2n ranges. */
	m->v = reallocarray(NULL, n, 2 * sizeof(*m->v));
	h.v = reallocarray(NULL, n, sizeof(*h.v));
	if (!m->v || !h.v) {
		free(h.v);
		return -ENOMEM;
	}
	while (i < n || h.n) {
		const struct entry *top;
		uint64_t next;

		if (!h.n)
			cur = es[i].start;
		while (i < n && es[i].start <= cur)
			heap_push(&h, es, i++);
		while (h.n && es[h.v[0]].end <= cur)
			heap_pop(&h, es);
		if (!h.n)
			continue;
		top = &es[h.v[0]];
		next = top->end;
		if (i < n && es[i].start < next)
			next = es[i].start;
		emit(m, top, cur, next);
		cur = next;
	}
	free(h.v);
	return 0;
}

int nw_perfmap_parse(const char *buf, size_t len, struct nw_perfmap **ret)
{
	struct nw_perfmap *m = calloc(1, sizeof(*m));
	struct entry *es = NULL;
	size_t nes = 0, names_len = 0, maxlines = 1;
	const char *p, *end = buf + len;
	int err = -ENOMEM;

	if (!m)
		return -ENOMEM;
	for (p = buf; p < end; p++)
		maxlines += *p == '\n';
	m->raw = malloc(len ? len : 1);
	/* Each name with its NUL fits in the bytes of its line and newline. */
	m->names = malloc(len + 1);
	es = reallocarray(NULL, maxlines, sizeof(*es));
	if (!m->raw || !m->names || !es)
		goto out;
	memcpy(m->raw, buf, len);
	m->rawlen = len;
	for (p = buf; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (parse_line(p, eol, &es[nes], m->names, &names_len)) {
			es[nes].seq = nes;
			nes++;
		} else if (eol > p) {
			m->nbad++;
		}
		p = nl ? nl + 1 : end;
	}
	m->nentries = nes;
	qsort(es, nes, sizeof(*es), entry_cmp_start);
	err = flatten(m, es, nes);
out:
	free(es);
	if (err) {
		nw_perfmap_free(m);
		return err;
	}
	*ret = m;
	return 0;
}

void nw_perfmap_free(struct nw_perfmap *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->names);
	free(m->raw);
	free(m);
}

static uint64_t sym_start(const void *v, size_t i)
{
	return ((const struct nw_perfmap_sym *)v)[i].start;
}

const struct nw_perfmap_sym *nw_perfmap_find(const struct nw_perfmap *m, uint64_t addr)
{
	size_t lo = nw_bsearch_le(m->v, m->n, addr, sym_start);

	if (lo && addr < m->v[lo - 1].end)
		return &m->v[lo - 1];
	return NULL;
}

int nw_perfmap_symbolize(const struct nw_perfmap *m, uint64_t addr, struct nw_symframe **ret_frames,
			 uint32_t *ret_n)
{
	const struct nw_perfmap_sym *sym = nw_perfmap_find(m, addr);
	struct nw_symframe *fr;

	*ret_n = 0;
	if (!sym)
		return 0;
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	fr->function = strdup(sym->name);
	if (!fr->function) {
		free(fr);
		return -ENOMEM;
	}
	*ret_frames = fr;
	*ret_n = 1;
	return 0;
}

int nw_perfmap_read(const char *path, struct nw_perfmap **ret)
{
	char *buf = NULL;
	struct stat st;
	size_t len = 0;
	int fd, err;

	/* O_NONBLOCK: a FIFO planted under the name must not hang the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	err = -EPERM;
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()))
		goto out;
	err = -EFBIG;
	if (st.st_size < 0 || (uint64_t)st.st_size > NW_PERFMAP_MAX_SIZE)
		goto out;
	/* The size again: the file may have grown since fstat(). */
	err = nw_read_fd(fd, (size_t)st.st_size, &buf, &len);
	if (!err && len > NW_PERFMAP_MAX_SIZE)
		err = -EFBIG;
	if (err)
		goto out;
	err = nw_perfmap_parse(buf, len, ret);
out:
	free(buf);
	close(fd);
	return err;
}

int nw_perfmap_save(const struct nw_perfmap *m, const char *path)
{
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0)
		return -errno;
	err = nw_write_all(fd, m->raw, m->rawlen);
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

bool nw_perfmap_module_is_anon(const char *path)
{
	return !path[0] || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       !strcmp(path, "[heap]") || !strncmp(path, "/memfd:", 7);
}

void nw_perfmaps_init(struct nw_perfmaps *c, const char *dir)
{
	memset(c, 0, sizeof(*c));
	c->dir = dir;
}

void nw_perfmaps_fini(struct nw_perfmaps *c)
{
	for (size_t i = 0; i < c->n; i++)
		nw_perfmap_free(c->v[i].map);
	free(c->v);
	c->v = NULL;
	c->n = c->cap = 0;
}

int nw_perfmaps_get(struct nw_perfmaps *c, uint32_t pid, const struct nw_perfmap **ret)
{
	struct nw_perfmap *map = NULL;
	char path[PATH_MAX];
	int err;

	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].pid == pid) {
			*ret = c->v[i].map;
			return 0;
		}
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		struct nw_perfmap_proc *v = reallocarray(c->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	if (snprintf(path, sizeof(path), "%s/perf-%u.map", c->dir, pid) < (int)sizeof(path)) {
		err = nw_perfmap_read(path, &map);
		if (err == -ENOMEM)
			return err;
		if (err)
			map = NULL;
	}
	c->v[c->n].pid = pid;
	c->v[c->n].map = map;
	c->n++;
	*ret = map;
	return 1;
}
