/* SPDX-License-Identifier: MIT */
/*
 * The pprof export's wire format (profile.proto): each sample packed by
 * hand and written as it is made, the rest of the Profile after the
 * samples, one record at a time through protobuf-c; the profile in memory
 * or in a gzipped file, compressed and written behind by util's stream
 * (util/file.h).
 */
#include "export/pprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/pprofbuilder.h"
#include "export/profile.pb-c.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strbuf.h"

#define PAGE 4096u

/* samples */

/* Appends @v as a protobuf varint at @p; returns the end. */
static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

/* Appends field @field of varint @v (proto3: nothing for 0). */
static uint8_t *put_int_field(uint8_t *p, unsigned field, uint64_t v)
{
	if (!v)
		return p;
	*p++ = (uint8_t)(field << 3);
	return put_varint(p, v);
}

/*
 * The thread's three Labels (thread, tid, pid), packed once for all its
 * samples: Label fields key = 1, str = 2, num = 3.
 */
void nw_pprof_pack_labels(struct nw_pprof *b)
{
	const int64_t keys[3] = { b->key_thread, b->key_tid, b->key_pid };
	const uint64_t strs[3] = { (uint64_t)b->thread.comm, 0, 0 };
	const uint64_t nums[3] = { 0, b->thread.tid, b->thread.pid };
	uint8_t *p = b->labels;

	for (int j = 0; j < 3; j++) {
		uint8_t body[3 * 11], *q = body;

		q = put_int_field(q, 1, (uint64_t)keys[j]);
		q = put_int_field(q, 2, strs[j]);
		q = put_int_field(q, 3, nums[j]);
		*p++ = 3 << 3 | 2; /* Sample.label */
		p = put_varint(p, (uint64_t)(q - body));
		memcpy(p, body, (size_t)(q - body));
		p += q - body;
	}
	b->nlabels = (size_t)(p - b->labels);
}

/*
 * Packs one Sample and writes it as field 2 of the Profile: the fields of
 * a message may come in any order and repeated ones add up, so samples
 * stream out as they are made and the rest of the Profile follows them.
 * Packed by hand, as protoc's encoding has it (packed location_id = 1 and
 * value = 2, then the labels): a million samples through protobuf-c's
 * generic packer were a third of the export.
 */
int nw_pprof_write_sample(struct nw_pprof *b, size_t nlocs, const uint64_t *m, unsigned nm)
{
	size_t locs_len = 0, values_len = 0, len;
	uint8_t *p;

	for (size_t i = 0; i < nlocs; i++)
		locs_len += varint_len(b->sample_locs[i]);
	for (unsigned k = 0; k < b->nmetrics; k++) {
		b->sample_values[k] = k >= nm ? 0 : m[k] > INT64_MAX ? INT64_MAX : (int64_t)m[k];
		values_len += varint_len((uint64_t)b->sample_values[k]);
	}
	len = (nlocs ? 1 + varint_len(locs_len) + locs_len : 0) +
	      (b->nmetrics ? 1 + varint_len(values_len) + values_len : 0) + b->nlabels;
	if (nw_grow(&b->packed, &b->cap_packed, len + 11, 1))
		return -ENOMEM;
	p = b->packed;
	*p++ = 2 << 3 | 2; /* Profile.sample, length-delimited */
	p = put_varint(p, len);
	if (nlocs) {
		*p++ = 1 << 3 | 2;
		p = put_varint(p, locs_len);
		for (size_t i = 0; i < nlocs; i++)
			p = put_varint(p, b->sample_locs[i]);
	}
	if (b->nmetrics) {
		*p++ = 2 << 3 | 2;
		p = put_varint(p, values_len);
		for (unsigned k = 0; k < b->nmetrics; k++)
			p = put_varint(p, (uint64_t)b->sample_values[k]);
	}
	memcpy(p, b->labels, b->nlabels);
	p += b->nlabels;
	b->nsamples++;
	return b->write(b->write_arg, b->packed, (size_t)(p - b->packed));
}

/* ---- packing ---- */

