/* SPDX-License-Identifier: MIT */
/* The model of a measurement; see measurement.h. */
#include "model/measurement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/places.h"
#include "util/bsearch.h"
#include "util/strbuf.h"

struct nw_measurement *nw_measurement_new(void)
{
	struct nw_measurement *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->modules = calloc(1, sizeof(*m->modules));
	m->symtab = nw_symtab_new();
	m->places = nw_places_new();
	if (!m->modules || !m->symtab || !m->places) {
		nw_measurement_free(m);
		return NULL;
	}
	nw_module_table_init(m->modules);
	m->run.exit_status = -1;
	return m;
}

void nw_run_fini(struct nw_run *r)
{
	free(r->narwhal_version);
	free(r->arch);
	for (uint32_t i = 0; r->argv && i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	free(r->call_graph);
	free(r->pack);
	free(r->journal);
	free(r->segments);
	for (uint32_t i = 0; r->events && i < r->nevents; i++)
		free(r->events[i].name);
	free(r->events);
	memset(r, 0, sizeof(*r));
}

int nw_run_set_argv(struct nw_run *r, int argc, char *const *argv)
{
	r->argv = calloc((size_t)argc + 1, sizeof(*r->argv));
	if (!r->argv)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		r->argv[i] = strdup(argv[i] ? argv[i] : "");
		if (!r->argv[i])
			return -ENOMEM;
		r->argc++;
	}
	return 0;
}

void nw_measurement_free(struct nw_measurement *m)
{
	if (!m)
		return;
	nw_run_fini(&m->run);
	nw_locks_free(m->locks);
	for (uint32_t i = 0; i < m->nmetrics; i++)
		nw_metric_fini(&m->metrics[i]);
	free(m->metrics);
	for (uint32_t i = 0; i < m->nprocs; i++)
		free(m->procs[i].comm);
	free(m->procs);
	for (uint32_t i = 0; i < m->nthreads; i++) {
		struct nw_mthread *th = &m->threads[i];

		free(th->comm);
		free(th->file);
		free(th->trace_file);
		for (uint32_t t = 0; !m->borrowed && t < th->ntrees; t++)
			nw_cct_free(th->trees[t].cct);
		free(th->trees);
		if (!m->borrowed && th->trace) {
			nw_trace_fini(th->trace);
			free(th->trace);
		}
	}
	free(m->threads);
	free(m->run_first);
	for (uint32_t i = 0; !m->borrowed && i < m->nepochs; i++)
		free((void *)m->epochs[i]);
	free(m->epochs);
	if (!m->borrowed) {
		if (m->modules)
			nw_module_table_fini(m->modules);
		free(m->modules);
		nw_symtab_free(m->symtab);
		nw_codestore_free(m->code);
		nw_places_free(m->places);
	}
	free(m);
}

