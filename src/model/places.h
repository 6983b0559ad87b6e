/* SPDX-License-Identifier: MIT */
/*
 * Places: where the ips of a measurement's trees are, each interned once.
 * A place is what an ip resolves to (nw_measurement_resolve()): a module
 * and the ELF address looked up in it (a return address's minus 1), or,
 * outside every mapping, the PC itself; many ips of many trees, epochs and
 * processes share one.  The model's table (nw_measurement.places) numbers
 * them densely, so that whoever derives something from a place (its frame
 * chain, its rows of --lines, its pprof locations and lines, its symbol
 * entry, whether the recorder symbolized it) keeps it in an array indexed
 * by place, not in a hash of its own.  A model read from disk fills its
 * table as the views resolve its trees; the recorder's models borrow the
 * recorder's, whose places are those it symbolized.
 *
 * In front of a table, a small direct-mapped cache of the (epoch, ip,
 * caller) resolved most recently: a tree's nodes repeat a few call sites
 * (other paths through them), and a hit costs neither the search of the
 * epoch's mappings nor the table's index.  A cache belongs to one user of
 * one table at a time.
 *
 * Threads: a table and its cache are written by one thread at a time.
 * Workers that resolve trees side by side each fill a table of their own
 * (the model is only read), which is then interned into the model's in a
 * serial pass (nw_places_intern() of each entry, in order): so the
 * numbering of what is derived from the places does not depend on the
 * number of workers.  No place holds a symbol entry: a symbol table may
 * still grow and be sorted again (the recorder's, between checkpoints), so
 * each consumer looks a place up once (nw_place_sym()), when it derives
 * its own data of the place.
 */
#ifndef NW_PLACES_H
#define NW_PLACES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/measurement.h"
#include "util/hash.h"

/* The module of a place no mapping holds (module indexes stay below it). */
#define NW_PLACE_NO_MODULE 0x7fffffffu

/* 12 bytes, packed as the CCT's nodes are: a table holds one per distinct PC. */
struct __attribute__((packed, aligned(4))) nw_place {
	/*
	 * The module's ELF address looked up: a caller frame's return
	 * address minus 1, inside its call.  Without a module, the PC (minus
	 * 1 for a caller), NW_IP_EXACT stripped.
	 */
	uint64_t addr;
	uint32_t module : 31;  /* index in the model's modules, or NW_PLACE_NO_MODULE */
	/* First met as a return address (not part of the key): addr + 1 is the ip then */
	uint32_t caller : 1;
};

struct nw_places {
	struct nw_place *v;
	size_t n, cap;
	struct nw_index ix;  /* over (module, addr) */
};

void nw_places_init(struct nw_places *p);
void nw_places_fini(struct nw_places *p);
/* An empty table (nw_places_init()); NULL on ENOMEM.  _free(NULL) is a no-op. */
struct nw_places *nw_places_new(void);
void nw_places_free(struct nw_places *p);
/* Forgets every place and frees their memory; the table is usable again. */
void nw_places_clear(struct nw_places *p);

/*
 * The id of (@key->module, @key->addr), @key added when new (with its
 * caller flag); -ENOMEM.  Ids are dense, in the order places were added.
 */
int64_t nw_places_intern(struct nw_places *p, const struct nw_place *key);
/*
 * For a table that is only read from now on (a worker's, waiting for the
 * serial pass): frees its index and the array's slack.  Interning into
 * it again is a bug.
 */
void nw_places_seal(struct nw_places *p);

/* The symbol entry of place @pl of @m's symbol table (sorted), or NULL. */
static inline const struct nw_symentry *nw_place_sym(const struct nw_measurement *m,
						     const struct nw_place *pl)
{
	return pl->module == NW_PLACE_NO_MODULE ? NULL
						: nw_symtab_lookup(m->symtab, pl->module, pl->addr);
}

/*
 * Place @pl as the resolver gives an ip of it, looked up as a return
 * address when @caller: the module (NULL for none), the address, the
 * symbol entry of @m's table; no mapping (a place is of no one mapping).
 */
void nw_place_resolved(const struct nw_measurement *m, const struct nw_place *pl, bool caller,
		       struct nw_resolved *ret);

/* Slots of the cache most users keep; the recorder's is larger. */
#define NW_PLACE_CACHE_SLOTS 1024u

struct nw_place_slot {
	uint64_t ip;                 /* as in the tree (NW_IP_EXACT kept) */
	uint32_t epoch;
	uint32_t key;                /* caller << 31 | place id; UINT32_MAX: empty */
	const struct nw_map *map;    /* the mapping that holds it, NULL: none */
};

struct nw_place_cache {
	struct nw_place_slot *slots;
	uint32_t mask;
};

/*
 * A cache of @slots entries (rounded up to a power of two; 0: the
 * default), empty.  -ENOMEM.
 */
int nw_place_cache_init(struct nw_place_cache *c, uint32_t slots);
void nw_place_cache_fini(struct nw_place_cache *c);
/*
 * Empties @c: for a model whose epochs are numbered anew (the recorder
 * builds a model per checkpoint), or a cache passed to another table.
 */
void nw_place_cache_clear(struct nw_place_cache *c);

/*
 * The place of @ip of a tree of epoch @epoch of @m, looked up as a return
 * address (at PC - 1) when @caller, interned in @p: its id, or -ENOMEM.
 * *@ret_map (@ret_map may be NULL): the mapping that holds the ip, NULL
 * where none does.  @c keeps the recent answers; it must have been used
 * with @p and with @m's epoch numbering only.
 */
int64_t nw_places_resolve(struct nw_places *p, struct nw_place_cache *c,
			  const struct nw_measurement *m, uint32_t epoch, uint64_t ip, bool caller,
			  const struct nw_map **ret_map);

/*
 * nw_places_resolve() of every node of tree @tr but its root, in node
 * order: the place of node i in @ids[i] and, where @maps is not NULL,
 * its mapping in @maps[i] (room for tr->cct->n in both; entry 0 left
 * alone).  Cheaper than a call per node: the lookups of many nodes
 * overlap.  -ENOMEM (@ids then partly filled).
 */
int nw_places_resolve_tree(struct nw_places *p, struct nw_place_cache *c,
			   const struct nw_measurement *m, const struct nw_tree *tr, uint32_t *ids,
			   const struct nw_map **maps);

/* nw_places_resolve() of node @node of tree @tr, a caller where nw_cct_is_return() says. */
static inline int64_t nw_places_resolve_node(struct nw_places *p, struct nw_place_cache *c,
					     const struct nw_measurement *m,
					     const struct nw_tree *tr, uint32_t node,
					     const struct nw_map **ret_map)
{
	return nw_places_resolve(p, c, m, tr->epoch, tr->cct->nodes[node].ip,
				 nw_cct_is_return(tr->cct, node), ret_map);
}

#endif