/* pprof's name and unit of metric @d, as string indexes. */
static int value_type(struct nw_pprof *b, const struct nw_metric *d, unsigned nevents,
		      Perftools__Profiles__ValueType *vt)
{
	const char *type = d->name, *unit = "count";
	char buf[300];

	switch (d->kind) {
	case NW_METRIC_SAMPLES:
		if (nevents > 1) {
			snprintf(buf, sizeof(buf), "%s-samples", d->event);
			type = buf;
		} else {
			type = "samples";
		}
		break;
	case NW_METRIC_PERIOD:
		type = d->event;
		if (d->unit == NW_UNIT_NANOSECONDS) {
			unit = "nanoseconds";
			if (nevents == 1)
				type = "cpu";
		}
		break;
	case NW_METRIC_SWITCHES:
		/* off-cpu: context switches, and the time off the CPU after them */
		snprintf(buf, sizeof(buf), "%s-switches", d->event);
		type = buf;
		break;
	case NW_METRIC_OFFCPU_TIME:
		type = d->event;
		unit = "nanoseconds";
		break;
	/* Allocations: the sample types of Go's and tcmalloc's heap profiles. */
	case NW_METRIC_ALLOC_OBJECTS:
		type = "alloc_objects";
		break;
	case NW_METRIC_ALLOC_BYTES:
		type = "alloc_space";
		unit = "bytes";
		break;
	case NW_METRIC_INUSE_OBJECTS:
		type = "inuse_objects";
		break;
	case NW_METRIC_INUSE_BYTES:
		type = "inuse_space";
		unit = "bytes";
		break;
	/* Locks: the sample types of Go's mutex profile (the delay on the releasers' stacks). */
	case NW_METRIC_LOCK_CONTENTIONS:
		type = "contentions";
		break;
	case NW_METRIC_LOCK_DELAY:
		type = "delay";
		unit = "nanoseconds";
		break;
	case NW_METRIC_LOCK_WAIT:
		unit = "nanoseconds";
		break;
	default:
		break;
	}
	vt->type = nw_pprof_intern(b, type);
	vt->unit = nw_pprof_intern(b, unit);
	return vt->type < 0 || vt->unit < 0 ? -ENOMEM : 0;
}

static unsigned count_events(const struct nw_measurement *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->nmetrics; i++)
		n += nw_metric_counts_samples(&m->metrics[i]);
	return n ? n : 1;
}

/* Mapping order: the program first (pprof takes mapping 1 for the main binary). */
static uint32_t *mapping_order(const struct nw_pprof *b)
{
	const struct nw_run *r = &b->m->run;
	const char *prog = r->argc && r->argv[0] ? nw_basename(r->argv[0]) : NULL;
	uint32_t *order = malloc((b->nmaps ? b->nmaps : 1) * sizeof(*order));
	size_t n = 0;

	if (!order)
		return NULL;
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < b->nmaps; i++) {
			bool is_prog = prog && strcmp(nw_basename(b->maps[i].path), prog) == 0;

			if (is_prog == (pass == 0))
				order[n++] = (uint32_t)i;
		}
	return order;
}

/* Everything packing allocates, freed in one place. */
struct pack {
	Perftools__Profiles__ValueType *vts, **vtp, period_type;
	int64_t comments[2];
	Perftools__Profiles__Mapping *ms;
	uint32_t *map_order, *map_id;
	uint64_t *func_id;
	Perftools__Profiles__Line *lns, **lnp;  /* one location's lines */
	size_t cap_lns;
};

static void pack_fini(struct pack *k)
{
	free(k->vts);
	free(k->vtp);
	free(k->ms);
	free(k->map_order);
	free(k->map_id);
	free(k->func_id);
	free(k->lns);
	free(k->lnp);
}

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/*
 * Writes @msg as one record of the Profile's repeated field @field (up to
 * 15): repeated fields add up, so the mappings, locations and functions
 * go out one by one and no array of them is held (a build's 100 K
 * locations as protobuf-c messages were 13 MB).  -ENOMEM, or what the
 * writer returned.
 */
static int emit(struct nw_pprof *b, unsigned field, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *p;

	if (nw_grow(&b->packed, &b->cap_packed, len + 11, 1))
		return -ENOMEM;
	p = b->packed;
	*p++ = (uint8_t)(field << 3 | 2);
	p = put_varint(p, len);
	p += protobuf_c_message_pack(msg, p);
	return b->write(b->write_arg, b->packed, (size_t)(p - b->packed));
}

/*
 * The mappings, numbered in mapping_order(); a mapping's flags say how far
 * symbolization got for its module: set when one of its locations has
 * functions (from the symbol table), file names, line numbers (DWARF,
 * which also expands inline chains).  A PLT stub without lines does not
 * unset them.
 */
