/* SPDX-License-Identifier: MIT */
#include "perf/record.h"

#include <errno.h>

/* A cursor over one record: every read checks the bytes left first. */
struct cursor {
	const unsigned char *p, *end;
};

static int take(struct cursor *c, size_t n, const unsigned char **ret)
{
	if ((size_t)(c->end - c->p) < n)
		return -EBADMSG;
	*ret = c->p;
	c->p += n;
	return 0;
}

static int take_u64(struct cursor *c, uint64_t *v)
{
	const unsigned char *p;

	if (take(c, 8, &p))
		return -EBADMSG;
	memcpy(v, p, 8);
	return 0;
}

static int take_u32(struct cursor *c, uint32_t *v)
{
	const unsigned char *p;

	if (take(c, 4, &p))
		return -EBADMSG;
	memcpy(v, p, 4);
	return 0;
}

static size_t sample_id_size(uint64_t t)
{
	size_t n = 0;

	n += (t & PERF_SAMPLE_TID) ? 8 : 0;
	n += (t & PERF_SAMPLE_TIME) ? 8 : 0;
	n += (t & PERF_SAMPLE_ID) ? 8 : 0;
	n += (t & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	n += (t & PERF_SAMPLE_CPU) ? 8 : 0;
	n += (t & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
	return n;
}

/*
 * Where TIME is in a sample (after IDENTIFIER, IP and TID: decode_sample()'s
 * order) and in the sample_id trailer (after TID: decode_sample_id()'s).
 */
static size_t sample_time_offset(uint64_t t)
{
	return 8 * (!!(t & PERF_SAMPLE_IDENTIFIER) + !!(t & PERF_SAMPLE_IP) +
		    !!(t & PERF_SAMPLE_TID));
}

static size_t trailer_time_offset(uint64_t t)
{
	return 8 * !!(t & PERF_SAMPLE_TID);
}

/* The sample_id trailer: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER. */
static int decode_sample_id(uint64_t t, struct cursor *c, struct nw_sample_id *sid)
{
	uint64_t v;

	if ((t & PERF_SAMPLE_TID) && (take_u32(c, &sid->pid) || take_u32(c, &sid->tid)))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_TIME) && take_u64(c, &sid->time))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_ID) && take_u64(c, &sid->id))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_STREAM_ID) && take_u64(c, &v))
		return -EBADMSG;
	if (t & PERF_SAMPLE_CPU) {
		if (take_u32(c, &sid->cpu) || take_u32(c, (uint32_t *)&v))
			return -EBADMSG;
	}
	if ((t & PERF_SAMPLE_IDENTIFIER) && take_u64(c, &sid->id))
		return -EBADMSG;
	return 0;
}

/*
 * Splits a record body into its fixed part and the sample_id trailer.  The
 * body cursor ends where the trailer begins.
 */
static int split_trailer(const struct nw_sample_format *fmt, struct cursor *body,
			 struct nw_sample_id *sid)
{
	size_t n = fmt->sample_id_all ? sample_id_size(fmt->sample_type) : 0;
	struct cursor tr;

	if ((size_t)(body->end - body->p) < n)
		return -EBADMSG;
	tr.p = body->end - n;
	tr.end = body->end;
	body->end = tr.p;
	return n ? decode_sample_id(fmt->sample_type, &tr, sid) : 0;
}

/* A string field that runs to the end of the body: must hold a NUL. */
static int take_string(struct cursor *c, const char **ret)
{
	size_t n = (size_t)(c->end - c->p);

	if (!n || !memchr(c->p, 0, n))
		return -EBADMSG;
	*ret = (const char *)c->p;
	c->p = c->end;
	return 0;
}

static int decode_sample(const struct nw_sample_format *fmt, struct cursor *c,
			 struct nw_sample *s)
{
	uint64_t t = fmt->sample_type, v;
	const unsigned char *p;

