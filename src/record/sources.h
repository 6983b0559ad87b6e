/* SPDX-License-Identifier: MIT */
/*
 * Several sources of events as one (the session takes one source,
 * session.h): --alloc and --locks in one run.  Their events are numbered
 * one source after the other, and so are their metrics: a source whose
 * metrics follow another's adds its offset (nw_sources_add()'s return)
 * to s->source_metric.  Each callback goes to the source of the event;
 * exec and describe go to every source, in order.
 */
#ifndef NW_RECORD_SOURCES_H
#define NW_RECORD_SOURCES_H

#include "record/session.h"

#define NW_SOURCES_MAX 2

struct nw_sources {
	struct nw_session_source source; /* give it to the session: nw_session_opts.source */
	const struct nw_session_source *v[NW_SOURCES_MAX];
	unsigned first_event[NW_SOURCES_MAX];
	unsigned n;
};

void nw_sources_init(struct nw_sources *m);
/*
 * Adds @src (the caller's, kept while @m is used): the offset of its
 * metrics among the sources', or -ENOSPC when NW_SOURCES_MAX are there.
 */
int nw_sources_add(struct nw_sources *m, const struct nw_session_source *src);

#endif
