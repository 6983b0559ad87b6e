/* SPDX-License-Identifier: MIT */
/*
 * The pprof export, from the model.  The builder interns strings,
 * mappings, locations and functions as the physical trees are walked,
 * keeps samples as index lists, and only builds protobuf-c messages when
 * packing.
 *
 * Every Location is a real address in a real Mapping (memory start, file
 * offset and build-id as recorded): one Location per distinct (mapping,
 * address), with one Line per frame of its inline chain (innermost first).
 * Functions are the frames the report's views show, named by
 * nw_stacks_frames_of() (report/stacks.h): "[unknown]" outside every
 * module, "module+0xADDR" where the symbol table knows nothing, else the
 * functions of the inline chain.
 */
#include "export/pprof.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export/export.h"
#include "export/profile.pb-c.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/strbuf.h"

#define PAGE 4096u
/* Inline chains deeper than this keep their outermost frames. */
#define MAX_CHAIN 256
/* The mapping of the locations of a split's prefix frames: none, and apart from real ones. */
#define FRAME_MAPPING UINT32_MAX

struct mapping {
	uint32_t module;
	uint64_t start, vaddr, pgoff;
	uint64_t end;               /* one past the highest address seen */
	const char *path;           /* the model's */
	int64_t filename, build_id;
};

struct line {
	uint32_t func; /* frame index */
	int64_t line;
};

struct location {
	uint32_t mapping; /* index + 1, 0: none */
	uint64_t address;
	size_t first_line;
	uint32_t nlines;
	bool symbolized;  /* the lines come from the symbol table */
};

struct thread_label {
	int64_t comm;
	uint32_t pid, tid;
};

struct nw_pprof {
	const struct nw_measurement *m;
	unsigned nmetrics;
	struct nw_frames frames;    /* the Functions */

	char **strs;
	size_t nstrs, cap_strs;
	struct nw_index str_ix;

	struct mapping *maps;
	size_t nmaps, cap_maps;
	struct nw_index map_ix;
	const struct nw_map *last_map; /* location_of(): the map last found, and its mapping */
	int64_t last_mapping;

	struct location *locs;
	size_t nlocs, cap_locs;
	struct nw_index loc_ix;

	struct line *lines;
	size_t nlines, cap_lines;

	/* Samples are packed and written as they are made (Profile field 2). */
	nw_pprof_write_fn write;
	void *write_arg;
	uint64_t nsamples;
	uint64_t *sample_locs;     /* one sample's location ids, leaf first */
	size_t cap_sample_locs;
	int64_t *sample_values;
	uint8_t *packed;
	size_t cap_packed;
	int64_t key_thread, key_tid, key_pid;
	struct thread_label thread; /* the thread being added */
	uint8_t labels[3 * (2 + 3 * 11)]; /* its labels, packed (pack_labels()) */
	size_t nlabels;
	uint32_t *path;            /* the nodes from the root's child to the one added */
	size_t npath, cap_path;
};

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

/* The string-table index of @s (made valid UTF-8); 0 for NULL; -ENOMEM. */
static int64_t str_intern(struct nw_pprof *b, const char *s)
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

/* Index + 1 of the mapping of @r, added when new; -ENOMEM. */
static int64_t mapping_of(struct nw_pprof *b, const struct nw_resolved *r)
{
	struct map_key key = { r->module_index, r->map->start, r->map->vaddr };
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
	mp->module = r->module_index;
	mp->start = r->map->start;
	mp->vaddr = r->map->vaddr;
	mp->pgoff = r->map->pgoff;
	mp->end = r->map->start;
	mp->path = r->module->path;
	nw_build_id_hex(r->module->build_id, r->module->build_id_size, id, sizeof(id));
	mp->filename = str_intern(b, mp->path);
	mp->build_id = str_intern(b, id[0] ? id : NULL);
	if (mp->filename < 0 || mp->build_id < 0)
		return -ENOMEM;
	nw_index_fill(&b->map_ix, slot, (uint32_t)b->nmaps);
	return (int64_t)b->nmaps++ + 1;
}

/* locations: one per (mapping, address) */

struct loc_key {
	uint32_t mapping;
	uint64_t address;
};

static uint64_t loc_key_hash(uint32_t mapping, uint64_t address)
{
	return nw_hash_add(nw_hash_u64(address), mapping);
}

