/* SPDX-License-Identifier: MIT */
/* CCT insert, lookup, preorder, merge, and trees copied below a node side by side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/cct.h"

static uint32_t add(struct nw_cct *t, const uint64_t *ips, size_t n, uint64_t period)
{
	struct nw_frame f[16];
	uint32_t node;

	for (size_t i = 0; i < n; i++)
		f[i] = (struct nw_frame){ .ip = ips[i], .sp = 0x1000 + i };
	node = nw_cct_insert(t, f, n);
	assert_int_not_equal(node, NW_CCT_NONE);
	nw_cct_metrics(t, node)[0] += 1;
	nw_cct_metrics(t, node)[1] += period;
	return node;
}

static void test_insert_shares_prefixes(void **state)
{
	struct nw_cct *t = nw_cct_new(2);
	const uint64_t a[] = { 0x30, 0x20, 0x10 }; /* leaf first: main=0x10 */
	const uint64_t b[] = { 0x31, 0x20, 0x10 };
	uint32_t na, nb, main_node, mid;

	na = add(t, a, 3, 100);
	assert_int_equal(add(t, a, 3, 100), na);
	nb = add(t, b, 3, 50);
	assert_int_not_equal(na, nb);
	assert_int_equal(t->n, 5); /* root, 0x10, 0x20, 0x30, 0x31 */
	main_node = nw_cct_find(t, NW_CCT_ROOT, 0x10);
	mid = nw_cct_find(t, main_node, 0x20);
	assert_int_equal(nw_cct_find(t, mid, 0x30), na);
	assert_int_equal(nw_cct_find(t, mid, 0x31), nb);
	assert_int_equal(nw_cct_find(t, mid, 0x99), NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(t, na)[0], 2);
	assert_int_equal(nw_cct_metrics(t, na)[1], 200);
	assert_int_equal(nw_cct_metrics(t, nb)[1], 50);
	assert_int_equal(nw_cct_metrics(t, mid)[0], 0);
	/* sp tag: the frame's sp from the first insert (leaf got 0x1000). */
	assert_int_equal(t->nodes[na].sp, 0x1000);
	assert_int_equal(t->nodes[main_node].sp, 0x1002);
	nw_cct_free(t);
}

/*
 * A tracked tree marks a node whose sp tag goes from unknown to known, on
 * the path the insert follows and through the index, and no other: a
 * checkpoint's delta carries the tag with the node.
 */
static void test_sp_tag_marks_changed(void **state)
{
	struct nw_cct *t = nw_cct_new(1);
	struct nw_frame f[] = { { 0x30, 0 }, { 0x20, 0x2000 }, { 0x10, 0 } }, g[] = { { 0x40, 0 } };
	uint32_t leaf, mid, top;

	leaf = nw_cct_insert(t, f, 3);
	assert_int_equal(nw_cct_track_changes(t), 0);
	mid = t->nodes[leaf].parent;
	top = t->nodes[mid].parent;
	/* The same stack, tags known now: its path is followed without the index. */
	f[0].sp = 0x1000;
	f[1].sp = 0x2222;
	f[2].sp = 0x3000;
	assert_int_equal(nw_cct_insert(t, f, 3), leaf);
	assert_int_equal(t->nodes[leaf].sp, 0x1000);
	assert_int_equal(t->nodes[mid].sp, 0x2000); /* the first non-zero tag stays */
	assert_true(nw_cct_is_changed(t, leaf));
	assert_false(nw_cct_is_changed(t, mid));
	assert_true(nw_cct_is_changed(t, top));
	nw_cct_clear_changes(t);
	/* Through the index (another path in between), and a zero sp changes nothing. */
	assert_int_not_equal(nw_cct_insert(t, g, 1), NW_CCT_NONE);
	f[0].sp = 0;
	assert_int_equal(nw_cct_insert(t, f, 3), leaf);
	for (uint32_t i = 0; i < t->n; i++)
		assert_false(nw_cct_is_changed(t, i));
	nw_cct_free(t);
}

/* The leaf node of @ips (leaf first) found by lookups alone, or NW_CCT_NONE. */
static uint32_t lookup(const struct nw_cct *t, const uint64_t *ips, size_t n)
{
	uint32_t node = NW_CCT_ROOT;

	while (n-- > 0 && node != NW_CCT_NONE)
		node = nw_cct_find(t, node, ips[n]);
	return node;
}

