/* SPDX-License-Identifier: MIT */
/* Trace files; see tracefile.h. */
#include "format/tracefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"
#include "util/log.h"

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

static uint32_t get_u32(const uint8_t *b)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | b[i];
	return v;
}

static uint64_t get_u64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | b[i];
	return v;
}

/* From memory node ids to file (preorder) ids, per tree of a thread. */
struct remap {
	const struct nw_measurement *m;
	const struct nw_mthread *th;
	uint32_t **id_of;  /* per tree; NULL until needed */
	int last_epoch, last_tree;
};

static uint32_t map_node(void *arg, uint32_t epoch, uint32_t node)
{
	struct remap *r = arg;
	int t = r->last_tree;
	const struct nw_cct *cct;

	if ((int)epoch != r->last_epoch) {
		t = nw_mthread_tree_of(r->m, r->th, epoch);
		if (t < 0)
			return UINT32_MAX;
		r->last_epoch = (int)epoch;
		r->last_tree = t;
	}
	cct = r->th->trees[t].cct;
	if (node >= cct->n)
		return UINT32_MAX;
	if (!r->id_of[t]) {
		uint32_t *order = malloc((size_t)cct->n * sizeof(*order));
		uint32_t *id_of = malloc((size_t)cct->n * sizeof(*id_of));
		uint32_t n;

		if (!order || !id_of) {
			free(order);
			free(id_of);
			return UINT32_MAX;
		}
		n = nw_cct_preorder(cct, order);
		for (uint32_t i = 0; i < cct->n; i++)
			id_of[i] = UINT32_MAX;
		for (uint32_t i = 0; i < n; i++)
			id_of[order[i]] = i;
		free(order);
		r->id_of[t] = id_of;
	}
	return r->id_of[t][node];
}

static int write_all(FILE *f, const void *buf, size_t n)
{
	return n && fwrite(buf, 1, n, f) != n ? (errno ? -errno : -EIO) : 0;
}

int nw_tracefile_write_fp(FILE *f, const struct nw_measurement *m, const struct nw_mthread *th,
			  bool preorder)
{
	struct remap r = { .m = m, .th = th, .last_epoch = -1 };
	const struct nw_trace *src = th->trace;
	struct nw_trace out;
	uint8_t head[NW_TRACE_HEADER];
	int rc = 0;

	r.id_of = calloc(th->ntrees ? th->ntrees : 1, sizeof(*r.id_of));
	if (!r.id_of)
		return -ENOMEM;
	nw_trace_init(&out, th->trace->t0, th->trace->tick_ns);
	if (preorder) {
		rc = nw_trace_remap(th->trace, &out, map_node, &r);
		if (rc == -EBADMSG)
			rc = -EINVAL;
		if (rc)
			goto out;
		src = &out;
	}
	memcpy(head, NW_TRACE_MAGIC, 8);
	put_u32(head + 8, NW_TRACE_VERSION);
	put_u32(head + 12, src->tick_ns);
	put_u32(head + 16, th->pid);
	put_u32(head + 20, th->tid);
	put_u64(head + 24, src->t0);
	put_u64(head + 32, src->n);
	put_u64(head + 40, src->size);
	errno = 0;
	rc = write_all(f, head, sizeof(head));
	if (!rc)
		rc = write_all(f, src->bytes, src->size);
out:
	for (uint32_t t = 0; t < th->ntrees; t++)
		free(r.id_of[t]);
	free(r.id_of);
	nw_trace_fini(&out);
	return rc;
}

int nw_tracefile_write(const char *path, const struct nw_measurement *m,
		       const struct nw_mthread *th)
{
	FILE *f;
	int rc;

	errno = 0;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	rc = nw_tracefile_write_fp(f, m, th, true);
	/* On disk before the manifest that names it. */
	errno = 0;
	if ((fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) && !rc)
		rc = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	return rc;
}

/* ---- deltas: a checkpoint's events after those written before ---- */

#define TRACE_DELTA_MAGIC "NWTRDLT1"
#define TRACE_DELTA_HEADER 40

int nw_tracefile_write_delta(FILE *f, const struct nw_mthread *th, uint64_t base_events,
			     uint64_t base_bytes)
{
	const struct nw_trace *t = th->trace;
	uint8_t head[TRACE_DELTA_HEADER];
	int rc;

	if (base_events > t->n || base_bytes > t->size)
		return -EINVAL;
	memcpy(head, TRACE_DELTA_MAGIC, 8);
	put_u64(head + 8, base_events);
	put_u64(head + 16, base_bytes);
	put_u64(head + 24, t->n);
	put_u64(head + 32, t->size);
	errno = 0;
	rc = write_all(f, head, sizeof(head));
	if (!rc)
		rc = write_all(f, t->bytes + base_bytes, t->size - base_bytes);
	return rc;
}

static int bad(char *err, size_t errlen, const char *name, size_t off, const char *why)
{
	nw_set_err(err, errlen, "%s: corrupt trace at byte %zu: %s", name, off, why);
	return -EBADMSG;
}