static uint64_t loc_hash(const void *ctx, uint32_t i)
{
	const struct location *l = &((const struct nw_pprof *)ctx)->locs[i];

	return loc_key_hash(l->mapping, l->address);
}

static bool loc_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct location *l = &((const struct nw_pprof *)ctx)->locs[i];
	const struct loc_key *k = key;

	return l->mapping == k->mapping && l->address == k->address;
}

/* The lines of a new location of @r: its frames, innermost first, with their lines. */
static int location_lines(struct nw_pprof *b, struct nw_resolved *r, struct location *loc)
{
	uint32_t ids[MAX_CHAIN];
	int n;

	if (r->map)
		r->sym = nw_symtab_lookup(b->m->symtab, r->module_index, r->addr);
	n = nw_stacks_frames_of(&b->frames, r, ids, MAX_CHAIN);
	if (n < 0 || nw_grow(&b->lines, &b->cap_lines, b->nlines + (size_t)n, sizeof(*b->lines)))
		return -ENOMEM;
	/* ids[] is outermost first; pprof lists the innermost first. */
	for (int k = 0; k < n; k++) {
		const struct nw_symframe *fr = NULL;

		if (r->sym && r->sym->nframes)
			fr = &r->sym->frames[k];
		b->lines[b->nlines++] = (struct line){ .func = ids[n - 1 - k],
						       .line = fr ? fr->line : 0 };
	}
	loc->nlines = (uint32_t)n;
	loc->symbolized = r->sym && r->sym->nframes;
	return 0;
}

/* The index of the location of ip @ip of a tree of epoch @epoch; -ENOMEM. */
static int64_t location_of(struct nw_pprof *b, uint32_t epoch, uint64_t ip, bool caller)
{
	struct loc_key key = { .mapping = 0, .address = nw_ip_pc(ip) - (caller ? 1 : 0) };
	struct location *loc;
	struct nw_resolved r;
	uint32_t *slot;
	int64_t mi;

	nw_measurement_locate(b->m, epoch, ip, caller, &r);
	if (r.map) {
		/* Node after node falls in the same map: one hash lookup saved each. */
		if (r.map == b->last_map) {
			mi = b->last_mapping;
		} else {
			mi = mapping_of(b, &r);
			if (mi < 0)
				return mi;
			b->last_map = r.map;
			b->last_mapping = mi;
		}
		key.mapping = (uint32_t)mi;
		if (key.address + 1 > b->maps[key.mapping - 1].end)
			b->maps[key.mapping - 1].end = key.address + 1;
	}
	slot = nw_index_slot(&b->loc_ix, loc_key_hash(key.mapping, key.address), loc_eq, loc_hash,
			     b, &key);
	if (!slot || nw_grow(&b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*b->locs)))
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	loc = &b->locs[b->nlocs];
	*loc = (struct location){ .mapping = key.mapping, .address = key.address,
				  .first_line = b->nlines };
	if (location_lines(b, &r, loc))
		return -ENOMEM;
	nw_index_fill(&b->loc_ix, slot, (uint32_t)b->nlocs);
	return (int64_t)b->nlocs++;
}

/*
 * The location of frame @frame of a split's prefix (an instrumented
 * section): no mapping, no address; keyed apart from real addresses.
 */
static int64_t frame_location(struct nw_pprof *b, uint32_t frame)
{
	struct loc_key key = { .mapping = FRAME_MAPPING, .address = frame };
	struct location *loc;
	uint32_t *slot;

	slot = nw_index_slot(&b->loc_ix, loc_key_hash(key.mapping, key.address), loc_eq, loc_hash,
			     b, &key);
	if (!slot || nw_grow(&b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*b->locs)) ||
	    nw_grow(&b->lines, &b->cap_lines, b->nlines + 1, sizeof(*b->lines)))
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	loc = &b->locs[b->nlocs];
	*loc = (struct location){ .mapping = key.mapping, .address = key.address,
				  .first_line = b->nlines, .nlines = 1 };
	b->lines[b->nlines++] = (struct line){ .func = frame };
	nw_index_fill(&b->loc_ix, slot, (uint32_t)b->nlocs);
	return (int64_t)b->nlocs++;
}

/* samples */

/* Appends @v as a protobuf varint at @p; returns the end. */
static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

/* Appends field @field of varint @v (proto3: nothing for 0). */
static uint8_t *put_int_field(uint8_t *p, unsigned field, uint64_t v)
{
	if (!v)
		return p;
	*p++ = (uint8_t)(field << 3);
	return put_varint(p, v);
}

