/* SPDX-License-Identifier: MIT */
/* Annotated disassembly from the code store; see disasm.h and doc/DISASSEMBLY.md. */
#include "report/disasm.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/names.h"
#include "util/strbuf.h"

/* ---- finding the functions ---- */

static const struct nw_symentry *entry_at(const struct nw_measurement *m, uint32_t module,
					  uint64_t addr)
{
	return nw_symtab_lookup(m->symtab, module, addr);
}

/* The function that holds the code of a sampled address: its outermost frame. */
static const char *holder_of(const struct nw_symentry *e)
{
	return e && e->nframes ? e->frames[e->nframes - 1].function : NULL;
}

/* The name of stored function @fn, from any sampled address inside it; NULL. */
static const char *code_name(const struct nw_measurement *m, const struct nw_code_func *fn)
{
	const struct nw_symtab *t = m->symtab;
	size_t lo = 0, hi = t->nentries;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct nw_symentry *e = &t->entries[mid];

		if (e->module < fn->module || (e->module == fn->module && e->addr < fn->start))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->nentries; lo++) {
		const struct nw_symentry *e = &t->entries[lo];

		if (e->module != fn->module || e->addr - fn->start >= (fn->size ? fn->size : 1))
			return NULL;
		if (e->nframes)
			return holder_of(e);
	}
	return NULL;
}

/* Sorting context: the code record of each row (by its index in the rows). */
struct row_sort {
	const struct nw_addr_weight *rows;
	const struct nw_code_func **code;
};

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct row_sort *rs = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct nw_addr_weight *x = &rs->rows[i], *y = &rs->rows[j];
	const struct nw_code_func *cx = rs->code[i], *cy = rs->code[j];
	int r = strcmp(x->func, y->func);

	if (r)
		return r;
	if (cx != cy) {
		/* Rows with code first, by the code's place. */
		if (!cx || !cy)
			return cx ? -1 : 1;
		if (cx->module != cy->module)
			return cx->module < cy->module ? -1 : 1;
		return cx->start < cy->start ? -1 : 1;
	}
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int func_cmp(const void *a, const void *b)
{
	const struct nw_asm_func *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int add_inlined(struct nw_annotation *a, const char *func, const char *into)
{
	for (size_t i = 0; i < a->ninlined; i++)
		if (!strcmp(a->inlined[i].func, func) && !strcmp(a->inlined[i].into, into))
			return 0;
	if (nw_grow(&a->inlined, &a->cap_inlined, a->ninlined + 1, sizeof(*a->inlined)))
		return -ENOMEM;
	a->inlined[a->ninlined++] = (struct nw_asm_inlined){ func, into };
	return 0;
}

void nw_annotation_free(struct nw_annotation *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfuncs; i++) {
		for (size_t k = 0; k < a->funcs[i].nparts; k++)
			free(a->funcs[i].parts[k].insns);
		free(a->funcs[i].parts);
	}
	free(a->funcs);
	free(a->inlined);
	free(a->rows);
	nw_addr_weights_fini(&a->w);
	nw_disasm_free(a->dec[0]);
	nw_disasm_free(a->dec[1]);
	free(a);
}

