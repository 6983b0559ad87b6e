/* SPDX-License-Identifier: MIT */
/*
 * The pprof export's tables, from the model.  The builder interns strings,
 * mappings, locations and functions as the physical trees are walked,
 * and hands each sample, as index lists, to pprofpack.c to be packed and
 * written; protobuf-c messages are only built when the rest is packed.
 *
 * Every Location is a real address in a real Mapping (memory start, file
 * offset and build-id as recorded): one Location per distinct (mapping,
 * address), that is per place (model/places.h) and mapping, with one Line
 * per frame of its inline chain (innermost first).
 * Functions are the frames the report's views show, named by
 * nw_stacks_frames_of() (report/stacks.h): "[unknown]" outside every
 * module, "module+0xADDR" where the symbol table knows nothing, else the
 * functions of the inline chain.
 */
#include "export/pprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/pprofbuilder.h"
#include "util/hash.h"
#include "util/strbuf.h"

/* Inline chains deeper than this keep their outermost frames. */
#define MAX_CHAIN 256

/* strings */

static uint64_t str_hash(const void *ctx, uint32_t i)
{
	const struct nw_pprof *b = ctx;

	return nw_hash_str(NW_HASH_SEED, b->strs[i]);
}

static bool str_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct nw_pprof *b = ctx;

	return strcmp(b->strs[i], key) == 0;
}

int64_t nw_pprof_intern(struct nw_pprof *b, const char *s)
{
	int failed = 0;
	uint32_t *slot;
	char *c;

	if (!s)
		return 0;
	c = nw_export_clean(s, &failed);
	if (!c)
		return -ENOMEM;
	slot = nw_index_slot(&b->str_ix, nw_hash_str(NW_HASH_SEED, c), str_eq, str_hash, b, c);
	if (!slot || nw_grow(&b->strs, &b->cap_strs, b->nstrs + 1, sizeof(*b->strs))) {
		free(c);
		return -ENOMEM;
	}
	if (*slot != NW_INDEX_NONE) {
		free(c);
		return *slot;
	}
	b->strs[b->nstrs] = c;
	nw_index_fill(&b->str_ix, slot, (uint32_t)b->nstrs);
	return (int64_t)b->nstrs++;
}

/* mappings: one per (module, start, vaddr) */

struct map_key {
	uint32_t module;
	uint64_t start, vaddr;
};

static uint64_t map_key_hash(const struct map_key *k)
{
	return nw_hash_add(nw_hash_add(nw_hash_u64(k->start), k->vaddr), k->module);
}

static uint64_t map_hash(const void *ctx, uint32_t i)
{
	const struct mapping *m = &((const struct nw_pprof *)ctx)->maps[i];
	struct map_key k = { m->module, m->start, m->vaddr };

	return map_key_hash(&k);
}

static bool map_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct mapping *m = &((const struct nw_pprof *)ctx)->maps[i];
	const struct map_key *k = key;

	return m->module == k->module && m->start == k->start && m->vaddr == k->vaddr;
}

/* Index + 1 of the mapping of @map, added when new; -ENOMEM. */
static int64_t mapping_of(struct nw_pprof *b, const struct nw_map *map)
{
	struct map_key key = { map->module, map->start, map->vaddr };
	const struct nw_module *mod = &b->m->modules->v[map->module];
	char id[2 * NW_BUILD_ID_MAX + 1];
	struct mapping *mp;
	uint32_t *slot;

	slot = nw_index_slot(&b->map_ix, map_key_hash(&key), map_eq, map_hash, b, &key);
	if (!slot || nw_grow(&b->maps, &b->cap_maps, b->nmaps + 1, sizeof(*b->maps)))
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return (int64_t)*slot + 1;
	mp = &b->maps[b->nmaps];
	memset(mp, 0, sizeof(*mp));
	mp->module = map->module;
	mp->start = map->start;
	mp->vaddr = map->vaddr;
	mp->pgoff = map->pgoff;
	mp->end = map->start;
	mp->first_loc = (uint32_t)b->nlocs;
	mp->path = mod->path;
	nw_build_id_hex(mod->build_id, mod->build_id_size, id, sizeof(id));
	mp->filename = nw_pprof_intern(b, mp->path);
	mp->build_id = nw_pprof_intern(b, id[0] ? id : NULL);
	if (mp->filename < 0 || mp->build_id < 0)
		return -ENOMEM;
	nw_index_fill(&b->map_ix, slot, (uint32_t)b->nmaps);
	return (int64_t)b->nmaps++ + 1;
}