/*
 * nw_cct_insert follows the previous insert's path while it matches: paths
 * that share a prefix, stop inside it, go deeper, recurse, or come back to
 * an older path must land on the same nodes as a walk of nw_cct_child.
 */
static void test_insert_follows_last_path(void **state)
{
	static const uint64_t paths[][6] = {
		{ 0x30, 0x20, 0x10 },
		{ 0x31, 0x20, 0x10 },
		{ 0x20, 0x10 },                   /* ends inside the last path */
		{ 0x40, 0x31, 0x20, 0x10 },       /* goes deeper */
		{ 0x20, 0x20, 0x20, 0x10 },       /* recursion: same ip, new nodes */
		{ 0x20, 0x20, 0x10 },
		{ 0x30, 0x20, 0x10 },             /* an older path again */
		{ 0x30, 0x21, 0x10 },             /* differs in the middle */
		{ 0x10 },
		{ 0x30, 0x20, 0x11 },             /* differs at the root */
	};
	static const size_t lens[] = { 3, 3, 2, 4, 4, 3, 3, 3, 1, 3 };
	struct nw_cct *t = nw_cct_new(2), *ref = nw_cct_new(2);
	struct nw_frame f[6];

	for (int round = 0; round < 2; round++) {
		for (size_t p = 0; p < sizeof(lens) / sizeof(lens[0]); p++) {
			uint32_t node, want = NW_CCT_ROOT;

			for (size_t i = 0; i < lens[p]; i++)
				f[i] = (struct nw_frame){ .ip = paths[p][i] };
			node = nw_cct_insert(t, f, lens[p]);
			for (size_t i = lens[p]; i-- > 0;)
				want = nw_cct_child(ref, want, paths[p][i], 0);
			assert_int_not_equal(node, NW_CCT_NONE);
			assert_int_equal(node, lookup(t, paths[p], lens[p]));
			assert_int_equal(t->n, ref->n);
			assert_int_equal(node, want); /* same creation order, same indexes */
		}
	}
	assert_int_equal(t->n, 13); /* root and 12 distinct prefixes */
	/* A zero sp tag is filled in by a later sp, also on the followed path. */
	for (size_t i = 0; i < 3; i++)
		f[i] = (struct nw_frame){ .ip = paths[0][i], .sp = 0x7000 + i };
	nw_cct_insert(t, f, 3);
	assert_int_equal(t->nodes[lookup(t, paths[0] + 2, 1)].sp, 0x7002);
	assert_int_equal(t->nodes[lookup(t, paths[0], 3)].sp, 0x7000);
	f[0].sp = 0x9000; /* a set tag stays */
	nw_cct_insert(t, f, 3);
	assert_int_equal(t->nodes[lookup(t, paths[0], 3)].sp, 0x7000);
	nw_cct_free(t);
	nw_cct_free(ref);
}

static void test_recursion_nests(void **state)
{
	struct nw_cct *t = nw_cct_new(2);
	const uint64_t rec[] = { 0x50, 0x50, 0x50, 0x10 };
	uint32_t node = NW_CCT_ROOT;
	int depth = 0;

	add(t, rec, 4, 1);
	while (t->nodes[node].first_child != NW_CCT_NONE) {
		node = t->nodes[node].first_child;
		depth++;
	}
	assert_int_equal(depth, 4);
	nw_cct_free(t);
}

static void test_many_siblings_and_growth(void **state)
{
	struct nw_cct *t = nw_cct_new(2);
	uint64_t path[2];

	/* 20000 children of one node: lookups must keep working as the index grows. */
	for (uint64_t i = 0; i < 20000; i++) {
		path[0] = 0x1000 + i;
		path[1] = 0x10;
		add(t, path, 2, 1);
	}
	for (uint64_t i = 0; i < 20000; i++) {
		path[0] = 0x1000 + i;
		add(t, path, 2, 1);
	}
	assert_int_equal(t->n, 20002);
	for (uint64_t i = 0; i < 20000; i += 997)
		assert_int_equal(nw_cct_metrics(t, nw_cct_find(t, nw_cct_find(t, 0, 0x10), 0x1000 + i))[0],
				 2);
	nw_cct_free(t);
}

