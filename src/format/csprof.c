/* SPDX-License-Identifier: MIT */
/*
 * HPC_CSPROF writer (DESIGN.md, "HPC_CSPROF file format"), and the
 * in-memory file's free; the reader is csprofread.c, a checkpoint's deltas
 * csprofdelta.c, the byte cursors they share csprofio.h.
 */
#include "format/csprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/csprofio.h"

/* Node records formatted before each write. */
#define NODE_BATCH 1024u

/* Counts a record of @size bytes into the batch at @rec, written out when full. */
static void batch_add(struct csprof_out *o, const uint8_t *rec, size_t *fill, size_t size)
{
	*fill += size;
	if (*fill == size * NODE_BATCH) {
		out_bytes(o, rec, *fill);
		*fill = 0;
	}
}

static void out_string(struct csprof_out *o, uint32_t tag, const char *s, size_t len)
{
	out_u32(o, tag);
	out_u32(o, (uint32_t)len);
	out_bytes(o, s, len);
}

static void out_number(struct csprof_out *o, uint32_t tag, uint64_t v)
{
	out_u32(o, tag);
	out_u64(o, v);
}

int nw_csprof_check(const struct nw_csprof *p)
{
	if (p->target && strlen(p->target) > UINT32_MAX)
		return -EINVAL;
	if ((p->nmetrics && !p->metrics) || (p->nepochs && !p->epochs) ||
	    (p->ntrees && !p->trees))
		return -EINVAL;
	for (uint32_t i = 0; i < p->nmetrics; i++) {
		if (!p->metrics[i].name || strlen(p->metrics[i].name) > UINT32_MAX)
			return -EINVAL;
	}
	for (uint32_t e = 0; e < p->nepochs; e++) {
		const struct nw_csprof_epoch *ep = &p->epochs[e];

		if (ep->nmodules && !ep->modules)
			return -EINVAL;
		for (uint32_t m = 0; m < ep->nmodules; m++) {
			if (!ep->modules[m].name || strlen(ep->modules[m].name) > UINT32_MAX)
				return -EINVAL;
		}
	}
	for (uint32_t t = 0; t < p->ntrees; t++) {
		const struct nw_csprof_tree *tr = &p->trees[t];

		if (!tr->cct || tr->cct->n == 0 || tr->cct->nmetrics != p->nmetrics ||
		    tr->epoch >= p->nepochs)
			return -EINVAL;
	}
	return 0;
}