/* locations: one per (place, mapping) */

/* The lines of a new location of @r: its frames, innermost first, with their lines. */
static int location_lines(struct nw_pprof *b, const struct nw_resolved *r, struct location *loc)
{
	uint32_t ids[MAX_CHAIN];
	int n;

	n = nw_stacks_frames_of(&b->frames, r, ids, MAX_CHAIN);
	if (n < 0 || b->nlines + (size_t)n > UINT32_MAX ||
	    nw_grow(&b->lines, &b->cap_lines, b->nlines + (size_t)n, sizeof(*b->lines)))
		return -ENOMEM;
	/* ids[] is outermost first; pprof lists the innermost first. */
	for (int k = 0; k < n; k++) {
		const struct nw_symframe *fr = NULL;

		if (r->sym && r->sym->nframes)
			fr = &r->sym->frames[k];
		b->lines[b->nlines++] = (struct line){ .func = ids[n - 1 - k],
						       .line = fr ? fr->line : 0 };
	}
	loc->nlines = (uint16_t)n;
	loc->symbolized = r->sym && r->sym->nframes;
	return 0;
}

/* Appends a location of @place, mapping @mapping (index + 1) and @address; NULL on ENOMEM. */
static struct location *new_location(struct nw_pprof *b, uint32_t place, uint32_t mapping,
				     uint64_t address)
{
	struct location *loc;

	if (nw_grow(&b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*b->locs)))
		return NULL;
	loc = &b->locs[b->nlocs];
	*loc = (struct location){ .mapping = mapping, .address = address,
				  .first_line = (uint32_t)b->nlines, .place = place };
	return loc;
}

static uint64_t loc_key_hash(uint32_t place, uint32_t mapping)
{
	return nw_hash_add(nw_hash_u64(place), mapping);
}

static uint64_t loc_hash(const void *ctx, uint32_t i)
{
	const struct location *l = &((const struct nw_pprof *)ctx)->locs[i];

	return loc_key_hash(l->place, l->mapping);
}

static bool loc_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct location *l = &((const struct nw_pprof *)ctx)->locs[i], *k = key;

	return l->place == k->place && l->mapping == k->mapping;
}

/* Adds location @i to b->loc_ix, once it is made.  -ENOMEM. */
static int index_location(struct nw_pprof *b, uint32_t i)
{
	const struct location *l = &b->locs[i];
	uint32_t *slot = nw_index_slot(&b->loc_ix, loc_key_hash(l->place, l->mapping), loc_eq,
				       loc_hash, b, l);

	if (!slot)
		return -ENOMEM;
	if (*slot == NW_INDEX_NONE)
		nw_index_fill(&b->loc_ix, slot, i);
	return 0;
}

/*
 * The location of (@key->place, @key->mapping), or NW_PPROF_NONE; the
 * index of every place's locations made at the first call.  -ENOMEM.
 */
static int64_t find_location(struct nw_pprof *b, const struct location *key)
{
	for (size_t i = 0; !b->loc_indexed && i < b->nlocs; i++)
		if (b->locs[i].place != NW_PPROF_NONE && index_location(b, (uint32_t)i))
			return -ENOMEM;
	b->loc_indexed = true;
	return nw_index_find(&b->loc_ix, loc_key_hash(key->place, key->mapping), loc_eq, b, key);
}

