/* SPDX-License-Identifier: MIT */
/*
 * HPC_CSPROF writer and reader (DESIGN.md, "HPC_CSPROF file format").
 *
 * Every integer is encoded and decoded byte by byte, little-endian, so the
 * host's byte order and alignment never matter.  The reader treats the
 * buffer as untrusted: each field is checked against the bytes left before
 * it is read, and each count is checked against the smallest number of
 * bytes its items can take before anything is allocated from it.
 */
#include "format/csprof.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/varint.h"

#define CSPROF_MAGIC	   "HPC_CSPROF"
#define CSPROF_VERSION	   "01.01"
#define CSTREE_MAGIC	   "HPC_CSTREE"
#define CSTREE_VERSION	   "01.00"
#define MAGIC_LEN	   10
#define VERSION_LEN	   5
#define CSPROF_HEADER_SIZE 24 /* magic, version, endian, u64 num_chunks */
#define CSPROF_NUM_CHUNKS  3
#define CSTREE_HEADER_SIZE 36 /* magic, version, endian, u32, u32, u64, u32 */
#define NODE_FIXED_SIZE	   32 /* id, parent, ip, sp */

/* hpcfile tags: (data_tag << 4) | format, format 0 string, 1 number. */
#define TAG_TARGET	0x00
#define TAG_EVENT_NAME	0x30
#define TAG_PERIOD	0x41
#define TAG_FLAGS	0x51

/* ---- writer ---- */

struct csprof_out {
	FILE *f;
	bool failed;
	int err;           /* the errno of the first failed write (ENOSPC...), 0: unknown */
};

/* Node records formatted before each write. */
#define NODE_BATCH 1024u

static void out_bytes(struct csprof_out *o, const void *p, size_t n)
{
	if (!o->failed && n && fwrite(p, 1, n, o->f) != n) {
		o->failed = true;
		o->err = errno;
	}
}

/* Counts a record of @size bytes into the batch at @rec, written out when full. */
static void batch_add(struct csprof_out *o, const uint8_t *rec, size_t *fill, size_t size)
{
	*fill += size;
	if (*fill == size * NODE_BATCH) {
		out_bytes(o, rec, *fill);
		*fill = 0;
	}
}

static void put_u32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b + 4, (uint32_t)(v >> 32));
}

/* Flushes @o's stream: 0, or -errno of the first write that failed. */
static int out_end(struct csprof_out *o)
{
	if (!o->failed && fflush(o->f) != 0) {
		o->failed = true;
		o->err = errno;
	}
	if (o->failed || ferror(o->f))
		return o->err ? -o->err : -EIO;
	return 0;
}

static void out_u32(struct csprof_out *o, uint32_t v)
{
	uint8_t b[4];

	put_u32(b, v);
	out_bytes(o, b, sizeof(b));
}

static void out_u64(struct csprof_out *o, uint64_t v)
{
	uint8_t b[8];

	put_u64(b, v);
	out_bytes(o, b, sizeof(b));
}

static void out_string(struct csprof_out *o, uint32_t tag, const char *s, size_t len)
{
	out_u32(o, tag);
	out_u32(o, (uint32_t)len);
	out_bytes(o, s, len);
}

static void out_number(struct csprof_out *o, uint32_t tag, uint64_t v)
{
	out_u32(o, tag);
	out_u64(o, v);
}

/* Checks what the writer cannot encode before writing anything. */
static int csprof_check(const struct nw_csprof *p)
{
	if (p->target && strlen(p->target) > UINT32_MAX)
		return -EINVAL;
	if ((p->nmetrics && !p->metrics) || (p->nepochs && !p->epochs) ||
	    (p->ntrees && !p->trees))
		return -EINVAL;
	for (uint32_t i = 0; i < p->nmetrics; i++) {
		if (!p->metrics[i].name || strlen(p->metrics[i].name) > UINT32_MAX)
			return -EINVAL;
	}
	for (uint32_t e = 0; e < p->nepochs; e++) {
		const struct nw_csprof_epoch *ep = &p->epochs[e];

		if (ep->nmodules && !ep->modules)
			return -EINVAL;
		for (uint32_t m = 0; m < ep->nmodules; m++) {
			if (!ep->modules[m].name || strlen(ep->modules[m].name) > UINT32_MAX)
				return -EINVAL;
		}
	}
	for (uint32_t t = 0; t < p->ntrees; t++) {
		const struct nw_csprof_tree *tr = &p->trees[t];

		if (!tr->cct || tr->cct->n == 0 || tr->cct->nmetrics != p->nmetrics ||
		    tr->epoch >= p->nepochs)
			return -EINVAL;
	}
	return 0;
}

