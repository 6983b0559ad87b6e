/* SPDX-License-Identifier: MIT */
/*
 * The places of a measurement (model/places.h): interned once whatever
 * epoch, process or cache slot an ip comes through; dense ids in the
 * order places were met; the cache of recent ips gives what the resolver
 * gives; a whole tree at once as node after node; a worker's table
 * interned into the model's in order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/measurement.h"
#include "model/places.h"

#define APP_BASE 0x555555554000ull  /* a PIE: ELF address 0 there */
#define APP_AGAIN 0x565656560000ull /* the same program in another process */
#define LIB_AT 0x7f0000000000ull

enum { APP, LIB, NMODULES };

static void add_symbol(struct nw_symtab *t, uint32_t module, uint64_t addr, const char *fn)
{
	struct nw_symframe *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->function = strdup(fn);
	assert_non_null(f->function);
	assert_int_equal(nw_symtab_add(t, module, addr, f, 1), 0);
}

/*
 * Epoch 0: the program at APP_BASE and the library at LIB_AT; epoch 1:
 * the program of another process, at APP_AGAIN.
 */
static struct nw_measurement *two_processes(void)
{
	struct nw_measurement *m = nw_measurement_new();
	const struct nw_map e0[] = {
		{ APP_BASE, APP_BASE + 0x3000, 0, 0, APP },
		{ LIB_AT, LIB_AT + 0x2000, 0x1000, 0x1000, LIB },
	};
	const struct nw_map e1[] = { { APP_AGAIN, APP_AGAIN + 0x3000, 0, 0, APP } };

	assert_non_null(m);
	assert_int_equal(nw_module_intern(m->modules, "/bin/app", NULL, 0), APP);
	assert_int_equal(nw_module_intern(m->modules, "/lib/lib.so", NULL, 0), LIB);
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(e0, 2, 0)), 0);
	assert_int_equal(nw_measurement_add_epoch(m, nw_epoch_new(e1, 1, 0)), 1);
	add_symbol(m->symtab, APP, 0x1010, "main");
	add_symbol(m->symtab, APP, 0x101f, "main_call");
	add_symbol(m->symtab, LIB, 0x1010, "lib_func");
	nw_symtab_sort(m->symtab);
	return m;
}

/* Interning: one id per (module, addr), dense, the first caller flag kept. */
static void test_intern(void **state)
{
	struct nw_places p;
	struct nw_place a = { .addr = 0x10, .module = 0 }, b = { .addr = 0x10, .module = 1 };
	struct nw_place a_caller = { .addr = 0x10, .module = 0, .caller = true };

	nw_places_init(&p);
	assert_int_equal(nw_places_intern(&p, &a), 0);
	assert_int_equal(nw_places_intern(&p, &b), 1);
	/* The caller flag is not part of the key: the first one stays. */
	assert_int_equal(nw_places_intern(&p, &a_caller), 0);
	assert_false(p.v[0].caller);
	assert_int_equal(nw_places_intern(&p, &b), 1);
	/* Many, past the index's growth: ids stay dense and found. */
	for (uint64_t i = 0; i < 5000; i++) {
		struct nw_place k = { .addr = 0x1000 + i, .module = 2 };

		assert_int_equal(nw_places_intern(&p, &k), (int64_t)(2 + i));
	}
	for (uint64_t i = 0; i < 5000; i++) {
		struct nw_place k = { .addr = 0x1000 + i, .module = 2, .caller = true };

		assert_int_equal(nw_places_intern(&p, &k), (int64_t)(2 + i));
	}
	assert_int_equal(p.n, 5002);
	/* Sealed: read only, every place still there. */
	nw_places_seal(&p);
	assert_int_equal(p.n, 5002);
	assert_int_equal(p.v[5001].addr, 0x1000 + 4999);
	nw_places_clear(&p);
	assert_int_equal(p.n, 0);
	assert_int_equal(nw_places_intern(&p, &b), 0);
	nw_places_fini(&p);
}

/*
 * Resolving: the same code through two processes at two addresses is one
 * place; a caller frame is its return address - 1; the mapping comes
 * back; the cache answers as the resolver does, hit or miss.
 */
