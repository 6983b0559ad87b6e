/* SPDX-License-Identifier: MIT */
/*
 * locks.json, the locks of a measurement (model/locks.h) on disk:
 *
 *   { "rate": 100000, "unknown_releaser_ns": 0,
 *     "locks": [ { "pid": 12, "addr": "0x5555...", "name": "lock_hot",
 *                  "contentions": 310, "wait_ns": 93000000, "max_ns": 420000,
 *                  "waiters": [ { "contentions": 150, "ns": 45000000,
 *                                 "frames": ["main", "worker", ...] } ],
 *                  "releasers": [ { "contentions": 0, "ns": 44000000,
 *                                   "frames": [...] } ] } ] }
 *
 * "name" is null for a lock that is no global or static object; frames
 * are root first.  The recorder writes it beside the trees (an extra file
 * of the measurement); the reader loads it into m->locks.
 */
#ifndef NW_FORMAT_LOCKSFILE_H
#define NW_FORMAT_LOCKSFILE_H

#include <stddef.h>

#include "model/locks.h"

/* Its name in a measurement directory. */
#define NW_LOCKS_FILE "locks.json"

/* The text of @l, in a buffer the caller frees, its length in *@ret_len; NULL on ENOMEM. */
char *nw_locks_to_json(const struct nw_locks *l, size_t *ret_len);
/*
 * Parses @buf (@len bytes, NUL-terminated) named @name into a new table
 * *@ret.  -EBADMSG with a message in @err, -ENOMEM.
 */
int nw_locks_read_buf(const char *name, const char *buf, size_t len, struct nw_locks **ret,
		      char *err, size_t errlen);

#endif
