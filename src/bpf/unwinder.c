/* SPDX-License-Identifier: MIT */
/* The in-kernel unwinder's loader; see unwinder.h and doc/UNWINDING.md. */
#include "bpf/unwinder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "unwind.skel.h"
#include "util/log.h"
#include "util/strbuf.h"

/* Where row i is in the mapped rows map: value sizes round up to 8 bytes. */
#define ROW_STRIDE ((sizeof(struct nw_cfi_row) + 7) & ~(size_t)7)

struct loaded {
	uint64_t dev, ino;     /* ino 0: empty slot (no file has inode 0) */
};

struct nw_bpf_unwinder {
	struct nw_unwind_bpf *skel;     /* event 0's copy, whose maps every copy shares */
	struct nw_unwind_bpf **copies;  /* per event, then per probe; copies[0] == skel */
	unsigned ncopies, nevents;
	unsigned *probes;               /* the source event each probe copy serves */
	struct ring_buffer *ring;
	struct bpf_link **links;
	size_t nlinks, cap_links;
	struct loaded *set;    /* open addressing: the modules whose tables are loaded */
	uint32_t nset, cap_set;
	uint32_t rows, max_rows;
	bool finds;            /* the program looks up mappings it was not told (bpf_find_vma) */
	int chunk0;            /* the first chunk, made before the rows map (its template); -1: used */
	/* The row chunks made so far, mapped: 16 bytes per row (8-aligned). */
	unsigned char *chunk[NW_BPF_MAX_CHUNKS];
	unsigned nchunks;
	/* nw_bpf_consume()'s callback, for the ring buffer's. */
	int (*fn)(void *arg, const void *rec, size_t size);
	void *arg;
};

/* libbpf's messages (the verifier's log among them) only with NARWHAL_BPF_LOG set. */
static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return getenv("NARWHAL_BPF_LOG") ? vfprintf(stderr, fmt, ap) : 0;
}

/* Has the caller CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN, before 5.8)? */
static bool capable_bpf(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return false;
	if (data[1].effective & (1u << (CAP_BPF - 32)) &&
	    data[1].effective & (1u << (CAP_PERFMON - 32)))
		return true;
	return data[0].effective & (1u << CAP_SYS_ADMIN);
}

bool nw_bpf_usable(char *why, size_t len)
{
#if !defined(__x86_64__)
	nw_set_err(why, len, "-g bpf unwinds x86-64 only");
	return false;
#else
	if (!capable_bpf()) {
		nw_set_err(why, len, "-g bpf needs root, or CAP_BPF and CAP_PERFMON");
		return false;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		nw_set_err(why, len, "-g bpf needs the kernel's BTF (/sys/kernel/btf/vmlinux: "
				     "CONFIG_DEBUG_INFO_BTF)");
		return false;
	}
	libbpf_set_print(silent);
	/* The newest helper it cannot do without (bpf_task_pt_regs(), 5.15). */
	if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs, NULL) <= 0) {
		nw_set_err(why, len, "-g bpf needs Linux 5.15 or later (bpf_task_pt_regs)");
		return false;
	}
	return true;
#endif
}

/*
 * Whether the program looks up the mappings it was not told: bpf_find_vma()
 * (5.17+), unless NARWHAL_BPF_FIND_VMA=0 leaves it to the recorder's, as
 * on an older kernel (a test of that path on a newer one).
 */
static bool finds_vmas(void)
{
	const char *e = getenv("NARWHAL_BPF_FIND_VMA");

	if (e && !strcmp(e, "0"))
		return false;
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_find_vma, NULL) > 0;
}

static int handle(void *ctx, void *data, size_t size)
{
	struct nw_bpf_unwinder *u = ctx;

	return u->fn ? u->fn(u->arg, data, size) : 0;
}

/* A chunk of rows: an array map, mapped by the recorder.  Its fd, or -errno. */
static int new_chunk(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "nw_rows", sizeof(uint32_t),
				sizeof(struct nw_cfi_row), NW_BPF_CHUNK_ROWS, &opts);

	return fd < 0 ? -errno : fd;
}

