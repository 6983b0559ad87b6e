/* SPDX-License-Identifier: MIT */
/* Traces: encoding and decoding; see trace.h for the encoding. */
#include "model/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/varint.h"

enum { TAG_SAMPLE, TAG_PERIOD, TAG_OFFCPU, TAG_CONTROL };
enum { CTL_EVENT, CTL_EPOCH, CTL_OFFCPU_EVENT };

void nw_trace_init(struct nw_trace *t, uint64_t t0, uint32_t tick_ns)
{
	memset(t, 0, sizeof(*t));
	t->t0 = t0;
	t->tick_ns = tick_ns ? tick_ns : 1;
}

void nw_trace_fini(struct nw_trace *t)
{
	free(t->bytes);
	memset(t, 0, sizeof(*t));
}

/* Appends the @n bytes of @rec, or sets t->failed.  -ENOMEM. */
static int append(struct nw_trace *t, const uint8_t *rec, size_t n)
{
	if (t->failed)
		return -ENOMEM;
	if (nw_grow(&t->bytes, &t->cap, t->size + n, 1)) {
		t->failed = true;
		return -ENOMEM;
	}
	memcpy(t->bytes + t->size, rec, n);
	t->size += n;
	return 0;
}

static int control(struct nw_trace *t, unsigned code, uint32_t value)
{
	uint8_t rec[2 * NW_VARINT_MAX], *p = rec;

	p = nw_put_varint(p, ((uint64_t)code << 2) | TAG_CONTROL);
	p = nw_put_varint(p, value);
	return append(t, rec, (size_t)(p - rec));
}

int nw_trace_add(struct nw_trace *t, const struct nw_trace_event *ev)
{
	struct nw_trace_state *st = &t->enc;
	uint8_t rec[3 * NW_VARINT_MAX], *p = rec;
	uint64_t time, dt;
	unsigned tag;
	int err;

	if (ev->event >= NW_TRACE_MAX_EVENTS || ev->time < t->t0)
		return -EINVAL;
	if (ev->kind == NW_TRACE_OFFCPU && ev->event != st->offcpu_event) {
		err = control(t, CTL_OFFCPU_EVENT, ev->event);
		if (err)
			return err;
		st->offcpu_event = ev->event;
	} else if (ev->kind != NW_TRACE_OFFCPU && ev->event != st->event) {
		err = control(t, CTL_EVENT, ev->event);
		if (err)
			return err;
		st->event = ev->event;
	}
	if (ev->epoch != st->epoch) {
		err = control(t, CTL_EPOCH, ev->epoch);
		if (err)
			return err;
		st->epoch = ev->epoch;
	}
	time = (ev->time - t->t0) / t->tick_ns;
	dt = time - st->time;
	if (ev->kind == NW_TRACE_OFFCPU)
		tag = TAG_OFFCPU;
	else
		tag = ev->value == st->period[ev->event] ? TAG_SAMPLE : TAG_PERIOD;
	p = nw_put_varint(p, (nw_zigzag((int64_t)ev->node - (int64_t)st->node) << 2) | tag);
	p = nw_put_varint(p, nw_zigzag((int64_t)(dt - st->dt)));
	if (tag == TAG_PERIOD)
		p = nw_put_varint(p, nw_zigzag((int64_t)(ev->value - st->period[ev->event])));
	else if (tag == TAG_OFFCPU)
		p = nw_put_varint(p, ev->value / t->tick_ns);
	err = append(t, rec, (size_t)(p - rec));
	if (err)
		return err;
	if (tag == TAG_PERIOD)
		st->period[ev->event] = ev->value;
	st->node = ev->node;
	st->time = time;
	st->dt = dt;
	t->n++;
	return 0;
}

void nw_trace_reader_init(struct nw_trace_reader *r, const struct nw_trace *t)
{
	memset(r, 0, sizeof(*r));
	r->t = t;
}