static void test_resolve(void **state)
{
	struct nw_measurement *m = two_processes();
	struct nw_place_cache c;
	const struct nw_map *map = NULL;
	struct nw_resolved r;
	int64_t leaf, again, call, lib;

	assert_int_equal(nw_place_cache_init(&c, 0), 0);
	leaf = nw_places_resolve(m->places, &c, m, 0, APP_BASE + 0x1010, false, &map);
	assert_int_equal(leaf, 0);
	assert_ptr_equal(map, &m->epochs[0]->maps[0]);
	/* Again: from the cache, the same answer. */
	map = NULL;
	assert_int_equal(nw_places_resolve(m->places, &c, m, 0, APP_BASE + 0x1010, false, &map), 0);
	assert_ptr_equal(map, &m->epochs[0]->maps[0]);
	/* The other process: another address, another mapping, the same place. */
	again = nw_places_resolve(m->places, &c, m, 1, APP_AGAIN + 0x1010, false, &map);
	assert_int_equal(again, leaf);
	assert_ptr_equal(map, &m->epochs[1]->maps[0]);
	/* A return address: looked up inside its call. */
	call = nw_places_resolve(m->places, &c, m, 0, APP_BASE + 0x1020, true, NULL);
	assert_int_equal(call, 1);
	assert_int_equal(m->places->v[call].addr, 0x101f);
	assert_true(m->places->v[call].caller);
	assert_string_equal(nw_place_sym(m, &m->places->v[call])->frames[0].function,
			    "main_call");
	/* The same ip as a leaf is another place. */
	assert_int_equal(nw_places_resolve(m->places, &c, m, 0, APP_BASE + 0x1020, false, NULL), 2);
	/* An exact PC under a signal handler: the mark stripped. */
	assert_int_equal(
		nw_places_resolve(m->places, &c, m, 0, (APP_BASE + 0x1010) | NW_IP_EXACT, false, NULL),
		leaf);
	lib = nw_places_resolve(m->places, &c, m, 0, LIB_AT + 0x10, false, NULL);
	assert_int_equal(m->places->v[lib].module, LIB);
	assert_int_equal(m->places->v[lib].addr, 0x1010);
	nw_place_resolved(m, &m->places->v[lib], false, &r);
	assert_ptr_equal(r.module, &m->modules->v[LIB]);
	assert_null(r.map);
	assert_string_equal(r.sym->frames[0].function, "lib_func");
	nw_place_cache_fini(&c);
	nw_measurement_free(m);
}

/* Outside every mapping: a place of no module at the PC (- 1 for a caller), one per address. */
static void test_unmapped(void **state)
{
	struct nw_measurement *m = two_processes();
	struct nw_place_cache c;
	const struct nw_map *map = &m->epochs[0]->maps[0];
	struct nw_resolved r;
	int64_t a, b, b_caller;

	assert_int_equal(nw_place_cache_init(&c, 0), 0);
	a = nw_places_resolve(m->places, &c, m, 0, 0x1000, false, &map);
	assert_null(map);
	assert_int_equal(m->places->v[a].module, NW_PLACE_NO_MODULE);
	assert_int_equal(m->places->v[a].addr, 0x1000);
	b = nw_places_resolve(m->places, &c, m, 0, 0x2000, false, NULL);
	assert_int_not_equal(a, b);
	b_caller = nw_places_resolve(m->places, &c, m, 0, 0x2001, true, NULL);
	assert_int_equal(b_caller, b);
	/* An epoch the model does not have: no mapping either. */
	assert_int_equal(nw_places_resolve(m->places, &c, m, 7, 0x1000, false, &map), a);
	assert_null(map);
	nw_place_resolved(m, &m->places->v[a], false, &r);
	assert_null(r.module);
	assert_null(r.sym);
	assert_null(nw_place_sym(m, &m->places->v[a]));
	nw_place_cache_fini(&c);
	nw_measurement_free(m);
}

/*
 * A cache of one slot: every other lookup misses, and what it says stays
 * right; a cleared cache forgets, the table does not.
 */