static int pack_mappings(struct nw_pprof *b, struct pack *k)
{
	k->map_order = mapping_order(b);
	k->map_id = alloc_n(b->nmaps, sizeof(*k->map_id));
	k->ms = alloc_n(b->nmaps, sizeof(*k->ms));
	if (!k->map_order || !k->map_id || !k->ms)
		return -ENOMEM;
	for (size_t j = 0; j < b->nmaps; j++) {
		const struct mapping *m = &b->maps[k->map_order[j]];
		Perftools__Profiles__Mapping *pm = &k->ms[j];
		uint64_t end = m->end > m->start ? m->end : m->start + 1;

		k->map_id[k->map_order[j]] = (uint32_t)j + 1;
		perftools__profiles__mapping__init(pm);
		pm->id = j + 1;
		pm->memory_start = m->start;
		/* The end is not recorded: the page after the highest address sampled. */
		pm->memory_limit = end > UINT64_MAX - PAGE
					   ? UINT64_MAX
					   : (end + PAGE - 1) & ~(uint64_t)(PAGE - 1);
		pm->file_offset = m->pgoff;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
	}
	for (size_t i = 0; i < b->nlocs; i++) {
		const struct location *l = &b->locs[i];
		Perftools__Profiles__Mapping *pm;

		if (!l->mapping || l->mapping == FRAME_MAPPING || !l->symbolized)
			continue;
		pm = &k->ms[k->map_id[l->mapping - 1] - 1];
		pm->has_functions = true;
		for (uint32_t j = 0; j < l->nlines; j++) {
			const struct line *ln = &b->lines[l->first_line + j];

			if (b->frames.v[ln->func].file)
				pm->has_filenames = true;
			if (ln->line)
				pm->has_line_numbers = pm->has_inline_frames = true;
		}
	}
	return 0;
}

static int write_mappings(struct nw_pprof *b, struct pack *k)
{
	int ret = 0;

	for (size_t j = 0; j < b->nmaps && !ret; j++)
		ret = emit(b, 3, &k->ms[j].base);
	return ret;
}

/* The locations, each with its lines; notes the functions they name in k->func_id. */
static int write_locations(struct nw_pprof *b, struct pack *k)
{
	int ret = 0;

	k->func_id = alloc_n(b->frames.n, sizeof(*k->func_id));
	if (!k->func_id)
		return -ENOMEM;
	for (size_t i = 0; i < b->nlocs && !ret; i++) {
		const struct location *l = &b->locs[i];
		Perftools__Profiles__Location pl = PERFTOOLS__PROFILES__LOCATION__INIT;

		pl.id = i + 1;
		/* A prefix frame's location has no address (its key holds the frame). */
		pl.address = l->mapping == FRAME_MAPPING ? 0 : l->address;
		if (l->mapping && l->mapping != FRAME_MAPPING)
			pl.mapping_id = k->map_id[l->mapping - 1];
		if (l->nlines > k->cap_lns) {
			free(k->lns);
			free(k->lnp);
			k->lns = malloc(l->nlines * sizeof(*k->lns));
			k->lnp = malloc(l->nlines * sizeof(*k->lnp));
			k->cap_lns = k->lns && k->lnp ? l->nlines : 0;
			if (!k->cap_lns)
				return -ENOMEM;
		}
		for (uint32_t j = 0; j < l->nlines; j++) {
			const struct line *ln = &b->lines[l->first_line + j];
			Perftools__Profiles__Line *pn = &k->lns[j];

			perftools__profiles__line__init(pn);
			pn->function_id = (uint64_t)ln->func + 1;
			pn->line = ln->line;
			k->lnp[j] = pn;
			k->func_id[ln->func] = (uint64_t)ln->func + 1;
		}
		pl.n_line = l->nlines;
		pl.line = l->nlines ? k->lnp : NULL;
		ret = emit(b, 4, &pl.base);
	}
	return ret;
}

/* The functions the locations named (their names interned, for the string table after). */
static int write_functions(struct nw_pprof *b, struct pack *k)
{
	int ret = 0;

	for (uint32_t i = 0; i < b->frames.n && !ret; i++) {
		const struct nw_func *f = &b->frames.v[i];
		Perftools__Profiles__Function pf = PERFTOOLS__PROFILES__FUNCTION__INIT;

		if (!k->func_id[i])
			continue;
		pf.id = k->func_id[i];
		pf.name = nw_pprof_intern(b, f->name);
		/* Names are demangled by the symbolizer; the raw one is not kept. */
		pf.system_name = pf.name;
		pf.filename = nw_pprof_intern(b, f->file);
		pf.start_line = f->line;
		if (pf.name < 0 || pf.filename < 0)
			return -ENOMEM;
		ret = emit(b, 5, &pf.base);
	}
	return ret;
}

