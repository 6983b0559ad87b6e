/* SPDX-License-Identifier: MIT */
/*
 * Lines and addresses of a function (see lines.h).  Each distinct sampled
 * place (model/places.h) is resolved once into the rows it adds to: for every
 * frame of its inline chain that is a matching function, that function's
 * own line (or address) and the lines of the callees inlined into it
 * there.  Then each node with weight walks up its path once, adding to
 * the rows of every frame on it; a row counts a sample once.
 */
#include "report/lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/places.h"
#include "report/names.h"
#include "util/hash.h"
#include "util/strbuf.h"

struct row {
	const char *func;       /* the function asked about (the symbol table's string) */
	const char *callee;     /* an inlined callee, NULL for the function's own line */
	const char *file;       /* NULL when unknown */
	uint32_t line;
	uint32_t module;        /* --addresses: the module and address */
	uint64_t addr;          /* looked up: a return address - 1 where ret */
	bool ret;               /* --addresses: reached as a return address (not part of the key) */
	uint32_t fn;            /* index in ctx.fns (not part of the key) */
	uint64_t self, total, stamp;
};

/* What a frame of a chain adds to: a row, and whether a leaf there is self weight. */
struct hit {
	uint32_t row;
	bool self;
};

/* What a place adds to. */
struct chain {
	uint32_t first, n;      /* in hits; n UINT32_MAX: not made yet */
};

struct fn_info {
	const char *name, *decl_file, *module_path;
	uint32_t decl_line;
	uint64_t self, total, stamp;
};

struct ctx {
	const struct nw_measurement *m;
	const struct nw_lines_opts *o;
	struct row *rows;
	size_t nrows, cap_rows;
	struct nw_index row_ix;
	struct chain *chains;   /* per place of the model */
	size_t nchains, cap_chains;
	struct nw_place_cache recent;
	struct hit *hits;
	size_t nhits, cap_hits;
	struct fn_info *fns;
	size_t nfns, cap_fns;
	uint64_t sample;        /* stamp of the sample being added */
	uint64_t whole;         /* everything the threads weigh */
};

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

static uint64_t row_key_hash(const struct row *r)
{
	uint64_t h = nw_hash_str(nw_hash_str(nw_hash_str(NW_HASH_SEED, r->func), r->callee),
				 r->file);

	return nw_hash_add(nw_hash_add(nw_hash_add(h, r->line), r->module), r->addr);
}

static uint64_t row_hash(const void *ctx, uint32_t i)
{
	return row_key_hash(&((const struct ctx *)ctx)->rows[i]);
}

static bool row_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct row *a = &((const struct ctx *)ctx)->rows[i], *b = key;

	return a->line == b->line && a->module == b->module && a->addr == b->addr &&
	       str_eq(a->func, b->func) && str_eq(a->callee, b->callee) &&
	       str_eq(a->file, b->file);
}

/* The row of @key, added when new; -ENOMEM. */
static int64_t row_of(struct ctx *c, const struct row *key)
{
	uint32_t *slot = nw_index_slot(&c->row_ix, row_key_hash(key), row_eq, row_hash, c, key);

	if (!slot || nw_grow(&c->rows, &c->cap_rows, c->nrows + 1, sizeof(*c->rows)))
		return -ENOMEM;
	if (*slot != NW_INDEX_NONE)
		return *slot;
	c->rows[c->nrows] = *key;
	c->rows[c->nrows].stamp = UINT64_MAX;
	nw_index_fill(&c->row_ix, slot, (uint32_t)c->nrows);
	return (int64_t)c->nrows++;
}

/* The index of the function @fr asked about, noted with where it is declared; -ENOMEM. */
static int fn_of(struct ctx *c, const struct nw_symframe *fr, const char *module)
{
	for (size_t i = 0; i < c->nfns; i++) {
		struct fn_info *fn = &c->fns[i];

		if (strcmp(fn->name, fr->function))
			continue;
		/* An address without line information came first: the declaration from this one. */
		if (!fn->decl_file && (fr->decl_file || fr->file)) {
			fn->decl_file = fr->decl_file ? fr->decl_file : fr->file;
			fn->decl_line = fr->decl_line;
		}
		return (int)i;
	}
	if (nw_grow(&c->fns, &c->cap_fns, c->nfns + 1, sizeof(*c->fns)))
		return -ENOMEM;
	c->fns[c->nfns] = (struct fn_info){ .name = fr->function,
					    .decl_file = fr->decl_file ? fr->decl_file : fr->file,
					    .decl_line = fr->decl_line, .module_path = module,
					    .stamp = UINT64_MAX };
	return (int)c->nfns++;
}