/*
 * Loads the copy of the program for event @e (e >= u->nevents: for probe
 * e - u->nevents), on the maps of u->skel when there is one.
 */
static int load_copy(struct nw_bpf_unwinder *u, const struct nw_bpf_opts *o, unsigned e,
		     const struct stat *ns)
{
	bool probe = e >= u->nevents;
	struct nw_unwind_bpf *sk = nw_unwind_bpf__open();
	int r;

	if (!sk)
		return -errno;
	u->copies[u->ncopies++] = sk;
	/* Pids as the recorder sees them: its own PID namespace's. */
	sk->rodata->pidns_dev = ns->st_dev;
	sk->rodata->pidns_ino = ns->st_ino;
	sk->rodata->max_user = o->max_frames ? o->max_frames : 512;
	sk->rodata->want_kernel = o->kernel;
	sk->rodata->ring_bytes = o->ring_bytes;
	sk->rodata->sample_id = probe ? NW_BPF_PROBE_ID(u->probes[e - u->nevents]) : NW_BPF_ID(e);
	sk->rodata->check = o->check;
	sk->rodata->regs_mask = o->regs_mask;
	sk->rodata->have_probes = o->nprobes > 0;
	sk->rodata->find_vmas = u->finds;
	/* Each copy verifies the one program it runs. */
	bpf_program__set_autoload(probe ? sk->progs.nw_unwind : sk->progs.nw_unwind_probe, false);
	/*
	 * NARWHAL_BPF_LOG=1: the verifier's statistics too (states,
	 * instructions, time); =2: its whole walk, state by state.
	 */
	if (getenv("NARWHAL_BPF_LOG"))
		bpf_program__set_log_level(probe ? sk->progs.nw_unwind_probe : sk->progs.nw_unwind,
					   getenv("NARWHAL_BPF_LOG")[0] == '2' ? 2 : 4);
	if (u->skel) {
		struct bpf_map *mine[] = { sk->maps.modules, sk->maps.rows, sk->maps.bufs,
					   sk->maps.samples, sk->maps.stats, sk->maps.vmas,
					   sk->maps.procs, sk->maps.walks, sk->maps.scratch, sk->maps.row_cache,
					   sk->maps.probe_regs, sk->maps.busy };
		struct bpf_map *first[] = { u->skel->maps.modules, u->skel->maps.rows,
					    u->skel->maps.bufs, u->skel->maps.samples,
					    u->skel->maps.stats, u->skel->maps.vmas,
					    u->skel->maps.procs, u->skel->maps.walks, u->skel->maps.scratch,
					    u->skel->maps.row_cache, u->skel->maps.probe_regs,
					    u->skel->maps.busy };

		for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
			if ((r = bpf_map__reuse_fd(mine[i], bpf_map__fd(first[i]))))
				return r;
	} else {
		if (bpf_map__set_max_entries(sk->maps.samples, o->ring_bytes))
			return -EINVAL;
		/*
		 * The rows map's template is the first chunk, made as every chunk
		 * is: up to 6.1 the kernel takes into a map of maps only maps
		 * whose timer offset is the template's, and libbpf's own template,
		 * made with BTF, has another (every table was refused).
		 */
		if ((u->chunk0 = new_chunk()) < 0)
			return u->chunk0;
		if ((r = bpf_map__set_inner_map_fd(sk->maps.rows, u->chunk0)))
			return r;
	}
	r = nw_unwind_bpf__load(sk);
	if (!r && !u->skel)
		u->skel = sk;
	return r;
}