static int add_metric_slot(struct nw_measurement *m, struct nw_metric **ret)
{
	struct nw_metric *v = realloc(m->metrics, (m->nmetrics + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	m->metrics = v;
	*ret = &v[m->nmetrics];
	return 0;
}

int nw_measurement_add_metric(struct nw_measurement *m, const char *event,
			      enum nw_metric_kind kind, uint64_t period)
{
	struct nw_metric *d;
	int ret = add_metric_slot(m, &d);

	if (!ret)
		ret = nw_metric_init(d, event, kind, period);
	return ret ? ret : (int)m->nmetrics++;
}

int nw_measurement_copy_metric(struct nw_measurement *m, const struct nw_metric *src)
{
	struct nw_metric *d, from = *src; /* @src may be one of m->metrics, which may move */
	int ret = add_metric_slot(m, &d);

	if (!ret)
		ret = nw_metric_copy(d, &from);
	return ret ? ret : (int)m->nmetrics++;
}

int nw_measurement_find_metric(const struct nw_measurement *m, const char *name)
{
	if (!m->nmetrics)
		return -ENOENT;
	if (!name) {
		for (uint32_t i = 0; i < m->nmetrics; i++)
			if (nw_metric_counts_samples(&m->metrics[i]))
				return (int)i;
		/* Allocations alone: the bytes allocated. */
		for (uint32_t i = 0; i < m->nmetrics; i++)
			if (m->metrics[i].kind == NW_METRIC_ALLOC_BYTES)
				return (int)i;
		/* Locks alone: the time waited. */
		for (uint32_t i = 0; i < m->nmetrics; i++)
			if (m->metrics[i].kind == NW_METRIC_LOCK_WAIT)
				return (int)i;
		return 0;
	}
	for (uint32_t i = 0; i < m->nmetrics; i++)
		if (!strcmp(m->metrics[i].name, name))
			return (int)i;
	/* An event name: its samples metric, else its first one. */
	for (uint32_t i = 0; i < m->nmetrics; i++)
		if (!strcmp(m->metrics[i].event, name) && nw_metric_counts_samples(&m->metrics[i]))
			return (int)i;
	for (uint32_t i = 0; i < m->nmetrics; i++)
		if (!strcmp(m->metrics[i].event, name))
			return (int)i;
	return -ENOENT;
}

int nw_measurement_samples_metric(const struct nw_measurement *m, unsigned metric)
{
	const struct nw_metric *d;

	if (metric >= m->nmetrics)
		return -ENOENT;
	d = &m->metrics[metric];
	if (nw_metric_counts_samples(d))
		return (int)metric;
	for (uint32_t i = 0; i < m->nmetrics; i++)
		if (!strcmp(m->metrics[i].event, d->event) &&
		    nw_metric_counts_samples(&m->metrics[i]))
			return (int)i;
	return -ENOENT;
}

int nw_measurement_add_epoch(struct nw_measurement *m, const struct nw_epoch *e)
{
	size_t cap = m->cap_epochs;

	if (nw_grow(&m->epochs, &cap, (size_t)m->nepochs + 1, sizeof(*m->epochs)))
		return -ENOMEM;
	m->cap_epochs = (uint32_t)cap;
	m->epochs[m->nepochs] = e;
	return (int)m->nepochs++;
}

int nw_measurement_add_process(struct nw_measurement *m, uint32_t pid, uint32_t ppid,
			       const char *comm)
{
	size_t cap = m->cap_procs;
	struct nw_mprocess *p;

	if (nw_grow(&m->procs, &cap, (size_t)m->nprocs + 1, sizeof(*m->procs)))
		return -ENOMEM;
	m->cap_procs = (uint32_t)cap;
	p = &m->procs[m->nprocs];
	p->pid = pid;
	p->ppid = ppid;
	p->nspid = 0;
	p->comm = strdup(comm ? comm : "");
	if (!p->comm)
		return -ENOMEM;
	return (int)m->nprocs++;
}

struct nw_mthread *nw_measurement_add_thread(struct nw_measurement *m, uint32_t pid,
					     uint32_t tid, const char *comm, const char *file)
{
	size_t cap = m->cap_threads;
	struct nw_mthread *th;

	if (nw_grow(&m->threads, &cap, (size_t)m->nthreads + 1, sizeof(*m->threads)))
		return NULL;
	m->cap_threads = (uint32_t)cap;
	th = &m->threads[m->nthreads];
	memset(th, 0, sizeof(*th));
	th->pid = pid;
	th->tid = tid;
	th->comm = strdup(comm ? comm : "");
	th->file = file ? strdup(file) : NULL;
	if (!th->comm || (file && !th->file)) {
		free(th->comm);
		free(th->file);
		return NULL;
	}
	m->nthreads++;
	return th;
}

int nw_mthread_add_tree(struct nw_mthread *th, uint32_t epoch, struct nw_cct *cct)
{
	struct nw_tree *v = realloc(th->trees, (th->ntrees + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	th->trees = v;
	v[th->ntrees++] = (struct nw_tree){ .epoch = epoch, .cct = cct };
	return 0;
}

void nw_measurement_drop_trees(struct nw_measurement *m)
{
	for (uint32_t i = 0; i < m->nthreads; i++) {
		struct nw_mthread *th = &m->threads[i];

		for (uint32_t t = 0; !m->borrowed && t < th->ntrees; t++)
			nw_cct_free(th->trees[t].cct);
		free(th->trees);
		th->trees = NULL;
		th->ntrees = 0;
	}
	if (!m->borrowed)
		nw_places_clear(m->places);
	m->trees_dropped = true;
}

int nw_mthread_tree_of(const struct nw_measurement *m, const struct nw_mthread *th,
		       uint32_t epoch)
{
	for (uint32_t t = 0; t < th->ntrees; t++)
		if (th->trees[t].epoch < m->nepochs && m->epochs[th->trees[t].epoch]->index == epoch)
			return (int)t;
	return -1;
}

const struct nw_mprocess *nw_measurement_process(const struct nw_measurement *m, uint32_t pid)
{
	for (uint32_t i = m->nprocs; i-- > 0;)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

uint64_t nw_mthread_total(const struct nw_mthread *th, unsigned metric)
{
	uint64_t sum = 0;

	for (uint32_t t = 0; t < th->ntrees; t++) {
		const struct nw_cct *c = th->trees[t].cct;

		for (uint32_t i = 0; metric < c->nmetrics && i < c->n; i++)
			sum += nw_cct_metrics(c, i)[metric];
	}
	return sum;
}

void nw_mthread_totals(const struct nw_mthread *th, unsigned nmetrics, uint64_t *sums)
{
	memset(sums, 0, nmetrics * sizeof(*sums));
	for (uint32_t t = 0; t < th->ntrees; t++) {
		const struct nw_cct *c = th->trees[t].cct;
		unsigned k = c->nmetrics < nmetrics ? c->nmetrics : nmetrics;
		const uint64_t *v = c->metrics;

		for (uint32_t i = 0; i < c->n; i++, v += c->nmetrics)
			for (unsigned j = 0; j < k; j++)
				sums[j] += v[j];
	}
}

void nw_measurement_borrow(struct nw_measurement *m, struct nw_module_table *modules,
			   struct nw_symtab *symtab, struct nw_places *places)
{
	if (!m->borrowed) {
		nw_module_table_fini(m->modules);
		free(m->modules);
		nw_symtab_free(m->symtab);
		nw_places_free(m->places);
	}
	m->modules = modules;
	m->symtab = symtab;
	m->places = places;
	m->borrowed = true;
}

static uint64_t map_start(const void *maps, size_t i)
{
	return ((const struct nw_map *)maps)[i].start;
}

void nw_measurement_locate(const struct nw_measurement *m, uint32_t epoch, uint64_t ip,
			   bool caller, struct nw_resolved *ret)
{
	const struct nw_epoch *e = epoch < m->nepochs ? m->epochs[epoch] : NULL;
	size_t lo;

	memset(ret, 0, sizeof(*ret));
	ip = nw_ip_pc(ip);
	/* The mapping with the greatest start <= ip. */
	lo = e ? nw_bsearch_le(e->maps, e->n, ip, map_start) : 0;
	if (!lo || e->maps[lo - 1].module >= m->modules->n || ip >= e->maps[lo - 1].end)
		return;
	ret->map = &e->maps[lo - 1];
	ret->module_index = ret->map->module;
	ret->module = &m->modules->v[ret->module_index];
	ret->addr = ip - ret->map->start + ret->map->vaddr - (caller ? 1 : 0);
	ret->caller = caller;
}

void nw_measurement_resolve(const struct nw_measurement *m, uint32_t epoch, uint64_t ip,
			    bool caller, struct nw_resolved *ret)
{
	nw_measurement_locate(m, epoch, ip, caller, ret);
	if (ret->map)
		ret->sym = nw_symtab_lookup(m->symtab, ret->module_index, ret->addr);
}

/* ---- merging ---- */

static bool same_metrics(const struct nw_measurement *a, const struct nw_measurement *b)
{
	if (a->nmetrics != b->nmetrics)
		return false;
	for (uint32_t i = 0; i < a->nmetrics; i++)
		if (strcmp(a->metrics[i].event, b->metrics[i].event) ||
		    a->metrics[i].kind != b->metrics[i].kind)
			return false;
	return true;
}

static void metric_list(const struct nw_measurement *m, char *buf, size_t len)
{
	struct nw_strbuf b = { 0 };

	for (uint32_t i = 0; i < m->nmetrics; i++)
		nw_sb_printf(&b, "%s%s", i ? ", " : "", m->metrics[i].name);
	snprintf(buf, len, "%s", b.failed ? "?" : nw_sb_str(&b));
	nw_sb_fini(&b);
}

uint32_t nw_measurement_runs(const struct nw_measurement *m)
{
	return m->nruns ? m->nruns : 1;
}

void nw_measurement_run(const struct nw_measurement *m, uint32_t r, uint32_t *first, uint32_t *end)
{
	*first = m->nruns ? m->run_first[r] : 0;
	*end = r + 1 < m->nruns ? m->run_first[r + 1] : m->nthreads;
}

/* @src's runs after @dst's, their threads numbered from @dst's next thread.  -ENOMEM. */
static int add_runs(struct nw_measurement *dst, const struct nw_measurement *src)
{
	uint32_t nd = nw_measurement_runs(dst), ns = nw_measurement_runs(src);
	uint32_t *v = realloc(dst->run_first, (size_t)(nd + ns) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (!dst->nruns)
		v[0] = 0;
	for (uint32_t r = 0; r < ns; r++)
		v[nd + r] = dst->nthreads + (src->nruns ? src->run_first[r] : 0);
	dst->run_first = v;
	dst->nruns = nd + ns;
	return 0;
}

int nw_measurement_merge(struct nw_measurement *dst, struct nw_measurement *src, char *err,
			 size_t errlen)
{
	uint32_t *mod = NULL, *ep = NULL, base;
	struct nw_symtab *st = src->symtab;
	int ret = -ENOMEM;

	if (dst->borrowed || src->borrowed)
		return -EINVAL;
	if (!same_metrics(dst, src)) {
		char a[512], b[512];

		/* Brackets show where each comma-separated list ends; @src's first. */
		metric_list(src, a, sizeof(a));
		metric_list(dst, b, sizeof(b));
		snprintf(err, errlen, "the measurements recorded different metrics: [%s] and [%s]",
			 a, b);
		return -EINVAL;
	}
	mod = malloc((src->modules->n ? src->modules->n : 1) * sizeof(*mod));
	ep = malloc((src->nepochs ? src->nepochs : 1) * sizeof(*ep));
	if (!mod || !ep)
		goto out;
	for (uint32_t i = 0; i < src->modules->n; i++) {
		const struct nw_module *sm = &src->modules->v[i];
		int d = nw_module_intern(dst->modules, sm->path, sm->build_id, sm->build_id_size);

		if (d < 0)
			goto out;
		mod[i] = (uint32_t)d;
		if (!dst->modules->v[d].facts.known && sm->facts.known &&
		    nw_module_facts_copy(&dst->modules->v[d].facts, &sm->facts))
			goto out;
	}
	base = dst->nepochs;
	for (uint32_t e = 0; e < src->nepochs; e++) {
		const struct nw_epoch *se = src->epochs[e];
		struct nw_epoch *de = nw_epoch_new(se->maps, se->n, se->index);

		if (!de)
			goto out;
		for (uint32_t k = 0; k < de->n; k++)
			de->maps[k].module = mod[de->maps[k].module];
		if (nw_measurement_add_epoch(dst, de) < 0) {
			free(de);
			goto out;
		}
		ep[e] = base + e;
	}
	for (uint32_t i = 0; i < src->nprocs; i++) {
		int pi = nw_measurement_add_process(dst, src->procs[i].pid, src->procs[i].ppid,
						    src->procs[i].comm);

		if (pi < 0)
			goto out;
		dst->procs[pi].nspid = src->procs[i].nspid;
	}
	if (add_runs(dst, src))
		goto out;
	for (uint32_t i = 0; i < src->nthreads; i++) {
		struct nw_mthread *sth = &src->threads[i];
		struct nw_mthread *dth = nw_measurement_add_thread(dst, sth->pid, sth->tid,
								   sth->comm, sth->file);

		if (!dth)
			goto out;
		dth->samples = sth->samples;
		dth->first_ns = sth->first_ns;
		dth->last_ns = sth->last_ns;
		dth->first_epoch = sth->nepochs ? ep[sth->first_epoch] : dst->nepochs;
		dth->nepochs = sth->nepochs;
		/* The trees move: src keeps none. */
		dth->trees = sth->trees;
		dth->ntrees = sth->ntrees;
		for (uint32_t t = 0; t < dth->ntrees; t++)
			dth->trees[t].epoch = ep[dth->trees[t].epoch];
		sth->trees = NULL;
		sth->ntrees = 0;
		dth->trace = sth->trace;
		sth->trace = NULL;
		if (sth->trace_file && !(dth->trace_file = strdup(sth->trace_file)))
			goto out;
	}
	for (uint32_t i = 0; i < st->nentries; i++) {
		struct nw_symentry *e = &st->entries[i];

		ret = nw_symtab_add(dst->symtab, mod[e->module], e->addr, e->frames, e->nframes);
		e->frames = NULL;
		e->nframes = 0;
		if (ret)
			goto out;
	}
	nw_symtab_sort(dst->symtab);
	ret = nw_codestore_merge(&dst->code, src->code, mod);
	if (!ret)
		ret = nw_locks_merge(&dst->locks, &src->locks);
	if (ret)
		goto out;
	dst->run.samples += src->run.samples;
	dst->run.lost += src->run.lost;
	dst->run.throttled += src->run.throttled;
	dst->run.unwind_errors += src->run.unwind_errors;
	if (src->run.start_ns && (!dst->run.start_ns || src->run.start_ns < dst->run.start_ns))
		dst->run.start_ns = src->run.start_ns;
	if (src->run.end_ns > dst->run.end_ns)
		dst->run.end_ns = src->run.end_ns;
	if (src->run.clock_start_ns &&
	    (!dst->run.clock_start_ns || src->run.clock_start_ns < dst->run.clock_start_ns))
		dst->run.clock_start_ns = src->run.clock_start_ns;
	if (src->run.clock_end_ns > dst->run.clock_end_ns)
		dst->run.clock_end_ns = src->run.clock_end_ns;
	dst->run.traced = dst->run.traced && src->run.traced;
	dst->run.kernel = dst->run.kernel || src->run.kernel;
	ret = 0;
out:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory merging the measurements");
	free(mod);
	free(ep);
	return ret;
}

static const char *const written_names[NW_RUN_WRITTEN_KINDS] = {
	[NW_RUN_END] = "end",
	[NW_RUN_CHECKPOINT] = "checkpoint",
	[NW_RUN_SNAPSHOT] = "snapshot",
	[NW_RUN_ROTATION] = "rotation",
};

const char *nw_run_written_name(enum nw_run_written w)
{
	return (unsigned)w < NW_RUN_WRITTEN_KINDS ? written_names[w] : "?";
}

int nw_run_written_parse(const char *name)
{
	for (int i = 0; i < NW_RUN_WRITTEN_KINDS; i++)
		if (!strcmp(name, written_names[i]))
			return i;
	return -EINVAL;
}
