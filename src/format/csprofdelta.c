/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint's deltas of HPC_CSPROF files (doc/DURABILITY.md, "The
 * journal"): what a checkpoint adds to a file written before, written as
 * varints of differences, and applied to the file as read, checked like
 * the file itself (csprofio.h).
 */
#include "format/csprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format/csprofio.h"
#include "util/varint.h"

#define DELTA_MAGIC "NWCSDLT2"
#define DELTA_TREE_HEADER 16 /* epoch, base nodes, added, changed */
/* The fewest bytes of a record: an added node's 3 varints, a changed one's 2 (and its metrics). */
#define DELTA_ADDED_MIN 3
#define DELTA_CHANGED_MIN 2
/* Encoded records buffered before a write. */
#define DELTA_BUF (64u << 10)

static uint32_t count_changed(const struct nw_cct *cct, uint32_t base)
{
	uint32_t n = 0, words = base / 64;

	for (uint32_t w = 0; w < words; w++)
		n += (uint32_t)__builtin_popcountll(cct->changed[w]);
	for (uint32_t i = words * 64; i < base; i++)
		n += nw_cct_is_changed(cct, i);
	return n;
}

/* Appends the metrics of @node at @r; returns the byte after them. */
static uint8_t *put_metric_varints(uint8_t *r, const struct nw_cct *cct, uint32_t node)
{
	const uint64_t *met = nw_cct_metrics(cct, node);

	for (unsigned m = 0; m < cct->nmetrics; m++)
		r = nw_put_varint(r, met[m]);
	return r;
}

/*
 * The records of one tree's delta, as varints (doc/DURABILITY.md): most
 * numbers are small against the record's before (a node's parent is
 * usually the node before it, its return address in the same module), so
 * a node takes about 5 bytes instead of 36; and nothing but the node and
 * its metrics is read (a parent's fields would be a cache miss each).
 */
static int write_tree_delta(struct csprof_out *o, const struct nw_cct *cct, uint32_t epoch,
			    uint32_t base)
{
	size_t max = (3 + (size_t)cct->nmetrics) * NW_VARINT_MAX;
	size_t cap = DELTA_BUF > 2 * max ? DELTA_BUF : 2 * max;
	uint8_t *buf = malloc(cap), *r = buf;
	uint32_t changed = count_changed(cct, base);
	uint64_t ip = 0, sp = 0;
	int64_t prev = -1;

	if (!buf)
		return -ENOMEM;
	out_u32(o, epoch);
	out_u32(o, base);
	out_u32(o, cct->n - base);
	out_u32(o, changed);
	for (uint32_t w = 0; w * 64 < base; w++) {
		for (uint64_t bits = cct->changed[w]; bits; bits &= bits - 1) {
			uint32_t i = w * 64 + (uint32_t)__builtin_ctzll(bits);

			if (i >= base)
				break;
			/* Ascending ids: each as the gap after the one before. */
			r = nw_put_varint(r, (uint64_t)((int64_t)i - prev - 1));
			prev = i;
			r = nw_put_varint(r, nw_zigzag((int64_t)(cct->nodes[i].sp - sp)));
			sp = cct->nodes[i].sp;
			r = put_metric_varints(r, cct, i);
			if ((size_t)(r - buf) > cap - max) {
				out_bytes(o, buf, (size_t)(r - buf));
				r = buf;
			}
		}
	}
	sp = 0;
	for (uint32_t i = base; i < cct->n; i++) {
		const struct nw_cct_node *node = &cct->nodes[i];

		const uint64_t *met = nw_cct_metrics(cct, i);
		uint64_t any = 0;

		/* Most nodes added are callers, with no metrics of their own: a bit says so. */
		for (unsigned m = 0; m < cct->nmetrics; m++)
			any |= met[m];
		r = nw_put_varint(r, (uint64_t)(i - node->parent) << 1 | (any != 0));
		r = nw_put_varint(r, nw_zigzag((int64_t)(node->ip - ip)));
		r = nw_put_varint(r, nw_zigzag((int64_t)(node->sp - sp)));
		ip = node->ip;
		sp = node->sp;
		if (any)
			r = put_metric_varints(r, cct, i);
		if ((size_t)(r - buf) > cap - max) {
			out_bytes(o, buf, (size_t)(r - buf));
			r = buf;
		}
	}
	out_bytes(o, buf, (size_t)(r - buf));
	free(buf);
	return 0;
}

int nw_csprof_write_delta(FILE *f, const struct nw_csprof *p, const uint32_t *base)
{
	struct csprof_out o = { .f = f };
	int err = nw_csprof_check(p);

	if (err)
		return err;
	for (uint32_t t = 0; t < p->ntrees; t++)
		if (!p->trees[t].cct->changed || base[t] == 0 || base[t] > p->trees[t].cct->n)
			return -EINVAL;
	out_bytes(&o, DELTA_MAGIC, 8);
	out_u32(&o, p->nmetrics);
	out_u32(&o, p->ntrees);
	for (uint32_t t = 0; t < p->ntrees && !err; t++)
		err = write_tree_delta(&o, p->trees[t].cct, p->trees[t].epoch, base[t]);
	if (err)
		return err;
	return out_end(&o);
}