/*
 * The thread's three Labels (thread, tid, pid), packed once for all its
 * samples: Label fields key = 1, str = 2, num = 3.
 */
static void pack_labels(struct nw_pprof *b)
{
	const int64_t keys[3] = { b->key_thread, b->key_tid, b->key_pid };
	const uint64_t strs[3] = { (uint64_t)b->thread.comm, 0, 0 };
	const uint64_t nums[3] = { 0, b->thread.tid, b->thread.pid };
	uint8_t *p = b->labels;

	for (int j = 0; j < 3; j++) {
		uint8_t body[3 * 11], *q = body;

		q = put_int_field(q, 1, (uint64_t)keys[j]);
		q = put_int_field(q, 2, strs[j]);
		q = put_int_field(q, 3, nums[j]);
		*p++ = 3 << 3 | 2; /* Sample.label */
		p = put_varint(p, (uint64_t)(q - body));
		memcpy(p, body, (size_t)(q - body));
		p += q - body;
	}
	b->nlabels = (size_t)(p - b->labels);
}

/*
 * Packs one Sample and writes it as field 2 of the Profile: the fields of
 * a message may come in any order and repeated ones add up, so samples
 * stream out as they are made and the rest of the Profile follows them.
 * Packed by hand, as protoc's encoding has it (packed location_id = 1 and
 * value = 2, then the labels): a million samples through protobuf-c's
 * generic packer were a third of the export.
 */
static int write_sample(struct nw_pprof *b, size_t nlocs, const uint64_t *m, unsigned nm)
{
	size_t locs_len = 0, values_len = 0, len;
	uint8_t *p;

	for (size_t i = 0; i < nlocs; i++)
		locs_len += varint_len(b->sample_locs[i]);
	for (unsigned k = 0; k < b->nmetrics; k++) {
		b->sample_values[k] = k >= nm ? 0 : m[k] > INT64_MAX ? INT64_MAX : (int64_t)m[k];
		values_len += varint_len((uint64_t)b->sample_values[k]);
	}
	len = (nlocs ? 1 + varint_len(locs_len) + locs_len : 0) +
	      (b->nmetrics ? 1 + varint_len(values_len) + values_len : 0) + b->nlabels;
	if (nw_grow(&b->packed, &b->cap_packed, len + 11, 1))
		return -ENOMEM;
	p = b->packed;
	*p++ = 2 << 3 | 2; /* Profile.sample, length-delimited */
	p = put_varint(p, len);
	if (nlocs) {
		*p++ = 1 << 3 | 2;
		p = put_varint(p, locs_len);
		for (size_t i = 0; i < nlocs; i++)
			p = put_varint(p, b->sample_locs[i]);
	}
	if (b->nmetrics) {
		*p++ = 2 << 3 | 2;
		p = put_varint(p, values_len);
		for (unsigned k = 0; k < b->nmetrics; k++)
			p = put_varint(p, (uint64_t)b->sample_values[k]);
	}
	memcpy(p, b->labels, b->nlabels);
	p += b->nlabels;
	b->nsamples++;
	return b->write(b->write_arg, b->packed, (size_t)(p - b->packed));
}

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
	return write_sample(b, n, m, nm);
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
	uint64_t *rest = malloc((t->nmetrics ? t->nmetrics : 1) * sizeof(*rest));
	int ret = 0;

	if (!locof || !rest) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 1; i < t->n; i++) {
		int64_t loc = location_of(b, tr->epoch, t->nodes[i].ip, nw_cct_is_return(t, i));

		if (loc < 0) {
			ret = -ENOMEM;
			goto out;
		}
		locof[i] = (uint32_t)loc;
	}
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
	free(rest);
	return ret;
}