/* The function of rows [first, first + n) (all of one name, sorted by row_cmp()). */
static int add_func(struct nw_annotation *a, const struct nw_code_func **code, size_t first,
		    size_t n)
{
	const struct nw_addr_weight *rows = a->rows + first;
	const struct nw_symentry *e = entry_at(a->m, rows[0].module, rows[0].addr);
	const struct nw_symframe *fr = e && e->nframes ? &e->frames[e->nframes - 1] : NULL;
	struct nw_asm_func *fn;
	size_t cap = 0;

	if (nw_grow(&a->funcs, &a->cap_funcs, a->nfuncs + 1, sizeof(*a->funcs)))
		return -ENOMEM;
	fn = &a->funcs[a->nfuncs++];
	memset(fn, 0, sizeof(*fn));
	fn->name = rows[0].func;
	fn->module = rows[0].module;
	if (fr) {
		fn->decl_file = fr->decl_file ? fr->decl_file : fr->file;
		fn->decl_line = fr->decl_file ? fr->decl_line : fr->line;
	}
	for (size_t i = 0; i < a->w.nfns; i++)
		if (!strcmp(a->w.fns[i].name, fn->name))
			fn->total = a->w.fns[i].total;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		struct nw_asm_part *p;

		while (j < n && code[first + j] == code[first + i] &&
		       (code[first + i] || rows[j].module == rows[i].module))
			j++;
		if (nw_grow(&fn->parts, &cap, fn->nparts + 1, sizeof(*fn->parts)))
			return -ENOMEM;
		p = &fn->parts[fn->nparts++];
		memset(p, 0, sizeof(*p));
		p->code = code[first + i];
		p->module = rows[i].module;
		p->rows = rows + i;
		p->nrows = j - i;
		for (size_t k = i; k < j; k++)
			p->self += rows[k].self;
		fn->self += p->self;
		i = j;
	}
	return 0;
}

int nw_annotate(const struct nw_measurement *m, const struct nw_filter *f, const regex_t *func,
		unsigned metric, struct nw_annotation **ret)
{
	struct nw_annotation *a;
	const struct nw_code_func **code = NULL;
	uint32_t *order = NULL;
	size_t n = 0;
	int rc;

	if (metric >= m->nmetrics)
		return -EINVAL;
	if (!m->code)
		return -ENODATA;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->m = m;
	rc = nw_lines_addresses(m, f, func, metric, &a->w);
	if (rc)
		goto out;
	a->whole = a->w.whole;
	rc = -ENOMEM;
	a->rows = malloc((a->w.n ? a->w.n : 1) * sizeof(*a->rows));
	code = malloc((a->w.n ? a->w.n : 1) * sizeof(*code));
	order = malloc((a->w.n ? a->w.n : 1) * sizeof(*order));
	if (!a->rows || !code || !order)
		goto out;
	/* The rows of the functions that hold their code; the others were inlined there. */
	for (size_t i = 0; i < a->w.n; i++) {
		const struct nw_addr_weight *w = &a->w.v[i];
		const char *holder = holder_of(entry_at(m, w->module, w->addr));

		if (!holder)
			continue;
		if (strcmp(holder, w->func)) {
			if (add_inlined(a, w->func, holder))
				goto out;
			continue;
		}
		/* By the row's own index: row_cmp() looks it up so. */
		code[i] = nw_codestore_find(m->code, w->module, w->addr);
		order[n] = (uint32_t)i;
		n++;
	}
	qsort_r(order, n, sizeof(*order), row_cmp,
		&(struct row_sort){ .rows = a->w.v, .code = code });
	{
		/* The rows in that order, and their code beside them. */
		const struct nw_code_func **sorted = malloc((n ? n : 1) * sizeof(*sorted));

		if (!sorted)
			goto out;
		for (size_t k = 0; k < n; k++) {
			a->rows[k] = a->w.v[order[k]];
			sorted[k] = code[order[k]];
		}
		free(code);
		code = sorted;
	}
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;

		while (j < n && !strcmp(a->rows[j].func, a->rows[i].func))
			j++;
		if (add_func(a, code, i, j - i))
			goto out;
		i = j;
	}
	if (!a->nfuncs && !a->ninlined) {
		rc = -ENOENT;
		goto out;
	}
	if (a->nfuncs > 1)
		qsort(a->funcs, a->nfuncs, sizeof(*a->funcs), func_cmp);
	rc = 0;
out:
	free(code);
	free(order);
	if (rc) {
		nw_annotation_free(a);
		return rc;
	}
	*ret = a;
	return 0;
}

/* ---- decoding a part ---- */

static struct nw_disasm *decoder(struct nw_annotation *a, uint16_t machine)
{
	int k = machine == EM_AARCH64 ? 1 : 0;

	if (!nw_disasm_supported(machine))
		return NULL;
	if (!a->dec[k] && nw_disasm_open(machine, &a->dec[k]))
		return NULL;
	return a->dec[k];
}

