/* SPDX-License-Identifier: MIT */
/*
 * HPC_CSPROF writer and reader: round trips, a byte-exact golden file made
 * by an independent Python encoder (tests/data/make-golden.py), every
 * truncation of valid files and corrupted fields; a checkpoint's delta of
 * a file, applied and refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "format/csprof.h"
#include "model/cct.h"

#define GOLDEN NW_TEST_DATA "/golden-tiny.csprof"

/* Offsets in golden-tiny.csprof, from the layout in DESIGN.md. */
#define G_SIZE		   473
#define G_TARGET	   24
#define G_NUM_METRICS	   36
#define G_METRIC0	   40 /* tag 0x30 of the first metric name */
#define G_METRIC0_LEN	   44
#define G_METRIC0_FLAGS	   65
#define G_NUM_EPOCHS	   137
#define G_NUM_MODULES	   141
#define G_MODULE0_LEN	   145
#define G_NUM_TREES	   233
#define G_TREE		   245
#define G_TREE_VERSION	   255
#define G_TREE_VMA	   261
#define G_TREE_NUM_NODES   269
#define G_TREE_EPOCH	   277
#define G_NODE(i)	   (281 + 48 * (i))
#define G_NODE_PARENT(i)   (G_NODE(i) + 8)
#define G_NODE_IP(i)	   (G_NODE(i) + 16)

static void put_u32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint8_t *load_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	buf = malloc(len ? (size_t)len : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*size = (size_t)len;
	return buf;
}

/* Writes @p with nw_csprof_write() into memory. */
static uint8_t *write_mem(const struct nw_csprof *p, size_t *size)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);

	assert_non_null(f);
	assert_int_equal(nw_csprof_write(f, p), 0);
	assert_int_equal(fclose(f), 0);
	return (uint8_t *)buf;
}

/* Parses a private copy of exactly @size bytes, so a read past the end is caught. */
static int read_copy(const uint8_t *buf, size_t size, struct nw_csprof **ret,
		     struct nw_csprof_error *err)
{
	uint8_t *copy = malloc(size ? size : 1);
	int rc;

	assert_non_null(copy);
	memcpy(copy, buf, size);
	rc = nw_csprof_read(copy, size, ret, err);
	free(copy);
	return rc;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

/* The profile make-golden.py encodes, built through the C API. */
static struct nw_csprof *golden_profile(void)
{
	struct nw_csprof *p = calloc(1, sizeof(*p));
	struct nw_cct *cct;
	uint32_t main_n, memset_n, helper_n, order[4];
	uint64_t *m;

	assert_non_null(p);
	p->target = xstrdup("tiny");
	p->nmetrics = 2;
	p->metrics = calloc(2, sizeof(*p->metrics));
	assert_non_null(p->metrics);
	p->metrics[0] = (struct nw_csprof_metric){ xstrdup("cpu-clock:samples"),
						   NW_CSPROF_FLAG_ASYNC, 1000000 };
	p->metrics[1] = (struct nw_csprof_metric){
		xstrdup("cpu-clock:period"), NW_CSPROF_FLAG_ASYNC | NW_CSPROF_FLAG_REAL, 1000000
	};
	p->nepochs = 1;
	p->epochs = calloc(1, sizeof(*p->epochs));
	assert_non_null(p->epochs);
	p->epochs[0].nmodules = 2;
	p->epochs[0].modules = calloc(2, sizeof(*p->epochs[0].modules));
	assert_non_null(p->epochs[0].modules);
	p->epochs[0].modules[0] =
		(struct nw_csprof_module){ xstrdup("/usr/bin/tiny"), 0x0, 0x555555554000 };
	p->epochs[0].modules[1] = (struct nw_csprof_module){
		xstrdup("/usr/lib/x86_64-linux-gnu/libc.so.6"), 0x28000, 0x7ffff7dab000
	};