int nw_pprof_add_thread(struct nw_pprof *b, uint32_t ti, const struct nw_split *split)
{
	const struct nw_mthread *th = &b->m->threads[ti];
	int64_t c = str_intern(b, th->comm ? th->comm : "");
	size_t se = 0;
	int ret = 0;

	if (c < 0)
		return -ENOMEM;
	b->thread = (struct thread_label){ .comm = c, .pid = th->pid, .tid = th->tid };
	pack_labels(b);
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
	if (nw_grow(&b->strs, &b->cap_strs, 1, sizeof(*b->strs)) || !(b->strs[0] = strdup(""))) {
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
	b->key_thread = str_intern(b, "thread");
	b->key_tid = str_intern(b, "tid");
	b->key_pid = str_intern(b, "pid");
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
	free(b->lines);
	free(b->sample_locs);
	free(b->path);
	free(b->sample_values);
	free(b->packed);
	nw_frames_fini(&b->frames);
	free(b);
}

/* ---- packing ---- */

/* pprof's name and unit of metric @d, as string indexes. */
static int value_type(struct nw_pprof *b, const struct nw_metric *d, unsigned nevents,
		      Perftools__Profiles__ValueType *vt)
{
	const char *type = d->name, *unit = "count";
	char buf[300];

	switch (d->kind) {
	case NW_METRIC_SAMPLES:
		if (nevents > 1) {
			snprintf(buf, sizeof(buf), "%s-samples", d->event);
			type = buf;
		} else {
			type = "samples";
		}
		break;
	case NW_METRIC_PERIOD:
		type = d->event;
		if (d->unit == NW_UNIT_NANOSECONDS) {
			unit = "nanoseconds";
			if (nevents == 1)
				type = "cpu";
		}
		break;
	case NW_METRIC_SWITCHES:
		/* off-cpu: context switches, and the time off the CPU after them */
		snprintf(buf, sizeof(buf), "%s-switches", d->event);
		type = buf;
		break;
	case NW_METRIC_OFFCPU_TIME:
		type = d->event;
		unit = "nanoseconds";
		break;
	/* Allocations: the sample types of Go's and tcmalloc's heap profiles. */
	case NW_METRIC_ALLOC_OBJECTS:
		type = "alloc_objects";
		break;
	case NW_METRIC_ALLOC_BYTES:
		type = "alloc_space";
		unit = "bytes";
		break;
	case NW_METRIC_INUSE_OBJECTS:
		type = "inuse_objects";
		break;
	case NW_METRIC_INUSE_BYTES:
		type = "inuse_space";
		unit = "bytes";
		break;
	default:
		break;
	}
	vt->type = str_intern(b, type);
	vt->unit = str_intern(b, unit);
	return vt->type < 0 || vt->unit < 0 ? -ENOMEM : 0;
}

static unsigned count_events(const struct nw_measurement *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->nmetrics; i++)
		n += nw_metric_counts_samples(&m->metrics[i]);
	return n ? n : 1;
}

/* Mapping order: the program first (pprof takes mapping 1 for the main binary). */
static uint32_t *mapping_order(const struct nw_pprof *b)
{
	const struct nw_run *r = &b->m->run;
	const char *prog = r->argc && r->argv[0] ? nw_basename(r->argv[0]) : NULL;
	uint32_t *order = malloc((b->nmaps ? b->nmaps : 1) * sizeof(*order));
	size_t n = 0;

	if (!order)
		return NULL;
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < b->nmaps; i++) {
			bool is_prog = prog && strcmp(nw_basename(b->maps[i].path), prog) == 0;

			if (is_prog == (pass == 0))
				order[n++] = (uint32_t)i;
		}
	return order;
}

/* Everything packing allocates, freed in one place. */
struct pack {
	Perftools__Profiles__ValueType *vts, **vtp, period_type;
	int64_t comments[2];
	Perftools__Profiles__Mapping *ms;
	uint32_t *map_order, *map_id;
	uint64_t *func_id;
	Perftools__Profiles__Line *lns, **lnp;  /* one location's lines */
	size_t cap_lns;
};

static void pack_fini(struct pack *k)
{
	free(k->vts);
	free(k->vtp);
	free(k->ms);
	free(k->map_order);
	free(k->map_id);
	free(k->func_id);
	free(k->lns);
	free(k->lnp);
}

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/*
 * Writes @msg as one record of the Profile's repeated field @field (up to
 * 15): repeated fields add up, so the mappings, locations and functions
 * go out one by one and no array of them is held (a build's 100 K
 * locations as protobuf-c messages were 13 MB).  -ENOMEM, or what the
 * writer returned.
 */
static int emit(struct nw_pprof *b, unsigned field, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *p;

	if (nw_grow(&b->packed, &b->cap_packed, len + 11, 1))
		return -ENOMEM;
	p = b->packed;
	*p++ = (uint8_t)(field << 3 | 2);
	p = put_varint(p, len);
	p += protobuf_c_message_pack(msg, p);
	return b->write(b->write_arg, b->packed, (size_t)(p - b->packed));
}