/* The innermost inlined range of @fn at each byte of its stored code (-1: none). */
static int32_t *inline_map(const struct nw_code_func *fn)
{
	int32_t *v = malloc((fn->nbytes ? fn->nbytes : 1) * sizeof(*v));
	uint32_t maxd = 0;

	if (!v)
		return NULL;
	for (uint32_t i = 0; i < fn->nbytes; i++)
		v[i] = -1;
	for (uint32_t k = 0; k < fn->ninlines; k++)
		maxd = fn->inlines[k].depth > maxd ? fn->inlines[k].depth : maxd;
	/* Depth by depth: the deeper range paints over the one it is nested in. */
	for (uint32_t d = 1; d <= maxd && d <= 1024; d++)
		for (uint32_t k = 0; k < fn->ninlines; k++) {
			const struct nw_code_inline *in = &fn->inlines[k];

			if (in->depth != d)
				continue;
			for (uint32_t b = in->lo; b < in->hi && b < fn->nbytes; b++)
				v[b] = (int32_t)k;
		}
	return v;
}

/* Where @ai's direct branch goes: inside the function, or the stored function named there. */
static void set_target(const struct nw_annotation *a, const struct nw_code_func *fn,
		       struct nw_asm_insn *ai)
{
	const struct nw_insn *in = &ai->in;
	const struct nw_code_func *t;

	if (!in->has_target)
		return;
	if (in->target >= fn->start && in->target - fn->start < fn->size) {
		ai->target_inside = true;
		ai->target_off = in->target - fn->start;
		return;
	}
	t = nw_codestore_find(a->m->code, fn->module, in->target);
	ai->target_name = t ? code_name(a->m, t) : NULL;
	if (ai->target_name)
		ai->target_off = in->target - t->start;
}

int nw_annotate_decode(struct nw_annotation *a, struct nw_asm_part *p)
{
	const struct nw_code_func *fn = p->code;
	const struct nw_codestore *cs = a->m->code;
	struct nw_disasm *d;
	int32_t *inl;
	size_t cap = 0;

	if (p->decoded)
		return 0;
	if (!fn || fn->status != NW_CODE_STORED || !fn->nbytes) {
		p->decoded = true;
		return 0;
	}
	d = decoder(a, fn->machine);
	if (!d) {
		p->decoded = p->no_decoder = true;
		return 0;
	}
	for (uint64_t off = 0; off < fn->nbytes;) {
		struct nw_asm_insn *ai;

		if (nw_grow(&p->insns, &cap, p->ninsns + 1, sizeof(*p->insns)))
			return -ENOMEM;
		ai = &p->insns[p->ninsns];
		memset(ai, 0, sizeof(*ai));
		nw_disasm_one(d, fn->bytes + off, fn->nbytes - off, fn->start + off, &ai->in);
		if (!ai->in.size)
			break;
		off += ai->in.size;
		p->ninsns++;
	}
	inl = inline_map(fn);
	if (!inl)
		return -ENOMEM;
	/* The rows, by address, onto the instructions that hold them. */
	for (size_t i = 0, k = 0; i < p->nrows && p->ninsns; i++) {
		const struct nw_addr_weight *w = &p->rows[i];

		if (w->addr - fn->start >= fn->nbytes)
			continue; /* past the stored bytes */
		while (k + 1 < p->ninsns && p->insns[k + 1].in.addr <= w->addr)
			k++;
		p->insns[k].self += w->self;
		p->insns[k].total += w->total;
		if (!w->ret && w->addr != p->insns[k].in.addr)
			p->insns[k].odd = true;
	}
	for (size_t k = 0; k < p->ninsns; k++) {
		struct nw_asm_insn *ai = &p->insns[k];
		const struct nw_code_line *l = nw_code_line_at(fn, ai->in.addr - fn->start);

		ai->inl = inl[ai->in.addr - fn->start];
		if (l && l->line) {
			ai->file = l->file != NW_CODE_NONE ? cs->strings[l->file] : NULL;
			ai->line = l->line;
		}
		set_target(a, fn, ai);
		if (ai->in.kind == NW_INSN_JUMP && ai->target_inside) {
			/* The instruction it lands on. */
			size_t lo = 0, hi = p->ninsns;

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (p->insns[mid].in.addr < ai->in.target)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < p->ninsns && p->insns[lo].in.addr == ai->in.target)
				p->insns[lo].landing = true;
		}
	}
	free(inl);
	p->decoded = true;
	return 0;
}

