/* SPDX-License-Identifier: MIT */
/*
 * Stack health: classifies each sample of the per-thread symbolic trees as
 * complete, truncated or stopped (see health.h), groups the stopped ones by
 * the module of their outermost frame, and says what would unwind further.
 * Whether a module has CFI (dwarf mode's remedy) is read from its ELF
 * section headers: .eh_frame or .debug_frame with contents.
 */
#include "report/health.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* 1 when the ELF file at @path has CFI, 0 when not, -1 when it cannot be read. */
static int module_has_cfi(const char *path)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, ret = -1;
	Elf *elf;

	if (!path || path[0] != '/' || elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) != 0)
		goto out;
	ret = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".debug_frame"))) {
			ret = 1;
			break;
		}
	}
out:
	elf_end(elf);
	close(fd);
	return ret;
}

/* Which metrics count samples: those named "...:samples", else metric 0. */
static bool *samples_metrics(const struct nw_profile *p)
{
	bool *v = calloc(p->nmetrics ? p->nmetrics : 1, sizeof(*v)), any = false;

	if (!v)
		return NULL;
	for (unsigned i = 0; i < p->nmetrics; i++) {
		const char *name = p->metric_names ? p->metric_names[i] : NULL;
		const char *c = name ? strrchr(name, ':') : NULL;

		v[i] = c && strcmp(c + 1, "samples") == 0;
		any |= v[i];
	}
	if (!any && p->nmetrics)
		v[0] = true;
	return v;
}

struct classify_ctx {
	const struct nw_profile *p;
	const bool *is_samples;
	struct nw_health *h;
	uint64_t *stop_by_func; /* nfuncs + 1: the last one for paths without a known frame */
};

static int classify_tree(struct classify_ctx *c, const struct nw_cct *t)
{
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint32_t *outer = malloc((size_t)t->n * sizeof(*outer));
	uint32_t *depth = malloc((size_t)t->n * sizeof(*depth));
	const struct nw_profile *p = c->p;
	uint32_t n;
	int ret = 0;

	if (!order || !outer || !depth) {
		ret = -ENOMEM;
		goto out;
	}
	n = nw_cct_preorder(t, order);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = order[k];
		const struct nw_cct_node *sn = &t->nodes[s];
		uint64_t w = 0, f;

		if (s == NW_CCT_ROOT) {
			outer[s] = NW_CCT_NONE;
			depth[s] = 0;
		} else {
			const struct nw_cct_node *pn = &t->nodes[sn->parent];
			/* One physical frame per run of equal, known sp tags. */
			bool same_frame = sn->parent != NW_CCT_ROOT && sn->sp && sn->sp == pn->sp;

			outer[s] = sn->parent == NW_CCT_ROOT ? s : outer[sn->parent];
			depth[s] = depth[sn->parent] + !same_frame;
		}
		for (unsigned m = 0; m < t->nmetrics && m < p->nmetrics; m++)
			if (c->is_samples[m])
				w += nw_cct_metrics(t, s)[m];
		if (!w)
			continue;
		c->h->samples += w;
		f = outer[s] == NW_CCT_NONE ? p->nfuncs : t->nodes[outer[s]].ip;
		if (f > p->nfuncs)
			f = p->nfuncs;
		if (f < p->nfuncs && nw_health_is_entry(p->funcs[f].name))
			c->h->complete += w;
		else if (depth[s] >= c->h->max_stack)
			c->h->truncated += w;
		else
			c->stop_by_func[f] += w;
	}
out:
	free(order);
	free(outer);
	free(depth);
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
	const struct nw_profile *p = c->p;
	struct nw_health *h = c->h;
	int failed = 0;

	for (uint32_t f = 0; f <= p->nfuncs; f++) {
		uint64_t w = c->stop_by_func[f];
		const char *module = f < p->nfuncs ? p->funcs[f].module : NULL;
		const char *name = f < p->nfuncs ? p->funcs[f].name : "[no frame]";
		struct nw_health_stop *s = NULL;

		if (!w)
			continue;
		h->stopped += w;
		for (uint32_t i = 0; i < h->nstops && !s; i++)
			if (str_eq(h->stops[i].module, module))
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
			s->system = is_system_module(module);
			s->cfi = h->dwarf ? module_has_cfi(module) : -1;
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

int nw_health_classify(const struct nw_profile *p, const struct nw_filter *f,
		       struct nw_health **ret)
{
	const struct nw_manifest *m = p->manifest;
	struct classify_ctx c = {.p = p};
	struct nw_health *h = calloc(1, sizeof(*h));
	int err = -ENOMEM;

	if (!h)
		return -ENOMEM;
	h->dwarf = m && m->call_graph && strcmp(m->call_graph, "dwarf") == 0;
	h->stack_size = m ? m->stack_size : 0;
	h->max_stack = m && m->max_stack ? m->max_stack
		       : h->dwarf	 ? NW_HEALTH_DWARF_MAX_STACK
					 : NW_HEALTH_FP_MAX_STACK;
	c.h = h;
	c.is_samples = samples_metrics(p);
	c.stop_by_func = calloc((size_t)p->nfuncs + 1, sizeof(*c.stop_by_func));
	if (!c.is_samples || !c.stop_by_func)
		goto out_free;
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct nw_prof_thread *th = &p->threads[i];

		if (!th->tree || !nw_filter_match(f, th))
			continue;
		err = classify_tree(&c, th->tree);
		if (err)
			goto out_free;
	}
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

	if (!h->dwarf) {
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
	} else if (!s->module || s->cfi == 0) {
		snprintf(buf, len,
			 "%s has no CFI: build with -fno-omit-frame-pointer and record "
			 "with --call-graph fp",
			 s->module ? "the module" : "code outside any module");
	} else if (h->stack_size >= MAX_STACK_COPY) {
		snprintf(buf, len,
			 "the stack copy (%u bytes) ran out and is at its maximum: "
			 "build with -fno-omit-frame-pointer and record with "
			 "--call-graph fp",
			 h->stack_size);
	} else {
		snprintf(buf, len,
			 "raise the stack copy (unwinding stops where it ends): "
			 "--call-graph dwarf,%u",
			 size < 8 ? 8 : size);
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

			fprintf(out, "%8llu  %5.1f%%  %s (%s)\n", (unsigned long long)s->samples,
				pct(s->samples, h->samples), s->module ? s->module : "[unknown]",
				s->func ? s->func : "");
			fprintf(out, "%18sremedy: %s\n", "",
				nw_health_remedy(h, s, remedy, sizeof(remedy)));
		}
	}
	if (fflush(out) != 0 || ferror(out))
		return -EIO;
	return 0;
}

int nw_health_summary(const char *dir, char *line, size_t len)
{
	struct nw_profile *p = NULL;
	struct nw_health *h = NULL;
	int ret;

	ret = nw_profile_load(dir, &p, line, len);
	if (ret)
		return ret;
	ret = nw_health_classify(p, NULL, &h);
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
	nw_profile_free(p);
	return ret;
}