	cct = nw_cct_new(2);
	assert_non_null(cct);
	/*
	 * The golden preorder is root, main, memset, helper.  nw_cct_child()
	 * links a new child first among its siblings: insert helper first.
	 */
	helper_n = nw_cct_child(cct, NW_CCT_ROOT, 0x555555555160, 0);
	main_n = nw_cct_child(cct, NW_CCT_ROOT, 0x555555555139, 0x7fffffffe0f0);
	memset_n = nw_cct_child(cct, main_n, 0x7ffff7e2d123, 0x7fffffffe0b0);
	assert_int_not_equal(helper_n, NW_CCT_NONE);
	assert_int_not_equal(main_n, NW_CCT_NONE);
	assert_int_not_equal(memset_n, NW_CCT_NONE);
	m = nw_cct_metrics(cct, main_n);
	m[0] = 1;
	m[1] = 1000000;
	m = nw_cct_metrics(cct, memset_n);
	m[0] = 3;
	m[1] = 0x0102030405060708ULL;
	m = nw_cct_metrics(cct, helper_n);
	m[0] = 2;
	m[1] = 2000000;
	assert_int_equal(nw_cct_preorder(cct, order), 4);
	/* If this fails, nw_cct_child's sibling order changed: swap the inserts above. */
	assert_int_equal(order[1], main_n);
	assert_int_equal(order[2], memset_n);
	assert_int_equal(order[3], helper_n);