/* ---- the text view ---- */

struct view {
	struct nw_annotation *a;
	const struct nw_disasm_opts *o;
	FILE *out;
	struct { char *path; struct nw_source src; bool ok; } *srcs;
	size_t nsrcs, cap_srcs;
};

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static const char *display(const struct view *v, const char *name, char *buf, size_t len)
{
	return v->o->full_names ? name : nw_short_name(name, buf, len);
}

static const struct nw_source *source_of(struct view *v, const char *path)
{
	for (size_t i = 0; i < v->nsrcs; i++)
		if (!strcmp(v->srcs[i].path, path))
			return v->srcs[i].ok ? &v->srcs[i].src : NULL;
	if (nw_grow(&v->srcs, &v->cap_srcs, v->nsrcs + 1, sizeof(*v->srcs)))
		return NULL;
	v->srcs[v->nsrcs].path = strdup(path);
	if (!v->srcs[v->nsrcs].path)
		return NULL;
	v->srcs[v->nsrcs].ok = nw_source_read(&v->srcs[v->nsrcs].src, path);
	v->nsrcs++;
	return v->srcs[v->nsrcs - 1].ok ? &v->srcs[v->nsrcs - 1].src : NULL;
}

static const char *machine_name(uint16_t machine)
{
	return machine == EM_X86_64 ? "x86-64" : machine == EM_AARCH64 ? "aarch64" : "unknown";
}

static const char *module_name(const struct view *v, uint32_t module)
{
	return nw_basename(v->a->m->modules->v[module].path);
}

static int insn_self_cmp(const void *a, const void *b)
{
	const struct nw_asm_insn *x = *(const struct nw_asm_insn *const *)a;
	const struct nw_asm_insn *y = *(const struct nw_asm_insn *const *)b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->in.addr < y->in.addr ? -1 : x->in.addr > y->in.addr;
}

/* "-- inlined: a > b --": the functions inlined at byte @offset of @fn, outermost first. */
static void print_chain(struct view *v, const struct nw_code_func *fn, uint64_t offset)
{
	char name[512];
	uint32_t depth = 0;

	fprintf(v->out, "%19s-- inlined:", "");
	for (;;) {
		const struct nw_code_inline *next = NULL;

		/* The range of the next depth that holds the offset. */
		for (uint32_t k = 0; k < fn->ninlines && !next; k++)
			if (fn->inlines[k].depth == depth + 1 && fn->inlines[k].lo <= offset &&
			    offset < fn->inlines[k].hi)
				next = &fn->inlines[k];
		if (!next)
			break;
		fprintf(v->out, "%s %s", depth ? " >" : "",
			display(v, v->a->m->code->strings[next->name], name, sizeof(name)));
		depth++;
	}
	fputs(" --\n", v->out);
}

/* The text of @ai's target: " <name+0xoff> ^" (an arrow for a jump inside the function). */
static void target_text(const struct view *v, const char *func, const struct nw_asm_insn *ai,
			char *buf, size_t len)
{
	char name[512];

	buf[0] = 0;
	if (ai->target_inside)
		snprintf(buf, len, " <%s+0x%llx> %s", display(v, func, name, sizeof(name)),
			 (unsigned long long)ai->target_off,
			 ai->in.kind == NW_INSN_CALL	? ""
			 : ai->in.target <= ai->in.addr ? "^"
							: "v");
	else if (ai->target_name && !ai->target_off)
		snprintf(buf, len, " <%s>", display(v, ai->target_name, name, sizeof(name)));
	else if (ai->target_name)
		snprintf(buf, len, " <%s+0x%llx>", display(v, ai->target_name, name, sizeof(name)),
			 (unsigned long long)ai->target_off);
}