static void test_cache(void **state)
{
	struct nw_measurement *m = two_processes();
	struct nw_place_cache c;
	uint64_t ips[] = { APP_BASE + 0x1010, LIB_AT + 0x10, APP_BASE + 0x1010, LIB_AT + 0x10 };
	int64_t want[] = { 0, 1, 0, 1 };

	assert_int_equal(nw_place_cache_init(&c, 1), 0);
	assert_int_equal(c.mask, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(nw_places_resolve(m->places, &c, m, 0, ips[i], false, NULL),
				 want[i]);
	/* The same ip as a caller in the same slot: not the leaf's answer. */
	assert_int_equal(nw_places_resolve(m->places, &c, m, 0, LIB_AT + 0x11, true, NULL), 1);
	assert_int_equal(nw_places_resolve(m->places, &c, m, 0, LIB_AT + 0x11, false, NULL), 2);
	nw_place_cache_clear(&c);
	assert_int_equal(nw_places_resolve(m->places, &c, m, 0, LIB_AT + 0x10, false, NULL), 1);
	assert_int_equal(m->places->n, 3);
	nw_place_cache_fini(&c);
	/* Rounded up to a power of two. */
	assert_int_equal(nw_place_cache_init(&c, 100), 0);
	assert_int_equal(c.mask, 127);
	nw_place_cache_fini(&c);
	nw_measurement_free(m);
}

/*
 * A worker's table interned into the model's in order: ids there follow
 * the order the workers' tables are taken in, not the workers' own.
 */
static void test_worker_tables(void **state)
{
	struct nw_measurement *m = two_processes();
	struct nw_places w[2];
	struct nw_place_cache c;

	assert_int_equal(nw_place_cache_init(&c, 0), 0);
	for (int i = 0; i < 2; i++)
		nw_places_init(&w[i]);
	/* Worker 1 meets the library first, worker 0 the program. */
	assert_int_equal(nw_places_resolve(&w[1], &c, m, 0, LIB_AT + 0x10, false, NULL), 0);
	assert_int_equal(nw_places_resolve(&w[1], &c, m, 0, APP_BASE + 0x1010, false, NULL), 1);
	nw_place_cache_clear(&c); /* another table */
	assert_int_equal(nw_places_resolve(&w[0], &c, m, 1, APP_AGAIN + 0x1010, false, NULL), 0);
	for (int i = 0; i < 2; i++)
		nw_places_seal(&w[i]);
	/* Taken in order: tree 0's places first. */
	assert_int_equal(nw_places_intern(m->places, &w[0].v[0]), 0);
	assert_int_equal(nw_places_intern(m->places, &w[1].v[0]), 1);
	assert_int_equal(nw_places_intern(m->places, &w[1].v[1]), 0);
	assert_int_equal(m->places->n, 2);
	for (int i = 0; i < 2; i++)
		nw_places_fini(&w[i]);
	/* The model's places go with its trees. */
	nw_measurement_drop_trees(m);
	assert_int_equal(m->places->n, 0);
	nw_place_cache_fini(&c);
	nw_measurement_free(m);
}

/*
 * A whole tree at once gives what node after node gives: the same ids,
 * numbered in the same order, the same mappings, whatever the lookups
 * under way (a tree of many more nodes than that, ips repeating, callers,
 * ips outside every mapping), with a cache of one slot or many.
 */
static void test_tree(void **state)
{
	struct nw_measurement *m = two_processes();
	struct nw_tree tr = { .epoch = 0, .cct = nw_cct_new(1) };
	const uint64_t ips[] = { APP_BASE + 0x1010, APP_BASE + 0x1020, LIB_AT + 0x10,
				 LIB_AT + 0x24, 0x1234, APP_BASE + 0x2000, LIB_AT + 0x1000 };
	uint32_t parent = NW_CCT_ROOT;

	assert_non_null(tr.cct);
	/* Chains of ips in a pattern that repeats with a shift: paths share ips, not nodes. */
	for (uint32_t i = 0; i < 300; i++) {
		if (i % 7 == 0)
			parent = NW_CCT_ROOT;
		parent = nw_cct_child(tr.cct, parent, ips[(i * 3 + i / 7) % 7] + i % 5, 0);
		assert_int_not_equal(parent, NW_CCT_NONE);
	}
	for (uint32_t slots = 1; slots <= 4096; slots *= 64) {
		struct nw_places one, all;
		struct nw_place_cache c1, c2;
		uint32_t *ids = calloc(tr.cct->n, sizeof(*ids));
		const struct nw_map **maps = calloc(tr.cct->n, sizeof(*maps));

		assert_non_null(ids);
		assert_non_null(maps);
		nw_places_init(&one);
		nw_places_init(&all);
		assert_int_equal(nw_place_cache_init(&c1, slots), 0);
		assert_int_equal(nw_place_cache_init(&c2, slots), 0);
		assert_int_equal(nw_places_resolve_tree(&all, &c2, m, &tr, ids, maps), 0);
		for (uint32_t n = 1; n < tr.cct->n; n++) {
			const struct nw_map *map;

			assert_int_equal(nw_places_resolve_node(&one, &c1, m, &tr, n, &map), ids[n]);
			assert_ptr_equal(map, maps[n]);
		}
		assert_int_equal(one.n, all.n);
		assert_memory_equal(one.v, all.v, one.n * sizeof(*one.v));
		/* Again, from the cache and the table. */
		memset(ids, 0xff, tr.cct->n * sizeof(*ids));
		assert_int_equal(nw_places_resolve_tree(&all, &c2, m, &tr, ids, NULL), 0);
		for (uint32_t n = 1; n < tr.cct->n; n++)
			assert_int_equal(nw_places_resolve_node(&one, &c1, m, &tr, n, NULL), ids[n]);
		assert_int_equal(one.n, all.n);
		nw_place_cache_fini(&c1);
		nw_place_cache_fini(&c2);
		nw_places_fini(&one);
		nw_places_fini(&all);
		free(ids);
		free(maps);
	}
	nw_cct_free(tr.cct);
	nw_measurement_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_intern),
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_unmapped),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_worker_tables),
		cmocka_unit_test(test_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