int nw_bpf_open(struct nw_bpf_unwinder **ret, const struct nw_bpf_opts *o, char *err, size_t len)
{
	struct nw_bpf_unwinder *u = calloc(1, sizeof(*u));
	unsigned n = (o->nevents ? o->nevents : 1) + o->nprobes;
	struct stat ns = { 0 };
	int r = 0;

	*ret = NULL;
	if (!u || !(u->copies = calloc(n, sizeof(*u->copies))) ||
	    !(u->probes = calloc(o->nprobes + 1, sizeof(*u->probes)))) {
		if (u)
			free(u->copies);
		free(u);
		return -ENOMEM;
	}
	u->nevents = n - o->nprobes;
	u->chunk0 = -1;
	if (o->nprobes)
		memcpy(u->probes, o->probes, o->nprobes * sizeof(*u->probes));
	libbpf_set_print(silent);
	u->finds = finds_vmas();
	stat("/proc/self/ns/pid", &ns);
	u->max_rows = o->max_rows ? o->max_rows : NW_BPF_DEFAULT_ROWS;
	if (u->max_rows > NW_BPF_MAX_CHUNKS * NW_BPF_CHUNK_ROWS)
		u->max_rows = NW_BPF_MAX_CHUNKS * NW_BPF_CHUNK_ROWS;
	for (unsigned e = 0; e < n && !r; e++)
		r = load_copy(u, o, e, &ns);
	if (r) {
		nw_set_err(err, len, "the kernel refused the BPF unwinder: %s (NARWHAL_BPF_LOG=1 "
				     "shows why)", strerror(-r));
		goto fail;
	}
	u->ring = ring_buffer__new(bpf_map__fd(u->skel->maps.samples), handle, u, NULL);
	if (!u->ring) {
		r = -errno;
		nw_set_err(err, len, "cannot map the BPF unwinder's ring buffer: %s", strerror(-r));
		goto fail;
	}
	*ret = u;
	return 0;
fail:
	nw_bpf_close(u);
	return r;
}

int nw_bpf_attach(struct nw_bpf_unwinder *u, int fd, unsigned event)
{
	struct bpf_link *link;

	if (event >= u->nevents)
		return -EINVAL;
	if (nw_grow(&u->links, &u->cap_links, u->nlinks + 1, sizeof(*u->links)))
		return -ENOMEM;
	link = bpf_program__attach_perf_event(u->copies[event]->progs.nw_unwind, fd);
	if (!link)
		return -errno;
	u->links[u->nlinks++] = link;
	return 0;
}

int nw_bpf_attach_probe(struct nw_bpf_unwinder *u, int fd, unsigned which, int cpu)
{
	LIBBPF_OPTS(bpf_perf_event_opts, opts,
		    .bpf_cookie = cpu < 0 ? NW_BPF_ANY_CPU : (uint64_t)cpu);
	struct bpf_link *link;

	for (unsigned i = u->nevents; i < u->ncopies; i++) {
		if (u->probes[i - u->nevents] != which)
			continue;
		if (nw_grow(&u->links, &u->cap_links, u->nlinks + 1, sizeof(*u->links)))
			return -ENOMEM;
		link = bpf_program__attach_perf_event_opts(u->copies[i]->progs.nw_unwind_probe, fd,
							   &opts);
		if (!link)
			return -errno;
		u->links[u->nlinks++] = link;
		return 0;
	}
	return -EINVAL;
}

static uint32_t slot(const struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino)
{
	uint32_t mask = u->cap_set - 1;
	uint32_t h = (uint32_t)(((ino ^ dev << 40) * 0x9e3779b97f4a7c15ULL) >> 32) & mask;

	while (u->set[h].ino && (u->set[h].ino != ino || u->set[h].dev != dev))
		h = (h + 1) & mask;
	return h;
}

bool nw_bpf_finds(const struct nw_bpf_unwinder *u)
{
	return u->finds;
}