/* The string table, each string a record of field 6. */
static int write_strings(struct nw_pprof *b)
{
	int ret = 0;

	for (size_t i = 0; i < b->nstrs && !ret; i++) {
		size_t len = strlen(b->strs[i]);
		uint8_t head[11], *p = head;

		*p++ = 6 << 3 | 2;
		p = put_varint(p, len);
		ret = b->write(b->write_arg, head, (size_t)(p - head));
		if (!ret && len)
			ret = b->write(b->write_arg, b->strs[i], len);
	}
	return ret;
}

static int pack_header(struct nw_pprof *b, struct pack *k, Perftools__Profiles__Profile *prof)
{
	const struct nw_run *r = &b->m->run;
	unsigned nevents = count_events(b->m);
	struct nw_strbuf cmd = { 0 };
	int p0 = -1;

	k->vts = alloc_n(b->nmetrics, sizeof(*k->vts));
	k->vtp = alloc_n(b->nmetrics, sizeof(*k->vtp));
	if (!k->vts || !k->vtp)
		return -ENOMEM;
	for (unsigned i = 0; i < b->nmetrics; i++) {
		perftools__profiles__value_type__init(&k->vts[i]);
		if (value_type(b, &b->m->metrics[i], nevents, &k->vts[i]))
			return -ENOMEM;
		k->vtp[i] = &k->vts[i];
	}
	prof->n_sample_type = b->nmetrics;
	prof->sample_type = k->vtp;

	/* The period: the default event's period metric, fixed or its mean sampled. */
	perftools__profiles__value_type__init(&k->period_type);
	for (unsigned i = 0; i < b->nmetrics && p0 < 0; i++)
		if (b->m->metrics[i].kind == NW_METRIC_PERIOD)
			p0 = (int)i;
	/* Allocations alone: a heap profile's period, "space" in bytes (the sampling rate). */
	for (unsigned i = 0; i < b->nmetrics && p0 < 0; i++)
		if (b->m->metrics[i].kind == NW_METRIC_ALLOC_BYTES)
			p0 = (int)i;
	/* Locks alone: a mutex profile's period, contentions (the sampling rate in ns). */
	for (unsigned i = 0; i < b->nmetrics && p0 < 0; i++)
		if (b->m->metrics[i].kind == NW_METRIC_LOCK_CONTENTIONS)
			p0 = (int)i;
	if (p0 >= 0 && b->m->metrics[p0].kind == NW_METRIC_ALLOC_BYTES) {
		k->period_type.type = nw_pprof_intern(b, "space");
		k->period_type.unit = nw_pprof_intern(b, "bytes");
		if (k->period_type.type < 0 || k->period_type.unit < 0)
			return -ENOMEM;
		prof->period_type = &k->period_type;
		prof->period = (int64_t)b->m->metrics[p0].period;
	} else if (p0 >= 0) {
		if (value_type(b, &b->m->metrics[p0], nevents, &k->period_type))
			return -ENOMEM;
		prof->period_type = &k->period_type;
		prof->period = (int64_t)b->m->metrics[p0].period;
	}
	prof->time_nanos = (int64_t)r->start_ns;
	if (r->end_ns > r->start_ns)
		prof->duration_nanos = (int64_t)(r->end_ns - r->start_ns);
	/* A time range (--time): its start in wall-clock time, and its length. */
	if (b->m->time_hi > b->m->time_lo && r->clock_start_ns) {
		prof->time_nanos = (int64_t)(r->start_ns + (b->m->time_lo - r->clock_start_ns));
		prof->duration_nanos = (int64_t)(b->m->time_hi - b->m->time_lo);
	}
	{
		nw_sb_puts(&cmd, "narwhal-record");
		for (uint32_t i = 0; i < r->argc; i++)
			nw_sb_printf(&cmd, " %s", r->argv[i] ? r->argv[i] : "");
		if (cmd.failed) {
			nw_sb_fini(&cmd);
			return -ENOMEM;
		}
		k->comments[0] = nw_pprof_intern(b, nw_sb_str(&cmd));
		nw_sb_fini(&cmd);
		k->comments[1] = nw_pprof_intern(b, "narwhal " NW_VERSION);
		if (k->comments[0] < 0 || k->comments[1] < 0)
			return -ENOMEM;
		prof->n_comment = 2;
		prof->comment = k->comments;
	}
	return 0;
}