static int write_tree(struct csprof_out *o, const struct nw_csprof_tree *tr, bool index_order)
{
	const struct nw_cct *cct = tr->cct;
	size_t node_size = NODE_FIXED_SIZE + 8 * (size_t)cct->nmetrics;
	uint32_t *order = NULL, *id_of = NULL;
	uint8_t *rec;
	uint32_t n = cct->n;
	size_t fill = 0;

	/* Records go out a batch at a time: one fwrite per node was a tenth of a write. */
	rec = malloc(node_size * NODE_BATCH);
	if (!index_order) {
		order = calloc(cct->n, sizeof(*order));
		id_of = calloc(cct->n, sizeof(*id_of));
	}
	if (!rec || (!index_order && (!order || !id_of))) {
		free(order);
		free(id_of);
		free(rec);
		return -ENOMEM;
	}
	if (!index_order) {
		n = nw_cct_preorder(cct, order);
		for (uint32_t i = 0; i < n; i++)
			id_of[order[i]] = i;
	}

	out_bytes(o, CSTREE_MAGIC, MAGIC_LEN);
	out_bytes(o, CSTREE_VERSION, VERSION_LEN);
	out_bytes(o, "l", 1);
	out_u32(o, 8); /* vma size */
	out_u32(o, 8); /* uint size */
	out_u64(o, n);
	out_u32(o, tr->epoch);
	/* One record per node: id, parent, ip, sp, metrics. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = index_order ? i : order[i];
		const struct nw_cct_node *node = &cct->nodes[k];
		const uint64_t *met = nw_cct_metrics(cct, k);
		uint8_t *r = rec + fill;

		put_u64(r, i);
		put_u64(r + 8, i == 0 ? 0 : index_order ? node->parent : id_of[node->parent]);
		put_u64(r + 16, node->ip);
		put_u64(r + 24, node->sp);
		for (unsigned m = 0; m < cct->nmetrics; m++)
			put_u64(r + NODE_FIXED_SIZE + 8 * m, met[m]);
		batch_add(o, rec, &fill, node_size);
	}
	out_bytes(o, rec, fill);
	free(order);
	free(id_of);
	free(rec);
	return 0;
}

int nw_csprof_write(FILE *f, const struct nw_csprof *p)
{
	struct csprof_out o = { .f = f };
	const char *target = p->target ? p->target : "";
	int err;

	err = nw_csprof_check(p);
	if (err)
		return err;

	out_bytes(&o, CSPROF_MAGIC, MAGIC_LEN);
	out_bytes(&o, CSPROF_VERSION, VERSION_LEN);
	out_bytes(&o, "l", 1);
	out_u64(&o, CSPROF_NUM_CHUNKS);

	out_string(&o, TAG_TARGET, target, strlen(target));
	out_u32(&o, p->nmetrics);
	for (uint32_t i = 0; i < p->nmetrics; i++) {
		const struct nw_csprof_metric *m = &p->metrics[i];

		out_string(&o, TAG_EVENT_NAME, m->name, strlen(m->name));
		out_number(&o, TAG_FLAGS, m->flags);
		out_number(&o, TAG_PERIOD, m->period);
	}

	out_u32(&o, p->nepochs);
	for (uint32_t e = 0; e < p->nepochs; e++) {
		const struct nw_csprof_epoch *ep = &p->epochs[e];

		out_u32(&o, ep->nmodules);
		for (uint32_t m = 0; m < ep->nmodules; m++) {
			const struct nw_csprof_module *mod = &ep->modules[m];
			size_t len = strlen(mod->name);

			out_u32(&o, (uint32_t)len);
			out_bytes(&o, mod->name, len);
			out_u64(&o, mod->vaddr);
			out_u64(&o, mod->mapped);
		}
	}

	out_u32(&o, p->ntrees);
	out_u64(&o, 0); /* tramp_samples: no trampoline */
	for (uint32_t t = 0; t < p->ntrees; t++) {
		err = write_tree(&o, &p->trees[t], p->index_order);
		if (err)
			return err;
	}
	return out_end(&o);
}

int nw_csprof_write_file(const char *path, const struct nw_csprof *p)
{
	FILE *f;
	int err;

	f = fopen(path, "w");
	if (!f)
		return -errno;
	err = nw_csprof_write(f, p);
	/* On disk before the measurement that names it: a full disk shows here, as itself. */
	errno = 0;
	if ((fflush(f) != 0 || fsync(fileno(f)) != 0) && !err)
		err = errno ? -errno : -EIO;
	if (fclose(f) != 0 && !err)
		err = errno ? -errno : -EIO;
	return err;
}

void nw_csprof_free(struct nw_csprof *p)
{
	if (!p)
		return;
	free(p->target);
	for (uint32_t i = 0; p->metrics && i < p->nmetrics; i++)
		free(p->metrics[i].name);
	free(p->metrics);
	free(p->totals);
	for (uint32_t e = 0; p->epochs && e < p->nepochs; e++) {
		struct nw_csprof_epoch *ep = &p->epochs[e];

		for (uint32_t m = 0; ep->modules && m < ep->nmodules; m++)
			free(ep->modules[m].name);
		free(ep->modules);
	}
	free(p->epochs);
	for (uint32_t t = 0; p->trees && t < p->ntrees; t++)
		nw_cct_free(p->trees[t].cct);
	free(p->trees);
	free(p);
}