static int print_insns(struct view *v, const char *func, const struct nw_asm_part *p)
{
	const struct nw_code_func *fn = p->code;
	const struct nw_asm_insn **sorted = malloc((p->ninsns ? p->ninsns : 1) * sizeof(*sorted));
	const char *mod = module_name(v, fn->module), *last_file = NULL;
	uint64_t whole = v->a->whole;
	uint32_t last_line = 0;
	int32_t last_inl = -1;

	if (!sorted)
		return -ENOMEM;
	for (size_t k = 0; k < p->ninsns; k++)
		sorted[k] = &p->insns[k];
	if (v->o->sort)
		qsort(sorted, p->ninsns, sizeof(*sorted), insn_self_cmp);
	fprintf(v->out, "\n%7s  %7s   %-24s   %-44s  %s\n", "SELF%", "TOTAL%", "ADDRESS",
		"INSTRUCTION", "LINE");
	for (size_t k = 0; k < p->ninsns; k++) {
		const struct nw_asm_insn *ai = sorted[k];
		char addr[96], tgt[600], text[800], line[300], name[512];

		if (!v->o->sort && ai->inl != last_inl) {
			if (ai->inl >= 0)
				print_chain(v, fn, ai->in.addr - fn->start);
			else
				fprintf(v->out, "%19s-- %s --\n", "",
					display(v, func, name, sizeof(name)));
			last_inl = ai->inl;
		}
		if (!v->o->sort && v->o->source && ai->file && ai->line &&
		    (ai->line != last_line || !last_file || strcmp(ai->file, last_file))) {
			const struct nw_source *src = source_of(v, ai->file);

			if (src && ai->line <= src->n)
				fprintf(v->out, "%19s%s:%u  %s\n", "", nw_basename(ai->file),
					ai->line, src->line[ai->line]);
			last_file = ai->file;
			last_line = ai->line;
		}
		snprintf(addr, sizeof(addr), "%s+0x%llx", mod, (unsigned long long)ai->in.addr);
		target_text(v, func, ai, tgt, sizeof(tgt));
		snprintf(text, sizeof(text), "%s%s", ai->in.text, tgt);
		line[0] = 0;
		if (ai->line)
			snprintf(line, sizeof(line), "%s:%u",
				 ai->file ? nw_basename(ai->file) : "??", ai->line);
		if (ai->inl >= 0) {
			size_t at = strlen(line);

			snprintf(line + at, sizeof(line) - at, "%s[%s]", at ? " " : "",
				 display(v, v->a->m->code->strings[fn->inlines[ai->inl].name],
					 name, sizeof(name)));
		}
		if (ai->self || ai->total)
			fprintf(v->out, "%6.1f%%  %6.1f%%  ", pct(ai->self, whole),
				pct(ai->total, whole));
		else
			fprintf(v->out, "%7s  %7s  ", "", "");
		fprintf(v->out, "%c%-24s %c %-44s  %s\n", ai->landing ? '>' : ' ', addr,
			ai->odd ? '?' : ' ', text, line);
	}
	free(sorted);
	/* Samples the stored bytes do not reach (a function cut by --code-cap). */
	for (size_t r = 0; r < p->nrows; r++) {
		const struct nw_addr_weight *w = &p->rows[r];

		if (w->addr - fn->start < fn->nbytes)
			continue;
		fprintf(v->out, "%6.1f%%  %6.1f%%   %s+0x%-18llx   (past the stored bytes)\n",
			pct(w->self, whole), pct(w->total, whole), mod,
			(unsigned long long)(w->addr + w->ret));
	}
	return 0;
}

/* Rows no stored code holds: as --addresses prints them. */
static void print_rows(struct view *v, const struct nw_asm_part *p)
{
	fputs("\n  SELF%  TOTAL%   ADDRESS\n", v->out);
	for (size_t i = 0; i < p->nrows; i++) {
		const struct nw_addr_weight *w = &p->rows[i];

		fprintf(v->out, "%6.1f%%  %6.1f%%   %s+0x%llx\n", pct(w->self, v->a->whole),
			pct(w->total, v->a->whole), module_name(v, w->module),
			(unsigned long long)(w->addr + w->ret));
	}
}