static int add_hit(struct ctx *c, const struct row *key, bool self)
{
	int64_t r = row_of(c, key);

	if (r < 0 || nw_grow(&c->hits, &c->cap_hits, c->nhits + 1, sizeof(*c->hits)))
		return -ENOMEM;
	c->hits[c->nhits++] = (struct hit){ (uint32_t)r, self };
	return 0;
}

/* The rows of one resolved address. */
static int chain_hits(struct ctx *c, const struct nw_resolved *r)
{
	const struct nw_symentry *e = r->sym;
	int ret = 0;

	for (uint32_t k = 0; e && k < e->nframes && !ret; k++) {
		const struct nw_symframe *fr = &e->frames[k];

		int fn;

		if (!fr->function || regexec(c->o->func, fr->function, 0, NULL, 0))
			continue;
		fn = fn_of(c, fr, r->module->path);
		if (fn < 0) {
			ret = fn;
			break;
		}
		if (c->o->addresses) {
			struct row key = { .func = fr->function, .module = r->module_index,
					   .addr = r->addr, .ret = r->caller, .fn = (uint32_t)fn };

			/* The instruction is the function's, at any depth of inlining. */
			ret = add_hit(c, &key, true);
			continue;
		}
		{
			struct row key = { .func = fr->function, .file = fr->file, .line = fr->line,
					   .fn = (uint32_t)fn };

			ret = add_hit(c, &key, k == 0);
		}
		/* The callees inlined into it here, at their own lines. */
		for (uint32_t j = 0; j < k && !ret; j++) {
			struct row key = { .func = fr->function, .callee = e->frames[j].function,
					   .file = e->frames[j].file, .line = e->frames[j].line,
					   .fn = (uint32_t)fn };

			ret = add_hit(c, &key, j == 0);
		}
	}
	return ret;
}

/*
 * Place @id of node @node of tree @tr, its chain made at its first node:
 * @id, or UINT32_MAX where it adds to no row; -ENOMEM.
 */
static int64_t chain_of(struct ctx *c, const struct nw_tree *tr, uint32_t node, uint32_t id)
{
	const struct nw_place *pl = &c->m->places->v[id];
	struct nw_resolved r;
	struct chain *ch;
	uint32_t first;

	if (nw_grow_fill(&c->chains, &c->nchains, &c->cap_chains, id, sizeof(*c->chains), 0xff))
		return -ENOMEM;
	if (pl->module != NW_PLACE_NO_MODULE && c->chains[id].n == UINT32_MAX) {
		nw_place_resolved(c->m, pl, nw_cct_is_return(tr->cct, node), &r);
		first = (uint32_t)c->nhits;
		if (chain_hits(c, &r))
			return -ENOMEM;
		c->chains[id] = (struct chain){ first, (uint32_t)(c->nhits - first) };
	}
	ch = &c->chains[id];
	return ch->n && ch->n != UINT32_MAX ? id : UINT32_MAX;
}

static void add_row(struct ctx *c, uint32_t row, bool self, uint64_t w)
{
	struct row *r = &c->rows[row];
	struct fn_info *fn = &c->fns[r->fn];

	if (r->stamp != c->sample) {
		r->stamp = c->sample;
		r->total += w;
	}
	if (self)
		r->self += w;
	/* The function's own totals: once per sample, self at its own line only. */
	if (fn->stamp != c->sample) {
		fn->stamp = c->sample;
		fn->total += w;
	}
	if (self && !r->callee)
		fn->self += w;
}

