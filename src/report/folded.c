/* SPDX-License-Identifier: MIT */
/* Folded stacks; see folded.h. */
#include "report/folded.h"

#include <errno.h>
#include <stdlib.h>

int nw_folded_line_visit(struct nw_folded_line *l, const struct nw_stacks *s,
			 const struct nw_visit *v)
{
	uint32_t depth = v->depth;

	if (nw_grow(&l->at, &l->cap_at, (size_t)depth + 1, sizeof(*l->at)))
		return -ENOMEM;
	l->at[0] = 0;
	nw_sb_truncate(&l->text, l->at[depth - 1]);
	if (depth > 1)
		nw_sb_putc(&l->text, ';');
	nw_sb_puts(&l->text, nw_func_name(&s->frames.v[v->frame], true));
	if (l->text.failed)
		return -ENOMEM;
	l->at[depth] = l->text.len;
	return 0;
}

void nw_folded_line_fini(struct nw_folded_line *l)
{
	nw_sb_fini(&l->text);
	free(l->at);
	l->at = NULL;
	l->cap_at = 0;
}

struct folded {
	FILE *out;
	const struct nw_stacks *s;
	unsigned metric;
	struct nw_folded_line line;
};

static int folded_visit(void *arg, const struct nw_visit *v)
{
	struct folded *f = arg;
	char num[24], *q = num;

	if (nw_folded_line_visit(&f->line, f->s, v))
		return -ENOMEM;
	if (!v->metrics[f->metric])
		return 0;
	*q++ = ' ';
	q = nw_put_u64(q, v->metrics[f->metric]);
	*q++ = '\n';
	fwrite(f->line.text.s, 1, f->line.text.len, f->out);
	fwrite(num, 1, (size_t)(q - num), f->out);
	return 0;
}

int nw_view_folded(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o)
{
	struct folded f = { .out = out, .s = s, .metric = o->metric };
	int ret;

	if (o->metric >= s->tree->nmetrics)
		return -EINVAL;
	ret = nw_stacks_visit(s, true, folded_visit, &f);
	nw_folded_line_fini(&f.line);
	if (ret)
		return ret;
	return fflush(out) != 0 || ferror(out) ? -EIO : 0;
}
