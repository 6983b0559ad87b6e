/* SPDX-License-Identifier: MIT */
/* Reading rings in time order; see ordered.h. */
#include "record/ordered.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

void nw_ordered_init(struct nw_ordered *o)
{
	memset(o, 0, sizeof(*o));
}

void nw_ordered_fini(struct nw_ordered *o)
{
	free(o->copies);
	free(o->refs);
	free(o->held);
	memset(o, 0, sizeof(*o));
}

/* A round's ring being peeked, for add(). */
struct peek {
	struct nw_ordered *o;
	const struct nw_ring *ring;
	const struct nw_sample_format *fmt;
};

/*
 * Ring callback: note where the record is and when it happened.  It stays
 * in the ring until the round is processed; only a record that wraps the
 * end of the ring (handed over in the ring's bounce buffer) is copied.
 */
static int add(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	struct peek *c = arg;
	struct nw_ordered *o = c->o;
	struct nw_ordered_ref *ref;
	bool copy = rec == c->ring->bounce;

	if ((copy && nw_grow(&o->copies, &o->cap, o->len + size, 1)) ||
	    nw_grow(&o->refs, &o->cap_refs, o->nrefs + 1, sizeof(*o->refs)))
		return -ENOMEM;
	ref = &o->refs[o->nrefs];
	ref->time = nw_record_time(c->fmt, rec, size);
	ref->seq = o->nrefs;
	ref->size = hdr->size;
	ref->rec = copy ? NULL : rec;
	ref->off = o->len;
	if (copy) {
		memcpy(o->copies + o->len, rec, size);
		o->len += size;
	}
	o->nrefs++;
	return 0;
}

int nw_ordered_copy(struct nw_ordered *o, const struct nw_sample_format *fmt, const void *rec,
		    size_t size)
{
	struct nw_ordered_ref *ref;

	if (nw_grow(&o->copies, &o->cap, o->len + size, 1) ||
	    nw_grow(&o->refs, &o->cap_refs, o->nrefs + 1, sizeof(*o->refs)))
		return -ENOMEM;
	ref = &o->refs[o->nrefs];
	ref->time = nw_record_time(fmt, rec, size);
	ref->seq = o->nrefs;
	ref->size = (uint32_t)size;
	ref->rec = NULL;
	ref->off = o->len;
	memcpy(o->copies + o->len, rec, size);
	o->len += size;
	o->nrefs++;
	return 0;
}

/* The callback and its argument, for in_place(). */
struct pass {
	nw_ordered_fn fn;
	void *arg;
};

/* Ring callback of a round where one ring alone has records: handed out where they lie. */
static int in_place(const struct perf_event_header *hdr, const void *rec, size_t size, void *arg)
{
	struct pass *p = arg;

	(void)hdr;
	p->fn(p->arg, rec, size);
	return 0;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct nw_ordered_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool mapped(const struct nw_ring *ring)
{
	return ring->meta != NULL;
}

int nw_ordered_read(struct nw_ordered *o, struct nw_ring *rings, size_t n,
		    const struct nw_sample_format *fmt, const struct nw_ordered_extra *extra,
		    nw_ordered_fn fn, void *arg)
{
	size_t with_data = 0, last = 0, i;
	int ret = 0;

	o->len = 0;
	o->nrefs = 0;
	if (extra && (ret = extra->collect(extra->arg, o)) < 0)
		return ret;
	for (i = 0; i < n; i++) {
		if (mapped(&rings[i]) &&
		    nw_ring_pending(&rings[i]) >= sizeof(struct perf_event_header)) {
			with_data++;
			last = i;
		}
	}
	if (with_data == 1 && !o->nrefs) {
		struct pass p = { .fn = fn, .arg = arg };

		/* Nothing to interleave: records are processed where they lie. */
		return nw_ring_read(&rings[last], in_place, &p);
	}
	if (!with_data && !o->nrefs)
		return 0;
	if (nw_grow(&o->held, &o->cap_held, n, sizeof(*o->held)))
		return -ENOMEM;
	for (i = 0; i < n && ret >= 0; i++) {
		struct peek c = { .o = o, .ring = &rings[i], .fmt = fmt };

		if (mapped(&rings[i]))
			ret = nw_ring_peek(&rings[i], add, &c, &o->held[i]);
	}
	/* On failure nothing is released: the records are read again next round. */
	if (ret < 0)
		return ret;
	/* Each ring is in time order already; interleave them. */
	qsort(o->refs, o->nrefs, sizeof(*o->refs), cmp_ref);
	for (size_t k = 0; k < o->nrefs; k++)
		fn(arg, o->refs[k].rec ? o->refs[k].rec : o->copies + o->refs[k].off,
		   o->refs[k].size);
	for (i = 0; i < n; i++)
		if (mapped(&rings[i]))
			nw_ring_release(&rings[i], o->held[i]);
	return (int)o->nrefs;
}