/*
 * The index of the location of node @node of tree @tr, at place @id of the
 * model in mapping @map (NULL: none); -ENOMEM.
 */
static int64_t location_of(struct nw_pprof *b, const struct nw_tree *tr, uint32_t node,
			   uint32_t id, const struct nw_map *map)
{
	const struct nw_measurement *m = b->m;
	struct location key = { 0 };
	struct location *loc;
	struct nw_resolved r;
	uint64_t address;
	uint32_t newest;
	int64_t mi, l;
	bool caller;

	if (map) {
		/* Node after node falls in the same map: one hash lookup saved each. */
		if (map == b->last_map) {
			mi = b->last_mapping;
		} else {
			mi = mapping_of(b, map);
			if (mi < 0)
				return mi;
			b->last_map = map;
			b->last_mapping = mi;
		}
		key.mapping = (uint32_t)mi;
	}
	key.place = (uint32_t)id;
	if (nw_grow_fill(&b->place_loc, &b->nplace_loc, &b->cap_place_loc, (size_t)id,
			 sizeof(*b->place_loc), 0xff))
		return -ENOMEM;
	/* The place's location in this mapping: the place and the mapping make the address. */
	newest = b->place_loc[id];
	if (newest != NW_PPROF_NONE && b->locs[newest].mapping == key.mapping)
		return newest;
	if (newest != NW_PPROF_NONE &&
	    (!key.mapping || b->maps[key.mapping - 1].first_loc <= newest)) {
		l = find_location(b, &key);
		if (l != NW_PPROF_NONE)
			return l;
	}
	caller = nw_cct_is_return(tr->cct, node);
	address = nw_ip_pc(tr->cct->nodes[node].ip) - caller;
	loc = new_location(b, key.place, key.mapping, address);
	if (!loc)
		return -ENOMEM;
	loc->caller = caller;
	if (key.mapping && address + 1 > b->maps[key.mapping - 1].end)
		b->maps[key.mapping - 1].end = address + 1;
	if (newest != NW_PPROF_NONE &&
	    (b->locs[newest].symbolized || b->locs[newest].caller == caller)) {
		/*
		 * The place's lines, in every mapping the same: the symbol
		 * entry's frames, or a name of the address as it was met.
		 */
		loc->first_line = b->locs[newest].first_line;
		loc->nlines = b->locs[newest].nlines;
		loc->symbolized = b->locs[newest].symbolized;
	} else {
		nw_place_resolved(m, &m->places->v[id], caller, &r);
		if (location_lines(b, &r, loc))
			return -ENOMEM;
	}
	if (b->loc_indexed && index_location(b, (uint32_t)b->nlocs))
		return -ENOMEM;
	b->place_loc[id] = (uint32_t)b->nlocs;
	return (int64_t)b->nlocs++;
}

/*
 * The location of frame @frame of a split's prefix (an instrumented
 * section) or of symbolic stacks: no mapping, no address.
 */
static int64_t frame_location(struct nw_pprof *b, uint32_t frame)
{
	struct location *loc;

	if (nw_grow_fill(&b->frame_loc, &b->nframe_loc, &b->cap_frame_loc, frame,
			 sizeof(*b->frame_loc), 0xff))
		return -ENOMEM;
	if (b->frame_loc[frame] != NW_PPROF_NONE)
		return b->frame_loc[frame];
	loc = new_location(b, NW_PPROF_NONE, FRAME_MAPPING, frame);
	if (!loc || b->nlines >= UINT32_MAX ||
	    nw_grow(&b->lines, &b->cap_lines, b->nlines + 1, sizeof(*b->lines)))
		return -ENOMEM;
	loc->nlines = 1;
	b->lines[b->nlines++] = (struct line){ .func = frame };
	b->frame_loc[frame] = (uint32_t)b->nlocs;
	return (int64_t)b->nlocs++;
}