static int add_tree(struct ctx *c, const struct nw_tree *tr)
{
	const struct nw_cct *t = tr->cct;
	uint32_t *chain = malloc((size_t)t->n * sizeof(*chain));
	bool *has = calloc(t->n, sizeof(*has));
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	int ret = -ENOMEM;

	/* Each node's place, then in preorder its chain in place of it. */
	if (!chain || !has || !order ||
	    nw_places_resolve_tree(c->m->places, &c->recent, c->m, tr, chain, NULL))
		goto out;
	nw_cct_preorder(t, order);
	chain[NW_CCT_ROOT] = UINT32_MAX;
	for (uint32_t k = 1; k < t->n; k++) {
		uint32_t i = order[k];
		const struct nw_cct_node *nd = &t->nodes[i];
		int64_t ch = chain_of(c, tr, i, chain[i]);

		if (ch < 0)
			goto out;
		chain[i] = (uint32_t)ch;
		has[i] = has[nd->parent] || chain[i] != UINT32_MAX;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t w = nw_cct_metrics(t, i)[c->o->metric];

		c->whole += w;
		if (!w || !has[i])
			continue;
		c->sample++;
		for (uint32_t a = i; a != NW_CCT_ROOT; a = t->nodes[a].parent) {
			const struct chain *ch;

			if (chain[a] == UINT32_MAX)
				continue;
			ch = &c->chains[chain[a]];
			for (uint32_t h = 0; h < ch->n; h++)
				add_row(c, c->hits[ch->first + h].row,
					a == i && c->hits[ch->first + h].self, w);
		}
	}
	ret = 0;
out:
	free(chain);
	free(has);
	free(order);
	return ret;
}

/* ---- printing ---- */

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

void nw_source_fini(struct nw_source *s)
{
	free(s->text);
	free(s->line);
	memset(s, 0, sizeof(*s));
}

