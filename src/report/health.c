/* SPDX-License-Identifier: MIT */
/*
 * Stack health: classifies each sample of the threads' physical trees as
 * complete, truncated or stopped (see health.h), groups the stopped ones by
 * the module of their outermost frame, and says what would unwind further.
 * Whether a module has CFI (dwarf mode's remedy) is one of the module's
 * ELF facts kept in the measurement.
 */
#include "report/health.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/places.h"
#include "util/strbuf.h"

/* narwhal-record's largest --call-graph dwarf,SIZE (perf's u16 dump size, 8-aligned). */
#define MAX_STACK_COPY 65528

static const char *const entries[] = {
    "_start",
    "__libc_start_main",
    "__libc_start_main_impl",
    "__libc_start_call_main",
    "main",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "thread_start",
    "_dl_start_user", /* the loader: from its entry (_start) to the program's */
};

const char *nw_stop_cause_name(enum nw_stop_cause cause)
{
	static const char *const names[NW_STOP_CAUSES] = {
		[NW_STOP_FP] = "frame-pointer chain broken",
		[NW_STOP_COPY] = "stack copy exhausted",
		[NW_STOP_NO_CFI] = "no CFI for the address",
		[NW_STOP_JIT] = "JIT code without a perf map",
		[NW_STOP_OTHER] = "CFI unwinding failed",
	};

	return (unsigned)cause < NW_STOP_CAUSES ? names[cause] : "?";
}