/* samples */

/*
 * Makes b->path the path to @node.  Nodes come in their tree's order, in
 * which a node's parent is on the path to the node before (files list
 * them depth first); otherwise the path is walked up from the node.
 * -ENOMEM.
 */
static int path_to(struct nw_pprof *b, const struct nw_cct *t, uint32_t node)
{
	uint32_t parent = t->nodes[node].parent;

	if (node == NW_CCT_ROOT) {
		b->npath = 0;
		return 0;
	}
	while (b->npath && b->path[b->npath - 1] != parent)
		b->npath--;
	if (!b->npath && parent != NW_CCT_ROOT) {
		size_t d = 0;

		for (uint32_t i = parent; i != NW_CCT_ROOT; i = t->nodes[i].parent)
			d++;
		if (nw_grow(&b->path, &b->cap_path, d, sizeof(*b->path)))
			return -ENOMEM;
		b->npath = d;
		for (uint32_t i = parent; i != NW_CCT_ROOT; i = t->nodes[i].parent)
			b->path[--d] = i;
	}
	if (nw_grow(&b->path, &b->cap_path, b->npath + 1, sizeof(*b->path)))
		return -ENOMEM;
	b->path[b->npath++] = node;
	return 0;
}

/* A sample of the node at the end of b->path (values @m) with the locations of @prefix above. */
static int add_sample(struct nw_pprof *b, const struct nw_cct *t, const uint64_t *m,
		      const uint32_t *locof, const struct nw_split_prefix *prefix)
{
	unsigned nm = t->nmetrics < b->nmetrics ? t->nmetrics : b->nmetrics;
	uint32_t npre = prefix ? prefix->n : 0;
	size_t n = 0;

	if (nw_grow(&b->sample_locs, &b->cap_sample_locs, b->npath + npre,
		    sizeof(*b->sample_locs)))
		return -ENOMEM;
	for (size_t k = b->npath; k-- > 0;)
		b->sample_locs[n++] = (uint64_t)locof[b->path[k]] + 1;
	/* Leaf first: the innermost section, then the ones around it. */
	for (uint32_t k = npre; k-- > 0;) {
		int64_t loc = frame_location(b, prefix->frames[k]);

		if (loc < 0)
			return -ENOMEM;
		b->sample_locs[n++] = (uint64_t)loc + 1;
	}
	return nw_pprof_write_sample(b, n, m, nm);
}

static bool has_weight(const uint64_t *m, unsigned nm)
{
	for (unsigned k = 0; k < nm; k++)
		if (m[k])
			return true;
	return false;
}

/*
 * The samples of @node: what a split moves below sections (its entries
 * from *@se on), then what stays.
 */
static int node_samples(struct nw_pprof *b, const struct nw_cct *t, uint32_t node,
			const uint32_t *locof, const struct nw_split *split, size_t *se, uint32_t ti,
			uint32_t tree, uint64_t *rest)
{
	unsigned nm = t->nmetrics;
	int ret;

	memcpy(rest, nw_cct_metrics(t, node), nm * sizeof(*rest));
	for (; split && *se < split->n && split->entries[*se].thread == ti &&
	       split->entries[*se].tree == tree && split->entries[*se].node == node;
	     (*se)++) {
		const struct nw_split_entry *e = &split->entries[*se];
		uint64_t *v = split->values + *se * nm;

		for (unsigned k = 0; k < nm; k++) {
			if (v[k] > rest[k])
				v[k] = rest[k];
			rest[k] -= v[k];
		}
		if (e->prefix < split->nprefixes && has_weight(v, nm)) {
			ret = add_sample(b, t, v, locof, &split->prefixes[e->prefix]);
			if (ret)
				return ret;
		}
	}
	return has_weight(rest, nm) ? add_sample(b, t, rest, locof, NULL) : 0;
}