	p->ntrees = 1;
	p->trees = calloc(1, sizeof(*p->trees));
	assert_non_null(p->trees);
	p->trees[0].epoch = 0;
	p->trees[0].cct = cct;
	return p;
}

static void test_golden_write(void **state)
{
	struct nw_csprof *p = golden_profile();
	size_t gsize, size;
	uint8_t *golden = load_file(GOLDEN, &gsize);
	uint8_t *out = write_mem(p, &size);

	assert_int_equal(gsize, G_SIZE);
	assert_int_equal(size, gsize);
	assert_memory_equal(out, golden, gsize);
	free(out);
	free(golden);
	nw_csprof_free(p);
}

static void test_golden_read(void **state)
{
	struct nw_csprof_error err;
	struct nw_csprof *p = NULL;
	const struct nw_cct *cct;
	const struct nw_cct_node *root, *main_n, *memset_n, *helper_n;
	uint8_t *golden, *again;
	size_t gsize, size;

	golden = load_file(GOLDEN, &gsize);
	assert_int_equal(read_copy(golden, gsize, &p, &err), 0);
	assert_string_equal(p->target, "tiny");
	assert_int_equal(p->nmetrics, 2);
	assert_string_equal(p->metrics[0].name, "cpu-clock:samples");
	assert_int_equal(p->metrics[0].flags, NW_CSPROF_FLAG_ASYNC);
	assert_int_equal(p->metrics[0].period, 1000000);
	assert_string_equal(p->metrics[1].name, "cpu-clock:period");
	assert_int_equal(p->metrics[1].flags, NW_CSPROF_FLAG_ASYNC | NW_CSPROF_FLAG_REAL);
	assert_int_equal(p->nepochs, 1);
	assert_int_equal(p->epochs[0].nmodules, 2);
	assert_string_equal(p->epochs[0].modules[0].name, "/usr/bin/tiny");
	assert_int_equal(p->epochs[0].modules[0].mapped, 0x555555554000);
	assert_string_equal(p->epochs[0].modules[1].name, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_int_equal(p->epochs[0].modules[1].vaddr, 0x28000);
	assert_int_equal(p->epochs[0].modules[1].mapped, 0x7ffff7dab000);
	assert_int_equal(p->ntrees, 1);
	assert_int_equal(p->trees[0].epoch, 0);

	cct = p->trees[0].cct;
	assert_int_equal(cct->nmetrics, 2);
	assert_int_equal(cct->n, 4);
	root = &cct->nodes[NW_CCT_ROOT];
	assert_int_equal(root->ip, 0);
	main_n = &cct->nodes[nw_cct_find(cct, NW_CCT_ROOT, 0x555555555139)];
	helper_n = &cct->nodes[nw_cct_find(cct, NW_CCT_ROOT, 0x555555555160)];
	memset_n = &cct->nodes[nw_cct_find(cct, nw_cct_find(cct, NW_CCT_ROOT, 0x555555555139),
					   0x7ffff7e2d123)];
	assert_int_equal(main_n->sp, 0x7fffffffe0f0);
	assert_int_equal(memset_n->sp, 0x7fffffffe0b0);
	assert_int_equal(helper_n->sp, 0);
	assert_int_equal(nw_cct_metrics(cct, (uint32_t)(memset_n - cct->nodes))[1],
			 0x0102030405060708ULL);
	assert_int_equal(nw_cct_metrics(cct, (uint32_t)(helper_n - cct->nodes))[0], 2);
	assert_int_equal(nw_cct_metrics(cct, (uint32_t)(main_n - cct->nodes))[1], 1000000);
	assert_int_equal(nw_cct_find(cct, NW_CCT_ROOT, 0x7ffff7e2d123), NW_CCT_NONE);

	/* What was read writes back to the same bytes: file order is kept. */
	again = write_mem(p, &size);
	assert_int_equal(size, gsize);
	assert_memory_equal(again, golden, gsize);
	free(again);
	free(golden);
	nw_csprof_free(p);
}

/* ---- round trips of generated profiles ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Adds @nsamples random samples to @cct, marking the leaves changed. */
static void grow_cct(struct nw_cct *cct, unsigned nsamples, uint64_t seed)
{
	uint64_t s = seed;

	for (unsigned i = 0; i < nsamples; i++) {
		struct nw_frame frames[8];
		size_t depth = 1 + rng_next(&s) % 8;
		uint32_t leaf;

		for (size_t d = 0; d < depth; d++) {
			/* Few distinct ips, so paths share prefixes. */
			frames[d].ip = 0x400000 + (rng_next(&s) % 6) * 0x10 + (d << 40);
			frames[d].sp = rng_next(&s) % 3 ? 0x7ffd0000 + d * 0x40 : 0;
		}
		leaf = nw_cct_insert(cct, frames, depth);
		assert_int_not_equal(leaf, NW_CCT_NONE);
		for (unsigned k = 0; k < cct->nmetrics; k++)
			nw_cct_metrics(cct, leaf)[k] += 1 + (rng_next(&s) >> (k * 13));
		nw_cct_mark_changed(cct, leaf);
	}
}

static struct nw_cct *random_cct(unsigned nmetrics, unsigned nsamples, uint64_t seed)
{
	struct nw_cct *cct = nw_cct_new(nmetrics);

	assert_non_null(cct);
	grow_cct(cct, nsamples, seed);
	return cct;
}

static struct nw_csprof *random_profile(unsigned nmetrics, uint64_t seed)
{
	static const uint32_t tree_epochs[] = { 0, 2, 1, 0 };
	static const unsigned tree_samples[] = { 300, 50, 0, 1000 };
	struct nw_csprof *p = calloc(1, sizeof(*p));
	char name[64];

	assert_non_null(p);
	p->target = xstrdup("/usr/bin/some target");
	p->nmetrics = nmetrics;
	p->metrics = calloc(nmetrics, sizeof(*p->metrics));
	assert_non_null(p->metrics);
	for (unsigned i = 0; i < nmetrics; i++) {
		snprintf(name, sizeof(name), "event%u:%s", i / 2, i % 2 ? "period" : "samples");
		p->metrics[i].name = xstrdup(name);
		p->metrics[i].flags = i % 2 ? NW_CSPROF_FLAG_ASYNC : NW_CSPROF_FLAG_REAL;
		p->metrics[i].period = 1000003ULL * (i + 1) + (1ULL << 40);
	}
	p->nepochs = 3;
	p->epochs = calloc(3, sizeof(*p->epochs));
	assert_non_null(p->epochs);
	for (uint32_t e = 0; e < 3; e++) {
		/* Epoch 1 has no modules at all. */
		uint32_t nmod = e == 1 ? 0 : 2 + e;

		p->epochs[e].nmodules = nmod;
		p->epochs[e].modules = nmod ? calloc(nmod, sizeof(struct nw_csprof_module)) : NULL;
		for (uint32_t m = 0; m < nmod; m++) {
			snprintf(name, sizeof(name), "/lib/mod-%u-%u.so", e, m);
			p->epochs[e].modules[m].name = xstrdup(m == 1 ? "" : name);
			p->epochs[e].modules[m].vaddr = 0x1000 * m;
			p->epochs[e].modules[m].mapped = 0x7f0000000000ULL + 0x100000 * m + e;
		}
	}
	p->ntrees = 4;
	p->trees = calloc(4, sizeof(*p->trees));
	assert_non_null(p->trees);
	for (uint32_t t = 0; t < 4; t++) {
		p->trees[t].epoch = tree_epochs[t];
		p->trees[t].cct = random_cct(nmetrics, tree_samples[t], seed + t);
	}
	return p;
}

/* Same tree: same node count, and every path of @a in @b with its sp and metrics. */
static void assert_same_cct(const struct nw_cct *a, const struct nw_cct *b)
{
	uint32_t *order = malloc(a->n * sizeof(*order));
	uint32_t *to = malloc(a->n * sizeof(*to));
	uint32_t n;

	assert_non_null(order);
	assert_non_null(to);
	assert_int_equal(a->nmetrics, b->nmetrics);
	assert_int_equal(a->n, b->n);
	n = nw_cct_preorder(a, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t x = order[k], y;

		if (x == NW_CCT_ROOT)
			y = NW_CCT_ROOT;
		else
			y = nw_cct_find(b, to[a->nodes[x].parent], a->nodes[x].ip);
		assert_int_not_equal(y, NW_CCT_NONE);
		to[x] = y;
		assert_int_equal(a->nodes[x].ip, b->nodes[y].ip);
		assert_int_equal(a->nodes[x].sp, b->nodes[y].sp);
		assert_memory_equal(nw_cct_metrics(a, x), nw_cct_metrics(b, y),
				    a->nmetrics * sizeof(uint64_t));
	}
	free(order);
	free(to);
}

static void assert_same_profile(const struct nw_csprof *a, const struct nw_csprof *b)
{
	assert_string_equal(a->target, b->target);
	assert_int_equal(a->nmetrics, b->nmetrics);
	for (uint32_t i = 0; i < a->nmetrics; i++) {
		assert_string_equal(a->metrics[i].name, b->metrics[i].name);
		assert_int_equal(a->metrics[i].flags, b->metrics[i].flags);
		assert_int_equal(a->metrics[i].period, b->metrics[i].period);
	}
	assert_int_equal(a->nepochs, b->nepochs);
	for (uint32_t e = 0; e < a->nepochs; e++) {
		assert_int_equal(a->epochs[e].nmodules, b->epochs[e].nmodules);
		for (uint32_t m = 0; m < a->epochs[e].nmodules; m++) {
			const struct nw_csprof_module *x = &a->epochs[e].modules[m];
			const struct nw_csprof_module *y = &b->epochs[e].modules[m];

			assert_string_equal(x->name, y->name);
			assert_int_equal(x->vaddr, y->vaddr);
			assert_int_equal(x->mapped, y->mapped);
		}
	}
	assert_int_equal(a->ntrees, b->ntrees);
	for (uint32_t t = 0; t < a->ntrees; t++) {
		assert_int_equal(a->trees[t].epoch, b->trees[t].epoch);
		assert_same_cct(a->trees[t].cct, b->trees[t].cct);
	}
}

static void round_trip(unsigned nmetrics)
{
	struct nw_csprof *p = random_profile(nmetrics, 0x9e3779b97f4a7c15ULL + nmetrics), *q;
	struct nw_csprof_error err;
	uint8_t *bytes, *again;
	size_t size, size2;

	/* The generated trees are not trivial. */
	assert_true(p->trees[0].cct->n > 50);
	assert_int_equal(p->trees[2].cct->n, 1);
	bytes = write_mem(p, &size);
	assert_int_equal(read_copy(bytes, size, &q, &err), 0);
	assert_same_profile(p, q);
	again = write_mem(q, &size2);
	assert_int_equal(size2, size);
	assert_memory_equal(again, bytes, size);
	free(again);
	free(bytes);
	nw_csprof_free(q);
	nw_csprof_free(p);
}

static void test_round_trip_2_metrics(void **state)
{
	round_trip(2);
}

static void test_round_trip_4_metrics(void **state)
{
	round_trip(4);
}

static void test_file_io(void **state)
{
	const char *path = NW_TEST_BUILD "/test-csprof-io.csprof";
	struct nw_csprof *p = random_profile(2, 7), *q = NULL;
	struct nw_csprof_error err;
	FILE *f;

	assert_int_equal(nw_csprof_write_file(path, p), 0);
	assert_int_equal(nw_csprof_read_file(path, &q, &err), 0);
	assert_same_profile(p, q);
	nw_csprof_free(q);

	/* An empty file is a truncated one. */
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	q = NULL;
	assert_int_equal(nw_csprof_read_file(path, &q, &err), -EBADMSG);
	assert_null(q);
	assert_int_equal(err.offset, 0);
	unlink(path);

	assert_int_equal(nw_csprof_read_file(NW_TEST_BUILD "/no-such-file.csprof", &q, &err),
			 -ENOENT);
	assert_int_equal(err.offset, 0);
	assert_non_null(strstr(err.msg, "no-such-file.csprof"));
	assert_null(q);

	/* A write error shows, as itself (/dev/full: ENOSPC). */
	f = fopen("/dev/full", "w");
	if (f) {
		assert_int_equal(nw_csprof_write(f, p), -ENOSPC);
		fclose(f);
	}
	nw_csprof_free(p);
}

static void test_write_invalid(void **state)
{
	struct nw_csprof *p = golden_profile();
	struct nw_cct *good = p->trees[0].cct, *bad = nw_cct_new(3);
	FILE *f = fopen("/dev/null", "w");

	assert_non_null(f);
	assert_non_null(bad);
	p->trees[0].cct = bad; /* 3 metrics in a 2-metric profile */
	assert_int_equal(nw_csprof_write(f, p), -EINVAL);
	p->trees[0].cct = good;
	nw_cct_free(bad);
	p->trees[0].epoch = 1; /* only 1 epoch */
	assert_int_equal(nw_csprof_write(f, p), -EINVAL);
	p->trees[0].epoch = 0;
	assert_int_equal(nw_csprof_write(f, p), 0);
	fclose(f);
	nw_csprof_free(p);
}

/* ---- truncated and corrupt files ---- */

static void truncate_everywhere(const uint8_t *buf, size_t size)
{
	for (size_t len = 0; len < size; len++) {
		struct nw_csprof_error err = { .offset = UINT64_MAX };
		struct nw_csprof *p = NULL;

		assert_int_equal(read_copy(buf, len, &p, &err), -EBADMSG);
		assert_null(p);
		/* The failure is at or before the end of what there is. */
		assert_true(err.offset <= len);
		assert_true(strlen(err.msg) > 0);
	}
}

static void test_truncated_golden(void **state)
{
	size_t size;
	uint8_t *golden = load_file(GOLDEN, &size);

	truncate_everywhere(golden, size);
	free(golden);
}

static void test_truncated_generated(void **state)
{
	struct nw_csprof *p = random_profile(4, 99);
	size_t size;
	uint8_t *bytes;

	/* Keep it small enough to parse every prefix quickly (under valgrind too). */
	nw_cct_free(p->trees[0].cct);
	p->trees[0].cct = random_cct(4, 12, 5);
	nw_cct_free(p->trees[3].cct);
	p->trees[3].cct = random_cct(4, 6, 6);
	bytes = write_mem(p, &size);
	truncate_everywhere(bytes, size);
	free(bytes);
	nw_csprof_free(p);
}

/* Reads the golden file with @len bytes at @at replaced, expecting -EBADMSG. */
static void expect_corrupt(size_t at, const void *bytes, size_t len, uint64_t offset,
			   const char *msg_part)
{
	struct nw_csprof_error err;
	struct nw_csprof *p = NULL;
	size_t size;
	uint8_t *buf = load_file(GOLDEN, &size);

	assert_true(at + len <= size);
	memcpy(buf + at, bytes, len);
	assert_int_equal(nw_csprof_read(buf, size, &p, &err), -EBADMSG);
	assert_null(p);
	if (!strstr(err.msg, msg_part))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, msg_part);
	assert_int_equal(err.offset, offset);
	free(buf);
}

static void corrupt_u32(size_t at, uint32_t v, uint64_t offset, const char *msg_part)
{
	uint8_t b[4];

	put_u32(b, v);
	expect_corrupt(at, b, 4, offset, msg_part);
}

static void corrupt_u64(size_t at, uint64_t v, uint64_t offset, const char *msg_part)
{
	uint8_t b[8];

	put_u64(b, v);
	expect_corrupt(at, b, 8, offset, msg_part);
}

static void test_corrupt_header(void **state)
{
	expect_corrupt(0, "HPC_CSPROX", 10, 0, "file magic");
	expect_corrupt(10, "01.00", 5, 10, "file version");
	expect_corrupt(15, "b", 1, 15, "endian");
	corrupt_u64(16, 2, 16, "num_chunks is 2");
	corrupt_u32(G_TARGET, 0x30, G_TARGET, "tag for target");
	corrupt_u32(G_TARGET + 4, 0xfffffff0, G_TARGET + 8, "target");
	expect_corrupt(G_TARGET + 9, "\0", 1, G_TARGET + 8, "NUL");
}

static void test_corrupt_counts(void **state)
{
	corrupt_u32(G_NUM_METRICS, 0xffffffff, G_NUM_METRICS, "num_metrics 4294967295");
	corrupt_u32(G_METRIC0_LEN, 0x7fffffff, G_METRIC0_LEN + 4, "metric name");
	corrupt_u32(G_METRIC0_FLAGS, 0x41, G_METRIC0_FLAGS, "tag for metric flags");
	corrupt_u32(G_NUM_EPOCHS, 0x40000000, G_NUM_EPOCHS, "num_epochs");
	corrupt_u32(G_NUM_MODULES, 0x10000000, G_NUM_MODULES, "num_modules");
	corrupt_u32(G_MODULE0_LEN, 0xffffffff, G_MODULE0_LEN + 4, "module name");
	corrupt_u32(G_NUM_TREES, 0xffffffff, G_NUM_TREES, "num_trees");
	corrupt_u32(G_NUM_TREES, 2, G_TREE + 36 + 4 * 48, "tree header");
	corrupt_u64(G_TREE_NUM_NODES, 0x0400000000000000ULL, G_TREE_NUM_NODES,
		    "num_nodes 288230376151711744");
	corrupt_u64(G_TREE_NUM_NODES, 5, G_TREE_NUM_NODES, "num_nodes 5");
	corrupt_u64(G_TREE_NUM_NODES, 0, G_TREE_NUM_NODES, "no nodes");
	corrupt_u32(G_TREE_EPOCH, 1, G_TREE_EPOCH, "epoch index 1");
}

static void test_corrupt_tree(void **state)
{
	expect_corrupt(G_TREE, "HPC_CSTRXX", 10, G_TREE, "tree magic");
	expect_corrupt(G_TREE_VERSION, "01.01", 5, G_TREE_VERSION, "tree version");
	corrupt_u32(G_TREE_VMA, 4, G_TREE_VMA, "vma size 4");
	corrupt_u64(G_NODE(2), 3, G_NODE(2), "node 2: id is 3");
	corrupt_u64(G_NODE_PARENT(0), 1, G_NODE_PARENT(0), "root's parent");
	corrupt_u64(G_NODE_PARENT(2), 40, G_NODE_PARENT(2),
		    "tree 0 node 2: parent 40 is not an earlier node");
	corrupt_u64(G_NODE_PARENT(2), 2, G_NODE_PARENT(2), "parent 2 is not an earlier node");
}

static void test_trailing_byte(void **state)
{
	struct nw_csprof_error err;
	struct nw_csprof *p = NULL;
	size_t size;
	uint8_t *buf = load_file(GOLDEN, &size), *longer = malloc(size + 1);

	assert_non_null(longer);
	memcpy(longer, buf, size);
	longer[size] = 0;
	assert_int_equal(nw_csprof_read(longer, size + 1, &p, &err), -EBADMSG);
	assert_null(p);
	assert_int_equal(err.offset, size);
	assert_non_null(strstr(err.msg, "1 trailing bytes"));
	/* The same bytes without the extra one are fine. */
	assert_int_equal(nw_csprof_read(longer, size, &p, &err), 0);
	nw_csprof_free(p);
	free(longer);
	free(buf);
}

/*
 * Two sibling nodes with one ip (not written by Narwhal) stay two nodes:
 * node i is file node i, since sample times name nodes by their file id.
 * Views that merge by frame add them up.
 */
/* @p's delta against the trees as they were with @base[t] nodes, in memory. */
static uint8_t *write_delta_mem(const struct nw_csprof *p, const uint32_t *base, size_t *size)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);

	assert_non_null(f);
	assert_int_equal(nw_csprof_write_delta(f, p, base), 0);
	assert_int_equal(fclose(f), 0);
	return (uint8_t *)buf;
}