/*
 * Writes the rest of the Profile after the samples: its scalar fields in
 * one message, then the mappings, locations, functions and strings one
 * record each (the string table last: everything before may add to it).
 */
int nw_pprof_finish(struct nw_pprof *b)
{
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pack k = { 0 };
	uint8_t *buf;
	size_t len;
	int ret;

	ret = pack_header(b, &k, &prof);
	if (!ret)
		ret = pack_mappings(b, &k);
	if (ret)
		goto out;
	len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&prof, buf);
	ret = b->write(b->write_arg, buf, len);
	free(buf);
	if (!ret)
		ret = write_mappings(b, &k);
	if (!ret)
		ret = write_locations(b, &k);
	if (!ret)
		ret = write_functions(b, &k);
	if (!ret)
		ret = write_strings(b);
out:
	pack_fini(&k);
	return ret;
}

/* ---- the export ---- */

/* Growing memory, for nw_pprof_build(). */
struct membuf {
	uint8_t *v;
	size_t n, cap;
};

static int write_mem(void *arg, const void *buf, size_t len)
{
	struct membuf *mb = arg;

	if (nw_grow(&mb->v, &mb->cap, mb->n + len, 1))
		return -ENOMEM;
	memcpy(mb->v + mb->n, buf, len);
	mb->n += len;
	return 0;
}

int nw_pprof_build(const struct nw_measurement *m, const struct nw_filter *f, uint8_t **ret_buf,
		   size_t *ret_len)
{
	struct membuf mb = { 0 };
	struct nw_pprof *b = nw_pprof_new(m, write_mem, &mb);
	int ret = b ? nw_pprof_add(b, f, NULL) : -ENOMEM;

	if (!ret)
		ret = nw_pprof_finish(b);
	nw_pprof_free(b);
	if (ret) {
		free(mb.v);
		return ret;
	}
	*ret_buf = mb.v ? mb.v : malloc(1);
	*ret_len = mb.n;
	return *ret_buf ? 0 : -ENOMEM;
}

/*
 * The gzipped file: deflate is a quarter of a pprof export, so util's
 * stream compresses and writes on a thread of its own, beside the packing
 * of samples instead of after it.
 */
struct nw_pprof_file {
	FILE *f;
	char *path;
};

static int write_file(void *arg, const void *buf, size_t len)
{
	struct nw_pprof_file *pf = arg;

	/* Unlocked: one call per sample, and the stream is this thread's alone. */
	if (fwrite_unlocked(buf, 1, len, pf->f) != len)
		return errno ? -errno : -EIO;
	return 0;
}

int nw_pprof_open(const struct nw_measurement *m, const char *path, struct nw_pprof **ret,
		  struct nw_pprof_file **ret_file, char *err, size_t errlen)
{
	struct nw_pprof_file *pf = calloc(1, sizeof(*pf));
	struct nw_pprof *b;
	int e;

	if (!pf || !(pf->path = strdup(path))) {
		free(pf);
		nw_set_err(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	errno = 0;
	pf->f = nw_fopen_behind_gz(path, 1);
	if (!pf->f) {
		e = errno ? errno : ENOMEM;
		nw_set_err(err, errlen, "%s: %s", path, strerror(e));
		free(pf->path);
		free(pf);
		return -e;
	}
	b = nw_pprof_new(m, write_file, pf);
	if (!b) {
		nw_set_err(err, errlen, "%s: out of memory", path);
		fclose(pf->f);
		free(pf->path);
		free(pf);
		return -ENOMEM;
	}
	*ret = b;
	*ret_file = pf;
	return 0;
}

int nw_pprof_close(struct nw_pprof *b, struct nw_pprof_file *pf, int ret, char *err,
		   size_t errlen)
{
	errno = 0;
	if (!ret)
		ret = nw_pprof_finish(b);
	if (fclose(pf->f) != 0 && !ret)
		ret = errno ? -errno : -EIO;
	if (ret)
		nw_set_err(err, errlen, "%s: %s", pf->path,
			   ret == -ENOMEM ? "out of memory" : strerror(-ret));
	free(pf->path);
	free(pf);
	nw_pprof_free(b);
	return ret;
}

int nw_pprof_export(const char *path, const struct nw_measurement *m, const struct nw_filter *f,
		    char *err, size_t errlen)
{
	struct nw_pprof_file *pf;
	struct nw_pprof *b;
	int ret = nw_pprof_open(m, path, &b, &pf, err, errlen);

	if (ret)
		return ret;
	return nw_pprof_close(b, pf, nw_pprof_add(b, f, NULL), err, errlen);
}