bool nw_health_is_entry(const char *name)
{
	if (!name)
		return false;
	if (strncmp(name, "__GI_", 5) == 0)
		name += 5;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (strcmp(name, entries[i]) == 0)
			return true;
	return false;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* A library of the system (distro packages, the kernel's vdso), not the program's own. */
static bool is_system_module(const char *path)
{
	static const char *const dirs[] = {"/lib/",	  "/lib32/",	  "/lib64/",
					   "/libx32/",	  "/usr/lib/",	  "/usr/lib32/",
					   "/usr/lib64/", "/usr/libx32/", "/usr/libexec/"};

	if (!path)
		return false;
	if (path[0] == '[')
		return true;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (strncmp(path, dirs[i], strlen(dirs[i])) == 0)
			return true;
	return false;
}

/* 1 when module @path has CFI, 0 when not, -1 when its ELF facts are unknown. */
static int module_has_cfi(const struct nw_measurement *m, const char *path)
{
	int i = path && m ? nw_module_find(m->modules, path) : -1;

	if (i < 0 || !m->modules->v[i].facts.known)
		return -1;
	return m->modules->v[i].facts.has_cfi;
}

/* Which metrics count samples: by their descriptors (samples, switches), else metric 0. */
static bool *samples_metrics(const struct nw_measurement *m)
{
	bool *v = calloc(m->nmetrics ? m->nmetrics : 1, sizeof(*v)), any = false;

	if (!v)
		return NULL;
	for (unsigned i = 0; i < m->nmetrics; i++) {
		v[i] = nw_metric_counts_samples(&m->metrics[i]);
		any |= v[i];
	}
	if (!any && m->nmetrics)
		v[0] = true;
	return v;
}

struct classify_ctx {
	const struct nw_measurement *m;
	struct nw_frames frames;  /* the outermost frames of the paths */
	const bool *is_samples;
	struct nw_health *h;
	/*
	 * per (outermost frame, cause): (frames + 1) * NW_STOP_CAUSES, the
	 * last frame for paths without a known frame; grown with the frames
	 */
	uint64_t *stop_by_func;
	size_t cap_stops;
	struct nw_place_cache recent; /* in front of the model's places */
};

/* Is @path memory that no file backs (where JIT code lives)? */
static bool anon_module(const char *path)
{
	return path && (!strcmp(path, "//anon") || !path[0] || !strncmp(path, "[anon", 5) ||
			!strcmp(path, "[heap]") || !strncmp(path, "/memfd:", 7));
}

/*
 * Why a stack whose outermost frame is @f (p->n: none known) stopped:
 * fp mode, a broken frame-pointer chain; dwarf mode, by the module (no
 * CFI, JIT memory without a perf map) or by how far the copy reached.
 */
static enum nw_stop_cause stop_cause(const struct classify_ctx *c, uint64_t f, uint64_t leaf_sp,
				     uint64_t outer_sp)
{
	const struct nw_frames *p = &c->frames;
	const struct nw_func *fn = f < p->n ? &p->v[f] : NULL;
	const struct nw_health *h = c->h;

	if (fn && anon_module(fn->module) && fn->kind != NW_FRAME_FUNCTION)
		return NW_STOP_JIT;
	if (!h->dwarf)
		return NW_STOP_FP;
	if (fn && anon_module(fn->module))
		return NW_STOP_NO_CFI; /* JIT code a perf map names: no CFI there */
	/* Within a frame or so of the copy's end: the unwinder ran off it. */
	if (!h->bpf && h->stack_size && leaf_sp && outer_sp > leaf_sp &&
	    outer_sp - leaf_sp + 512 >= h->stack_size)
		return NW_STOP_COPY;
	if (!fn || !fn->module || module_has_cfi(c->m, fn->module) == 0)
		return NW_STOP_NO_CFI;
	return NW_STOP_OTHER;
}

/* Adds @w samples to stop_by_func[@k], growing it (zeroed) to fit.  -ENOMEM. */
static int count_stop(struct classify_ctx *c, size_t k, uint64_t w)
{
	size_t had = c->cap_stops;

	if (nw_grow(&c->stop_by_func, &c->cap_stops, k + 1, sizeof(*c->stop_by_func)))
		return -ENOMEM;
	memset(c->stop_by_func + had, 0, (c->cap_stops - had) * sizeof(*c->stop_by_func));
	c->stop_by_func[k] += w;
	return 0;
}

/*
 * The outermost frame of physical node @node of tree @tr (a child of the
 * root): the outermost function of its inline chain.  -ENOMEM.
 */
static int64_t outer_frame(struct classify_ctx *c, const struct nw_tree *tr, uint32_t node)
{
	bool caller = nw_cct_is_return(tr->cct, node);
	int64_t id = nw_places_resolve(c->m->places, &c->recent, c->m, tr->epoch,
				       tr->cct->nodes[node].ip, caller, NULL);
	struct nw_resolved r;
	uint32_t chain[1];
	int k;

	if (id < 0)
		return -ENOMEM;
	nw_place_resolved(c->m, &c->m->places->v[id], caller, &r);
	/* The chain is outermost first; its first frame is the one above every other. */
	k = nw_stacks_frames_of(&c->frames, &r, chain, 1);
	return k < 0 ? -ENOMEM : (int64_t)chain[0];
}

/*
 * Is node @node of @tr a kernel frame of execve(2) (1, else 0)?  While the
 * kernel replaces the program, a sample's user registers are the old
 * program's and its maps (and stack copy) the new one's: no unwinder can
 * follow.  -ENOMEM.
 */
static int in_execve(struct classify_ctx *c, const struct nw_tree *tr, uint32_t node)
{
	const struct nw_symentry *e;
	int64_t id;

	if (!nw_ip_is_kernel(tr->cct->nodes[node].ip))
		return 0;
	id = nw_places_resolve_node(c->m->places, &c->recent, c->m, tr, node, NULL);
	if (id < 0)
		return -ENOMEM;
	e = nw_place_sym(c->m, &c->m->places->v[id]);
	for (uint32_t k = 0; e && k < e->nframes; k++) {
		const char *fn = e->frames[k].function;

		if (fn && (strstr(fn, "sys_execve") || !strncmp(fn, "do_execveat_common", 18)))
			return 1;
	}
	return 0;
}

/*
 * Classifies the samples of one physical tree.  Its nodes come parents
 * first (preorder in a directory, the recorder's order in a checkpoint),
 * so a path's outermost frame, depth, highest sp and whether it went
 * through execve follow in one pass.
 */
static int classify_tree(struct classify_ctx *c, const struct nw_tree *tr)
{
	const struct nw_cct *t = tr->cct;
	uint32_t *outer = malloc((size_t)t->n * sizeof(*outer));
	uint32_t *depth = malloc((size_t)t->n * sizeof(*depth));
	uint64_t *outer_sp = malloc((size_t)t->n * sizeof(*outer_sp));
	bool *exec = malloc((size_t)t->n * sizeof(*exec));
	int ret = 0;

	if (!outer || !depth || !outer_sp || !exec) {
		ret = -ENOMEM;
		goto out;
	}
	outer[NW_CCT_ROOT] = c->frames.n; /* not used: the root is no path's */
	depth[NW_CCT_ROOT] = 0;
	outer_sp[NW_CCT_ROOT] = 0;
	exec[NW_CCT_ROOT] = false;
	for (uint32_t s = 1; s < t->n && !ret; s++) {
		const struct nw_cct_node *sn = &t->nodes[s];
		uint32_t parent = sn->parent;
		uint64_t w = 0, f;

		if (parent >= s) {
			ret = -EINVAL;
			break;
		}
		if (parent == NW_CCT_ROOT) {
			int64_t fi = outer_frame(c, tr, s);

			if (fi < 0) {
				ret = -ENOMEM;
				break;
			}
			outer[s] = (uint32_t)fi;
		} else {
			outer[s] = outer[parent];
		}
		depth[s] = depth[parent] + 1;
		/* The highest stack address any frame of the path reached. */
		outer_sp[s] = sn->sp > outer_sp[parent] ? sn->sp : outer_sp[parent];
		if (exec[parent]) {
			exec[s] = true;
		} else {
			int e = in_execve(c, tr, s);

			if (e < 0) {
				ret = e;
				break;
			}
			exec[s] = e;
		}
		for (unsigned m = 0; m < t->nmetrics && m < c->m->nmetrics; m++)
			if (c->is_samples[m])
				w += nw_cct_metrics(t, s)[m];
		if (!w)
			continue;
		c->h->samples += w;
		f = outer[s];
		if (nw_health_is_entry(c->frames.v[f].name)) {
			c->h->complete += w;
		} else if (depth[s] >= c->h->max_stack) {
			c->h->truncated += w;
		} else if (exec[s]) {
			c->h->in_exec += w;
		} else {
			size_t k = (size_t)f * NW_STOP_CAUSES + stop_cause(c, f, sn->sp, outer_sp[s]);

			ret = count_stop(c, k, w);
		}
	}
out:
	free(outer);
	free(depth);
	free(outer_sp);
	free(exec);
	return ret;
}

static int cmp_stop(const void *a, const void *b)
{
	const struct nw_health_stop *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (!x->module || !y->module)
		return !x->module - !y->module;
	return strcmp(x->module, y->module);
}

static char *dup_or_null(const char *s, int *failed)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*failed = 1;
	return d;
}

/* Groups the stopped samples (per outermost function) into modules. */
static int group_stops(struct classify_ctx *c)
{
	const struct nw_frames *p = &c->frames;
	struct nw_health *h = c->h;
	int failed = 0;

	for (size_t k = 0; k < c->cap_stops; k++) {
		uint64_t w = c->stop_by_func[k];
		uint32_t f = k / NW_STOP_CAUSES;
		enum nw_stop_cause cause = (enum nw_stop_cause)(k % NW_STOP_CAUSES);
		const char *module = f < p->n ? p->v[f].module : NULL;
		const char *name = f < p->n ? p->v[f].name : "[no frame]";
		struct nw_health_stop *s = NULL;

		if (!w)
			continue;
		h->stopped += w;
		for (uint32_t i = 0; i < h->nstops && !s; i++)
			if (str_eq(h->stops[i].module, module) && h->stops[i].cause == cause)
				s = &h->stops[i];
		if (!s) {
			struct nw_health_stop *v;

			v = realloc(h->stops, ((size_t)h->nstops + 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			h->stops = v;
			s = &v[h->nstops];
			memset(s, 0, sizeof(*s));
			s->module = dup_or_null(module, &failed);
			if (failed)
				return -ENOMEM;
			h->nstops++;
			s->cause = cause;
			s->system = is_system_module(module);
			s->cfi = h->dwarf ? module_has_cfi(c->m, module) : -1;
		}
		s->samples += w;
		if (w > s->func_samples || (w == s->func_samples && strcmp(name, s->func) < 0)) {
			free(s->func);
			s->func = dup_or_null(name, &failed);
			if (failed)
				return -ENOMEM;
			s->func_samples = w;
		}
	}
	if (h->nstops)
		qsort(h->stops, h->nstops, sizeof(*h->stops), cmp_stop);
	return 0;
}

int nw_health_classify(const struct nw_measurement *m, const struct nw_filter *f,
		       struct nw_health **ret)
{
	const struct nw_run *r = &m->run;
	struct classify_ctx c = { .m = m };
	struct nw_health *h = calloc(1, sizeof(*h));
	int err = -ENOMEM;

	if (!h)
		return -ENOMEM;
	nw_frames_init(&c.frames);
	h->bpf = r->call_graph && strcmp(r->call_graph, "bpf") == 0;
	h->dwarf = h->bpf || (r->call_graph && strcmp(r->call_graph, "dwarf") == 0);
	h->bpf_frames = r->bpf_frames;
	h->bpf_fp_frames = r->bpf_fp_frames;
	h->bpf_copies = r->bpf_copies;
	h->stack_size = r->stack_size;
	h->max_stack = r->max_stack ? r->max_stack
		       : h->dwarf   ? NW_HEALTH_DWARF_MAX_STACK
				    : NW_HEALTH_FP_MAX_STACK;
	c.h = h;
	c.is_samples = samples_metrics(m);
	if (!c.is_samples || nw_place_cache_init(&c.recent, 0))
		goto out_free;
	err = 0;
	for (uint32_t i = 0; i < m->nthreads && !err; i++) {
		const struct nw_mthread *th = &m->threads[i];

		if (!nw_filter_thread(f, th))
			continue;
		for (uint32_t t = 0; t < th->ntrees && !err; t++)
			err = classify_tree(&c, &th->trees[t]);
	}
	if (!err)
		err = group_stops(&c);
	if (err)
		goto out_free;
	free((void *)c.is_samples);
	free(c.stop_by_func);
	nw_frames_fini(&c.frames);
	nw_place_cache_fini(&c.recent);
	*ret = h;
	return 0;

out_free:
	free((void *)c.is_samples);
	free(c.stop_by_func);
	nw_frames_fini(&c.frames);
	nw_place_cache_fini(&c.recent);
	nw_health_free(h);
	return err;
}

void nw_health_free(struct nw_health *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; h->stops && i < h->nstops; i++) {
		free(h->stops[i].module);
		free(h->stops[i].func);
	}
	free(h->stops);
	free(h);
}

const char *nw_health_remedy(const struct nw_health *h, const struct nw_health_stop *s, char *buf,
			     size_t len)
{
	uint32_t size = h->stack_size > MAX_STACK_COPY / 2 ? MAX_STACK_COPY : 2 * h->stack_size;

	switch (s->cause) {
	case NW_STOP_JIT:
		snprintf(buf, len,
			 "JIT code without a perf map: have the JIT write /tmp/perf-PID.map "
			 "(node --perf-basic-prof, java -XX:+UnlockDiagnosticVMOptions "
			 "-XX:+DumpPerfMapAtExit, python -X perf)");
		break;
	case NW_STOP_FP:
		if (!s->module)
			snprintf(buf, len,
				 "record with --call-graph dwarf (a frame without a "
				 "frame pointer broke the chain)");
		else if (s->system)
			snprintf(buf, len,
				 "record with --call-graph dwarf (this library is "
				 "built without frame pointers)");
		else
			snprintf(buf, len,
				 "build with -fno-omit-frame-pointer (or record with "
				 "--call-graph dwarf)");
		break;
	case NW_STOP_COPY:
		if (h->stack_size >= MAX_STACK_COPY)
			snprintf(buf, len,
				 "the stack copy (%u bytes) ran out and is at its maximum: "
				 "build with -fno-omit-frame-pointer and record with "
				 "--call-graph fp",
				 h->stack_size);
		else
			snprintf(buf, len,
				 "raise the stack copy (unwinding stops where it ends): "
				 "--call-graph dwarf,%u",
				 size < 8 ? 8 : size);
		break;
	case NW_STOP_NO_CFI:
		if (anon_module(s->module))
			snprintf(buf, len,
				 "JIT code has no CFI: record with --call-graph hybrid (frame "
				 "pointers where CFI is missing; the JIT must keep them)");
		else
			snprintf(buf, len,
				 "%s has no CFI: build it with -fasynchronous-unwind-tables, or "
				 "with -fno-omit-frame-pointer and record with --call-graph fp",
				 s->module ? "the module" : "code outside any module");
		break;
	default:
		if (s->cfi < 0)
			snprintf(buf, len,
				 "the module's file could not be read when recording (deleted "
				 "or replaced?): keep it in place while recording");
		else
			snprintf(buf, len,
				 "the CFI could not unwind this frame (NARWHAL_UNWIND=check "
				 "compares with libdwfl); --call-graph fp where it has frame "
				 "pointers");
		break;
	}
	return buf;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

int nw_health_print(FILE *out, const struct nw_health *h)
{
	char remedy[256];

	if (h->bpf) {
		fprintf(out, "Call graph: bpf (CFI unwinding in the kernel, depth limit %u frames)\n",
			h->max_stack);
		fprintf(out, "Frames by frame pointers: %llu of %llu (%.1f%%), in code without "
			     "CFI tables (JIT code, gaps in the CFI)\n",
			(unsigned long long)h->bpf_fp_frames, (unsigned long long)h->bpf_frames,
			pct(h->bpf_fp_frames, h->bpf_frames));
		if (h->bpf_copies)
			fprintf(out, "From a stack copy: %llu samples (a module's table was not "
				     "loaded yet; %u bytes)\n",
				(unsigned long long)h->bpf_copies, h->stack_size);
	} else if (h->dwarf)
		fprintf(out, "Call graph: dwarf (stack copy %u bytes, depth limit %u frames)\n",
			h->stack_size, h->max_stack);
	else
		fprintf(out, "Call graph: fp (depth limit %u frames)\n", h->max_stack);
	fprintf(out, "Samples: %llu\n", (unsigned long long)h->samples);
	fprintf(out, "Complete:  %10llu  %5.1f%%  outermost frame is a thread entry\n",
		(unsigned long long)h->complete, pct(h->complete, h->samples));
	fprintf(out, "Truncated: %10llu  %5.1f%%  as deep as the depth limit\n",
		(unsigned long long)h->truncated, pct(h->truncated, h->samples));
	if (h->truncated && h->dwarf)
		fprintf(out,
			"           remedy: none at record time: the recorder keeps %u "
			"frames at most (deep recursion? see --fold-recursion)\n",
			h->max_stack);
	else if (h->truncated)
		fprintf(out,
			"           remedy: raise the depth limit: sysctl "
			"kernel.perf_event_max_stack=%u\n",
			h->max_stack < NW_HEALTH_DWARF_MAX_STACK / 2 ? 2 * h->max_stack
								     : NW_HEALTH_DWARF_MAX_STACK);
	if (h->in_exec)
		fprintf(out,
			"In execve: %10llu  %5.1f%%  taken while the kernel replaced the program "
			"(the old registers, the new maps): nothing to unwind\n",
			(unsigned long long)h->in_exec, pct(h->in_exec, h->samples));
	fprintf(out, "Stopped:   %10llu  %5.1f%%  unwinding stopped before a thread entry\n",
		(unsigned long long)h->stopped, pct(h->stopped, h->samples));
	if (h->nstops) {
		fputs("\nWhere unwinding stops:\n SAMPLES  SHARE%  MODULE (OUTERMOST FUNCTION)\n",
		      out);
		for (uint32_t i = 0; i < h->nstops; i++) {
			const struct nw_health_stop *s = &h->stops[i];

			fprintf(out, "%8llu  %5.1f%%  %s (%s): %s\n", (unsigned long long)s->samples,
				pct(s->samples, h->samples), s->module ? s->module : "[unknown]",
				s->func ? s->func : "", nw_stop_cause_name(s->cause));
			fprintf(out, "%18sremedy: %s\n", "",
				nw_health_remedy(h, s, remedy, sizeof(remedy)));
		}
	}
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return 0;
}

int nw_health_summary(const struct nw_measurement *m, const char *dir, char *line, size_t len)
{
	struct nw_health *h = NULL;
	int ret = nw_health_classify(m, NULL, &h);

	if (ret) {
		snprintf(line, len, "%s: out of memory", dir);
		return ret;
	}
	if (!h->samples)
		snprintf(line, len, "stacks: no samples");
	else if (!h->stopped && !h->truncated && !h->in_exec)
		snprintf(line, len, "stacks: 100.0%% complete, 0.0%% truncated");
	else if (!h->stopped && !h->truncated)
		snprintf(line, len, "stacks: %.1f%% complete, %.1f%% taken inside execve",
			 (double)(uint64_t)(10 * pct(h->complete, h->samples)) / 10,
			 pct(h->in_exec, h->samples));
	else
		/* Rounded down, so that 100.0% means every sample. */
		snprintf(line, len,
			 "stacks: %.1f%% complete, %.1f%% truncated; run "
			 "narwhal-report --stack-health %s for where unwinding stops",
			 (double)(uint64_t)(10 * pct(h->complete, h->samples)) / 10,
			 pct(h->truncated, h->samples), dir);
	nw_health_free(h);
	return 0;
}