static void test_preorder(void **state)
{
	struct nw_cct *t = nw_cct_new(2);
	const uint64_t a[] = { 0x30, 0x20, 0x10 }, b[] = { 0x40, 0x10 }, c[] = { 0x31, 0x20, 0x10 };
	uint32_t order[8], seen[8] = { 0 };

	add(t, a, 3, 1);
	add(t, b, 2, 1);
	add(t, c, 3, 1);
	assert_int_equal(nw_cct_preorder(t, order), t->n);
	assert_int_equal(order[0], NW_CCT_ROOT);
	/* Every node once, each after its parent, and subtrees contiguous. */
	for (uint32_t k = 0; k < t->n; k++) {
		uint32_t p = t->nodes[order[k]].parent;

		seen[order[k]]++;
		if (k) {
			uint32_t j;

			for (j = 0; j < k && order[j] != p; j++)
				;
			assert_true(j < k);
		}
	}
	for (uint32_t i = 0; i < t->n; i++)
		assert_int_equal(seen[i], 1);
	nw_cct_free(t);
}

static uint64_t map_high_bits(const struct nw_cct *src, uint32_t node, void *arg)
{
	return src->nodes[node].ip & ~0xfull; /* 0x30 and 0x31 become one frame */
}

static void test_merge(void **state)
{
	struct nw_cct *x = nw_cct_new(2), *y = nw_cct_new(2), *m = nw_cct_new(2);
	const uint64_t a[] = { 0x30, 0x20, 0x10 }, c[] = { 0x31, 0x20, 0x10 }, d[] = { 0x60, 0x10 };
	uint32_t n;

	add(x, a, 3, 10);
	add(x, d, 2, 5);
	add(y, c, 3, 7);
	add(y, a, 3, 1);
	assert_int_equal(nw_cct_merge(m, x, NULL, NULL), 0);
	assert_int_equal(nw_cct_merge(m, y, NULL, NULL), 0);
	n = nw_cct_find(m, nw_cct_find(m, nw_cct_find(m, 0, 0x10), 0x20), 0x30);
	assert_int_equal(nw_cct_metrics(m, n)[0], 2);
	assert_int_equal(nw_cct_metrics(m, n)[1], 11);
	assert_int_equal(m->n, 6);
	nw_cct_free(m);

	/* With a map, frames that map alike merge into one node. */
	m = nw_cct_new(2);
	assert_int_equal(nw_cct_merge(m, y, map_high_bits, NULL), 0);
	n = nw_cct_find(m, nw_cct_find(m, nw_cct_find(m, 0, 0x10), 0x20), 0x30);
	assert_int_not_equal(n, NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(m, n)[0], 2);
	assert_int_equal(nw_cct_metrics(m, n)[1], 8);
	assert_int_equal(m->n, 4);
	nw_cct_free(m);
	nw_cct_free(x);
	nw_cct_free(y);
}

static void test_merge_at(void **state)
{
	struct nw_cct *dst = nw_cct_new(2), *src = nw_cct_new(2);
	const uint64_t a[] = { 0x30, 0x20 }, top[] = { 0x99 };
	uint32_t at, n;

	add(src, a, 2, 10);
	add(src, a, 2, 5);
	at = add(dst, top, 1, 1);
	assert_int_equal(nw_cct_merge_at(dst, at, src, NULL, NULL), 0);
	/* src's root lands on node 0x99: its paths hang below it. */
	n = nw_cct_find(dst, nw_cct_find(dst, at, 0x20), 0x30);
	assert_int_not_equal(n, NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(dst, n)[0], 2);
	assert_int_equal(nw_cct_metrics(dst, n)[1], 15);
	assert_int_equal(nw_cct_find(dst, NW_CCT_ROOT, 0x20), NW_CCT_NONE);
	assert_int_equal(nw_cct_metrics(dst, at)[0], 1);
	assert_int_equal(dst->n, 4);
	nw_cct_free(dst);
	nw_cct_free(src);
}

