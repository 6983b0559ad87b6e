/* SPDX-License-Identifier: MIT */
/* The Trace Event export; see chrometrace.h. */
#include "export/chrometrace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "util/strbuf.h"

/* A frame open on a thread's track since @start. */
struct open_frame {
	uint32_t frame;
	uint64_t start;
};

/* A complete event of a thread, kept until the thread's are sorted. */
struct xevent {
	uint64_t start, end;
	uint32_t depth;        /* 0 outermost */
	uint32_t frame;        /* UINT32_MAX: off-CPU */
	uint32_t leaf;         /* off-CPU: the frame it blocked in */
};

struct ctx {
	const struct nw_timeline *tl;
	FILE *out;
	bool first;
	struct xevent *x;
	size_t nx, cap_x;
	uint32_t *path;
	size_t cap_path;
	struct open_frame *open;
	size_t nopen, cap_open;
	uint32_t pid, tid;
};

static void sep(struct ctx *c)
{
	fputs_unlocked(c->first ? "\n" : ",\n", c->out);
	c->first = false;
}

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

/* @ns as microseconds with three decimals ("1234.567"), what %.3f of ns / 1e3 gives. */
static char *put_us(char *p, uint64_t ns)
{
	unsigned f = (unsigned)(ns % 1000);

	p = nw_put_u64(p, ns / 1000);
	*p++ = '.';
	*p++ = (char)('0' + f / 100);
	*p++ = (char)('0' + f / 10 % 10);
	*p++ = (char)('0' + f % 10);
	return p;
}

static int add_x(struct ctx *c, uint64_t start, uint64_t end, uint32_t depth, uint32_t frame,
		 uint32_t leaf)
{
	if (nw_grow(&c->x, &c->cap_x, c->nx + 1, sizeof(*c->x)))
		return -ENOMEM;
	c->x[c->nx++] = (struct xevent){ start, end > start ? end : start, depth, frame, leaf };
	return 0;
}

/*
 * Closes the open frames from depth @keep on, at @t: 1 ns before, so that
 * no event ends where the next begins (importers that turn complete events
 * into begin and end pairs, speedscope's, order a begin first at one
 * time, and would nest the next frame in the one ending).  -ENOMEM.
 */
static int close_to(struct ctx *c, size_t keep, uint64_t t)
{
	while (c->nopen > keep) {
		const struct open_frame *o = &c->open[--c->nopen];

		if (add_x(c, o->start, t > o->start + 1 ? t - 1 : t, (uint32_t)c->nopen, o->frame,
			  0))
			return -ENOMEM;
	}
	return 0;
}