static int write_tree(struct csprof_out *o, const struct nw_csprof_tree *tr, bool index_order)
{
	const struct nw_cct *cct = tr->cct;
	size_t node_size = NODE_FIXED_SIZE + 8 * (size_t)cct->nmetrics;
	uint32_t *order = NULL, *id_of = NULL;
	uint8_t *rec;
	uint32_t n = cct->n;
	size_t fill = 0;

	/* Records go out a batch at a time: one fwrite per node was a tenth of a write. */
	rec = malloc(node_size * NODE_BATCH);
	if (!index_order) {
		order = calloc(cct->n, sizeof(*order));
		id_of = calloc(cct->n, sizeof(*id_of));
	}
	if (!rec || (!index_order && (!order || !id_of))) {
		free(order);
		free(id_of);
		free(rec);
		return -ENOMEM;
	}
	if (!index_order) {
		n = nw_cct_preorder(cct, order);
		for (uint32_t i = 0; i < n; i++)
			id_of[order[i]] = i;
	}

	out_bytes(o, CSTREE_MAGIC, MAGIC_LEN);
	out_bytes(o, CSTREE_VERSION, VERSION_LEN);
	out_bytes(o, "l", 1);
	out_u32(o, 8); /* vma size */
	out_u32(o, 8); /* uint size */
	out_u64(o, n);
	out_u32(o, tr->epoch);
	/* One record per node: id, parent, ip, sp, metrics. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = index_order ? i : order[i];
		const struct nw_cct_node *node = &cct->nodes[k];
		const uint64_t *met = nw_cct_metrics(cct, k);
		uint8_t *r = rec + fill;

		put_u64(r, i);
		put_u64(r + 8, i == 0 ? 0 : index_order ? node->parent : id_of[node->parent]);
		put_u64(r + 16, node->ip);
		put_u64(r + 24, node->sp);
		for (unsigned m = 0; m < cct->nmetrics; m++)
			put_u64(r + NODE_FIXED_SIZE + 8 * m, met[m]);
		batch_add(o, rec, &fill, node_size);
	}
	out_bytes(o, rec, fill);
	free(order);
	free(id_of);
	free(rec);
	return 0;
}

int nw_csprof_write(FILE *f, const struct nw_csprof *p)
{
	struct csprof_out o = { .f = f };
	const char *target = p->target ? p->target : "";
	int err;

	err = csprof_check(p);
	if (err)
		return err;

	out_bytes(&o, CSPROF_MAGIC, MAGIC_LEN);
	out_bytes(&o, CSPROF_VERSION, VERSION_LEN);
	out_bytes(&o, "l", 1);
	out_u64(&o, CSPROF_NUM_CHUNKS);

	out_string(&o, TAG_TARGET, target, strlen(target));
	out_u32(&o, p->nmetrics);
	for (uint32_t i = 0; i < p->nmetrics; i++) {
		const struct nw_csprof_metric *m = &p->metrics[i];

		out_string(&o, TAG_EVENT_NAME, m->name, strlen(m->name));
		out_number(&o, TAG_FLAGS, m->flags);
		out_number(&o, TAG_PERIOD, m->period);
	}

	out_u32(&o, p->nepochs);
	for (uint32_t e = 0; e < p->nepochs; e++) {
		const struct nw_csprof_epoch *ep = &p->epochs[e];

		out_u32(&o, ep->nmodules);
		for (uint32_t m = 0; m < ep->nmodules; m++) {
			const struct nw_csprof_module *mod = &ep->modules[m];
			size_t len = strlen(mod->name);

			out_u32(&o, (uint32_t)len);
			out_bytes(&o, mod->name, len);
			out_u64(&o, mod->vaddr);
			out_u64(&o, mod->mapped);
		}
	}

	out_u32(&o, p->ntrees);
	out_u64(&o, 0); /* tramp_samples: no trampoline */
	for (uint32_t t = 0; t < p->ntrees; t++) {
		err = write_tree(&o, &p->trees[t], p->index_order);
		if (err)
			return err;
	}
	return out_end(&o);
}

int nw_csprof_write_file(const char *path, const struct nw_csprof *p)
{
	FILE *f;
	int err;

	f = fopen(path, "w");
	if (!f)
		return -errno;
	err = nw_csprof_write(f, p);
	/* On disk before the measurement that names it: a full disk shows here, as itself. */
	errno = 0;
	if ((fflush(f) != 0 || fsync(fileno(f)) != 0) && !err)
		err = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !err)
		err = errno ? -errno : -EIO;
	return err;
}

/* ---- reader ---- */