/*
 * The mappings, numbered in mapping_order(); a mapping's flags say how far
 * symbolization got for its module: set when one of its locations has
 * functions (from the symbol table), file names, line numbers (DWARF,
 * which also expands inline chains).  A PLT stub without lines does not
 * unset them.
 */
static int pack_mappings(struct nw_pprof *b, struct pack *k)
{
	k->map_order = mapping_order(b);
	k->map_id = alloc_n(b->nmaps, sizeof(*k->map_id));
	k->ms = alloc_n(b->nmaps, sizeof(*k->ms));
	if (!k->map_order || !k->map_id || !k->ms)
		return -ENOMEM;
	for (size_t j = 0; j < b->nmaps; j++) {
		const struct mapping *m = &b->maps[k->map_order[j]];
		Perftools__Profiles__Mapping *pm = &k->ms[j];
		uint64_t end = m->end > m->start ? m->end : m->start + 1;

		k->map_id[k->map_order[j]] = (uint32_t)j + 1;
		perftools__profiles__mapping__init(pm);
		pm->id = j + 1;
		pm->memory_start = m->start;
		/* The end is not recorded: the page after the highest address sampled. */
		pm->memory_limit = end > UINT64_MAX - PAGE
					   ? UINT64_MAX
					   : (end + PAGE - 1) & ~(uint64_t)(PAGE - 1);
		pm->file_offset = m->pgoff;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
	}
	for (size_t i = 0; i < b->nlocs; i++) {
		const struct location *l = &b->locs[i];
		Perftools__Profiles__Mapping *pm;

		if (!l->mapping || l->mapping == FRAME_MAPPING || !l->symbolized)
			continue;
		pm = &k->ms[k->map_id[l->mapping - 1] - 1];
		pm->has_functions = true;
		for (uint32_t j = 0; j < l->nlines; j++) {
			const struct line *ln = &b->lines[l->first_line + j];

			if (b->frames.v[ln->func].file)
				pm->has_filenames = true;
			if (ln->line)
				pm->has_line_numbers = pm->has_inline_frames = true;
		}
	}
	return 0;
}

static int write_mappings(struct nw_pprof *b, struct pack *k)
{
	int ret = 0;

	for (size_t j = 0; j < b->nmaps && !ret; j++)
		ret = emit(b, 3, &k->ms[j].base);
	return ret;
}

/* The locations, each with its lines; notes the functions they name in k->func_id. */
static int write_locations(struct nw_pprof *b, struct pack *k)
{
	int ret = 0;

	k->func_id = alloc_n(b->frames.n, sizeof(*k->func_id));
	if (!k->func_id)
		return -ENOMEM;
	for (size_t i = 0; i < b->nlocs && !ret; i++) {
		const struct location *l = &b->locs[i];
		Perftools__Profiles__Location pl = PERFTOOLS__PROFILES__LOCATION__INIT;

		pl.id = i + 1;
		/* A prefix frame's location has no address (its key holds the frame). */
		pl.address = l->mapping == FRAME_MAPPING ? 0 : l->address;
		if (l->mapping && l->mapping != FRAME_MAPPING)
			pl.mapping_id = k->map_id[l->mapping - 1];
		if (l->nlines > k->cap_lns) {
			free(k->lns);
			free(k->lnp);
			k->lns = malloc(l->nlines * sizeof(*k->lns));
			k->lnp = malloc(l->nlines * sizeof(*k->lnp));
			k->cap_lns = k->lns && k->lnp ? l->nlines : 0;
			if (!k->cap_lns)
				return -ENOMEM;
		}
		for (uint32_t j = 0; j < l->nlines; j++) {
			const struct line *ln = &b->lines[l->first_line + j];
			Perftools__Profiles__Line *pn = &k->lns[j];

			perftools__profiles__line__init(pn);
			pn->function_id = (uint64_t)ln->func + 1;
			pn->line = ln->line;
			k->lnp[j] = pn;
			k->func_id[ln->func] = (uint64_t)ln->func + 1;
		}
		pl.n_line = l->nlines;
		pl.line = l->nlines ? k->lnp : NULL;
		ret = emit(b, 4, &pl.base);
	}
	return ret;
}