/* Callers before callees: by start, the longer first, the outer first. */
static int cmp_x(const void *a, const void *b)
{
	const struct xevent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Writes the thread's complete events in order.  -ENOMEM. */
static int flush_x(struct ctx *c)
{
	const struct nw_frames *fr = &c->tl->s->frames;
	uint64_t origin = c->tl->origin;
	char tail[160], *q;
	int rc = 0;

	qsort(c->x, c->nx, sizeof(*c->x), cmp_x);
	for (size_t i = 0; i < c->nx && !rc; i++) {
		const struct xevent *x = &c->x[i];

		sep(c);
		fputs_unlocked("{\"ph\":\"X\",\"name\":", c->out);
		if (x->frame == UINT32_MAX) {
			char *name = nw_strdup_printf("off-CPU: %s", fr->v[x->leaf].name);

			rc = name ? nw_export_json_str(c->out, name) : -ENOMEM;
			free(name);
		} else {
			rc = nw_export_json_str(c->out, fr->v[x->frame].name);
		}
		/* Formatted by hand: a build's trace has a million of these. */
		q = put_str(tail, x->frame == UINT32_MAX ? ",\"cat\":\"off-cpu\",\"pid\":"
							  : ",\"cat\":\"cpu\",\"pid\":");
		q = put_str(nw_put_u64(q, c->pid), ",\"tid\":");
		q = put_str(nw_put_u64(q, c->tid), ",\"ts\":");
		q = put_str(put_us(q, x->start > origin ? x->start - origin : 0), ",\"dur\":");
		q = put_us(q, x->end - x->start);
		*q++ = '}';
		fwrite_unlocked(tail, 1, (size_t)(q - tail), c->out);
	}
	c->nx = 0;
	return rc;
}

/* The metadata naming a thread's track (and its process's). */
static int name_track(struct ctx *c, const struct nw_mthread *th, bool process)
{
	const struct nw_mprocess *p = nw_measurement_process(c->tl->s->m, th->pid);
	int rc = 0;

	if (process) {
		sep(c);
		fprintf(c->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":%u,"
				"\"args\":{\"name\":", th->pid, th->pid);
		rc = nw_export_json_str(c->out, p && p->comm ? p->comm : "?");
		fputs("}}", c->out);
	}
	sep(c);
	fprintf(c->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
			"\"args\":{\"name\":", th->pid, th->tid);
	rc = rc ? rc : nw_export_json_str(c->out, th->comm ? th->comm : "?");
	fputs("}}", c->out);
	return rc;
}

/*
 * Where the sample @e ends: at the next event when that comes within two
 * periods (consecutive samples keep their common frames open), else one
 * period (or the thread's mean gap, for events that count no time) later.
 */
static uint64_t sample_end(const struct nw_tl_event *e, const struct nw_tl_event *next,
			   uint64_t period)
{
	uint64_t p = period ? period : 1;

	if (next && next->time >= e->time && next->time - e->time <= 2 * p)
		return next->time;
	return e->time + p;
}

static int write_thread(struct ctx *c, const struct nw_tl_thread *t, uint16_t event,
			bool time_unit)
{
	uint64_t gap = 0, nsamples = 0, last = 0, prev_end = 0;
	int rc = 0;

	/* Events that count no time: a sample lasts about the thread's mean gap. */
	for (size_t k = 0; k < t->n; k++) {
		if (t->v[k].kind != NW_TRACE_SAMPLE || t->v[k].event != event)
			continue;
		if (nsamples++)
			gap += t->v[k].time - last;
		last = t->v[k].time;
	}
	gap = nsamples > 1 ? gap / (nsamples - 1) : 1000000;
	c->nopen = 0;
	for (size_t k = 0; k < t->n && !rc; k++) {
		const struct nw_tl_event *e = &t->v[k], *next = NULL;
		int n;

		if (e->kind == NW_TRACE_OFFCPU) {
			uint32_t leaf = (uint32_t)c->tl->s->tree->nodes[e->sym].ip;

			rc = close_to(c, 0, prev_end < e->time ? prev_end : e->time);
			if (!rc)
				rc = add_x(c, e->time, e->time + e->value, 0, UINT32_MAX, leaf);
			prev_end = e->time + e->value;
			continue;
		}
		if (e->event != event)
			continue;
		for (size_t j = k + 1; j < t->n && !next; j++)
			if (t->v[j].kind == NW_TRACE_OFFCPU || t->v[j].event == event)
				next = &t->v[j];
		/* A gap since the last sample ended: its frames closed then. */
		if (c->nopen && prev_end < e->time)
			rc = close_to(c, 0, prev_end);
		n = rc ? -ENOMEM : nw_timeline_stack(c->tl, e->sym, &c->path, &c->cap_path);
		if (n < 0)
			return -ENOMEM;
		{
			size_t same = 0;

			while (same < c->nopen && same < (size_t)n &&
			       c->open[same].frame == c->path[same])
				same++;
			rc = close_to(c, same, e->time);
			if (rc)
				return rc;
			if (nw_grow(&c->open, &c->cap_open, (size_t)n, sizeof(*c->open)))
				return -ENOMEM;
			for (size_t d = same; d < (size_t)n; d++)
				c->open[c->nopen++] = (struct open_frame){ c->path[d], e->time };
		}
		prev_end = sample_end(e, next, time_unit ? e->value : gap);
	}
	if (!rc)
		rc = close_to(c, 0, prev_end);
	if (!rc)
		rc = flush_x(c);
	return rc;
}

int nw_chrome_trace_write(FILE *out, const struct nw_timeline *tl, unsigned metric)
{
	const struct nw_measurement *m = tl->s->m;
	struct ctx c = { .tl = tl, .out = out, .first = true };
	uint16_t event = nw_timeline_event(m, metric);
	int count, sum, rc = 0;
	bool time_unit;
	struct nw_strbuf cmd = { 0 };

	nw_measurement_event_metrics(m, event, &count, &sum);
	time_unit = sum >= 0 && m->metrics[sum].unit == NW_UNIT_NANOSECONDS;
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", out);
	for (uint32_t i = 0; i < tl->n && !rc; i++) {
		const struct nw_mthread *th = &m->threads[tl->threads[i].thread];
		bool named = false;

		for (uint32_t j = 0; j < i && !named; j++)
			named = m->threads[tl->threads[j].thread].pid == th->pid;
		c.pid = th->pid;
		c.tid = th->tid;
		rc = name_track(&c, th, !named);
		if (!rc)
			rc = write_thread(&c, &tl->threads[i], event, time_unit);
	}
	for (uint32_t i = 0; i < m->run.argc; i++)
		nw_sb_printf(&cmd, "%s%s", i ? " " : "", m->run.argv[i] ? m->run.argv[i] : "");
	fputs("\n],\"otherData\":{\"exporter\":\"narwhal " NW_VERSION "\",\"command\":", out);
	if (!rc)
		rc = cmd.failed ? -ENOMEM : nw_export_json_str(out, nw_sb_str(&cmd));
	fputs("}}\n", out);
	nw_sb_fini(&cmd);
	free(c.path);
	free(c.open);
	free(c.x);
	if (!rc && (fflush(out) != 0 || ferror(out)))
		rc = -EIO;
	return rc;
}