int nw_tracefile_apply_delta(uint8_t **file, size_t *size, const void *delta, size_t n,
			     const char *name, char *err, size_t errlen)
{
	const uint8_t *d = delta;
	uint64_t base_events, base_bytes, events, bytes;
	uint8_t *grown;

	if (*size < NW_TRACE_HEADER)
		return bad(err, errlen, name, 0, "the trace it extends has no header");
	if (n < TRACE_DELTA_HEADER || memcmp(d, TRACE_DELTA_MAGIC, 8))
		return bad(err, errlen, name, 0, "no " TRACE_DELTA_MAGIC " delta header");
	base_events = get_u64(d + 8);
	base_bytes = get_u64(d + 16);
	events = get_u64(d + 24);
	bytes = get_u64(d + 32);
	if (base_events != get_u64(*file + 32) || base_bytes != get_u64(*file + 40) ||
	    *size - NW_TRACE_HEADER != base_bytes)
		return bad(err, errlen, name, 8, "the delta extends another trace than the one before");
	if (events < base_events || bytes < base_bytes ||
	    bytes - base_bytes != n - TRACE_DELTA_HEADER)
		return bad(err, errlen, name, 24, "event or byte counts do not match the delta's size");
	grown = realloc(*file, *size + (n - TRACE_DELTA_HEADER));
	if (!grown)
		return -ENOMEM;
	memcpy(grown + *size, d + TRACE_DELTA_HEADER, n - TRACE_DELTA_HEADER);
	put_u64(grown + 32, events);
	put_u64(grown + 40, bytes);
	*file = grown;
	*size += n - TRACE_DELTA_HEADER;
	return 0;
}


int nw_tracefile_parse(const void *buf, size_t size, const char *name,
		       const struct nw_measurement *m, const struct nw_mthread *th,
		       struct nw_trace **ret, char *err, size_t errlen)
{
	const uint8_t *b = buf;
	struct nw_trace *t = NULL;
	struct nw_trace_reader rd;
	struct nw_trace_event ev;
	uint64_t n, body;
	char why[160];
	int rc;

	if (size < NW_TRACE_HEADER)
		return bad(err, errlen, name, size, "truncated in its header");
	if (memcmp(b, NW_TRACE_MAGIC, 8))
		return bad(err, errlen, name, 0, "not a Narwhal trace (magic)");
	if (get_u32(b + 8) != NW_TRACE_VERSION) {
		snprintf(why, sizeof(why), "version %u, this reader knows %u", get_u32(b + 8),
			 NW_TRACE_VERSION);
		return bad(err, errlen, name, 8, why);
	}
	if (!get_u32(b + 12))
		return bad(err, errlen, name, 12, "a tick of 0 ns");
	if (get_u32(b + 16) != th->pid || get_u32(b + 20) != th->tid) {
		snprintf(why, sizeof(why), "thread %u/%u, the manifest says %u/%u",
			 get_u32(b + 16), get_u32(b + 20), th->pid, th->tid);
		return bad(err, errlen, name, 16, why);
	}
	n = get_u64(b + 32);
	body = get_u64(b + 40);
	if (body != size - NW_TRACE_HEADER) {
		snprintf(why, sizeof(why), "%s: %llu bytes of events, the header says %llu",
			 body > size - NW_TRACE_HEADER ? "truncated" : "trailing bytes",
			 (unsigned long long)(size - NW_TRACE_HEADER), (unsigned long long)body);
		return bad(err, errlen, name, size, why);
	}
	/* Each event takes two bytes or more. */
	if (n > body / 2)
		return bad(err, errlen, name, 32, "more events than bytes to hold them");
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	nw_trace_init(t, get_u64(b + 24), get_u32(b + 12));
	t->n = n;
	t->size = t->cap = body;
	t->bytes = malloc(body ? body : 1);
	if (!t->bytes) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(t->bytes, b + NW_TRACE_HEADER, body);
	nw_trace_reader_init(&rd, t);
	for (uint64_t k = 0;; k++) {
		int tree;

		rc = nw_trace_next(&rd, &ev);
		if (rc == 0 && k == n)
			break;
		if (rc < 0) {
			rc = bad(err, errlen, name, NW_TRACE_HEADER + rd.off, "malformed event");
			goto fail;
		}
		if (rc == 0 || k == n) {
			snprintf(why, sizeof(why), "%llu events, the header says %llu",
				 (unsigned long long)(rc ? k + 1 : k), (unsigned long long)n);
			rc = bad(err, errlen, name, NW_TRACE_HEADER + rd.off, why);
			goto fail;
		}
		tree = nw_mthread_tree_of(m, th, ev.epoch);
		if (tree < 0) {
			snprintf(why, sizeof(why), "event %llu names epoch %u, which has no tree",
				 (unsigned long long)k, ev.epoch);
		} else if (ev.node == NW_CCT_ROOT || ev.node >= th->trees[tree].cct->n) {
			snprintf(why, sizeof(why), "event %llu names node %u of a %u-node tree",
				 (unsigned long long)k, ev.node, th->trees[tree].cct->n);
		} else if (ev.event >= m->run.nevents) {
			snprintf(why, sizeof(why), "event %llu is of perf event %u of %u",
				 (unsigned long long)k, ev.event, m->run.nevents);
		} else {
			continue;
		}
		rc = bad(err, errlen, name, NW_TRACE_HEADER + rd.off, why);
		goto fail;
	}
	*ret = t;
	return 0;
fail:
	nw_trace_fini(t);
	free(t);
	return rc;
}

int nw_tracefile_read(const char *path, const struct nw_measurement *m,
		      const struct nw_mthread *th, struct nw_trace **ret, char *err,
		      size_t errlen)
{
	char *buf;
	size_t len;
	int rc = nw_read_file(path, &buf, &len);

	if (rc) {
		nw_set_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = nw_tracefile_parse(buf, len, path, m, th, ret, err, errlen);
	free(buf);
	return rc;
}
