/* SPDX-License-Identifier: MIT */
/* Kernel symbols from /proc/kallsyms; see kallsyms.h. */
#include "symbol/kallsyms.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/strbuf.h"

static int cmp_ksym(const void *a, const void *b)
{
	const struct nw_ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int nw_kallsyms_load(struct nw_kallsyms *ks, const char *path)
{
	size_t len, nzero = 0;
	char *p, *line;
	int rc;

	memset(ks, 0, sizeof(*ks));
	rc = nw_read_file(path ? path : "/proc/kallsyms", &ks->pool, &len);
	if (rc)
		return rc;
	/* "ffffffff81000000 T _stext" or "ffffffffc0a01000 t ext4_fill_super\t[ext4]" */
	for (line = ks->pool; line && *line; line = p) {
		char *type, *name, *mod, *end;
		unsigned long long addr;

		p = strchr(line, '\n');
		if (p)
			*p++ = 0;
		addr = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		type = end + 1;
		if (!*type || type[1] != ' ')
			continue;
		name = type + 2;
		mod = strchr(name, '\t');
		if (mod) {
			*mod++ = 0;
			if (*mod == '[') {
				mod++;
				mod[strcspn(mod, "]")] = 0;
			} else {
				mod = NULL;
			}
		}
		if (!mod && !strcmp(name, "_etext"))
			ks->text_end = addr;
		if (!strchr("tTwW", *type))
			continue;
		if (!addr) {
			nzero++;
			continue;
		}
		if (nw_grow(&ks->v, &ks->cap, ks->n + 1, sizeof(*ks->v))) {
			nw_kallsyms_fini(ks);
			return -ENOMEM;
		}
		ks->v[ks->n++] = (struct nw_ksym){ addr, name, mod };
	}
	ks->hidden = !ks->n && nzero > 0;
	/* Hidden addresses leave no symbol, and no array to sort. */
	if (ks->n)
		qsort(ks->v, ks->n, sizeof(*ks->v), cmp_ksym);
	return 0;
}

void nw_kallsyms_fini(struct nw_kallsyms *ks)
{
	free(ks->v);
	free(ks->pool);
	memset(ks, 0, sizeof(*ks));
}

const struct nw_ksym *nw_kallsyms_find(const struct nw_kallsyms *ks, uint64_t pc)
{
	size_t lo = 0, hi = ks->n;

	if (!ks->n || pc < ks->v[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->v[mid].addr <= pc)
			lo = mid;
		else
			hi = mid;
	}
	/* Past the end of the image's text, in the gap after its last function: nothing. */
	if (!ks->v[lo].module && ks->text_end && ks->v[lo].addr < ks->text_end &&
	    pc >= ks->text_end)
		return NULL;
	return &ks->v[lo];
}
