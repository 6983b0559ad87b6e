/* SPDX-License-Identifier: MIT */
/*
 * Stack health: classifies each sample of the per-thread symbolic trees as
 * complete, truncated or stopped (see health.h), groups the stopped ones by
 * the module of their outermost frame, and says what would unwind further.
 * Whether a module has CFI (dwarf mode's remedy) is one of the module's
 * ELF facts kept in the measurement.
 */
#include "report/health.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
static bool *samples_metrics(const struct nw_stacks *s)
{
	unsigned nm = s->tree->nmetrics;
	bool *v = calloc(nm ? nm : 1, sizeof(*v)), any = false;

	if (!v)
		return NULL;
	for (unsigned i = 0; s->m && i < nm && i < s->m->nmetrics; i++) {
		v[i] = nw_metric_counts_samples(&s->m->metrics[i]);
		any |= v[i];
	}
	if (!any && nm)
		v[0] = true;
	return v;
}

struct classify_ctx {
	const struct nw_stacks *s;
	const bool *is_samples;
	struct nw_health *h;
	/* per (outermost frame, cause): (nfuncs + 1) * NW_STOP_CAUSES, the last frame
	 * for paths without a known frame */
	uint64_t *stop_by_func;
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
	const struct nw_frames *p = &c->s->frames;
	const struct nw_func *fn = f < p->n ? &p->v[f] : NULL;
	const struct nw_health *h = c->h;

	if (fn && anon_module(fn->module) && fn->kind != NW_FRAME_FUNCTION)
		return NW_STOP_JIT;
	if (!h->dwarf)
		return NW_STOP_FP;
	if (fn && anon_module(fn->module))
		return NW_STOP_NO_CFI; /* JIT code a perf map names: no CFI there */
	/* Within a frame or so of the copy's end: the unwinder ran off it. */
	if (h->stack_size && leaf_sp && outer_sp > leaf_sp &&
	    outer_sp - leaf_sp + 512 >= h->stack_size)
		return NW_STOP_COPY;
	if (!fn || !fn->module || module_has_cfi(c->s->m, fn->module) == 0)
		return NW_STOP_NO_CFI;
	return NW_STOP_OTHER;
}

static int classify_tree(struct classify_ctx *c, const struct nw_cct *t)
{
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint32_t *outer = malloc((size_t)t->n * sizeof(*outer));
	uint32_t *depth = malloc((size_t)t->n * sizeof(*depth));
	uint64_t *outer_sp = malloc((size_t)t->n * sizeof(*outer_sp));
	const struct nw_frames *p = &c->s->frames;
	uint32_t n;
	int ret = 0;

	if (!order || !outer || !depth || !outer_sp) {
		ret = -ENOMEM;
		goto out;
	}
	n = nw_cct_preorder(t, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = order[k];
		const struct nw_cct_node *sn = &t->nodes[s];
		uint64_t w = 0, f;

		if (s == NW_CCT_ROOT || (sn->parent == NW_CCT_ROOT && sn->ip < p->n &&
					 p->v[sn->ip].kind == NW_FRAME_THREAD)) {
			/* The root, and a thread's own frame: above every stack. */
			outer[s] = NW_CCT_NONE;
			depth[s] = 0;
			outer_sp[s] = 0;
		} else {
			const struct nw_cct_node *pn = &t->nodes[sn->parent];
			bool top = outer[sn->parent] == NW_CCT_NONE;
			/* One physical frame per run of equal, known sp tags. */
			bool same_frame = !top && sn->sp && sn->sp == pn->sp;

			outer[s] = top ? s : outer[sn->parent];
			depth[s] = depth[sn->parent] + !same_frame;
			/* The highest stack address any frame of the path reached. */
			outer_sp[s] = sn->sp > outer_sp[sn->parent] ? sn->sp : outer_sp[sn->parent];
		}
		for (unsigned m = 0; m < t->nmetrics; m++)
			if (c->is_samples[m])
				w += nw_cct_metrics(t, s)[m];
		if (!w)
			continue;
		c->h->samples += w;
		f = outer[s] == NW_CCT_NONE ? p->n : t->nodes[outer[s]].ip;
		if (f > p->n)
			f = p->n;
		if (f < p->n && nw_health_is_entry(p->v[f].name))
			c->h->complete += w;
		else if (depth[s] >= c->h->max_stack)
			c->h->truncated += w;
		else
			c->stop_by_func[f * NW_STOP_CAUSES +
					stop_cause(c, f, sn->sp, outer_sp[s])] += w;
	}
out:
	free(order);
	free(outer);
	free(depth);
	free(outer_sp);
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
	const struct nw_frames *p = &c->s->frames;
	struct nw_health *h = c->h;
	int failed = 0;

	for (uint32_t k = 0; k < (p->n + 1) * NW_STOP_CAUSES; k++) {
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
			s->cfi = h->dwarf ? module_has_cfi(c->s->m, module) : -1;
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

int nw_health_classify(const struct nw_stacks *s, struct nw_health **ret)
{
	const struct nw_run *r = s->m ? &s->m->run : NULL;
	struct classify_ctx c = {.s = s};
	struct nw_health *h = calloc(1, sizeof(*h));
	int err = -ENOMEM;

	if (!h)
		return -ENOMEM;
	h->dwarf = r && r->call_graph && strcmp(r->call_graph, "dwarf") == 0;
	h->stack_size = r ? r->stack_size : 0;
	h->max_stack = r && r->max_stack ? r->max_stack
		       : h->dwarf	 ? NW_HEALTH_DWARF_MAX_STACK
					 : NW_HEALTH_FP_MAX_STACK;
	c.h = h;
	c.is_samples = samples_metrics(s);
	c.stop_by_func = calloc(((size_t)s->frames.n + 1) * NW_STOP_CAUSES, sizeof(*c.stop_by_func));
	if (!c.is_samples || !c.stop_by_func)
		goto out_free;
	err = classify_tree(&c, s->tree);
	if (err)
		goto out_free;
	err = group_stops(&c);
	if (err)
		goto out_free;
	free((void *)c.is_samples);
	free(c.stop_by_func);
	*ret = h;
	return 0;

out_free:
	free((void *)c.is_samples);
	free(c.stop_by_func);
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

	if (h->dwarf)
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
	struct nw_stacks_opts o = { .per_thread = true };
	struct nw_stacks *s = nw_stacks_new(m, m->nmetrics);
	struct nw_health *h = NULL;
	int ret = s ? nw_stacks_build(s, &o) : -ENOMEM;

	if (!ret)
		ret = nw_health_classify(s, &h);
	if (ret) {
		snprintf(line, len, "%s: out of memory", dir);
		goto out;
	}
	if (!h->samples)
		snprintf(line, len, "stacks: no samples");
	else if (h->complete == h->samples)
		snprintf(line, len, "stacks: 100.0%% complete, 0.0%% truncated");
	else
		/* Rounded down, so that 100.0% means every sample. */
		snprintf(line, len,
			 "stacks: %.1f%% complete, %.1f%% truncated; run "
			 "narwhal-report --stack-health %s for where unwinding stops",
			 (double)(uint64_t)(10 * pct(h->complete, h->samples)) / 10,
			 pct(h->truncated, h->samples), dir);
out:
	nw_health_free(h);
	nw_stacks_free(s);
	return ret;
}
