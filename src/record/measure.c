/* SPDX-License-Identifier: MIT */
/* From a recording session to the model; see measure.h. */
#include "record/measure.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

/* Slots of nw_measure.recent (a power of two). */
#define RECENT_SLOTS 8192u

int nw_measure_init(struct nw_measure *ms, struct nw_elf_cache *elf, const struct nw_cache *cache)
{
	memset(ms, 0, sizeof(*ms));
	nw_perfmaps_init(&ms->jit, "/tmp");
	ms->cache = cache;
	ms->sym = nw_symbolizer_new(elf, cache);
	ms->symtab = nw_symtab_new();
	ms->places = nw_places_new();
	if (!ms->sym || !ms->symtab || !ms->places || nw_codecap_init(&ms->code, ms->sym))
		return -ENOMEM;
	return nw_place_cache_init(&ms->recent, RECENT_SLOTS);
}

void nw_measure_fini(struct nw_measure *ms)
{
	for (size_t i = 0; i < ms->nfiles; i++)
		free(ms->files[i].name);
	free(ms->files);
	nw_perfmaps_fini(&ms->jit);
	if (ms->ksyms_state == 1)
		nw_kallsyms_fini(&ms->ksyms);
	nw_places_free(ms->places);
	free(ms->done);
	for (size_t i = 0; i < ms->nmarks; i++)
		free(ms->marks[i].v);
	free(ms->marks);
	nw_codecap_fini(&ms->code);
	nw_symtab_free(ms->symtab);
	nw_symbolizer_free(ms->sym);
	nw_place_cache_fini(&ms->recent);
	memset(ms, 0, sizeof(*ms));
}

/* 1 when place @id is new to symtab (and now marked), 0 when seen before, -ENOMEM. */
static int mark_place(struct nw_measure *ms, size_t id)
{
	if (nw_grow_fill(&ms->done, &ms->ndone, &ms->cap_done, id, sizeof(*ms->done), 0))
		return -ENOMEM;
	if (ms->done[id])
		return 0;
	ms->done[id] = 1;
	return 1;
}

/*
 * Frames for @pc in anonymous memory of process @pid from its perf map, if
 * it has one; the first use keeps a copy of the map as an extra file.
 */
static int jit_symbolize(struct nw_measure *ms, uint32_t pid, uint64_t pc,
			 struct nw_symframe **frames, uint32_t *nframes)
{
	const struct nw_perfmap *map;
	int ret;

	ret = nw_perfmaps_get(&ms->jit, pid, &map);
	if (ret < 0 || !map)
		return ret < 0 ? ret : 0;
	if (ret == 1) {
		struct nw_extra_file *f;

		if (nw_grow(&ms->files, &ms->cap_files, ms->nfiles + 1, sizeof(*ms->files)))
			return -ENOMEM;
		f = &ms->files[ms->nfiles];
		f->name = nw_strdup_printf("jit/perf-%u.map", pid);
		if (!f->name)
			return -ENOMEM;
		f->data = map->raw;
		f->size = map->rawlen;
		ms->nfiles++;
	}
	return nw_perfmap_symbolize(map, pc, frames, nframes);
}

/* Reads the kernel's symbols, from the cache when it holds them, if not read yet. */
static int load_kernel(struct nw_measure *ms)
{
	char name[256];
	int rc;

	if (ms->ksyms_state)
		return 0;
	rc = nw_kallsyms_load_cached(&ms->ksyms, ms->cache,
				     nw_kallsyms_cache_name(NULL, NULL, name, sizeof(name)) ? NULL : name,
				     NULL);
	if (rc == -ENOMEM)
		return rc;
	ms->ksyms_state = rc ? rc : 1;
	return 0;
}

int nw_measure_prepare_kernel(struct nw_measure *ms)
{
	char name[256];

	if (!nw_kallsyms_cache_name(NULL, NULL, name, sizeof(name)) && nw_cache_has(ms->cache, name))
		return 0; /* mapped at the first kernel PC, in no time */
	return load_kernel(ms);
}

/*
 * A kernel PC from /proc/kallsyms, read once: one frame named after the
 * function (and its module, for a loadable one), or none when kallsyms
 * hides its addresses or knows nothing there.  -ENOMEM.
 */