/* The functions the locations named (their names interned, for the string table after). */
static int write_functions(struct nw_pprof *b, struct pack *k)
{
	int ret = 0;

	for (uint32_t i = 0; i < b->frames.n && !ret; i++) {
		const struct nw_func *f = &b->frames.v[i];
		Perftools__Profiles__Function pf = PERFTOOLS__PROFILES__FUNCTION__INIT;

		if (!k->func_id[i])
			continue;
		pf.id = k->func_id[i];
		pf.name = str_intern(b, f->name);
		/* Names are demangled by the symbolizer; the raw one is not kept. */
		pf.system_name = pf.name;
		pf.filename = str_intern(b, f->file);
		pf.start_line = f->line;
		if (pf.name < 0 || pf.filename < 0)
			return -ENOMEM;
		ret = emit(b, 5, &pf.base);
	}
	return ret;
}

/* The string table, each string a record of field 6. */
static int write_strings(struct nw_pprof *b)
{
	int ret = 0;

	for (size_t i = 0; i < b->nstrs && !ret; i++) {
		size_t len = strlen(b->strs[i]);
		uint8_t head[11], *p = head;

		*p++ = 6 << 3 | 2;
		p = put_varint(p, len);
		ret = b->write(b->write_arg, head, (size_t)(p - head));
		if (!ret && len)
			ret = b->write(b->write_arg, b->strs[i], len);
	}
	return ret;
}

static int pack_header(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	const struct nw_run *r = &b->m->run;
	unsigned nevents = count_events(b->m);
	struct nw_strbuf cmd = { 0 };
	int p0 = -1;

	k->vts = alloc_n(b->nmetrics, sizeof(*k->vts));
	k->vtp = alloc_n(b->nmetrics, sizeof(*k->vtp));
	if (!k->vts || !k->vtp)
		return -ENOMEM;
	for (unsigned i = 0; i < b->nmetrics; i++) {
		perftools__profiles__value_type__init(&k->vts[i]);
		if (value_type(b, &b->m->metrics[i], nevents, &k->vts[i]))
			return -ENOMEM;
		k->vtp[i] = &k->vts[i];
	}
	prof->n_sample_type = b->nmetrics;
	prof->sample_type = k->vtp;

	/* The period: the default event's period metric, fixed or its mean sampled. */
	perftools__profiles__value_type__init(&k->period_type);
	for (unsigned i = 0; i < b->nmetrics && p0 < 0; i++)
		if (b->m->metrics[i].kind == NW_METRIC_PERIOD)
			p0 = (int)i;
	/* Allocations alone: a heap profile's period, "space" in bytes (the sampling rate). */
	for (unsigned i = 0; i < b->nmetrics && p0 < 0; i++)
		if (b->m->metrics[i].kind == NW_METRIC_ALLOC_BYTES)
			p0 = (int)i;
	if (p0 >= 0 && b->m->metrics[p0].kind == NW_METRIC_ALLOC_BYTES) {
		k->period_type.type = str_intern(b, "space");
		k->period_type.unit = str_intern(b, "bytes");
		if (k->period_type.type < 0 || k->period_type.unit < 0)
			return -ENOMEM;
		prof->period_type = &k->period_type;
		prof->period = (int64_t)b->m->metrics[p0].period;
	} else if (p0 >= 0) {
		if (value_type(b, &b->m->metrics[p0], nevents, &k->period_type))
			return -ENOMEM;
		prof->period_type = &k->period_type;
		prof->period = (int64_t)b->m->metrics[p0].period;
	}
	prof->time_nanos = (int64_t)r->start_ns;
	if (r->end_ns > r->start_ns)
		prof->duration_nanos = (int64_t)(r->end_ns - r->start_ns);
	/* A time range (--time): its start in wall-clock time, and its length. */
	if (b->m->time_hi > b->m->time_lo && r->clock_start_ns) {
		prof->time_nanos = (int64_t)(r->start_ns + (b->m->time_lo - r->clock_start_ns));
		prof->duration_nanos = (int64_t)(b->m->time_hi - b->m->time_lo);
	}
	{
		nw_sb_puts(&cmd, "narwhal-record");
		for (uint32_t i = 0; i < r->argc; i++)
			nw_sb_printf(&cmd, " %s", r->argv[i] ? r->argv[i] : "");
		if (cmd.failed) {
			nw_sb_fini(&cmd);
			return -ENOMEM;
		}
		k->comments[0] = str_intern(b, nw_sb_str(&cmd));
		nw_sb_fini(&cmd);
		k->comments[1] = str_intern(b, "narwhal " NW_VERSION);
		if (k->comments[0] < 0 || k->comments[1] < 0)
			return -ENOMEM;
		prof->n_comment = 2;
		prof->comment = k->comments;
	}
	return 0;
}