/*
 * A checkpoint's delta: written after new paths (far apart ips, kernel
 * addresses, unknown sps, metrics of every size) and changed metrics, it
 * brings the file as it was to the trees as they are; cut anywhere, or
 * with a parent that is not an earlier node, it is refused with a reason.
 */
/* The totals a read file carries are its nodes' metrics summed (mod 2^64, as they add up). */
static void assert_totals(const struct nw_csprof *p)
{
	for (uint32_t k = 0; k < p->nmetrics; k++) {
		uint64_t sum = 0;

		for (uint32_t t = 0; t < p->ntrees; t++)
			for (uint32_t i = 0; i < p->trees[t].cct->n; i++)
				sum += nw_cct_metrics(p->trees[t].cct, i)[k];
		assert_int_equal(p->totals[k], sum);
	}
}

static void test_delta(void **state)
{
	struct nw_csprof *p = random_profile(2, 0x51ed270b2f4a7c15ULL), *q;
	struct nw_csprof_error err;
	uint32_t base[4], added = 0;
	uint8_t *bytes, *delta;
	size_t size, dsize;

	p->index_order = true;
	bytes = write_mem(p, &size);
	assert_int_equal(read_copy(bytes, size, &q, &err), 0);
	assert_totals(q);
	for (uint32_t t = 0; t < p->ntrees; t++) {
		struct nw_cct *cct = p->trees[t].cct;

		assert_int_equal(nw_cct_track_changes(cct), 0);
		base[t] = cct->n;
		grow_cct(cct, 40 * t, 0x1234 + t);
	}
	{
		struct nw_cct *cct = p->trees[0].cct;
		/* A kernel frame under a user one (new to tree 0), a huge metric. */
		struct nw_frame fr[] = { { 0xffffffff81234567ULL, 0 }, { 0x500010, 0x7ffd0000 } };
		uint32_t leaf = nw_cct_insert(cct, fr, 2);

		assert_int_not_equal(leaf, NW_CCT_NONE);
		nw_cct_metrics(cct, leaf)[1] = UINT64_MAX;
		nw_cct_mark_changed(cct, leaf);
		assert_true(cct->n > base[0]);
	}
	delta = write_delta_mem(p, base, &dsize);
	/* Varints: far fewer bytes than the 20 + 16 of a node added as fixed fields. */
	for (uint32_t t = 0; t < p->ntrees; t++)
		added += p->trees[t].cct->n - base[t];
	assert_true(added > 50);
	assert_true(dsize < added * 36 / 2);
	assert_int_equal(nw_csprof_apply_delta(q, delta, dsize, &err), 0);
	assert_same_profile(p, q);
	/* Metrics changed and nodes added: the totals followed them. */
	assert_totals(q);
	/* What is applied is checked against what it extends: not twice. */
	assert_int_equal(nw_csprof_apply_delta(q, delta, dsize, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "nodes"));
	nw_csprof_free(q);

	for (size_t cut = 0; cut < dsize; cut++) {
		assert_int_equal(read_copy(bytes, size, &q, &err), 0);
		err.msg[0] = 0;
		assert_int_equal(nw_csprof_apply_delta(q, delta, cut, &err), -EBADMSG);
		assert_true(err.msg[0] != 0);
		nw_csprof_free(q);
	}
	/* Tree 0 changed no node: its first added (after the magic, counts, and header). */
	assert_int_equal(read_copy(bytes, size, &q, &err), 0);
	delta[8 + 4 + 4 + 16] = 0;
	assert_int_equal(nw_csprof_apply_delta(q, delta, dsize, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "not an earlier node"));
	nw_csprof_free(q);
	free(delta);
	free(bytes);
	nw_csprof_free(p);
}