/* Bytes of a mapped file given back at a time (a multiple of the page size). */
#define RELEASE_CHUNK (4u << 20)

struct csprof_in {
	const uint8_t *buf;
	size_t size;
	size_t pos;
	struct nw_csprof_error *err;
	bool mapped;       /* buf is a private mapping of the file: release what was read */
	size_t released;   /* bytes of buf given back so far */
};

/*
 * A file mapped for reading is given back as its trees are parsed, so
 * reading a 200 MB file does not hold 200 MB of it besides the trees.
 */
static void in_release(struct csprof_in *in)
{
	size_t upto = in->pos & ~(size_t)(RELEASE_CHUNK - 1);

	if (!in->mapped || upto < in->released + RELEASE_CHUNK)
		return;
	madvise((void *)(in->buf + in->released), upto - in->released, MADV_DONTNEED);
	in->released = upto;
}

__attribute__((format(printf, 3, 4))) static int in_fail(struct csprof_in *in, size_t offset,
							  const char *fmt, ...)
{
	va_list ap;

	if (in->err) {
		in->err->offset = offset;
		va_start(ap, fmt);
		vsnprintf(in->err->msg, sizeof(in->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static size_t in_left(const struct csprof_in *in)
{
	return in->size - in->pos;
}

/* Fails unless @n bytes are left for @what. */
static int in_need(struct csprof_in *in, uint64_t n, const char *what)
{
	if (n > in_left(in))
		return in_fail(in, in->pos, "truncated: %s needs %llu bytes, %zu left", what,
			       (unsigned long long)n, in_left(in));
	return 0;
}

/* Little-endian loads: one unaligned load each where the host is little-endian. */
static inline uint32_t peek_u32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return le32toh(v);
}

static inline uint64_t peek_u64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return le64toh(v);
}

static int in_u32(struct csprof_in *in, uint32_t *v, const char *what)
{
	int err = in_need(in, 4, what);

	if (err)
		return err;
	*v = peek_u32(in->buf + in->pos);
	in->pos += 4;
	return 0;
}

static int in_u64(struct csprof_in *in, uint64_t *v, const char *what)
{
	int err = in_need(in, 8, what);

	if (err)
		return err;
	*v = peek_u64(in->buf + in->pos);
	in->pos += 8;
	return 0;
}

/* Checks @len bytes equal @expect (a magic, version or endian byte). */
static int in_expect(struct csprof_in *in, const char *expect, size_t len, const char *what)
{
	int err = in_need(in, len, what);

	if (err)
		return err;
	if (memcmp(in->buf + in->pos, expect, len) != 0)
		return in_fail(in, in->pos, "bad %s: expected \"%.*s\"", what, (int)len, expect);
	in->pos += len;
	return 0;
}

/* Copies @len bytes at the cursor into a new NUL-terminated string. */
static int in_str_bytes(struct csprof_in *in, uint32_t len, char **ret, const char *what)
{
	size_t at = in->pos;
	int err;
	char *s;

	err = in_need(in, len, what);
	if (err)
		return err;
	if (memchr(in->buf + at, '\0', len))
		return in_fail(in, at, "%s contains a NUL byte", what);
	s = malloc((size_t)len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, in->buf + at, len);
	s[len] = '\0';
	in->pos += len;
	*ret = s;
	return 0;
}

static int in_tag(struct csprof_in *in, uint32_t tag, const char *what)
{
	size_t at = in->pos;
	uint32_t v;
	int err;

	err = in_u32(in, &v, what);
	if (err)
		return err;
	if (v != tag)
		return in_fail(in, at, "bad tag for %s: 0x%x, expected 0x%x", what, v, tag);
	return 0;
}

/* hpcfile_string: u32 tag, u32 length, bytes. */
static int in_string(struct csprof_in *in, uint32_t tag, char **ret, const char *what)
{
	uint32_t len;
	int err;

	err = in_tag(in, tag, what);
	if (!err)
		err = in_u32(in, &len, what);
	if (!err)
		err = in_str_bytes(in, len, ret, what);
	return err;
}

/* hpcfile_number: u32 tag, u64 value. */
static int in_number(struct csprof_in *in, uint32_t tag, uint64_t *ret, const char *what)
{
	int err = in_tag(in, tag, what);

	return err ? err : in_u64(in, ret, what);
}

/*
 * Fails unless @count items of at least @min_size bytes each can fit in
 * what is left: the bound that makes allocating @count items safe.
 */
static int in_count(struct csprof_in *in, size_t at, uint64_t count, uint64_t min_size,
		    const char *what)
{
	if (min_size && count > in_left(in) / min_size)
		return in_fail(in, at, "%s %llu does not fit in the %zu bytes left", what,
			       (unsigned long long)count, in_left(in));
	return 0;
}

static int read_header(struct csprof_in *in)
{
	size_t at;
	uint64_t chunks;
	int err;

	err = in_expect(in, CSPROF_MAGIC, MAGIC_LEN, "file magic");
	if (!err)
		err = in_expect(in, CSPROF_VERSION, VERSION_LEN, "file version");
	if (!err)
		err = in_expect(in, "l", 1, "endian byte");
	at = in->pos;
	if (!err)
		err = in_u64(in, &chunks, "num_chunks");
	if (!err && chunks != CSPROF_NUM_CHUNKS)
		err = in_fail(in, at, "num_chunks is %llu, expected %d",
			      (unsigned long long)chunks, CSPROF_NUM_CHUNKS);
	return err;
}

static int read_metrics(struct csprof_in *in, struct nw_csprof *p)
{
	size_t at = in->pos;
	uint32_t n;
	int err;

	err = in_u32(in, &n, "num_metrics");
	if (err)
		return err;
	/* name (8 + len), flags (12), period (12) */
	err = in_count(in, at, n, 32, "num_metrics");
	if (err)
		return err;
	p->metrics = calloc(n ? n : 1, sizeof(*p->metrics));
	p->totals = calloc(n ? n : 1, sizeof(*p->totals));
	if (!p->metrics || !p->totals)
		return -ENOMEM;
	p->nmetrics = n;
	for (uint32_t i = 0; i < n; i++) {
		struct nw_csprof_metric *m = &p->metrics[i];

		err = in_string(in, TAG_EVENT_NAME, &m->name, "metric name");
		if (!err)
			err = in_number(in, TAG_FLAGS, &m->flags, "metric flags");
		if (!err)
			err = in_number(in, TAG_PERIOD, &m->period, "metric period");
		if (err)
			return err;
	}
	return 0;
}

static int read_epochs(struct csprof_in *in, struct nw_csprof *p)
{
	size_t at = in->pos;
	uint32_t n;
	int err;

	err = in_u32(in, &n, "num_epochs");
	if (!err)
		err = in_count(in, at, n, 4, "num_epochs");
	if (err)
		return err;
	if (n) {
		p->epochs = calloc(n, sizeof(*p->epochs));
		if (!p->epochs)
			return -ENOMEM;
	}
	p->nepochs = n;
	for (uint32_t e = 0; e < n; e++) {
		struct nw_csprof_epoch *ep = &p->epochs[e];
		uint32_t nmod;

		at = in->pos;
		err = in_u32(in, &nmod, "num_modules");
		/* u32 name length, name, u64 vaddr, u64 mapped */
		if (!err)
			err = in_count(in, at, nmod, 20, "num_modules");
		if (err)
			return err;
		if (nmod) {
			ep->modules = calloc(nmod, sizeof(*ep->modules));
			if (!ep->modules)
				return -ENOMEM;
		}
		ep->nmodules = nmod;
		for (uint32_t m = 0; m < nmod; m++) {
			struct nw_csprof_module *mod = &ep->modules[m];
			uint32_t len;

			err = in_u32(in, &len, "module name length");
			if (!err)
				err = in_str_bytes(in, len, &mod->name, "module name");
			if (!err)
				err = in_u64(in, &mod->vaddr, "module vaddr");
			if (!err)
				err = in_u64(in, &mod->mapped, "module mapped address");
			if (err)
				return err;
		}
	}
	return 0;
}

/* A node's metrics from the file, added into @totals too. */
static void put_metrics(uint64_t *dst, const uint8_t *src, unsigned n, uint64_t *totals)
{
	for (unsigned k = 0; k < n; k++) {
		dst[k] = peek_u64(src + 8 * k);
		totals[k] += dst[k];
	}
}

static int read_tree(struct csprof_in *in, struct nw_csprof *p, uint32_t t,
		     struct nw_csprof_tree *tr)
{
	size_t at;
	uint32_t vma_size, uint_size;
	uint64_t num_nodes, node_size;
	struct nw_cct *cct;
	int err;

	err = in_need(in, CSTREE_HEADER_SIZE, "tree header");
	if (!err)
		err = in_expect(in, CSTREE_MAGIC, MAGIC_LEN, "tree magic");
	if (!err)
		err = in_expect(in, CSTREE_VERSION, VERSION_LEN, "tree version");
	if (!err)
		err = in_expect(in, "l", 1, "tree endian byte");
	if (err)
		return err;
	at = in->pos;
	in_u32(in, &vma_size, "vma size");
	in_u32(in, &uint_size, "uint size");
	if (vma_size != 8 || uint_size != 8)
		return in_fail(in, at, "tree %u: vma size %u and uint size %u, expected 8 and 8", t,
			       vma_size, uint_size);
	at = in->pos;
	in_u64(in, &num_nodes, "num_nodes");
	if (num_nodes == 0)
		return in_fail(in, at, "tree %u: no nodes (the root is missing)", t);
	node_size = NODE_FIXED_SIZE + 8 * (uint64_t)p->nmetrics;
	/* The tree header was checked whole, so the epoch index is there. */
	if (num_nodes > (in_left(in) - 4) / node_size || num_nodes >= NW_CCT_NONE)
		return in_fail(in, at, "tree %u: num_nodes %llu does not fit in the %zu bytes left",
			       t, (unsigned long long)num_nodes, in_left(in) - 4);
	at = in->pos;
	in_u32(in, &tr->epoch, "epoch index");
	if (tr->epoch >= p->nepochs)
		return in_fail(in, at, "tree %u: epoch index %u, but the file has %u epochs", t,
			       tr->epoch, p->nepochs);

	cct = nw_cct_new_sized(p->nmetrics, (uint32_t)num_nodes);
	if (!cct)
		return -ENOMEM;
	tr->cct = cct;
	/* Nodes come in file order: appended unlinked, linked once at the end. */
	for (uint64_t i = 0; i < num_nodes; i++) {
		const uint8_t *b = in->buf + in->pos;
		uint64_t id = peek_u64(b), parent = peek_u64(b + 8);
		uint64_t ip = peek_u64(b + 16), sp = peek_u64(b + 24);
		uint32_t node;

		at = in->pos;
		if (id != i) {
			err = in_fail(in, at, "tree %u node %llu: id is %llu", t,
				      (unsigned long long)i, (unsigned long long)id);
			goto out;
		}
		if (i == 0) {
			if (parent != 0) {
				err = in_fail(in, at + 8, "tree %u node 0: root's parent is %llu",
					      t, (unsigned long long)parent);
				goto out;
			}
			node = NW_CCT_ROOT;
			cct->nodes[node].ip = ip;
			cct->nodes[node].sp = sp;
		} else {
			if (parent >= i) {
				err = in_fail(in, at + 8,
					      "tree %u node %llu: parent %llu is not an earlier node",
					      t, (unsigned long long)i,
					      (unsigned long long)parent);
				goto out;
			}
			/*
			 * Node i is file node i: traces and sample times name
			 * nodes by their file id.  Siblings with the same ip
			 * (not written by Narwhal) stay two nodes; views that
			 * merge by frame add them up.
			 */
			node = nw_cct_append_unlinked(cct, (uint32_t)parent, ip, sp);
			if (node == NW_CCT_NONE) {
				err = -ENOMEM;
				goto out;
			}
		}
		put_metrics(nw_cct_metrics(cct, node), b + NODE_FIXED_SIZE, p->nmetrics, p->totals);
		in->pos += node_size;
		if (!(i & 0xffff))
			in_release(in);
	}
	/*
	 * Every sibling list in node index order: the tree's preorder is then
	 * the file's, and writing what was read gives the same bytes.
	 */
	nw_cct_link_in_order(cct);
	err = 0;
out:
	return err;
}

static int read_trees(struct csprof_in *in, struct nw_csprof *p)
{
	size_t at = in->pos;
	uint64_t tramp;
	uint32_t n;
	int err;

	err = in_u32(in, &n, "num_trees");
	if (!err)
		err = in_u64(in, &tramp, "tramp_samples");
	if (!err)
		err = in_count(in, at, n, CSTREE_HEADER_SIZE, "num_trees");
	if (err)
		return err;
	if (n) {
		p->trees = calloc(n, sizeof(*p->trees));
		if (!p->trees)
			return -ENOMEM;
	}
	p->ntrees = n;
	for (uint32_t t = 0; t < n; t++) {
		err = read_tree(in, p, t, &p->trees[t]);
		if (err)
			return err;
	}
	return 0;
}

static int csprof_parse(const void *buf, size_t size, bool mapped, struct nw_csprof **ret,
			struct nw_csprof_error *err)
{
	struct csprof_in in = { .buf = buf, .size = size, .err = err, .mapped = mapped };
	struct nw_csprof *p;
	int rc;

	if (err) {
		err->offset = 0;
		err->msg[0] = '\0';
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = read_header(&in);
	if (!rc)
		rc = in_string(&in, TAG_TARGET, &p->target, "target");
	if (!rc)
		rc = read_metrics(&in, p);
	if (!rc)
		rc = read_epochs(&in, p);
	if (!rc)
		rc = read_trees(&in, p);
	if (!rc && in.pos != size)
		rc = in_fail(&in, in.pos, "%zu trailing bytes after the last tree", size - in.pos);
	if (rc) {
		if (rc == -ENOMEM && err) {
			err->offset = in.pos;
			snprintf(err->msg, sizeof(err->msg), "out of memory");
		}
		nw_csprof_free(p);
		return rc;
	}
	*ret = p;
	return 0;
}

int nw_csprof_read(const void *buf, size_t size, struct nw_csprof **ret,
		   struct nw_csprof_error *err)
{
	return csprof_parse(buf, size, false, ret, err);
}

/* Files under this size are read, not mapped. */
#define SMALL_FILE (1u << 20)

/* Reads all of @fd; @hint: its size if known (room for it and one byte more, to see the end). */
static int read_fd_all(int fd, size_t hint, uint8_t **ret, size_t *ret_size)
{
	size_t cap = hint ? hint + 1 : 65536, len = 0;
	uint8_t *buf = malloc(cap), *nbuf;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				free(buf);
				return -ENOMEM;
			}
			buf = nbuf;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			free(buf);
			return (int)r;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	*ret = buf;
	*ret_size = len;
	return 0;
}

int nw_csprof_read_file(const char *path, struct nw_csprof **ret, struct nw_csprof_error *err)
{
	uint8_t *buf = NULL;
	void *map = MAP_FAILED;
	struct stat st;
	size_t size = 0;
	int fd, rc;

	if (err) {
		err->offset = 0;
		err->msg[0] = '\0';
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out_io;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		goto out_io;
	}
	/*
	 * A large file is mapped (its pages dropped as parsing passes them);
	 * a small one is read: a build's thousand small thread files mapped
	 * and unmapped on two workers were 8 % of a report, mostly the TLB
	 * flushes of munmap.
	 */
	if (S_ISREG(st.st_mode) && st.st_size >= SMALL_FILE) {
		size = (size_t)st.st_size;
		map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	}
	if (map == MAP_FAILED) {
		rc = read_fd_all(fd, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, &buf, &size);
		if (rc) {
			close(fd);
			goto out_io;
		}
	}
	close(fd);
	rc = csprof_parse(map != MAP_FAILED ? map : buf, size, map != MAP_FAILED, ret, err);
	if (map != MAP_FAILED)
		munmap(map, size);
	free(buf);
	return rc;

out_io:
	if (err)
		snprintf(err->msg, sizeof(err->msg), "%s: %s", path, strerror(-rc));
	return rc;
}

void nw_csprof_free(struct nw_csprof *p)
{
	if (!p)
		return;
	free(p->target);
	for (uint32_t i = 0; p->metrics && i < p->nmetrics; i++)
		free(p->metrics[i].name);
	free(p->metrics);
	free(p->totals);
	for (uint32_t e = 0; p->epochs && e < p->nepochs; e++) {
		struct nw_csprof_epoch *ep = &p->epochs[e];

		for (uint32_t m = 0; ep->modules && m < ep->nmodules; m++)
			free(ep->modules[m].name);
		free(ep->modules);
	}
	free(p->epochs);
	for (uint32_t t = 0; p->trees && t < p->ntrees; t++)
		nw_cct_free(p->trees[t].cct);
	free(p->trees);
	free(p);
}

/* ---- deltas: what a checkpoint adds to a file written before ---- */

#define DELTA_MAGIC "NWCSDLT2"
#define DELTA_TREE_HEADER 16 /* epoch, base nodes, added, changed */
/* The fewest bytes of a record: an added node's 3 varints, a changed one's 2 (and its metrics). */
#define DELTA_ADDED_MIN 3
#define DELTA_CHANGED_MIN 2
/* Encoded records buffered before a write. */
#define DELTA_BUF (64u << 10)

static uint32_t count_changed(const struct nw_cct *cct, uint32_t base)
{
	uint32_t n = 0, words = base / 64;

	for (uint32_t w = 0; w < words; w++)
		n += (uint32_t)__builtin_popcountll(cct->changed[w]);
	for (uint32_t i = words * 64; i < base; i++)
		n += nw_cct_is_changed(cct, i);
	return n;
}

/* Appends the metrics of @node at @r; returns the byte after them. */
static uint8_t *put_metric_varints(uint8_t *r, const struct nw_cct *cct, uint32_t node)
{
	const uint64_t *met = nw_cct_metrics(cct, node);

	for (unsigned m = 0; m < cct->nmetrics; m++)
		r = nw_put_varint(r, met[m]);
	return r;
}

/*
 * The records of one tree's delta, as varints (doc/DURABILITY.md): most
 * numbers are small against the record's before (a node's parent is
 * usually the node before it, its return address in the same module), so
 * a node takes about 5 bytes instead of 36; and nothing but the node and
 * its metrics is read (a parent's fields would be a cache miss each).
 */
static int write_tree_delta(struct csprof_out *o, const struct nw_cct *cct, uint32_t epoch,
			    uint32_t base)
{
	size_t max = (3 + (size_t)cct->nmetrics) * NW_VARINT_MAX;
	size_t cap = DELTA_BUF > 2 * max ? DELTA_BUF : 2 * max;
	uint8_t *buf = malloc(cap), *r = buf;
	uint32_t changed = count_changed(cct, base);
	uint64_t ip = 0, sp = 0;
	int64_t prev = -1;

	if (!buf)
		return -ENOMEM;
	out_u32(o, epoch);
	out_u32(o, base);
	out_u32(o, cct->n - base);
	out_u32(o, changed);
	for (uint32_t w = 0; w * 64 < base; w++) {
		for (uint64_t bits = cct->changed[w]; bits; bits &= bits - 1) {
			uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);

			if (i >= base)
				break;
			/* Ascending ids: each as the gap after the one before. */
			r = nw_put_varint(r, (uint64_t)((int64_t)i - prev - 1));
			prev = i;
			r = nw_put_varint(r, nw_zigzag((int64_t)(cct->nodes[i].sp - sp)));
			sp = cct->nodes[i].sp;
			r = put_metric_varints(r, cct, i);
			if ((size_t)(r - buf) > cap - max) {
				out_bytes(o, buf, (size_t)(r - buf));
				r = buf;
			}
		}
	}
	sp = 0;
	for (uint32_t i = base; i < cct->n; i++) {
		const struct nw_cct_node *node = &cct->nodes[i];

		const uint64_t *met = nw_cct_metrics(cct, i);
		uint64_t any = 0;

		/* Most nodes added are callers, with no metrics of their own: a bit says so. */
		for (unsigned m = 0; m < cct->nmetrics; m++)
			any |= met[m];
		r = nw_put_varint(r, (uint64_t)(i - node->parent) << 1 | (any != 0));
		r = nw_put_varint(r, nw_zigzag((int64_t)(node->ip - ip)));
		r = nw_put_varint(r, nw_zigzag((int64_t)(node->sp - sp)));
		ip = node->ip;
		sp = node->sp;
		if (any)
			r = put_metric_varints(r, cct, i);
		if ((size_t)(r - buf) > cap - max) {
			out_bytes(o, buf, (size_t)(r - buf));
			r = buf;
		}
	}
	out_bytes(o, buf, (size_t)(r - buf));
	free(buf);
	return 0;
}

int nw_csprof_write_delta(FILE *f, const struct nw_csprof *p, const uint32_t *base)
{
	struct csprof_out o = { .f = f };
	int err = csprof_check(p);

	if (err)
		return err;
	for (uint32_t t = 0; t < p->ntrees; t++)
		if (!p->trees[t].cct->changed || base[t] == 0 || base[t] > p->trees[t].cct->n)
			return -EINVAL;
	out_bytes(&o, DELTA_MAGIC, 8);
	out_u32(&o, p->nmetrics);
	out_u32(&o, p->ntrees);
	for (uint32_t t = 0; t < p->ntrees && !err; t++)
		err = write_tree_delta(&o, p->trees[t].cct, p->trees[t].epoch, base[t]);
	if (err)
		return err;
	return out_end(&o);
}

/* The @n metric varints at in->pos into @dst.  -EBADMSG. */
/* A node's metrics from a delta, in place of what it held: @totals follow. */
static int in_metric_varints(struct csprof_in *in, uint64_t *dst, unsigned n, uint32_t t,
			     uint32_t node, uint64_t *totals)
{
	for (unsigned k = 0; k < n; k++) {
		totals[k] -= dst[k];
		if (nw_get_varint(in->buf, &in->pos, in->size, &dst[k]))
			return in_fail(in, in->pos, "delta tree %u node %u: metric %u cut short or "
						    "over 64 bits", t, node, k);
		totals[k] += dst[k];
	}
	return 0;
}

static int apply_tree_delta(struct csprof_in *in, struct nw_csprof *p, uint32_t t)
{
	struct nw_cct *cct = p->trees[t].cct;
	uint32_t epoch, base, added, changed;
	size_t at = in->pos;
	uint64_t ip = 0, sp = 0;
	int64_t prev = -1;
	int err;

	err = in_need(in, DELTA_TREE_HEADER, "delta tree header");
	if (err)
		return err;
	in_u32(in, &epoch, "epoch");
	in_u32(in, &base, "base nodes");
	in_u32(in, &added, "added nodes");
	in_u32(in, &changed, "changed nodes");
	if (epoch != p->trees[t].epoch || base != cct->n)
		return in_fail(in, at, "delta tree %u: epoch %u with %u nodes, but the file's "
				       "tree has epoch %u and %u nodes", t, epoch, base,
			       p->trees[t].epoch, cct->n);
	if ((uint64_t)changed > in_left(in) / (DELTA_CHANGED_MIN + p->nmetrics))
		return in_fail(in, in->pos, "delta tree %u: %u changed nodes do not fit in the %zu "
					    "bytes left", t, changed, in_left(in));
	for (uint32_t i = 0; i < changed; i++) {
		uint64_t gap, dsp;

		at = in->pos;
		if (nw_get_varint(in->buf, &in->pos, in->size, &gap) ||
		    nw_get_varint(in->buf, &in->pos, in->size, &dsp))
			return in_fail(in, at, "delta tree %u: changed node %u cut short", t, i);
		if (gap >= (uint64_t)base - (uint64_t)(prev + 1))
			return in_fail(in, at, "delta tree %u: changed node %llu is not one of the %u "
					       "before", t, (unsigned long long)(prev + 1) + gap, base);
		prev += (int64_t)gap + 1;
		sp += (uint64_t)nw_unzigzag(dsp);
		cct->nodes[prev].sp = sp;
		err = in_metric_varints(in, nw_cct_metrics(cct, (uint32_t)prev), p->nmetrics, t,
					(uint32_t)prev, p->totals);
		if (err)
			return err;
	}
	if ((uint64_t)added > in_left(in) / DELTA_ADDED_MIN ||
	    (uint64_t)base + added >= NW_CCT_NONE)
		return in_fail(in, in->pos, "delta tree %u: %u added nodes do not fit in the %zu "
					    "bytes left", t, added, in_left(in));
	if (nw_cct_reserve(cct, base + added))
		return -ENOMEM;
	/* Numbers of the nodes added are against the one before, the first against 0. */
	sp = 0;
	for (uint32_t i = 0; i < added; i++) {
		uint32_t id = base + i, node;
		uint64_t up, dip, dsp;
		bool has_metrics;

		at = in->pos;
		if (nw_get_varint(in->buf, &in->pos, in->size, &up) ||
		    nw_get_varint(in->buf, &in->pos, in->size, &dip) ||
		    nw_get_varint(in->buf, &in->pos, in->size, &dsp))
			return in_fail(in, at, "delta tree %u node %u: cut short or over 64 bits",
				       t, id);
		has_metrics = up & 1;
		up >>= 1;
		if (up == 0 || up > id)
			return in_fail(in, at, "delta tree %u node %u: its parent is not an earlier "
					       "node", t, id);
		ip += (uint64_t)nw_unzigzag(dip);
		sp += (uint64_t)nw_unzigzag(dsp);
		node = nw_cct_append(cct, id - (uint32_t)up, ip, sp);
		if (node == NW_CCT_NONE)
			return -ENOMEM;
		err = has_metrics ? in_metric_varints(in, nw_cct_metrics(cct, node), p->nmetrics,
						      t, id, p->totals) : 0;
		if (err)
			return err;
	}
	if (added)
		nw_cct_link_in_order(cct);
	return 0;
}

int nw_csprof_apply_delta(struct nw_csprof *p, const void *buf, size_t size,
			  struct nw_csprof_error *err)
{
	struct csprof_in in = { .buf = buf, .size = size, .err = err };
	uint32_t nmetrics, ntrees;
	int rc;

	if (err) {
		err->offset = 0;
		err->msg[0] = 0;
	}
	rc = in_expect(&in, DELTA_MAGIC, 8, "delta magic");
	if (!rc)
		rc = in_u32(&in, &nmetrics, "metrics");
	if (!rc)
		rc = in_u32(&in, &ntrees, "trees");
	if (rc)
		return rc;
	if (nmetrics != p->nmetrics || ntrees != p->ntrees)
		return in_fail(&in, 8, "delta of %u metrics and %u trees, but the file has %u and %u",
			       nmetrics, ntrees, p->nmetrics, p->ntrees);
	for (uint32_t t = 0; t < ntrees && !rc; t++)
		rc = apply_tree_delta(&in, p, t);
	if (!rc && in_left(&in))
		rc = in_fail(&in, in.pos, "%zu bytes after the last tree", in_left(&in));
	return rc;
}
