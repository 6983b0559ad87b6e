/* SPDX-License-Identifier: MIT */
/*
 * HPC_CSPROF reader (DESIGN.md, "HPC_CSPROF file format").  The buffer is
 * untrusted: each field is checked against the bytes left before it is
 * read (csprofio.h), and each count against the smallest number of bytes
 * its items can take before anything is allocated from it.
 */
#include "format/csprof.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/csprofio.h"
#include "util/file.h"

/* Bytes of a mapped file given back at a time (a multiple of the page size). */
#define RELEASE_CHUNK (4u << 20)

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
	uint32_t vma_size = 0, uint_size = 0; /* read after one check of the header */
	uint64_t num_nodes = 0, node_size;
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

int nw_csprof_read_file(const char *path, struct nw_csprof **ret, struct nw_csprof_error *err)
{
	char *buf = NULL;
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
		rc = nw_read_fd(fd, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, &buf, &size);
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
