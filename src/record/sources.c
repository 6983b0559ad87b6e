/* SPDX-License-Identifier: MIT */
/* Several sources of events as one; see sources.h. */
#include "record/sources.h"

#include <errno.h>
#include <string.h>

/* The source of event @which, and the event's number in it. */
static const struct nw_session_source *source_of(const struct nw_sources *m, unsigned *which)
{
	for (unsigned i = m->n; i-- > 0;)
		if (*which >= m->first_event[i]) {
			*which -= m->first_event[i];
			return m->v[i];
		}
	return NULL;
}

static enum nw_source_scope attr(void *arg, const struct nw_session *s, unsigned which,
				 struct perf_event_attr *a)
{
	const struct nw_session_source *src = source_of(arg, &which);

	return src->attr(src->arg, s, which, a);
}

static void sample(void *arg, struct nw_session *s, unsigned which, const struct nw_sample *smp,
		   struct nw_thread *th, const struct nw_epoch *epoch)
{
	const struct nw_session_source *src = source_of(arg, &which);

	if (src)
		src->sample(src->arg, s, which, smp, th, epoch);
}

static void on_exec(void *arg, struct nw_session *s, uint32_t pid)
{
	const struct nw_sources *m = arg;

	for (unsigned i = 0; i < m->n; i++)
		if (m->v[i]->exec)
			m->v[i]->exec(m->v[i]->arg, s, pid);
}

static bool in_kernel(void *arg, unsigned which)
{
	const struct nw_session_source *src = source_of(arg, &which);

	return src && src->in_kernel && src->in_kernel(src->arg, which);
}

static int describe(void *arg, const struct nw_session *s, struct nw_measurement *m)
{
	const struct nw_sources *ms = arg;
	int ret = 0;

	for (unsigned i = 0; i < ms->n && !ret; i++)
		ret = ms->v[i]->describe(ms->v[i]->arg, s, m);
	return ret;
}

void nw_sources_init(struct nw_sources *m)
{
	memset(m, 0, sizeof(*m));
	m->source = (struct nw_session_source){
		.arg = m, .attr = attr, .sample = sample, .exec = on_exec, .in_kernel = in_kernel,
		.describe = describe,
	};
}

int nw_sources_add(struct nw_sources *m, const struct nw_session_source *src)
{
	int offset = (int)m->source.nmetrics;

	if (m->n == NW_SOURCES_MAX)
		return -ENOSPC;
	m->first_event[m->n] = m->source.nevents;
	m->v[m->n++] = src;
	m->source.nevents += src->nevents;
	m->source.nmetrics += src->nmetrics;
	m->source.regs_mask |= src->regs_mask;
	m->source.bursty |= src->bursty;
	return offset;
}