int nw_trace_next(struct nw_trace_reader *r, struct nw_trace_event *ev)
{
	const struct nw_trace *t = r->t;
	struct nw_trace_state *st = &r->st;
	size_t off = r->off;
	uint64_t head, v, dd;

	for (;;) {
		if (off >= t->size) {
			r->off = off;
			return 0;
		}
		if (nw_get_varint(t->bytes, &off, t->size, &head))
			return -EBADMSG;
		if ((head & 3) != TAG_CONTROL)
			break;
		if (nw_get_varint(t->bytes, &off, t->size, &v) || v > UINT32_MAX)
			return -EBADMSG;
		if (head >> 2 == CTL_EVENT || head >> 2 == CTL_OFFCPU_EVENT) {
			if (v >= NW_TRACE_MAX_EVENTS)
				return -EBADMSG;
			if (head >> 2 == CTL_EVENT)
				st->event = (uint32_t)v;
			else
				st->offcpu_event = (uint32_t)v;
		} else if (head >> 2 == CTL_EPOCH) {
			st->epoch = (uint32_t)v;
		} else {
			return -EBADMSG;
		}
		r->off = off;
	}
	{
		int64_t node = (int64_t)st->node + nw_unzigzag(head >> 2);

		if (node < 0 || node > UINT32_MAX)
			return -EBADMSG;
		ev->node = (uint32_t)node;
	}
	if (nw_get_varint(t->bytes, &off, t->size, &dd))
		return -EBADMSG;
	st->dt += (uint64_t)nw_unzigzag(dd);
	st->time += st->dt;
	ev->kind = NW_TRACE_SAMPLE;
	switch (head & 3) {
	case TAG_PERIOD:
		if (nw_get_varint(t->bytes, &off, t->size, &v))
			return -EBADMSG;
		st->period[st->event] += (uint64_t)nw_unzigzag(v);
		/* fall through */
	case TAG_SAMPLE:
		ev->value = st->period[st->event];
		break;
	default: /* TAG_OFFCPU */
		if (nw_get_varint(t->bytes, &off, t->size, &v) || v > UINT64_MAX / t->tick_ns)
			return -EBADMSG;
		ev->kind = NW_TRACE_OFFCPU;
		ev->value = v * t->tick_ns;
		break;
	}
	if (st->time > (UINT64_MAX - t->t0) / t->tick_ns)
		return -EBADMSG;
	ev->time = t->t0 + st->time * t->tick_ns;
	ev->epoch = st->epoch;
	ev->event = (uint16_t)(ev->kind == NW_TRACE_OFFCPU ? st->offcpu_event : st->event);
	st->node = ev->node;
	r->off = off;
	r->index++;
	return 1;
}

int nw_trace_decode(const struct nw_trace *t, struct nw_trace_event **ret, size_t *bad_off)
{
	struct nw_trace_reader r;
	struct nw_trace_event *v;
	uint64_t k = 0;
	int rc;

	/* Each event takes two bytes at least: t->n beyond that is a lie. */
	if (t->n > t->size / 2) {
		*bad_off = 0;
		return -EBADMSG;
	}
	v = malloc((t->n ? t->n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	nw_trace_reader_init(&r, t);
	while (k < t->n && (rc = nw_trace_next(&r, &v[k])) == 1)
		k++;
	if (k < t->n || nw_trace_next(&r, &(struct nw_trace_event){ 0 }) != 0) {
		/* Cut short, malformed, or more events than counted. */
		*bad_off = r.off;
		free(v);
		return -EBADMSG;
	}
	*ret = v;
	return 0;
}

int nw_trace_remap(const struct nw_trace *src, struct nw_trace *dst,
		   uint32_t (*map)(void *arg, uint32_t epoch, uint32_t node), void *arg)
{
	struct nw_trace_reader r;
	struct nw_trace_event ev;
	int rc;

	nw_trace_reader_init(&r, src);
	while ((rc = nw_trace_next(&r, &ev)) == 1) {
		ev.node = map(arg, ev.epoch, ev.node);
		if (ev.node == UINT32_MAX)
			return -EBADMSG;
		rc = nw_trace_add(dst, &ev);
		if (rc)
			return rc;
	}
	return rc;
}