static int add_tree(struct nw_pprof *b, const struct nw_tree *tr, const struct nw_split *split,
		    size_t *se, uint32_t ti, uint32_t tree)
{
	const struct nw_cct *t = tr->cct;
	uint32_t *locof = malloc((size_t)t->n * sizeof(*locof));
	const struct nw_map **maps = malloc((size_t)t->n * sizeof(*maps));
	uint64_t *rest = malloc((t->nmetrics ? t->nmetrics : 1) * sizeof(*rest));
	int ret = -ENOMEM;

	/* Each node's place, then its location in place of it. */
	if (!locof || !maps || !rest ||
	    nw_places_resolve_tree(b->m->places, &b->recent, b->m, tr, locof, maps))
		goto out;
	for (uint32_t i = 1; i < t->n; i++) {
		int64_t loc = location_of(b, tr, i, locof[i], maps[i]);

		if (loc < 0)
			goto out;
		locof[i] = (uint32_t)loc;
	}
	ret = 0;
	/* Samples in node order, as the split's entries are sorted. */
	b->npath = 0;
	for (uint32_t i = 0; i < t->n && !ret; i++) {
		while (split && *se < split->n && split->entries[*se].thread == ti &&
		       split->entries[*se].tree == tree && split->entries[*se].node < i)
			(*se)++;
		ret = path_to(b, t, i);
		if (!ret)
			ret = node_samples(b, t, i, locof, split, se, ti, tree, rest);
	}
out:
	free(locof);
	free(maps);
	free(rest);
	return ret;
}

int nw_pprof_add_thread(struct nw_pprof *b, uint32_t ti, const struct nw_split *split)
{
	const struct nw_mthread *th = &b->m->threads[ti];
	int64_t c = nw_pprof_intern(b, th->comm ? th->comm : "");
	size_t se = 0;
	int ret = 0;

	if (c < 0)
		return -ENOMEM;
	b->thread = (struct thread_label){ .comm = c, .pid = th->pid, .tid = th->tid };
	nw_pprof_pack_labels(b);
	/* The split's entries of this thread. */
	while (split && se < split->n && split->entries[se].thread < ti)
		se++;
	for (uint32_t t = 0; t < th->ntrees && !ret; t++) {
		if (th->trees[t].cct->nmetrics != b->nmetrics ||
		    th->trees[t].epoch >= b->m->nepochs)
			return -EBADMSG;
		while (split && se < split->n && split->entries[se].thread == ti &&
		       split->entries[se].tree < t)
			se++;
		ret = add_tree(b, &th->trees[t], split, &se, ti, t);
	}
	return ret;
}

struct nw_pprof *nw_pprof_new(const struct nw_measurement *m, nw_pprof_write_fn write, void *arg)
{
	struct nw_pprof *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->m = m;
	b->nmetrics = m->nmetrics;
	b->write = write;
	b->write_arg = arg;
	b->sample_values = calloc(m->nmetrics ? m->nmetrics : 1, sizeof(*b->sample_values));
	if (!b->sample_values) {
		free(b);
		return NULL;
	}
	nw_frames_init(&b->frames);
	/* Entry 0 of the string table is "". */
	if (nw_place_cache_init(&b->recent, 0) || nw_grow(&b->strs, &b->cap_strs, 1, sizeof(*b->strs)) || !(b->strs[0] = strdup(""))) {
		nw_pprof_free(b);
		return NULL;
	}
	b->nstrs = 1;
	{
		uint32_t *slot = nw_index_slot(&b->str_ix, nw_hash_str(NW_HASH_SEED, ""), str_eq,
					       str_hash, b, "");

		if (!slot) {
			nw_pprof_free(b);
			return NULL;
		}
		nw_index_fill(&b->str_ix, slot, 0);
	}
	b->key_thread = nw_pprof_intern(b, "thread");
	b->key_tid = nw_pprof_intern(b, "tid");
	b->key_pid = nw_pprof_intern(b, "pid");
	if (b->key_thread < 0 || b->key_tid < 0 || b->key_pid < 0) {
		nw_pprof_free(b);
		return NULL;
	}
	return b;
}