/*
 * Trees copied into ranges of their own below nodes of their own
 * (nw_cct_extend(), nw_cct_copy_below()) make the tree that appending
 * their nodes in turn makes: nodes, links, hashes (a lookup finds them)
 * and metrics.
 */
static void test_copy_below(void **state)
{
	struct nw_cct *want = nw_cct_new(2), *got = nw_cct_new(2), *part[2];
	uint32_t at[2], base;

	(void)state;
	for (int k = 0; k < 2; k++) {
		uint32_t a, b;

		part[k] = nw_cct_new(2);
		a = nw_cct_append(part[k], NW_CCT_ROOT, 0x100 + k, 0x10);
		b = nw_cct_append(part[k], a, 0x200, 0x20);
		nw_cct_append(part[k], a, 0x300, 0);
		nw_cct_append(part[k], NW_CCT_ROOT, 0x400, 0);
		nw_cct_append(part[k], b, 0x500 + k, 0x50);
		for (uint32_t i = 0; i < part[k]->n; i++) {
			nw_cct_metrics(part[k], i)[0] = 10 * k + i;
			nw_cct_metrics(part[k], i)[1] = 1000 + i;
		}
	}
	/* Two nodes of each tree to copy below; the same appends, in turn, in @want. */
	for (int k = 0; k < 2; k++) {
		at[k] = nw_cct_append(want, NW_CCT_ROOT, 0x7000 + k, 0);
		nw_cct_append(got, NW_CCT_ROOT, 0x7000 + k, 0);
	}
	for (int k = 0; k < 2; k++) {
		uint32_t map[8] = { at[k] };

		for (uint32_t j = 1; j < part[k]->n; j++) {
			const struct nw_cct_node *n = &part[k]->nodes[j];

			map[j] = nw_cct_append(want, map[n->parent], n->ip, n->sp);
			nw_cct_metrics(want, map[j])[0] = nw_cct_metrics(part[k], j)[0];
			nw_cct_metrics(want, map[j])[1] = nw_cct_metrics(part[k], j)[1];
		}
		nw_cct_metrics(want, at[k])[0] += nw_cct_metrics(part[k], NW_CCT_ROOT)[0];
		nw_cct_metrics(want, at[k])[1] += nw_cct_metrics(part[k], NW_CCT_ROOT)[1];
	}
	base = nw_cct_extend(got, part[0]->n - 1 + part[1]->n - 1);
	assert_int_equal(base, 3);
	/* The second first: each copy only writes its own range. */
	nw_cct_copy_below(got, at[1], base + part[0]->n - 1, part[1], 2);
	nw_cct_copy_below(got, at[0], base, part[0], 2);
	assert_int_equal(got->n, want->n);
	for (uint32_t i = 0; i < want->n; i++) {
		const struct nw_cct_node *w = &want->nodes[i], *g = &got->nodes[i];

		assert_int_equal(g->ip, w->ip);
		assert_int_equal(g->sp, w->sp);
		assert_int_equal(g->parent, w->parent);
		assert_int_equal(g->first_child, w->first_child);
		assert_int_equal(g->next_sibling, w->next_sibling);
		assert_int_equal(g->hash, w->hash);
		assert_int_equal(nw_cct_metrics(got, i)[0], nw_cct_metrics(want, i)[0]);
		assert_int_equal(nw_cct_metrics(got, i)[1], nw_cct_metrics(want, i)[1]);
	}
	/* The index, rebuilt, finds a copied node by its path. */
	{
		uint32_t a = nw_cct_child(got, at[1], 0x101, 0), b, c;

		assert_int_not_equal(a, NW_CCT_NONE);
		b = nw_cct_child(got, a, 0x200, 0);
		c = nw_cct_find(got, b, 0x501);
		assert_int_equal(c, base + part[0]->n - 1 + 4);
	}
	for (int k = 0; k < 2; k++)
		nw_cct_free(part[k]);
	nw_cct_free(want);
	nw_cct_free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_shares_prefixes),
		cmocka_unit_test(test_insert_follows_last_path),
		cmocka_unit_test(test_sp_tag_marks_changed),
		cmocka_unit_test(test_recursion_nests),
		cmocka_unit_test(test_many_siblings_and_growth),
		cmocka_unit_test(test_preorder),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_at),
		cmocka_unit_test(test_copy_below),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