/* The @n metric varints at in->pos into @dst.  -EBADMSG. */
/* A node's metrics from a delta, in place of what it held: @totals follow. */
static int in_metric_varints(struct csprof_in *in, uint64_t *dst, unsigned n, uint32_t t,
			     uint32_t node, uint64_t *totals)
{
	for (unsigned k = 0; k < n; k++) {
		totals[k] -= dst[k];
		if (nw_get_varint(in->buf, &in->pos, in->size, &dst[k]))
			return in_fail(in, in->pos, "delta tree %u node %u: metric %u cut short or "
						    "over 64 bits", t, node, k);
		totals[k] += dst[k];
	}
	return 0;
}

static int apply_tree_delta(struct csprof_in *in, struct nw_csprof *p, uint32_t t)
{
	struct nw_cct *cct = p->trees[t].cct;
	uint32_t epoch = 0, base = 0, added = 0, changed = 0; /* read after one check of them all */
	size_t at = in->pos;
	uint64_t ip = 0, sp = 0;
	int64_t prev = -1;
	int err;

	err = in_need(in, DELTA_TREE_HEADER, "delta tree header");
	if (err)
		return err;
	in_u32(in, &epoch, "epoch");
	in_u32(in, &base, "base nodes");
	in_u32(in, &added, "added nodes");
	in_u32(in, &changed, "changed nodes");
	if (epoch != p->trees[t].epoch || base != cct->n)
		return in_fail(in, at, "delta tree %u: epoch %u with %u nodes, but the file's "
				       "tree has epoch %u and %u nodes", t, epoch, base,
			       p->trees[t].epoch, cct->n);
	if ((uint64_t)changed > in_left(in) / (DELTA_CHANGED_MIN + p->nmetrics))
		return in_fail(in, in->pos, "delta tree %u: %u changed nodes do not fit in the %zu "
					    "bytes left", t, changed, in_left(in));
	for (uint32_t i = 0; i < changed; i++) {
		uint64_t gap, dsp;

		at = in->pos;
		if (nw_get_varint(in->buf, &in->pos, in->size, &gap) ||
		    nw_get_varint(in->buf, &in->pos, in->size, &dsp))
			return in_fail(in, at, "delta tree %u: changed node %u cut short", t, i);
		if (gap >= (uint64_t)base - (uint64_t)(prev + 1))
			return in_fail(in, at, "delta tree %u: changed node %llu is not one of the %u "
					       "before", t, (unsigned long long)(prev + 1) + gap, base);
		prev += (int64_t)gap + 1;
		sp += (uint64_t)nw_unzigzag(dsp);
		cct->nodes[prev].sp = sp;
		err = in_metric_varints(in, nw_cct_metrics(cct, (uint32_t)prev), p->nmetrics, t,
					(uint32_t)prev, p->totals);
		if (err)
			return err;
	}
	if ((uint64_t)added > in_left(in) / DELTA_ADDED_MIN ||
	    (uint64_t)base + added >= NW_CCT_NONE)
		return in_fail(in, in->pos, "delta tree %u: %u added nodes do not fit in the %zu "
					    "bytes left", t, added, in_left(in));
	if (nw_cct_reserve(cct, base + added))
		return -ENOMEM;
	/* Numbers of the nodes added are against the one before, the first against 0. */
	sp = 0;
	for (uint32_t i = 0; i < added; i++) {
		uint32_t id = base + i, node;
		uint64_t up, dip, dsp;
		bool has_metrics;

		at = in->pos;
		if (nw_get_varint(in->buf, &in->pos, in->size, &up) ||
		    nw_get_varint(in->buf, &in->pos, in->size, &dip) ||
		    nw_get_varint(in->buf, &in->pos, in->size, &dsp))
			return in_fail(in, at, "delta tree %u node %u: cut short or over 64 bits",
				       t, id);
		has_metrics = up & 1;
		up >>= 1;
		if (up == 0 || up > id)
			return in_fail(in, at, "delta tree %u node %u: its parent is not an earlier "
					       "node", t, id);
		ip += (uint64_t)nw_unzigzag(dip);
		sp += (uint64_t)nw_unzigzag(dsp);
		node = nw_cct_append(cct, id - (uint32_t)up, ip, sp);
		if (node == NW_CCT_NONE)
			return -ENOMEM;
		err = has_metrics ? in_metric_varints(in, nw_cct_metrics(cct, node), p->nmetrics,
						      t, id, p->totals) : 0;
		if (err)
			return err;
	}
	if (added)
		nw_cct_link_in_order(cct);
	return 0;
}

int nw_csprof_apply_delta(struct nw_csprof *p, const void *buf, size_t size,
			  struct nw_csprof_error *err)
{
	struct csprof_in in = { .buf = buf, .size = size, .err = err };
	uint32_t nmetrics, ntrees;
	int rc;

	if (err) {
		err->offset = 0;
		err->msg[0] = 0;
	}
	rc = in_expect(&in, DELTA_MAGIC, 8, "delta magic");
	if (!rc)
		rc = in_u32(&in, &nmetrics, "metrics");
	if (!rc)
		rc = in_u32(&in, &ntrees, "trees");
	if (rc)
		return rc;
	if (nmetrics != p->nmetrics || ntrees != p->ntrees)
		return in_fail(&in, 8, "delta of %u metrics and %u trees, but the file has %u and %u",
			       nmetrics, ntrees, p->nmetrics, p->ntrees);
	for (uint32_t t = 0; t < ntrees && !rc; t++)
		rc = apply_tree_delta(&in, p, t);
	if (!rc && in_left(&in))
		rc = in_fail(&in, in.pos, "%zu bytes after the last tree", in_left(&in));
	return rc;
}