bool nw_source_read(struct nw_source *s, const char *path)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	size_t len = 0, cap = 0;
	char buf[65536];
	size_t r;

	memset(s, 0, sizeof(*s));
	if (!f)
		return false;
	while ((r = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (len + r > (64u << 20) || nw_grow(&s->text, &cap, len + r + 1, 1)) {
			fclose(f);
			nw_source_fini(s);
			return false;
		}
		memcpy(s->text + len, buf, r);
		len += r;
	}
	fclose(f);
	if (!s->text)
		return false;
	s->text[len] = '\0';
	cap = 0;
	for (char *p = s->text; p < s->text + len;) {
		char *nl = strchr(p, '\n');

		if (nw_grow(&s->line, &cap, (size_t)s->n + 2, sizeof(*s->line))) {
			nw_source_fini(s);
			return false;
		}
		s->line[++s->n] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return true;
}

struct sort_ctx {
	const struct ctx *c;
	bool by_weight;
};

static int cmp_rows(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *sc = arg;
	const struct row *x = &sc->c->rows[*(const uint32_t *)a];
	const struct row *y = &sc->c->rows[*(const uint32_t *)b];
	int r;

	if (sc->by_weight && x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (sc->by_weight && x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if ((r = strcmp(x->callee ? x->callee : "", y->callee ? y->callee : "")))
		return r;
	if ((r = strcmp(x->file ? x->file : "", y->file ? y->file : "")))
		return r;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static const char *display(const struct ctx *c, const char *name, char *buf, size_t len)
{
	return c->o->full_names ? name : nw_short_name(name, buf, len);
}

/* The own lines of @fn, with the source around them when it is readable. */
static void print_own_lines(FILE *out, const struct ctx *c, const struct fn_info *fn,
			    const uint32_t *rows, uint32_t n)
{
	unsigned ctx = c->o->context ? c->o->context : 2;
	struct nw_source src;
	uint32_t lo = UINT32_MAX, hi = 0;
	bool have;

	uint32_t nlines = 0;

	for (uint32_t k = 0; k < n; k++)
		nlines += c->rows[rows[k]].line != 0;
	if (n && !nlines) {
		fputs("No line information (a stripped module, or built without -g): see "
		      "--addresses\n",
		      out);
		return;
	}
	/* The function's own file: its rows in another file (a macro, an #include) come after. */
	have = !c->o->sort && nw_source_read(&src, fn->decl_file);
	for (uint32_t k = 0; k < n; k++) {
		const struct row *r = &c->rows[rows[k]];

		if (!r->line || !str_eq(r->file, fn->decl_file))
			continue;
		lo = r->line < lo ? r->line : lo;
		hi = r->line > hi ? r->line : hi;
	}
	if (have)
		fprintf(out, "Source: %s\n", fn->decl_file);
	else if (!c->o->sort)
		fprintf(out, "Source: %s (not readable here: line numbers only)\n",
			fn->decl_file ? fn->decl_file : "unknown");
	fputs("\n  SELF%  TOTAL%   LINE  ", out);
	fputs(have ? "SOURCE\n" : "FILE\n", out);
	if (have && lo <= hi) {
		uint32_t from = fn->decl_line && fn->decl_line < lo ? fn->decl_line : lo;
		uint32_t k = 0;

		from = from > ctx ? from - ctx : 1;
		for (uint32_t l = from; l <= hi + ctx && l <= src.n; l++) {
			uint64_t self = 0, total = 0;

			for (; k < n; k++) {
				const struct row *r = &c->rows[rows[k]];

				if (r->line > l && str_eq(r->file, fn->decl_file))
					break;
				if (r->line == l && str_eq(r->file, fn->decl_file)) {
					self += r->self;
					total += r->total;
				}
			}
			if (total)
				fprintf(out, "%6.1f%%  %6.1f%%  %5u  %s\n", pct(self, c->whole),
					pct(total, c->whole), l, src.line[l]);
			else
				fprintf(out, "%7s  %7s  %5u  %s\n", "", "", l, src.line[l]);
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		const struct row *r = &c->rows[rows[k]];

		/* Listed beside the source above, unless past its end (a file edited since). */
		if (have && r->line && r->line <= src.n && str_eq(r->file, fn->decl_file) &&
		    lo <= hi)
			continue;
		if (r->line)
			fprintf(out, "%6.1f%%  %6.1f%%  %5u  %s\n", pct(r->self, c->whole),
				pct(r->total, c->whole), r->line,
				r->file ? nw_basename(r->file) : "??");
		else
			fprintf(out, "%6.1f%%  %6.1f%%  %5s  (no line information)\n",
				pct(r->self, c->whole), pct(r->total, c->whole), "-");
	}
	if (have)
		nw_source_fini(&src);
}

static int print_fn(FILE *out, const struct ctx *c, const struct fn_info *fn)
{
	struct sort_ctx sc = { c, c->o->sort };
	uint32_t *own = malloc((c->nrows ? c->nrows : 1) * sizeof(*own));
	uint32_t *inl = malloc((c->nrows ? c->nrows : 1) * sizeof(*inl));
	uint32_t nown = 0, ninl = 0;
	char name[1024], callee[1024];

	if (!own || !inl) {
		free(own);
		free(inl);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nrows; i++) {
		if (strcmp(c->rows[i].func, fn->name) || !c->rows[i].total)
			continue;
		if (c->rows[i].callee)
			inl[ninl++] = (uint32_t)i;
		else
			own[nown++] = (uint32_t)i;
	}
	qsort_r(own, nown, sizeof(*own), cmp_rows, &sc);
	qsort_r(inl, ninl, sizeof(*inl), cmp_rows, &sc);
	fprintf(out, "Function: %s", display(c, fn->name, name, sizeof(name)));
	if (fn->decl_file)
		fprintf(out, " (%s:%u)", nw_basename(fn->decl_file), fn->decl_line);
	if (fn->module_path)
		fprintf(out, " in %s", nw_basename(fn->module_path));
	fprintf(out, "\nSelf: %5.1f%% (%llu)   Total: %5.1f%% (%llu)\n", pct(fn->self, c->whole),
		(unsigned long long)fn->self, pct(fn->total, c->whole),
		(unsigned long long)fn->total);
	if (c->o->addresses) {
		fputs("\n  SELF%  TOTAL%  ADDRESS             LINE\n", out);
		for (uint32_t k = 0; k < nown; k++) {
			const struct row *r = &c->rows[own[k]];
			const struct nw_symentry *e = nw_symtab_lookup(c->m->symtab, r->module, r->addr);
			const struct nw_symframe *fr = NULL;

			for (uint32_t j = 0; e && j < e->nframes && !fr; j++)
				if (!strcmp(e->frames[j].function, fn->name))
					fr = &e->frames[j];
			fprintf(out, "%6.1f%%  %6.1f%%  %s+0x%-10llx  %s:%u\n", pct(r->self, c->whole),
				pct(r->total, c->whole),
				nw_basename(c->m->modules->v[r->module].path),
				(unsigned long long)(r->addr + r->ret),
				fr && fr->file ? nw_basename(fr->file) : "??", fr ? fr->line : 0);
		}
	} else {
		print_own_lines(out, c, fn, own, nown);
	}
	if (ninl) {
		fprintf(out, "\nInlined into %s, at their own lines:\n", display(c, fn->name, name,
									    sizeof(name)));
		fputs("  SELF%  TOTAL%  FILE:LINE  FUNCTION\n", out);
		for (uint32_t k = 0; k < ninl; k++) {
			const struct row *r = &c->rows[inl[k]];

			fprintf(out, "%6.1f%%  %6.1f%%  %s:%u  %s\n", pct(r->self, c->whole),
				pct(r->total, c->whole), r->file ? nw_basename(r->file) : "??",
				r->line, display(c, r->callee, callee, sizeof(callee)));
		}
	}
	fputc('\n', out);
	free(own);
	free(inl);
	return 0;
}

static int cmp_fn(const void *a, const void *b)
{
	const struct fn_info *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The rows of every selected thread's trees; -ENOMEM. */
static int add_threads(struct ctx *c, const struct nw_filter *f)
{
	const struct nw_measurement *m = c->m;
	int ret = 0;

	if (nw_place_cache_init(&c->recent, 0))
		return -ENOMEM;
	for (uint32_t i = 0; i < m->nthreads && !ret; i++) {
		if (!nw_filter_thread(f, &m->threads[i]))
			continue;
		for (uint32_t t = 0; t < m->threads[i].ntrees && !ret; t++)
			ret = add_tree(c, &m->threads[i].trees[t]);
	}
	return ret;
}

static void ctx_fini(struct ctx *c)
{
	free(c->rows);
	nw_index_fini(&c->row_ix);
	free(c->chains);
	nw_place_cache_fini(&c->recent);
	free(c->hits);
	free(c->fns);
}

static int weights(const struct nw_measurement *m, const struct nw_filter *f, const regex_t *func,
		   unsigned metric, bool addresses, struct nw_addr_weights *ret)
{
	struct nw_lines_opts o = { .func = func, .metric = metric, .addresses = addresses };
	struct ctx c = { .m = m, .o = &o };
	int rc;

	memset(ret, 0, sizeof(*ret));
	if (metric >= m->nmetrics)
		return -EINVAL;
	rc = add_threads(&c, f);
	if (!rc) {
		ret->v = calloc(c.nrows ? c.nrows : 1, sizeof(*ret->v));
		ret->fns = calloc(c.nfns ? c.nfns : 1, sizeof(*ret->fns));
		rc = ret->v && ret->fns ? 0 : -ENOMEM;
	}
	for (size_t i = 0; !rc && i < c.nrows; i++) {
		const struct row *r = &c.rows[i];

		if (r->total || r->self)
			ret->v[ret->n++] = (struct nw_addr_weight){ r->func,  r->module, r->addr,
								    r->ret,   r->self,   r->total,
								    r->callee, r->file,  r->line };
	}
	for (size_t i = 0; !rc && i < c.nfns; i++)
		ret->fns[ret->nfns++] = (struct nw_fn_weight){ c.fns[i].name, c.fns[i].self,
							       c.fns[i].total };
	ret->whole = c.whole;
	ctx_fini(&c);
	if (rc)
		nw_addr_weights_fini(ret);
	return rc;
}

int nw_lines_addresses(const struct nw_measurement *m, const struct nw_filter *f,
		       const regex_t *func, unsigned metric, struct nw_addr_weights *ret)
{
	return weights(m, f, func, metric, true, ret);
}

int nw_lines_weights(const struct nw_measurement *m, const struct nw_filter *f,
		     const regex_t *func, unsigned metric, struct nw_addr_weights *ret)
{
	return weights(m, f, func, metric, false, ret);
}

void nw_addr_weights_fini(struct nw_addr_weights *w)
{
	free(w->v);
	free(w->fns);
	memset(w, 0, sizeof(*w));
}

int nw_view_lines(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
		  const struct nw_lines_opts *o)
{
	struct ctx c = { .m = m, .o = o };
	int ret = 0;

	if (o->metric >= m->nmetrics)
		return -EINVAL;
	ret = add_threads(&c, f);
	if (!ret && c.nfns)
		qsort(c.fns, c.nfns, sizeof(*c.fns), cmp_fn);
	/* Heaviest first: a function seen only where the metric is 0 was not sampled. */
	if (!ret && (!c.nfns || !c.fns[0].total))
		ret = -ENOENT;
	if (!ret) {
		for (size_t i = 0; i < c.nfns && !ret; i++)
			if (c.fns[i].total)
				ret = print_fn(out, &c, &c.fns[i]);
	}
	if (!ret && (fflush(out) != 0 || ferror(out)))
		ret = -EIO;
	ctx_fini(&c);
	return ret;
}