static void test_duplicate_siblings_kept(void **state)
{
	struct nw_csprof_error err;
	struct nw_csprof *p = NULL;
	const struct nw_cct *cct;
	size_t size, wsize;
	uint8_t *buf = load_file(GOLDEN, &size), *again;

	/* helper (node 3, a root child) gets main's ip. */
	put_u64(buf + G_NODE_IP(3), 0x555555555139);
	assert_int_equal(nw_csprof_read(buf, size, &p, &err), 0);
	cct = p->trees[0].cct;
	assert_int_equal(cct->n, 4);
	/* main (file node 1) and the former helper (file node 3), each with its own metrics. */
	assert_int_equal(cct->nodes[1].ip, 0x555555555139);
	assert_int_equal(cct->nodes[1].parent, NW_CCT_ROOT);
	assert_int_equal(cct->nodes[3].ip, 0x555555555139);
	assert_int_equal(cct->nodes[3].parent, NW_CCT_ROOT);
	assert_int_equal(nw_cct_metrics(cct, 1)[0], 1);
	assert_int_equal(nw_cct_metrics(cct, 1)[1], 1000000);
	assert_int_equal(nw_cct_metrics(cct, 3)[0], 2);
	assert_int_equal(nw_cct_metrics(cct, 3)[1], 2000000);
	/* Together they hold what the merged node held. */
	assert_int_equal(nw_cct_metrics(cct, 1)[0] + nw_cct_metrics(cct, 3)[0], 1 + 2);
	assert_int_equal(nw_cct_metrics(cct, 1)[1] + nw_cct_metrics(cct, 3)[1],
			 1000000 + 2000000);
	assert_int_equal(cct->nodes[1].sp, 0x7fffffffe0f0);
	assert_int_equal(cct->nodes[3].sp, 0);
	/* memset (file node 2) stays below main, the node the file put it under. */
	assert_int_equal(cct->nodes[2].ip, 0x7ffff7e2d123);
	assert_int_equal(cct->nodes[2].parent, 1);
	assert_int_equal(nw_cct_metrics(cct, 2)[0], 3);
	assert_int_equal(cct->nodes[3].first_child, NW_CCT_NONE);
	/* And the file writes back to the same bytes. */
	again = write_mem(p, &wsize);
	assert_int_equal(wsize, size);
	assert_memory_equal(again, buf, size);
	free(again);
	nw_csprof_free(p);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_write),
		cmocka_unit_test(test_golden_read),
		cmocka_unit_test(test_round_trip_2_metrics),
		cmocka_unit_test(test_round_trip_4_metrics),
		cmocka_unit_test(test_file_io),
		cmocka_unit_test(test_write_invalid),
		cmocka_unit_test(test_truncated_golden),
		cmocka_unit_test(test_truncated_generated),
		cmocka_unit_test(test_corrupt_header),
		cmocka_unit_test(test_corrupt_counts),
		cmocka_unit_test(test_corrupt_tree),
		cmocka_unit_test(test_trailing_byte),
		cmocka_unit_test(test_delta),
		cmocka_unit_test(test_duplicate_siblings_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