static int kernel_symbolize(struct nw_measure *ms, uint64_t pc, struct nw_symframe **frames,
			    uint32_t *nframes)
{
	struct nw_symframe *fr;
	struct nw_ksym k;
	int rc = load_kernel(ms);

	if (rc)
		return rc;
	if (ms->ksyms_state == 1 && !nw_kallsyms_covers(&ms->ksyms, pc)) {
		/* A module, a BPF program, a trampoline: the cache kept the image only. */
		nw_kallsyms_fini(&ms->ksyms);
		rc = nw_kallsyms_load(&ms->ksyms, NULL);
		if (rc == -ENOMEM)
			return rc;
		ms->ksyms_state = rc ? rc : 1;
	}
	if (ms->ksyms_state != 1 || !nw_kallsyms_find(&ms->ksyms, pc, &k))
		return 0;
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	fr->function = k.module ? nw_strdup_printf("%s [%s]", k.name, k.module) : strdup(k.name);
	if (!fr->function) {
		free(fr);
		return -ENOMEM;
	}
	*frames = fr;
	*nframes = 1;
	return 0;
}

/* Symbolizes node @i of tree @t of @th (as a caller or as a leaf, as it is now). */
static int symbolize_node(struct nw_measure *ms, const struct nw_measurement *m,
			  const struct nw_mthread *th, uint32_t t, uint32_t i)
{
	const struct nw_tree *tr = &th->trees[t];
	bool caller = nw_cct_is_return(tr->cct, i);
	struct nw_symframe *frames = NULL;
	const struct nw_module *mod;
	const struct nw_place *pl;
	const struct nw_map *map;
	uint32_t nframes = 0;
	int64_t id;
	int ret;

	id = nw_places_resolve(ms->places, &ms->recent, m, tr->epoch, tr->cct->nodes[i].ip, caller,
			       &map);
	if (id < 0)
		return (int)id;
	/* Nothing to symbolize outside a mapping, or done before. */
	ret = map ? mark_place(ms, (size_t)id) : 0;
	if (ret <= 0)
		return ret;
	pl = &ms->places->v[id];
	mod = &m->modules->v[pl->module];
	if (!strcmp(mod->path, NW_KERNEL_MODULE))
		ret = kernel_symbolize(ms, pl->addr, &frames, &nframes);
	else
		ret = nw_symbolize(ms->sym, nw_module_source(mod), pl->addr, &frames, &nframes);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0) {
		frames = NULL;
		nframes = 0;
	}
	if (!nframes && nw_perfmap_module_is_anon(mod->path)) {
		ret = jit_symbolize(ms, th->pid, nw_ip_pc(tr->cct->nodes[i].ip) - caller, &frames,
				    &nframes);
		if (ret < 0)
			return ret;
	}
	return nw_symtab_add(ms->symtab, pl->module, pl->addr, frames, nframes);
}

/*
 * Symbolizes every PC of @th's trees not seen before: the nodes added
 * since the last build (@marks, per epoch of the thread's process; moved
 * on), and their parents, which were leaves (exact PCs) then and are
 * callers (return addresses, PC - 1) now.
 */
static int symbolize_thread(struct nw_measure *ms, const struct nw_measurement *m,
			    const struct nw_mthread *th, struct nw_measure_marks *marks)
{
	if (marks->n < th->nepochs) {
		uint32_t *v = realloc(marks->v, th->nepochs * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + marks->n, 0, (th->nepochs - marks->n) * sizeof(*v));
		marks->v = v;
		marks->n = th->nepochs;
	}
	for (uint32_t t = 0; t < th->ntrees; t++) {
		const struct nw_cct *cct = th->trees[t].cct;
		uint32_t e = th->trees[t].epoch - th->first_epoch;
		uint32_t from = e < marks->n && marks->v[e] <= cct->n ? marks->v[e] : 0;

		for (uint32_t i = from > 1 ? from : 1; i < cct->n; i++) {
			uint32_t p = cct->nodes[i].parent;
			int ret = symbolize_node(ms, m, th, t, i);

			if (!ret && p != NW_CCT_ROOT && p < from)
				ret = symbolize_node(ms, m, th, t, p);
			if (ret)
				return ret;
		}
		if (e < marks->n)
			marks->v[e] = cct->n;
	}
	return 0;
}