	if (t & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK))
		return -EBADMSG; /* never opened by Narwhal: layout not decoded */
	if ((t & PERF_SAMPLE_IDENTIFIER) && take_u64(c, &s->sid.id))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_IP) && take_u64(c, &s->ip))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_TID) && (take_u32(c, &s->sid.pid) || take_u32(c, &s->sid.tid)))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_TIME) && take_u64(c, &s->sid.time))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_ADDR) && take_u64(c, &v))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_ID) && take_u64(c, &s->sid.id))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_STREAM_ID) && take_u64(c, &v))
		return -EBADMSG;
	if ((t & PERF_SAMPLE_CPU) && take_u64(c, &v))
		return -EBADMSG;
	if (t & PERF_SAMPLE_CPU)
		s->sid.cpu = (uint32_t)v;
	if ((t & PERF_SAMPLE_PERIOD) && take_u64(c, &s->period))
		return -EBADMSG;
	if (t & PERF_SAMPLE_CALLCHAIN) {
		if (take_u64(c, &s->nr) || s->nr > (uint64_t)(c->end - c->p) / 8 ||
		    take(c, s->nr * 8, &s->ips))
			return -EBADMSG;
	}
	if (t & PERF_SAMPLE_RAW) {
		uint32_t raw;

		if (take_u32(c, &raw) || take(c, raw, &p))
			return -EBADMSG;
	}
	if (t & PERF_SAMPLE_REGS_USER) {
		if (take_u64(c, &s->regs_abi))
			return -EBADMSG;
		if (s->regs_abi) {
			s->nregs = (unsigned)__builtin_popcountll(fmt->regs_mask);
			if (take(c, (size_t)s->nregs * 8, &s->regs))
				return -EBADMSG;
		}
	}
	if (t & PERF_SAMPLE_STACK_USER) {
		if (take_u64(c, &s->stack_size))
			return -EBADMSG;
		if (s->stack_size) {
			if (s->stack_size > (uint64_t)(c->end - c->p) ||
			    take(c, s->stack_size, &s->stack) || take_u64(c, &s->dyn_size) ||
			    s->dyn_size > s->stack_size)
				return -EBADMSG;
		}
	}
	return 0;
}

int nw_record_decode(const struct nw_sample_format *fmt, const void *buf, size_t size,
		     struct nw_record *out)
{
	struct perf_event_header hdr;
	struct cursor c;
	int ret = 0;

	if (size < sizeof(hdr))
		return -EBADMSG;
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.size != size)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->type = hdr.type;
	out->misc = hdr.misc;
	c.p = (const unsigned char *)buf + sizeof(hdr);
	c.end = (const unsigned char *)buf + size;

	switch (hdr.type) {
	case PERF_RECORD_SAMPLE:
		ret = decode_sample(fmt, &c, &out->sample);
		out->sid = out->sample.sid;
		return ret;
	case PERF_RECORD_MMAP2: {
		struct nw_mmap2 *m = &out->mmap2;
		const unsigned char *u;

		if (split_trailer(fmt, &c, &out->sid) || take_u32(&c, &m->pid) ||
		    take_u32(&c, &m->tid) || take_u64(&c, &m->addr) || take_u64(&c, &m->len) ||
		    take_u64(&c, &m->pgoff) || take(&c, 24, &u) || take_u32(&c, &m->prot) ||
		    take_u32(&c, &m->flags) || take_string(&c, &m->filename))
			return -EBADMSG;
		if (hdr.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m->build_id_size = u[0] <= 20 ? u[0] : 20;
			memcpy(m->build_id, u + 4, m->build_id_size);
		} else {
			memcpy(&m->ino, u + 8, 8);
		}
		return 0;
	}
	case PERF_RECORD_COMM:
		if (split_trailer(fmt, &c, &out->sid) || take_u32(&c, &out->comm.pid) ||
		    take_u32(&c, &out->comm.tid) || take_string(&c, &out->comm.comm))
			return -EBADMSG;
		out->comm.exec = hdr.misc & PERF_RECORD_MISC_COMM_EXEC;
		return 0;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (split_trailer(fmt, &c, &out->sid) || take_u32(&c, &out->task.pid) ||
		    take_u32(&c, &out->task.ppid) || take_u32(&c, &out->task.tid) ||
		    take_u32(&c, &out->task.ptid) || take_u64(&c, &out->task.time))
			return -EBADMSG;
		return 0;
	case PERF_RECORD_SWITCH:
		return split_trailer(fmt, &c, &out->sid);
	case PERF_RECORD_LOST:
		if (split_trailer(fmt, &c, &out->sid) || take_u64(&c, &out->lost.id) ||
		    take_u64(&c, &out->lost.lost))
			return -EBADMSG;
		return 0;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE: {
		uint64_t stream;

		if (split_trailer(fmt, &c, &out->sid) || take_u64(&c, &out->throttle.time) ||
		    take_u64(&c, &out->throttle.id) || take_u64(&c, &stream))
			return -EBADMSG;
		return 0;
	}
	default:
		return 0;
	}
}

uint64_t nw_record_time(const struct nw_sample_format *fmt, const void *buf, size_t size)
{
	uint64_t t = fmt->sample_type, time;
	struct perf_event_header hdr;
	size_t off, trailer;

	if (!(t & PERF_SAMPLE_TIME) || size < sizeof(hdr))
		return 0;
	memcpy(&hdr, buf, sizeof(hdr));
	switch (hdr.type) {
	case PERF_RECORD_SAMPLE:
		off = sizeof(hdr) + sample_time_offset(t);
		break;
	/* The types nw_record_decode() splits a trailer off. */
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_LOST:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		trailer = sample_id_size(t);
		if (!fmt->sample_id_all || size < sizeof(hdr) + trailer)
			return 0;
		off = size - trailer + trailer_time_offset(t);
		break;
	default:
		return 0;
	}
	if (off + 8 > size)
		return 0;
	memcpy(&time, (const unsigned char *)buf + off, 8);
	return time;
}
