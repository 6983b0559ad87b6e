/* SPDX-License-Identifier: MIT */
/* The recorder's traces; see tracer.h. */
#include "record/tracer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

static struct nw_trace *trace_of(struct nw_tracer *t, const struct nw_thread *th)
{
	struct nw_trace *tr;

	if (th->seq >= t->n) {
		size_t n = (size_t)th->seq + 1;

		if (nw_grow(&t->v, &t->cap, n, sizeof(*t->v)) ||
		    nw_grow(&t->threads, &t->cap_threads, n, sizeof(*t->threads)) ||
		    nw_grow(&t->first, &t->cap_first, n, sizeof(*t->first)))
			return NULL;
		memset(t->v + t->n, 0, (n - t->n) * sizeof(*t->v));
		memset(t->threads + t->n, 0, (n - t->n) * sizeof(*t->threads));
		t->n = n;
	}
	tr = t->v[th->seq];
	if (!tr) {
		tr = malloc(sizeof(*tr));
		if (!tr)
			return NULL;
		nw_trace_init(tr, t->t0, NW_TRACER_TICK_NS);
		t->v[th->seq] = tr;
		/* The session's threads live as long as it does. */
		t->threads[th->seq] = (struct nw_thread *)th;
	}
	return tr;
}

static int add(struct nw_tracer *t, const struct nw_thread *th, const struct nw_trace_event *ev)
{
	struct nw_trace *tr;
	int rc;

	/*
	 * Before the recording started, or an event beyond the trace's:
	 * dropped before the thread's trace is made, so that a thread
	 * without events keeps none.
	 */
	if (ev->time < t->t0 || ev->event >= NW_TRACE_MAX_EVENTS)
		return 0;
	tr = trace_of(t, th);
	rc = tr ? nw_trace_add(tr, ev) : -ENOMEM;
	if (!rc && tr->n == 1)
		t->first[th->seq] = ev->time;
	if (rc)
		t->failures++;
	return rc;
}

static int on_sample(void *arg, const struct nw_thread *th, uint32_t epoch, uint32_t node,
		     unsigned event, uint64_t time, uint64_t period)
{
	struct nw_trace_event ev = { .time = time, .value = period, .node = node,
				     .epoch = epoch, .event = (uint16_t)event,
				     .kind = NW_TRACE_SAMPLE };

	return add(arg, th, &ev);
}

static int on_offcpu(void *arg, const struct nw_thread *th, uint32_t epoch, uint32_t node,
		     unsigned event, uint64_t start, uint64_t ns)
{
	struct nw_trace_event ev = { .time = start, .value = ns, .node = node, .epoch = epoch,
				     .event = (uint16_t)event, .kind = NW_TRACE_OFFCPU };

	return add(arg, th, &ev);
}

int nw_tracer_init(struct nw_tracer *t, struct nw_session *s, uint64_t t0)
{
	memset(t, 0, sizeof(*t));
	t->s = s;
	t->t0 = t0;
	t->hooks = (struct nw_session_hooks){ .arg = t, .sample = on_sample, .offcpu = on_offcpu };
	return nw_session_listen(s, &t->hooks);
}

void nw_tracer_fini(struct nw_tracer *t)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i])
			nw_trace_fini(t->v[i]);
		free(t->v[i]);
	}
	free(t->v);
	free(t->threads);
	free(t->first);
	memset(t, 0, sizeof(*t));
}

void nw_tracer_set_window(struct nw_tracer *t, uint64_t window_ns)
{
	t->window_ns = window_ns;
}

/* Trace @i without the events before @cut, which leave the trees too.  -ENOMEM. */
static int cut_trace(struct nw_tracer *t, size_t i, uint64_t cut)
{
	struct nw_trace *old = t->v[i], *kept = malloc(sizeof(*kept));
	struct nw_trace_reader r;
	struct nw_trace_event ev;
	bool first = true;
	int rc;

	if (!kept)
		return -ENOMEM;
	nw_trace_init(kept, old->t0, old->tick_ns);
	nw_trace_reader_init(&r, old);
	while ((rc = nw_trace_next(&r, &ev)) == 1) {
		uint64_t end = ev.kind == NW_TRACE_OFFCPU ? ev.time + ev.value : ev.time;

		if (end < cut)
			continue; /* taken out below, once the new trace is whole */
		if (first)
			t->first[i] = ev.time;
		first = false;
		rc = nw_trace_add(kept, &ev);
		if (rc)
			break;
	}
	if (rc) {
		nw_trace_fini(kept);
		free(kept);
		return rc < 0 && rc != -EBADMSG ? rc : -ENOMEM;
	}
	nw_trace_reader_init(&r, old);
	while (nw_trace_next(&r, &ev) == 1) {
		uint64_t end = ev.kind == NW_TRACE_OFFCPU ? ev.time + ev.value : ev.time;

		if (end < cut)
			nw_session_forget(t->s, t->threads[i], ev.epoch, ev.node, ev.event,
					  ev.kind == NW_TRACE_OFFCPU, ev.value);
	}
	if (first)
		t->first[i] = UINT64_MAX;
	nw_trace_fini(old);
	free(old);
	t->v[i] = kept;
	return 0;
}

int nw_tracer_expire(struct nw_tracer *t, uint64_t now, bool exact)
{
	uint64_t cut;

	if (!t->window_ns || now < t->t0 + t->window_ns)
		return 0;
	cut = now - t->window_ns;
	for (size_t i = 0; i < t->n; i++) {
		int rc;

		if (!t->v[i] || !t->v[i]->n || t->first[i] >= cut ||
		    (!exact && cut - t->first[i] < t->window_ns / 4))
			continue;
		rc = cut_trace(t, i, cut);
		if (rc)
			return rc;
	}
	return 0;
}

void nw_tracer_restart(struct nw_tracer *t, uint64_t t0)
{
	t->t0 = t0;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i]) {
			nw_trace_fini(t->v[i]);
			nw_trace_init(t->v[i], t0, NW_TRACER_TICK_NS);
		}
}

const struct nw_trace *nw_tracer_thread(const struct nw_tracer *t, const struct nw_thread *th)
{
	return th->seq < t->n ? t->v[th->seq] : NULL;
}

void nw_tracer_size(const struct nw_tracer *t, uint64_t *bytes, uint64_t *events)
{
	*bytes = *events = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (!t->v[i])
			continue;
		*bytes += t->v[i]->size;
		*events += t->v[i]->n;
	}
}