/* Adds the session's processes, their epochs, and its sampled threads with their trees. */
static int add_tasks(struct nw_measure *ms, struct nw_measurement *m, const struct nw_session *s,
		     const struct nw_tracer *tracer)
{
	const struct nw_task_table *t = &s->tasks;
	uint32_t *base = calloc(t->nprocs ? t->nprocs : 1, sizeof(*base));
	int ret = 0;

	if (!base)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nprocs && !ret; i++) {
		const struct nw_process *p = t->procs[i];

		base[i] = m->nepochs;
		for (uint32_t e = 0; e < p->as.nepochs && !ret; e++) {
			int idx = nw_measurement_add_epoch(m, p->as.epochs[e]);

			ret = idx < 0 ? idx : 0;
		}
		if (!ret) {
			ret = nw_measurement_add_process(m, p->pid, p->ppid, p->comm);
			if (ret >= 0)
				m->procs[ret].nspid = p->nspid;
			ret = ret < 0 ? ret : 0;
		}
	}
	for (uint32_t i = 0; i < t->nthreads && !ret; i++) {
		const struct nw_thread *th = t->threads[i];
		const struct nw_addrspace *as = &th->proc->as;
		struct nw_mthread *mt;
		char file[NW_COMM_LEN + 48];
		uint32_t p;

		if (!th->samples)
			continue;
		for (p = 0; p < t->nprocs && t->procs[p] != th->proc; p++)
			;
		if (p == t->nprocs)
			continue;
		nw_thread_file_name(file, sizeof(file), th->comm, th->pid, th->tid);
		mt = nw_measurement_add_thread(m, th->pid, th->tid, th->comm, file);
		if (!mt) {
			ret = -ENOMEM;
			break;
		}
		mt->samples = th->samples;
		mt->first_ns = th->first_time;
		mt->last_ns = th->last_time;
		/* The model is borrowed: it reads the tracer's trace, never frees it. */
		mt->trace = tracer ? (struct nw_trace *)nw_tracer_thread(tracer, th) : NULL;
		if (mt->trace) {
			size_t len = strlen(file) - strlen(".csprof");

			mt->trace_file = nw_strdup_printf("%.*s.trace", (int)len, file);
			if (!mt->trace_file) {
				ret = -ENOMEM;
				break;
			}
		}
		mt->first_epoch = base[p];
		mt->nepochs = as->nepochs;
		for (uint32_t e = 0; e < th->nccts && e < as->nepochs && !ret; e++)
			if (th->ccts[e])
				ret = nw_mthread_add_tree(mt, base[p] + e, th->ccts[e]);
		if (!ret && nw_grow(&ms->marks, &ms->cap_marks, (size_t)th->seq + 1,
				    sizeof(*ms->marks)))
			ret = -ENOMEM;
		if (!ret && th->seq >= ms->nmarks) {
			memset(ms->marks + ms->nmarks, 0,
			       ((size_t)th->seq + 1 - ms->nmarks) * sizeof(*ms->marks));
			ms->nmarks = (size_t)th->seq + 1;
		}
		if (!ret)
			ret = symbolize_thread(ms, m, mt, &ms->marks[th->seq]);
	}
	free(base);
	return ret;
}

int nw_measure_build(struct nw_measure *ms, struct nw_session *s,
		     const struct nw_tracer *tracer, struct nw_run *run,
		     struct nw_measurement **ret)
{
	struct nw_measurement *m = nw_measurement_new();
	int err = -ENOMEM;

	if (!m)
		return -ENOMEM;
	/* The model reads the session's and this symbol table and places, owning none. */
	nw_measurement_borrow(m, &s->modules, ms->symtab, ms->places);
	/* Its epochs are numbered anew: what the cache of recent ips says is not of them. */
	nw_place_cache_clear(&ms->recent);
	m->run = *run;
	memset(run, 0, sizeof(*run));
	err = nw_session_describe_metrics(s, m);
	if (!err)
		err = add_tasks(ms, m, s, tracer);
	if (err) {
		nw_measurement_free(m);
		return err;
	}
	nw_symtab_sort(ms->symtab);
	/*
	 * The code of the sampled functions goes with every write but a run's
	 * first checkpoint: reading it (the bytes, and DWARF's lines and
	 * inlined ranges, which the run cache spares symbolization) made a
	 * short run's first checkpoint cost more than its sampling (8.4 ms
	 * against 6 on bench/cost.py's 1.5 s run).  A run killed before its
	 * second checkpoint leaves its samples without their code.
	 */
	if (m->run.written != NW_RUN_CHECKPOINT || ms->checkpoints++ > 0)
		err = nw_codecap_update(&ms->code, m, ms->ksyms_state == 1 ? &ms->ksyms : NULL);
	if (err) {
		nw_measurement_free(m);
		return err;
	}
	*ret = m;
	return 0;
}