void nw_bpf_map(struct nw_bpf_unwinder *u, uint32_t tgid, const struct nw_bpf_vma *v)
{
	int fd = bpf_map__fd(u->skel->maps.procs);
	struct nw_bpf_proc_vmas pv;
	unsigned way;

	/*
	 * The program may replace the entry between this lookup and the
	 * update: a mapping it learned in that window is lost, and learned
	 * again.
	 */
	if (bpf_map_lookup_elem(fd, &tgid, &pv))
		memset(&pv, 0, sizeof(pv));
	for (unsigned i = 0; i < NW_BPF_PROC_WAYS; i++)
		if (pv.v[i].kind != NW_VMA_NONE && pv.v[i].start < v->end && v->start < pv.v[i].end) {
			pv.v[i].kind = NW_VMA_NONE;
			pv.gen++;
		}
	/* A free way, else the next in turn: the oldest of a full list goes. */
	for (way = 0; way < NW_BPF_PROC_WAYS && pv.v[way].kind != NW_VMA_NONE; way++)
		;
	if (way == NW_BPF_PROC_WAYS)
		way = pv.next++ % NW_BPF_PROC_WAYS;
	pv.v[way] = *v;
	pv.v[way].mm = 0;
	bpf_map_update_elem(fd, &tgid, &pv, BPF_ANY);
}

void nw_bpf_set_mappings(struct nw_bpf_unwinder *u, uint32_t tgid, const struct nw_bpf_vma *v,
			 unsigned n)
{
	int fd = bpf_map__fd(u->skel->maps.procs);
	struct nw_bpf_proc_vmas pv;
	uint32_t gen = 0;

	if (!bpf_map_lookup_elem(fd, &tgid, &pv))
		gen = pv.gen + 1;
	memset(&pv, 0, sizeof(pv));
	pv.gen = gen;
	for (unsigned i = 0; i < n && i < NW_BPF_PROC_WAYS; i++) {
		pv.v[i] = v[i];
		pv.v[i].mm = 0;
	}
	bpf_map_update_elem(fd, &tgid, &pv, BPF_ANY);
}

bool nw_bpf_has_module(const struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino)
{
	return u->cap_set && u->set[slot(u, dev, ino)].ino;
}

/* Notes (@dev, @ino) as loaded.  -ENOMEM. */
static int remember(struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino)
{
	if ((u->nset + 1) * 2 > u->cap_set) {
		struct loaded *old = u->set;
		uint32_t had = u->cap_set;

		u->cap_set = had ? had * 2 : 256;
		u->set = calloc(u->cap_set, sizeof(*u->set));
		if (!u->set) {
			u->set = old;
			u->cap_set = had;
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < had; i++)
			if (old[i].ino)
				u->set[slot(u, old[i].dev, old[i].ino)] = old[i];
		free(old);
	}
	u->set[slot(u, dev, ino)] = (struct loaded){ dev, ino };
	u->nset++;
	return 0;
}

/*
 * Chunks of rows up to @want in all: made, mapped, and put in the rows map
 * in one batch (each update of a map of maps waits for an RCU grace
 * period, 12-23 ms here; a batch waits once).  -errno.
 */
static int add_chunks(struct nw_bpf_unwinder *u, unsigned want)
{
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	size_t len = (size_t)NW_BPF_CHUNK_ROWS * ROW_STRIDE;
	uint32_t keys[NW_BPF_MAX_CHUNKS], count;
	int fds[NW_BPF_MAX_CHUNKS];
	unsigned had = u->nchunks, n = 0;
	int r = 0;

	if (want > NW_BPF_MAX_CHUNKS)
		return -ENOSPC;
	for (unsigned c = had; c < want && !r; c++, n++) {
		void *p;

		if (c == 0 && u->chunk0 >= 0) {
			fds[n] = u->chunk0;
			u->chunk0 = -1;
		} else {
			fds[n] = new_chunk();
		}
		if (fds[n] < 0) {
			r = fds[n];
			break;
		}
		keys[n] = c;
		/* Populated at once: a fault per page would cost as much as the copy. */
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fds[n], 0);
		if (p == MAP_FAILED)
			r = -errno;
		else
			u->chunk[c] = p;
	}
	count = r ? 0 : n;
	/* (A kernel whose maps of maps take no batch, ENOTSUPP: one by one, a wait each.) */
	if (count && bpf_map_update_batch(bpf_map__fd(u->skel->maps.rows), keys, fds, &count, &bo))
		for (unsigned i = 0; i < n && !r; i++)
			if (bpf_map_update_elem(bpf_map__fd(u->skel->maps.rows), &keys[i], &fds[i],
						BPF_ANY))
				r = -errno;
	/* The rows map holds the chunks; their fds are not needed after. */
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	if (r) {
		for (unsigned c = had; c < had + n; c++)
			if (u->chunk[c])
				munmap(u->chunk[c], len);
		memset(u->chunk + had, 0, n * sizeof(*u->chunk));
		return r;
	}
	u->nchunks = want;
	return 0;
}