/* Why the measurement holds no code for module @module's sampled code (a note), or NULL. */
static const char *note_of(const struct nw_codestore *cs, uint32_t module)
{
	for (uint32_t i = 0; cs && i < cs->nnotes; i++)
		if (cs->notes[i].module == module)
			return nw_code_reason_name(cs->notes[i].reason);
	return NULL;
}

static int print_part(struct view *v, const char *func, struct nw_asm_part *p)
{
	const struct nw_code_func *fn = p->code;
	int ret;

	if (!fn) {
		const char *why = note_of(v->a->m->code, p->module);

		fprintf(v->out, "\nCode: not in the measurement (%s)\n",
			why ? why : "not found when recording");
		print_rows(v, p);
		return 0;
	}
	fprintf(v->out, "\nCode: %s+0x%llx, %llu bytes", module_name(v, fn->module),
		(unsigned long long)fn->start, (unsigned long long)fn->size);
	if (fn->status != NW_CODE_STORED) {
		fprintf(v->out, ", not stored (%s)\n", nw_code_status_name(fn->status));
		print_rows(v, p);
		return 0;
	}
	if (fn->nbytes < fn->size)
		fprintf(v->out,
			", the first %u stored (cut at the per-function cap: narwhal-record "
			"--code-cap)",
			fn->nbytes);
	else
		fputs(", stored whole", v->out);
	fprintf(v->out, " (%s%s); self here %.1f%%\n", machine_name(fn->machine),
		fn->origin == NW_CODE_KCORE ? ", from /proc/kcore"
		: fn->origin == NW_CODE_PROCESS ? ", JIT code read from the process"
						: "",
		pct(p->self, v->a->whole));
	ret = nw_annotate_decode(v->a, p);
	if (ret)
		return ret;
	if (p->no_decoder) {
		fprintf(v->out, "  (no decoder for ELF machine %u: the bytes are stored)\n",
			fn->machine);
		return 0;
	}
	return print_insns(v, func, p);
}

static int print_function(struct view *v, struct nw_asm_func *fn)
{
	char name[1024];
	uint64_t whole = v->a->whole;
	int ret = 0;

	fprintf(v->out, "Function: %s", display(v, fn->name, name, sizeof(name)));
	if (fn->decl_file)
		fprintf(v->out, " (%s:%u)", nw_basename(fn->decl_file), fn->decl_line);
	fprintf(v->out, " in %s\n", module_name(v, fn->module));
	fprintf(v->out, "Self: %5.1f%% (%llu)   Total: %5.1f%% (%llu)\n", pct(fn->self, whole),
		(unsigned long long)fn->self, pct(fn->total, whole), (unsigned long long)fn->total);
	for (size_t i = 0; i < fn->nparts && !ret; i++)
		ret = print_part(v, fn->name, &fn->parts[i]);
	fputc('\n', v->out);
	return ret;
}

int nw_view_disasm(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
		   const struct nw_disasm_opts *o)
{
	struct view v = { .o = o, .out = out };
	int ret = nw_annotate(m, f, o->func, o->metric, &v.a);

	if (ret)
		return ret;
	for (size_t i = 0; i < v.a->nfuncs && !ret; i++)
		ret = print_function(&v, &v.a->funcs[i]);
	for (size_t i = 0; i < v.a->ninlined && !ret; i++) {
		char a[512], b[512];

		fprintf(out, "%s: inlined into %s, whose code holds it (--disasm that function)\n",
			display(&v, v.a->inlined[i].func, a, sizeof(a)),
			display(&v, v.a->inlined[i].into, b, sizeof(b)));
	}
	if (!ret && (fflush(out) != 0 || ferror(out)))
		ret = -EIO;
	for (size_t i = 0; i < v.nsrcs; i++) {
		free(v.srcs[i].path);
		if (v.srcs[i].ok)
			nw_source_fini(&v.srcs[i].src);
	}
	free(v.srcs);
	nw_annotation_free(v.a);
	return ret;
}
