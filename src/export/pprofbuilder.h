/* SPDX-License-Identifier: MIT */
/*
 * The pprof builder's state, shared by its two files:
 *
 *   pprof.c      the profile's tables (strings, mappings, locations, the
 *                functions' frames) and its samples, from the model's
 *                trees or from symbolic stacks
 *   pprofpack.c  the wire format: samples packed by hand as they are
 *                made, the rest of the Profile through protobuf-c at the
 *                end; the profile in memory or in a gzipped file
 *
 * Internal to src/export/.
 */
#ifndef NW_PPROFBUILDER_H
#define NW_PPROFBUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/pprof.h"
#include "model/places.h"
#include "report/frames.h"
#include "util/hash.h"

/* The mapping of the locations of a split's prefix frames: none, and apart from real ones. */
#define FRAME_MAPPING UINT32_MAX

struct mapping {
	uint32_t module;
	uint64_t start, vaddr, pgoff;
	uint64_t end;               /* one past the highest address seen */
	uint32_t first_loc;         /* the locations when it was made: none before is in it */
	const char *path;           /* the model's */
	int64_t filename, build_id;
};

struct line {
	uint32_t func; /* frame index */
	uint32_t line; /* as the symbol table has it; 0: unknown */
};

/* 24 bytes: a profile of many processes has a location per place and process. */
struct location {
	uint32_t mapping;    /* index + 1, 0: none */
	uint32_t place;      /* its place in the model, NW_PPROF_NONE for a frame's */
	uint64_t address;
	uint32_t first_line; /* its lines, shared by the locations of its place */
	uint16_t nlines;     /* at most MAX_CHAIN */
	bool symbolized;     /* the lines come from the symbol table */
	bool caller;         /* its first node's ip was a return address */
};

#define NW_PPROF_NONE UINT32_MAX

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

	/*
	 * One location per (place, mapping) of the model's places
	 * (model/places.h).  place_loc holds each place's newest: the one
	 * the next node of the place mostly wants (the same process), and
	 * none where the mapping is newer than it.  Only a node of a mapping
	 * met before whose place has a newer location (a child's stacks
	 * before its exec, in its parent's mappings, after those of later
	 * processes) looks in loc_ix, an index by (place, mapping) made at
	 * the first such node.  One location per frame of a split's prefix
	 * or of symbolic stacks, in frame_loc.
	 */
	struct location *locs;
	size_t nlocs, cap_locs;
	uint32_t *place_loc;        /* NW_PPROF_NONE: none yet */
	size_t nplace_loc, cap_place_loc;
	struct nw_index loc_ix;
	bool loc_indexed;           /* loc_ix holds every location of a place */
	uint32_t *frame_loc;
	size_t nframe_loc, cap_frame_loc;
	struct nw_place_cache recent;  /* in front of the model's places */

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

/* The string-table index of @s (made valid UTF-8); 0 for NULL; -ENOMEM. */
int64_t nw_pprof_intern(struct nw_pprof *b, const char *s);
/* Packs the labels of b->thread, for each of its samples. */
void nw_pprof_pack_labels(struct nw_pprof *b);
/*
 * Packs a Sample of the b->sample_locs[0..@nlocs) and the values @m (@nm
 * of them) with the thread's labels, and writes it.  -ENOMEM, or what the
 * writer returned.
 */
int nw_pprof_write_sample(struct nw_pprof *b, size_t nlocs, const uint64_t *m, unsigned nm);

#endif
