/* SPDX-License-Identifier: MIT */
/*
 * A pack: the files of a measurement in one file, for checkpoints.  A
 * checkpoint in the directory form costs a file created, written, synced
 * and later unlinked per thread; in one file it costs one of each however
 * many threads there are (doc/DURABILITY.md has the numbers).  The
 * manifest stays a file of its own beside the pack and names it, so that
 * the rename of the manifest commits a checkpoint.
 *
 * Layout, little-endian: "NWPACK01"; the entries' data back to back; an
 * index with per entry a u32 name length, the name (no NUL), the u64
 * offset and u64 length of its data; then the u64 offset of the index,
 * the u64 number of entries and "NWPKEND1".  Written front to back without
 * seeking; a pack cut short has no trailer and is refused as a whole.
 */
#ifndef NW_PACK_H
#define NW_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * In a journal's segment, the entry "NAME+" holds what a checkpoint added
 * to the file NAME (a csprof or trace delta), "NAME" a whole new one.
 */
#define NW_PACK_DELTA_SUFFIX "+"

struct nw_pack_index;

struct nw_pack_writer {
	FILE *f;                  /* over out(): positions known without lseek */
	int fd;
	uint8_t *buf;             /* what f handed on, not yet written to fd */
	size_t len;
	uint64_t pos;             /* bytes handed on by f so far */
	struct nw_pack_index *v;  /* the entries so far */
	size_t n, cap;
	bool open;                /* the last entry is being written */
	int err;                  /* the first error, -errno */
};

/* Creates @path (truncated).  -errno. */
int nw_pack_create(struct nw_pack_writer *w, const char *path);
/*
 * Writes a pack at @fd's position (a journal's next segment: offsets in it
 * count from its start); @fd is the writer's, closed by nw_pack_finish().
 */
int nw_pack_create_fd(struct nw_pack_writer *w, int fd);
/* Starts entry @name; its data is what is written to the returned stream.  NULL on error. */
FILE *nw_pack_begin(struct nw_pack_writer *w, const char *name);
/* Ends the open entry.  -errno (the first error of the pack so far). */
int nw_pack_end(struct nw_pack_writer *w);
/* Writes the trailer, flushes and syncs and closes.  -errno: the first error. */
int nw_pack_finish(struct nw_pack_writer *w);
/* Closes without finishing (the caller removes the file). */
void nw_pack_abort(struct nw_pack_writer *w);

struct nw_pack_entry {
	const char *name;   /* NUL-terminated copy */
	const void *data;
	size_t size;
};

struct nw_pack {
	void *map;
	size_t size;
	struct nw_pack_entry *v;
	uint32_t n;
};

/*
 * Maps the pack at @path and checks its layout.  -errno when it cannot be
 * read, -EBADMSG with a message naming the byte where it goes wrong.
 */
int nw_pack_open(const char *path, struct nw_pack *p, char *err, size_t errlen);
/* The entry called @name, or NULL. */
const struct nw_pack_entry *nw_pack_find(const struct nw_pack *p, const char *name);
void nw_pack_close(struct nw_pack *p);

/*
 * A checkpoint's journal: packs back to back (segments), of the sizes its
 * manifest lists; bytes after them (a write that did not finish) are not
 * read.  The segments' entries point into the one mapping.
 */
struct nw_pack_segments {
	void *map;
	size_t size;
	struct nw_pack *v;     /* map NULL: the mapping is the journal's */
	uint32_t n;
};

/* -errno, -EBADMSG with a message naming @path and the byte. */
int nw_pack_open_segments(const char *path, const uint64_t *sizes, uint32_t n,
			  struct nw_pack_segments *s, char *err, size_t errlen);
void nw_pack_close_segments(struct nw_pack_segments *s);

#endif