int nw_bpf_add_module(struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino,
		      const struct nw_cfi_row *rows, uint32_t n)
{
	struct nw_bpf_module_key key = { .dev = dev, .ino = ino };
	struct nw_bpf_module mod = { .first = u->rows, .nrows = n };
	int r;

	if (nw_bpf_has_module(u, dev, ino))
		return 0;
	if (n > u->max_rows - u->rows)
		return -ENOSPC;
	if ((u->rows + n + NW_BPF_CHUNK_ROWS - 1) / NW_BPF_CHUNK_ROWS > u->nchunks &&
	    (r = add_chunks(u, (u->rows + n + NW_BPF_CHUNK_ROWS - 1) / NW_BPF_CHUNK_ROWS)))
		return r;
	/* Written in place: an mmapable array keeps its elements 8-aligned, 16 bytes apart. */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t at = u->rows + i;

		memcpy(u->chunk[at >> NW_BPF_CHUNK_SHIFT] +
			       (size_t)(at & (NW_BPF_CHUNK_ROWS - 1)) * ROW_STRIDE,
		       &rows[i], sizeof(rows[i]));
	}
	/* The module after its rows: the program never sees a half-loaded table. */
	r = bpf_map_update_elem(bpf_map__fd(u->skel->maps.modules), &key, &mod, BPF_ANY);
	if (r)
		return r;
	u->rows += n;
	return remember(u, dev, ino);
}

int nw_bpf_fd(const struct nw_bpf_unwinder *u)
{
	return u->ring ? ring_buffer__epoll_fd(u->ring) : -1;
}

int nw_bpf_consume(struct nw_bpf_unwinder *u, int (*fn)(void *arg, const void *rec, size_t size),
		   void *arg)
{
	u->fn = fn;
	u->arg = arg;
	return ring_buffer__consume(u->ring);
}

void nw_bpf_get_stats(const struct nw_bpf_unwinder *u, struct nw_bpf_stats *st)
{
	int ncpus = libbpf_num_possible_cpus(), fd = bpf_map__fd(u->skel->maps.stats);
	struct bpf_prog_info info = { 0 };
	uint32_t info_len = sizeof(info);
	uint64_t *v = ncpus > 0 ? calloc((size_t)ncpus, sizeof(*v)) : NULL;

	memset(st, 0, sizeof(*st));
	for (uint32_t k = 0; v && k < NW_BPF_NSTATS; k++)
		if (!bpf_map_lookup_elem(fd, &k, v))
			for (int c = 0; c < ncpus; c++)
				st->v[k] += v[c];
	free(v);
	st->rows = u->rows;
	st->max_rows = u->max_rows;
	st->table_bytes = (uint64_t)u->nchunks * NW_BPF_CHUNK_ROWS * ROW_STRIDE;
	st->modules = u->nset;
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(u->skel->progs.nw_unwind), &info, &info_len)) {
		st->run_ns = info.run_time_ns;
		st->runs = info.run_cnt;
		st->insns = info.verified_insns;
	}
}

void nw_bpf_close(struct nw_bpf_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nlinks; i++)
		bpf_link__destroy(u->links[i]);
	ring_buffer__free(u->ring);
	for (unsigned i = 0; i < u->nchunks; i++)
		munmap(u->chunk[i], (size_t)NW_BPF_CHUNK_ROWS * ROW_STRIDE);
	for (unsigned i = u->ncopies; i-- > 0;)
		nw_unwind_bpf__destroy(u->copies[i]);
	if (u->chunk0 >= 0)
		close(u->chunk0);
	free(u->copies);
	free(u->probes);
	free(u->links);
	free(u->set);
	free(u);
}