void nw_pprof_free(struct nw_pprof *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	nw_index_fini(&b->str_ix);
	free(b->maps);
	nw_index_fini(&b->map_ix);
	free(b->locs);
	nw_index_fini(&b->loc_ix);
	free(b->place_loc);
	free(b->frame_loc);
	nw_place_cache_fini(&b->recent);
	free(b->lines);
	free(b->sample_locs);
	free(b->path);
	free(b->sample_values);
	free(b->packed);
	nw_frames_fini(&b->frames);
	free(b);
}

int nw_pprof_add_stacks(struct nw_pprof *b, const struct nw_stacks *s)
{
	const struct nw_cct *t = s->tree;
	uint32_t *frame_of = malloc((s->frames.n ? s->frames.n : 1) * sizeof(*frame_of));
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	int ret = -ENOMEM;

	if (!frame_of || !order || !s->thread_node || t->nmetrics != b->nmetrics) {
		ret = frame_of && order ? -EINVAL : -ENOMEM;
		goto out;
	}
	/* The stacks' frames become the builder's functions. */
	for (uint32_t f = 0; f < s->frames.n; f++) {
		const struct nw_func *fn = &s->frames.v[f];
		int64_t fi = nw_frames_intern(&b->frames, fn->kind, fn->name, fn->file, fn->line,
					      fn->module);

		if (fi < 0)
			goto out;
		frame_of[f] = (uint32_t)fi;
	}
	ret = 0;
	for (uint32_t ti = 0; ti < b->m->nthreads && !ret; ti++) {
		const struct nw_mthread *th = &b->m->threads[ti];
		uint32_t top = s->thread_node[ti], n;
		int64_t c;

		if (top == NW_CCT_NONE)
			continue;
		c = nw_pprof_intern(b, th->comm ? th->comm : "");
		if (c < 0) {
			ret = -ENOMEM;
			break;
		}
		b->thread = (struct thread_label){ .comm = c, .pid = th->pid, .tid = th->tid };
		nw_pprof_pack_labels(b);
		n = nw_cct_subtree_preorder(t, top, order);
		for (uint32_t k = 1; k < n && !ret; k++) {
			uint32_t i = order[k];
			size_t depth = 0;

			if (!has_weight(nw_cct_metrics(t, i), t->nmetrics))
				continue;
			for (uint32_t j = i; j != top; j = t->nodes[j].parent)
				depth++;
			if (nw_grow(&b->sample_locs, &b->cap_sample_locs, depth,
				    sizeof(*b->sample_locs))) {
				ret = -ENOMEM;
				break;
			}
			depth = 0;
			for (uint32_t j = i; j != top && !ret; j = t->nodes[j].parent) {
				int64_t loc = frame_location(b, frame_of[t->nodes[j].ip]);

				if (loc < 0)
					ret = -ENOMEM;
				else
					b->sample_locs[depth++] = (uint64_t)loc + 1;
			}
			if (!ret)
				ret = nw_pprof_write_sample(b, depth, nw_cct_metrics(t, i), t->nmetrics);
		}
	}
out:
	free(frame_of);
	free(order);
	return ret;
}

struct nw_frames *nw_pprof_frames(struct nw_pprof *b)
{
	return &b->frames;
}

int nw_pprof_add(struct nw_pprof *b, const struct nw_filter *f, const struct nw_split *split)
{
	int ret = 0;

	for (uint32_t i = 0; !ret && i < b->m->nthreads; i++)
		if (b->m->threads[i].ntrees && nw_filter_thread(f, &b->m->threads[i]))
			ret = nw_pprof_add_thread(b, i, split);
	return ret;
}
