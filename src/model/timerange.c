/* SPDX-License-Identifier: MIT */
/* A model restricted to a time range, from the threads' traces; see measurement.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/measurement.h"

void nw_measurement_event_metrics(const struct nw_measurement *m, uint32_t e, int *count,
				  int *sum)
{
	*count = *sum = -1;
	for (uint32_t i = 0; e < m->run.nevents && i < m->nmetrics; i++) {
		if (strcmp(m->metrics[i].event, m->run.events[e].name))
			continue;
		if (nw_metric_counts_samples(&m->metrics[i]))
			*count = (int)i;
		else
			*sum = (int)i;
	}
}

/* The nanoseconds [start, start + ns) and [lo, hi) share. */
static uint64_t overlap(uint64_t start, uint64_t ns, uint64_t lo, uint64_t hi)
{
	uint64_t end = ns > UINT64_MAX - start ? UINT64_MAX : start + ns;
	uint64_t a = start > lo ? start : lo, b = end < hi ? end : hi;

	return b > a ? b - a : 0;
}

/* Rebuilds the metrics of @th's trees from its trace.  -EBADMSG, -ENOMEM. */
static int restrict_thread(struct nw_measurement *m, struct nw_mthread *th, const int (*met)[2],
			   uint64_t lo, uint64_t hi)
{
	struct nw_trace_reader r;
	struct nw_trace_event ev;
	uint32_t last_epoch = UINT32_MAX;
	int tree = -1, rc;

	for (uint32_t t = 0; t < th->ntrees; t++) {
		struct nw_cct *cct = th->trees[t].cct;

		memset(cct->metrics, 0, (size_t)cct->n * cct->nmetrics * sizeof(*cct->metrics));
	}
	th->samples = 0;
	if (!th->trace)
		return 0;
	nw_trace_reader_init(&r, th->trace);
	while ((rc = nw_trace_next(&r, &ev)) == 1) {
		uint64_t w = 1, sum = ev.value;
		uint64_t *v;

		if (ev.epoch != last_epoch) {
			tree = nw_mthread_tree_of(m, th, ev.epoch);
			last_epoch = ev.epoch;
		}
		if (tree < 0 || ev.node >= th->trees[tree].cct->n || ev.event >= m->run.nevents)
			return -EBADMSG;
		if (ev.kind == NW_TRACE_OFFCPU) {
			/* The switch counts where it happened; the time where it overlaps. */
			sum = overlap(ev.time, ev.value, lo, hi);
			w = ev.time >= lo && ev.time < hi;
			if (!sum && !w)
				continue;
		} else if (ev.time < lo || ev.time >= hi) {
			continue;
		}
		v = nw_cct_metrics(th->trees[tree].cct, ev.node);
		if (met[ev.event][0] >= 0)
			v[met[ev.event][0]] += w;
		if (met[ev.event][1] >= 0)
			v[met[ev.event][1]] += sum;
		th->samples += w;
	}
	return rc;
}

int nw_measurement_restrict_time(struct nw_measurement *m, uint64_t lo, uint64_t hi)
{
	int (*met)[2];
	int rc = 0;

	if (m->borrowed || hi <= lo)
		return -EINVAL;
	for (uint32_t i = 0; i < m->nthreads; i++)
		if (!m->threads[i].trace && m->threads[i].ntrees)
			return -ENODATA;
	met = calloc(m->run.nevents ? m->run.nevents : 1, sizeof(*met));
	if (!met)
		return -ENOMEM;
	for (uint32_t e = 0; e < m->run.nevents; e++)
		nw_measurement_event_metrics(m, e, &met[e][0], &met[e][1]);
	m->run.samples = 0;
	for (uint32_t i = 0; i < m->nthreads && !rc; i++) {
		rc = restrict_thread(m, &m->threads[i], met, lo, hi);
		m->run.samples += m->threads[i].samples;
	}
	free(met);
	if (!rc) {
		m->time_lo = lo;
		m->time_hi = hi;
	}
	return rc;
}

/* One end of a range: seconds ("2.5", "2.5s") or a percentage ("40%") of @span ns after @base. */
static int parse_end(const char *s, size_t len, uint64_t base, uint64_t span, uint64_t *ret)
{
	char buf[64], *end;
	double v;

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end == buf || !(v >= 0))
		return -EINVAL;
	if (!strcmp(end, "%")) {
		if (v > 100)
			return -EINVAL;
		*ret = base + (uint64_t)(v / 100.0 * (double)span);
	} else if (!*end || !strcmp(end, "s")) {
		*ret = base + (uint64_t)(v * 1e9);
	} else {
		return -EINVAL;
	}
	return 0;
}

int nw_run_time_range(const struct nw_run *r, const char *spec, uint64_t *ret_lo,
		      uint64_t *ret_hi)
{
	const char *comma = strchr(spec, ',');
	uint64_t base = r->clock_start_ns, span, lo, hi;

	if (!r->clock_start_ns || r->clock_end_ns <= r->clock_start_ns)
		return -ENODATA;
	span = r->clock_end_ns - base;
	lo = base;
	hi = r->clock_end_ns;
	if (!comma || (comma != spec && parse_end(spec, (size_t)(comma - spec), base, span, &lo)) ||
	    (comma[1] && parse_end(comma + 1, strlen(comma + 1), base, span, &hi)) || hi <= lo)
		return -EINVAL;
	/* Up to the end of the run: its end included (its last event may be at its end). */
	if (hi >= r->clock_end_ns)
		hi = r->clock_end_ns + 1;
	if (lo >= hi)
		return -ERANGE;
	*ret_lo = lo;
	*ret_hi = hi;
	return 0;
}