/*
 * Writes the rest of the Profile after the samples: its scalar fields in
 * one message, then the mappings, locations, functions and strings one
 * record each (the string table last: everything before may add to it).
 */
int nw_pprof_finish(struct nw_pprof *b)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pack k = { 0 };
	uint8_t *buf;
	size_t len;
	int ret;

	ret = pack_header(b, &k, &prof);
	if (!ret)
		ret = pack_mappings(b, &k);
	if (ret)
		goto out;
	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&prof, buf);
	ret = b->write(b->write_arg, buf, len);
	free(buf);
	if (!ret)
		ret = write_mappings(b, &k);
	if (!ret)
		ret = write_locations(b, &k);
	if (!ret)
		ret = write_functions(b, &k);
	if (!ret)
		ret = write_strings(b);
out:
	pack_fini(&k);
	return ret;
}

/* ---- the export ---- */

/* Growing memory, for nw_pprof_build(). */
struct membuf {
	uint8_t *v;
	size_t n, cap;
};

static int write_mem(void *arg, const void *buf, size_t len)
{
	struct membuf *mb = arg;

	if (nw_grow(&mb->v, &mb->cap, mb->n + len, 1))
		return -ENOMEM;
	memcpy(mb->v + mb->n, buf, len);
	mb->n += len;
	return 0;
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
		c = str_intern(b, th->comm ? th->comm : "");
		if (c < 0) {
			ret = -ENOMEM;
			break;
		}
		b->thread = (struct thread_label){ .comm = c, .pid = th->pid, .tid = th->tid };
		pack_labels(b);
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
				ret = write_sample(b, depth, nw_cct_metrics(t, i), t->nmetrics);
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

int nw_pprof_build(const struct nw_measurement *m, const struct nw_filter *f, uint8_t **ret_buf,
		   size_t *ret_len)
{
	struct membuf mb = { 0 };
	struct nw_pprof *b = nw_pprof_new(m, write_mem, &mb);
	int ret = b ? nw_pprof_add(b, f, NULL) : -ENOMEM;

	if (!ret)
		ret = nw_pprof_finish(b);
	nw_pprof_free(b);
	if (ret) {
		free(mb.v);
		return ret;
	}
	*ret_buf = mb.v ? mb.v : malloc(1);
	*ret_len = mb.n;
	return *ret_buf ? 0 : -ENOMEM;
}

/*
 * The gzipped file, compressed by a thread of its own: deflate is a
 * quarter of a pprof export, and it runs beside the packing of samples
 * instead of after it.  The producer fills one block while the thread
 * compresses the other.
 */
#define GZ_BLOCK (1u << 20)

struct nw_pprof_file {
	gzFile gz;
	char *path;
	pthread_t thread;
	bool threaded;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *fill, *spare;  /* the producer's block; the free one (NULL while compressed) */
	size_t nfill;
	uint8_t *full;          /* handed to the thread; NULL when it has none */
	size_t nfull;
	bool done;
	int err;                /* the first write error, -errno */
};

static int gz_put(gzFile gz, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		unsigned chunk = len > (1u << 30) ? 1u << 30 : (unsigned)len;

		if (gzwrite(gz, buf, chunk) != (int)chunk)
			return errno ? -errno : -EIO;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

static void *gz_thread(void *arg)
{
	struct nw_pprof_file *pf = arg;

	pthread_mutex_lock(&pf->mu);
	for (;;) {
		uint8_t *blk;
		size_t n;
		int e;

		while (!pf->full && !pf->done)
			pthread_cond_wait(&pf->cv, &pf->mu);
		if (!pf->full)
			break;
		blk = pf->full;
		n = pf->nfull;
		pthread_mutex_unlock(&pf->mu);
		e = gz_put(pf->gz, blk, n);
		pthread_mutex_lock(&pf->mu);
		if (e && !pf->err)
			pf->err = e;
		pf->full = NULL;
		pf->spare = blk;
		pthread_cond_broadcast(&pf->cv);
	}
	pthread_mutex_unlock(&pf->mu);
	return NULL;
}

/* Hands the filled block to the thread, waiting for it to finish the last one. */
static int gz_hand(struct nw_pprof_file *pf)
{
	int e;

	pthread_mutex_lock(&pf->mu);
	while (pf->full)
		pthread_cond_wait(&pf->cv, &pf->mu);
	pf->full = pf->fill;
	pf->nfull = pf->nfill;
	pf->fill = pf->spare;
	pf->spare = NULL;
	pf->nfill = 0;
	e = pf->err;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	return e;
}

static int write_gz(void *arg, const void *buf, size_t len)
{
	struct nw_pprof_file *pf = arg;
	const uint8_t *p = buf;

	if (!pf->threaded)
		return gz_put(pf->gz, buf, len);
	while (len > 0) {
		size_t n = GZ_BLOCK - pf->nfill < len ? GZ_BLOCK - pf->nfill : len;
		int e;

		memcpy(pf->fill + pf->nfill, p, n);
		pf->nfill += n;
		p += n;
		len -= n;
		if (pf->nfill == GZ_BLOCK && (e = gz_hand(pf)))
			return e;
	}
	return 0;
}

/* Starts the compressing thread; without one (no memory, no thread) writes go straight on. */
static void gz_start(struct nw_pprof_file *pf)
{
	pf->fill = malloc(GZ_BLOCK);
	pf->spare = malloc(GZ_BLOCK);
	if (!pf->fill || !pf->spare)
		goto unthreaded;
	pthread_mutex_init(&pf->mu, NULL);
	pthread_cond_init(&pf->cv, NULL);
	if (pthread_create(&pf->thread, NULL, gz_thread, pf) == 0) {
		pf->threaded = true;
		return;
	}
	pthread_cond_destroy(&pf->cv);
	pthread_mutex_destroy(&pf->mu);
unthreaded:
	free(pf->fill);
	free(pf->spare);
	pf->fill = pf->spare = NULL;
}

/* Compresses what is left and stops the thread.  The first write error, -errno. */
static int gz_stop(struct nw_pprof_file *pf)
{
	int e = 0;

	if (!pf->threaded)
		return 0;
	if (pf->nfill)
		e = gz_hand(pf);
	pthread_mutex_lock(&pf->mu);
	pf->done = true;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	pthread_join(pf->thread, NULL);
	if (!e)
		e = pf->err;
	pthread_cond_destroy(&pf->cv);
	pthread_mutex_destroy(&pf->mu);
	free(pf->fill);
	free(pf->spare);
	free(pf->full);
	pf->threaded = false;
	return e;
}

int nw_pprof_open(const struct nw_measurement *m, const char *path, struct nw_pprof **ret,
		  struct nw_pprof_file **ret_file, char *err, size_t errlen)
{
	struct nw_pprof_file *pf = calloc(1, sizeof(*pf));
	struct nw_pprof *b;
	int e;

	if (!pf || !(pf->path = strdup(path))) {
		free(pf);
		nw_set_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	errno = 0;
	pf->gz = gzopen(path, "wb1");
	if (!pf->gz) {
		e = errno ? errno : ENOMEM;
		nw_set_err(err, errlen, "%s: %s", path, strerror(e));
		free(pf->path);
		free(pf);
		return -e;
	}
	gz_start(pf);
	b = nw_pprof_new(m, write_gz, pf);
	if (!b) {
		nw_set_err(err, errlen, "%s: out of memory", path);
		gz_stop(pf);
		gzclose(pf->gz);
		free(pf->path);
		free(pf);
		return -ENOMEM;
	}
	*ret = b;
	*ret_file = pf;
	return 0;
}

int nw_pprof_close(struct nw_pprof *b, struct nw_pprof_file *pf, int ret, char *err,
		   size_t errlen)
{
	errno = 0;
	if (!ret)
		ret = nw_pprof_finish(b);
	{
		int e = gz_stop(pf);

		if (!ret)
			ret = e;
	}
	if (gzclose(pf->gz) != Z_OK && !ret)
		ret = errno ? -errno : -EIO;
	if (ret)
		nw_set_err(err, errlen, "%s: %s", pf->path,
			   ret == -ENOMEM ? "out of memory" : strerror(-ret));
	free(pf->path);
	free(pf);
	nw_pprof_free(b);
	return ret;
}

int nw_pprof_export(const char *path, const struct nw_measurement *m, const struct nw_filter *f,
		    char *err, size_t errlen)
{
	struct nw_pprof_file *pf;
	struct nw_pprof *b;
	int ret = nw_pprof_open(m, path, &b, &pf, err, errlen);

	if (ret)
		return ret;
	return nw_pprof_close(b, pf, nw_pprof_add(b, f, NULL), err, errlen);
}
