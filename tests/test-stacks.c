/* SPDX-License-Identifier: MIT */
/*
 * How symbolic stacks are built from a model (fixture.h): threads merged
 * into one tree, the same function in two epochs one frame, inline chains
 * expanded into nested frames that share their physical frame's sp tag,
 * "[unknown]" and module+0xADDR frames (callers at their return address
 * - 1), per-thread frames, filters, and a split moving weight below prefix
 * frames.  The frame table itself (interning) is tested here too.  A
 * measurement directory read back and its stacks are test-reader's.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/folded.h"
#include "report/stacks.h"
#include "report/views.h"

static struct nw_stacks *build(const struct fx *fx, const struct nw_stacks_opts *o)
{
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, o), 0);
	return s;
}

/* The stacks of the threads @f selects, merged. */
static struct nw_stacks *merged(const struct fx *fx, const struct nw_filter *f)
{
	struct nw_stacks_opts o = { .filter = f };

	return build(fx, &o);
}

/* Folded stacks of metric @m (the caller frees them). */
static char *folded(struct nw_stacks *s, unsigned m)
{
	struct nw_view_opts o = { .metric = m };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	assert_int_equal(nw_view_folded(out, s, &o), 0);
	fclose(out);
	return buf;
}

static void assert_folded(struct nw_stacks *s, unsigned m, const char *want)
{
	char *got = folded(s, m);

	if (strcmp(got, want))
		fail_msg("folded stacks of metric %u:\n%s\nexpected:\n%s", m, got, want);
	free(got);
}

/* The index of the only frame called @name, or -1. */
static int64_t frame_index(const struct nw_stacks *s, const char *name)
{
	int64_t found = -1;

	for (uint32_t i = 0; i < s->frames.n; i++) {
		if (!strcmp(s->frames.v[i].name, name)) {
			assert_int_equal(found, -1);
			found = i;
		}
	}
	return found;
}

/* The node at path "a;b;c" of the stacks' tree, or NW_CCT_NONE. */
static uint32_t find_path(const struct nw_stacks *s, const char *path)
{
	char buf[256], *save = NULL;
	uint32_t n = NW_CCT_ROOT;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok_r(buf, ";", &save); tok && n != NW_CCT_NONE;
	     tok = strtok_r(NULL, ";", &save)) {
		int64_t f = frame_index(s, tok);

		n = f < 0 ? NW_CCT_NONE : nw_cct_find(s->tree, n, (uint64_t)f);
	}
	return n;
}

static uint64_t total(const struct nw_cct *t, unsigned m)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < t->n; i++)
		sum += nw_cct_metrics(t, i)[m];
	return sum;
}

static void test_merge_threads(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_stacks *s;

	(void)state;
	fx_add(fx, fx_thread(fx, 1, 1, "app"), "main;a", 2, 2000);
	fx_add(fx, fx_thread(fx, 1, 2, "app"), "main;a", 3, 3000);
	fx_add(fx, fx_th(fx, 1), "main;b", 1, 1000);
	s = merged(fx, NULL);
	assert_int_equal(s->nthreads, 2);
	/* One node per calling context, one frame per function: root, main, a, b. */
	assert_int_equal(s->tree->n, 4);
	assert_int_equal(s->frames.n, 3);
	assert_folded(s, 0, "main;a 5\nmain;b 1\n");
	assert_folded(s, 1, "main;a 5000\nmain;b 1000\n");
	assert_null(s->thread_node);
	nw_stacks_free(s);
	fx_free(fx);
}

/* The same function in two epochs (mapped elsewhere in each) is one frame. */
static void test_epochs(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	static const uint64_t v4[] = { 4, 4000 }, v7[] = { 7, 7000 };
	struct nw_mthread *th;
	struct nw_stacks *s;
	uint32_t e1;
	int64_t work;

	(void)state;
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;work@/lib/libfoo.so", 5, 5000);
	e1 = fx_epoch(fx);
	assert_int_equal(e1, 1);
	fx_put(fx, th, e1, fx_path(fx, th, e1, "main;work@/lib/libfoo.so", 0, NULL), v4, 2);
	th = fx_thread(fx, 1, 2, "worker");
	fx_put(fx, th, e1, fx_path(fx, th, e1, "main;work@/lib/libfoo.so", 0, NULL), v7, 2);
	/* Two physical trees of one thread, at other addresses. */
	th = fx_th(fx, 0);
	assert_int_equal(th->ntrees, 2);
	assert_int_not_equal(th->trees[0].cct->nodes[1].ip, th->trees[1].cct->nodes[1].ip);

	s = merged(fx, NULL);
	assert_folded(s, 0, "main;work 16\n");
	assert_folded(s, 1, "main;work 16000\n");
	work = frame_index(s, "work");
	assert_true(work >= 0);
	assert_int_equal(s->frames.v[work].kind, NW_FRAME_FUNCTION);
	assert_string_equal(s->frames.v[work].module, "/lib/libfoo.so");
	assert_string_equal(s->frames.v[frame_index(s, "main")].module, FX_MODULE);
	assert_int_equal(s->tree->n, 3);
	nw_stacks_free(s);
	fx_free(fx);
}

/*
 * An address whose symbol entry is an inline chain becomes nested frames,
 * outermost nearest the root, all with the physical frame's sp tag; the
 * outer function is the same frame (and node) as where it is not inlined.
 */
static void test_inline_chain(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	static const uint64_t leaf_sps[] = { 0x7000, 0x6000 };
	static const uint64_t caller_sps[] = { 0x7000, 0x6000, 0x5000 };
	static const uint64_t plain_sps[] = { 0x7000, 0x6800, 0x6700 };
	static const uint64_t v3[] = { 3, 3000 }, v1[] = { 1, 1000 }, v2[] = { 2, 2000 };
	struct nw_filter one = { .tid = 1, .pid = -1 };
	struct nw_mthread *th;
	struct nw_stacks *s;
	uint32_t n;

	(void)state;
	fx_inline(fx, "hot", "compute;helper_inline");
	th = fx_thread(fx, 1, 1, "app");
	/* As a leaf (looked up at its ip) and as a caller (at its return address - 1). */
	fx_put(fx, th, 0, fx_path(fx, th, 0, "main;hot", 0, leaf_sps), v3, 2);
	fx_put(fx, th, 0, fx_path(fx, th, 0, "main;hot;leaf", 0, caller_sps), v1, 2);
	/* compute where nothing is inlined into it, in another thread. */
	th = fx_thread(fx, 1, 2, "app");
	fx_put(fx, th, 0, fx_path(fx, th, 0, "main;compute;x", 0, plain_sps), v2, 2);

	s = merged(fx, &one);
	assert_folded(s, 0, "main;compute;helper_inline 3\n"
			    "main;compute;helper_inline;leaf 1\n");
	/* root, main, compute, helper_inline, leaf */
	assert_int_equal(s->tree->n, 5);
	n = find_path(s, "main;compute");
	assert_int_not_equal(n, NW_CCT_NONE);
	assert_int_equal(s->tree->nodes[n].sp, 0x6000);
	n = find_path(s, "main;compute;helper_inline");
	assert_int_equal(s->tree->nodes[n].sp, 0x6000);
	assert_int_equal(s->tree->nodes[find_path(s, "main")].sp, 0x7000);
	assert_int_equal(s->tree->nodes[find_path(s, "main;compute;helper_inline;leaf")].sp,
			 0x5000);
	nw_stacks_free(s);

	s = merged(fx, NULL);
	assert_folded(s, 0, "main;compute;helper_inline 3\n"
			    "main;compute;helper_inline;leaf 1\n"
			    "main;compute;x 2\n");
	/* root, main, compute, helper_inline, leaf, x */
	assert_int_equal(s->tree->n, 6);
	assert_int_equal(s->frames.n, 5);
	nw_stacks_free(s);
	fx_free(fx);
}

/*
 * Frames of nothing the symbol table knows: "[unknown]" where no module
 * maps the ip, "module+0xADDR" (the ELF address of the PC: a caller's return
 * address, not the address looked up) where the module has no entry for it.
 */
static void test_unknown_and_address(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th;
	struct nw_stacks *s;
	const struct nw_func *f;

	(void)state;
	/* Addresses 0x1000, 0x1100, 0x1200, 0x1300 of /bin/app, in this order. */
	fx_func(fx, "main", NULL, 0);
	fx_func(fx, "?mid", NULL, 0);
	fx_func(fx, "leaf", NULL, 0);
	fx_func(fx, "?anon", NULL, 0);
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;?mid;leaf", 1, 0);
	fx_add(fx, th, "main;?anon", 2, 0);
	fx_add(fx, th, "[unknown];main", 3, 0);
	fx_add(fx, th, "main;?x@/usr/lib/libbar.so", 4, 0);
	s = merged(fx, NULL);
	assert_folded(s, 0, "[unknown];main 3\n"
			    "main;app+0x1100;leaf 1\n"
			    "main;app+0x1300 2\n"
			    "main;libbar.so+0x1400 4\n");
	f = &s->frames.v[frame_index(s, "[unknown]")];
	assert_int_equal(f->kind, NW_FRAME_UNKNOWN);
	assert_null(f->module);
	f = &s->frames.v[frame_index(s, "app+0x1100")];
	assert_int_equal(f->kind, NW_FRAME_ADDRESS);
	assert_string_equal(f->module, FX_MODULE);
	assert_null(f->file);
	f = &s->frames.v[frame_index(s, "libbar.so+0x1400")];
	assert_int_equal(f->kind, NW_FRAME_ADDRESS);
	assert_string_equal(f->module, "/usr/lib/libbar.so");
	nw_stacks_free(s);
	fx_free(fx);
}

/* Each thread below a frame of its own, "comm-tid" (spaces and ';' made '_'). */
static void test_per_thread(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_stacks_opts o = { .per_thread = true };
	struct nw_filter only_11 = { .tid = 11, .pid = -1 };
	struct nw_mthread *th;
	struct nw_stacks *s;
	int64_t f;

	(void)state;
	th = fx_thread(fx, 10, 10, "app");
	fx_add(fx, th, "main;a", 2, 20);
	fx_add(fx, th, "main;b", 1, 10);
	th = fx_thread(fx, 10, 11, "pool worker;1");
	fx_add(fx, th, "start;a", 4, 40);
	fx_thread(fx, 10, 12, "idle");

	s = build(fx, &o);
	assert_folded(s, 0, "app-10;main;a 2\n"
			    "app-10;main;b 1\n"
			    "pool_worker_1-11;start;a 4\n");
	/* Metrics other than the first come along too. */
	assert_int_equal(total(s->tree, 1), 70);
	f = frame_index(s, "pool_worker_1-11");
	assert_true(f >= 0);
	assert_int_equal(s->frames.v[f].kind, NW_FRAME_THREAD);
	assert_string_equal(s->frames.v[f].module, NW_FRAMES_THREAD_MODULE);
	/* Each thread's node; none for a thread without samples. */
	assert_non_null(s->thread_node);
	assert_int_equal(s->tree->nodes[s->thread_node[1]].ip, (uint64_t)f);
	assert_int_equal(s->tree->nodes[s->thread_node[1]].parent, NW_CCT_ROOT);
	assert_int_equal(s->thread_node[2], NW_CCT_NONE);
	assert_int_equal(s->nthreads, 3);
	nw_stacks_free(s);

	o.filter = &only_11;
	s = build(fx, &o);
	assert_folded(s, 0, "pool_worker_1-11;start;a 4\n");
	assert_int_equal(s->thread_node[0], NW_CCT_NONE);
	assert_int_not_equal(s->thread_node[1], NW_CCT_NONE);
	assert_int_equal(s->nthreads, 1);
	nw_stacks_free(s);
	fx_free(fx);
}

static void test_filters(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_filter all = NW_FILTER_ALL, by_pid = { .tid = -1, .pid = 10 };
	struct nw_filter by_comm = { .tid = -1, .pid = -1, .comm = "app" };
	struct nw_filter pid_comm = { .tid = -1, .pid = 20, .comm = "app" };
	struct nw_filter none = { .tid = 11, .pid = -1, .comm = "app" };
	struct nw_stacks *s;

	(void)state;
	fx_add(fx, fx_thread(fx, 10, 10, "app"), "main;a", 1, 0);
	fx_add(fx, fx_thread(fx, 10, 11, "worker"), "main;b", 2, 0);
	fx_add(fx, fx_thread(fx, 20, 20, "app"), "main;c", 4, 0);

	assert_true(nw_filter_thread(NULL, fx_th(fx, 1)));
	assert_true(nw_filter_thread(&all, fx_th(fx, 1)));
	assert_true(nw_filter_thread(&by_pid, fx_th(fx, 1)));
	assert_false(nw_filter_thread(&by_pid, fx_th(fx, 2)));
	assert_false(nw_filter_thread(&by_comm, fx_th(fx, 1)));
	assert_false(nw_filter_thread(&none, fx_th(fx, 1)));

	s = merged(fx, &all);
	assert_int_equal(s->nthreads, 3);
	assert_int_equal(total(s->tree, 0), 7);
	nw_stacks_free(s);
	s = merged(fx, &by_pid);
	assert_int_equal(s->nthreads, 2);
	assert_folded(s, 0, "main;a 1\nmain;b 2\n");
	nw_stacks_free(s);
	s = merged(fx, &by_comm);
	assert_folded(s, 0, "main;a 1\nmain;c 4\n");
	nw_stacks_free(s);
	s = merged(fx, &pid_comm);
	assert_folded(s, 0, "main;c 4\n");
	nw_stacks_free(s);
	s = merged(fx, &none);
	assert_int_equal(s->nthreads, 0);
	assert_int_equal(s->tree->n, 1);
	nw_stacks_free(s);
	fx_free(fx);
}

/* A section frame of @s (interned before building, as a split's are). */
static uint32_t section(struct nw_stacks *s, const char *name)
{
	int64_t f = nw_frames_intern(&s->frames, NW_FRAME_SECTION, name, NULL, 0,
				     NW_FRAMES_SECTION_MODULE);

	assert_true(f >= 0);
	return (uint32_t)f;
}

/*
 * The stacks of @fx (@o) with @split, whose prefix 0 is [section outer];
 * [section inner] and prefix 1 [section outer].
 */
static struct nw_stacks *split_stacks(const struct fx *fx, struct nw_stacks_opts *o,
				      struct nw_split *split)
{
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);
	uint32_t outer;

	assert_non_null(s);
	assert_int_equal(split->nprefixes, 2);
	outer = section(s, "[section outer]");
	split->prefixes[0].frames[0] = outer;
	split->prefixes[0].frames[1] = section(s, "[section inner]");
	split->prefixes[1].frames[0] = outer;
	o->split = split;
	assert_int_equal(nw_stacks_build(s, o), 0);
	return s;
}

/*
 * A split moves part of a node's weight below prefix frames; the entries
 * of threads the filter leaves out are skipped, and what an entry moves is
 * at most what its node has.
 */
static void test_split(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_filter worker = { .tid = 2, .pid = -1 };
	struct nw_stacks_opts o = { 0 };
	struct nw_split_entry entries[2];
	uint64_t values[4] = { 2, 2000, 4, 4000 };
	uint32_t both[2], outer[1], a0, a1;
	struct nw_split_prefix prefixes[2] = { { 2, both }, { 1, outer } };
	struct nw_split split = { .prefixes = prefixes, .nprefixes = 2, .entries = entries,
				  .n = 2, .values = values };
	struct nw_stacks *s;

	(void)state;
	a0 = fx_add(fx, fx_thread(fx, 1, 1, "app"), "main;a", 5, 5000);
	fx_add(fx, fx_th(fx, 0), "main;b", 1, 1000);
	a1 = fx_add(fx, fx_thread(fx, 1, 2, "worker"), "main;a", 4, 4000);
	/* Thread 0's main;a: 2 below [section outer];[section inner].  Thread 1's: all 4
	 * below [section outer]. */
	entries[0] = (struct nw_split_entry){ .thread = 0, .tree = 0, .node = a0, .prefix = 0 };
	entries[1] = (struct nw_split_entry){ .thread = 1, .tree = 0, .node = a1, .prefix = 1 };

	s = split_stacks(fx, &o, &split);
	assert_folded(s, 0, "[section outer];[section inner];main;a 2\n"
			    "[section outer];main;a 4\n"
			    "main;a 3\n"
			    "main;b 1\n");
	assert_folded(s, 1, "[section outer];[section inner];main;a 2000\n"
			    "[section outer];main;a 4000\n"
			    "main;a 3000\n"
			    "main;b 1000\n");
	assert_int_equal(total(s->tree, 0), 10);
	nw_stacks_free(s);

	/* Thread 0 left out: its entry is skipped, thread 1's still applies. */
	values[2] = 1;
	values[3] = 1000;
	o.filter = &worker;
	s = split_stacks(fx, &o, &split);
	assert_folded(s, 0, "[section outer];main;a 1\nmain;a 3\n");
	nw_stacks_free(s);

	/* Asked to move more than the node has (10 of 4): all of it moves. */
	values[2] = 10;
	values[3] = 10000;
	s = split_stacks(fx, &o, &split);
	assert_folded(s, 0, "[section outer];main;a 4\n");
	assert_folded(s, 1, "[section outer];main;a 4000\n");
	nw_stacks_free(s);
	fx_free(fx);
}

/* Stacks need a model to be built from. */
/*
 * Pruning: a node lighter (in the metric asked) than the share asked of the
 * total is a leaf that holds its subtree's metrics; heavier ones, with
 * their frames and weights, are as without pruning; the totals stay; and
 * what pruning cannot follow is refused.
 */
static void test_prune(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_stacks_opts o = { .prune_share = 0.1, .prune_metric = 1 };
	struct nw_mthread *th = fx_thread(fx, 1, 1, "app");
	struct nw_stacks *s, *full;
	uint32_t n;

	(void)state;
	/* Total 100 samples, 10000 of metric 1; under 1000 of it is pruned. */
	fx_add(fx, th, "main;hot;leaf", 60, 6000);
	fx_add(fx, th, "main;hot", 10, 1000);
	fx_add(fx, fx_thread(fx, 1, 2, "app"), "main;hot;leaf", 20, 2000);
	fx_add(fx, th, "main;cold;a;b", 5, 500);
	fx_add(fx, th, "main;cold;c", 4, 400);
	fx_add(fx, th, "main;cold", 1, 100);
	full = merged(fx, NULL);
	s = build(fx, &o);
	/* main, hot, leaf as they are; cold, 1000 in all, the limit: kept, its children not. */
	assert_folded(s, 1, "main;cold 100\nmain;cold;a 500\nmain;cold;c 400\n"
			    "main;hot 1000\nmain;hot;leaf 8000\n");
	assert_int_equal(total(s->tree, 0), total(full->tree, 0));
	assert_int_equal(total(s->tree, 1), total(full->tree, 1));
	n = find_path(s, "main;cold;a");
	assert_int_not_equal(n, NW_CCT_NONE);
	/* a took b's metrics, both of them. */
	assert_int_equal(nw_cct_metrics(s->tree, n)[0], 5);
	assert_int_equal(s->tree->nodes[n].first_child, NW_CCT_NONE);
	assert_true(s->tree->n < full->tree->n);
	nw_stacks_free(s);
	/* A higher share: cold (1000) goes whole into one node. */
	o.prune_share = 0.15;
	s = build(fx, &o);
	assert_folded(s, 1, "main;cold 1000\nmain;hot 1000\nmain;hot;leaf 8000\n");
	nw_stacks_free(s);
	/* Per thread, with a split or a node map, pruning is refused. */
	s = nw_stacks_new(fx->m, fx->m->nmetrics);
	o.per_thread = true;
	assert_int_equal(nw_stacks_build(s, &o), -EINVAL);
	o.per_thread = false;
	o.node_map = true;
	assert_int_equal(nw_stacks_build(s, &o), -EINVAL);
	nw_stacks_free(s);
	nw_stacks_free(full);
	fx_free(fx);
}

static int fold_stop(void *arg, const struct nw_visit *v)
{
	(void)arg, (void)v;
	return -ECANCELED;
}

/* The path of symbolic node @n, "a;b;c", in @buf. */
static const char *path_of(const struct nw_stacks *s, uint32_t n, char *buf, size_t len)
{
	uint32_t v[64], d = 0;
	size_t at = 0;

	for (; n != NW_CCT_ROOT && d < 64; n = s->tree->nodes[n].parent)
		v[d++] = n;
	buf[0] = '\0';
	while (d-- > 0)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ";" : "",
				       s->frames.v[s->tree->nodes[v[d]].ip].name);
	return buf;
}

/* A pseudo-random number (an LCG's high bits): the same paths in every run. */
static uint32_t next(uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/*
 * Workers expand the groups of little work side by side and graft them:
 * the same stacks, the same frames and node maps, however many there are.
 */
static void test_workers(void **state)
{
	static const char *const names[] = { "main", "a", "b", "c", "d", "e", "f", "g" };
	static const unsigned counts[] = { 2, 3, 5 };
	struct fx *fx = fx_new(NULL, 0);
	struct nw_stacks_opts o = { .workers = 1 };
	struct nw_stacks_opts t = { .workers = 1, .per_thread = true };
	struct nw_stacks_opts m = { .workers = 1, .node_map = true };
	struct nw_stacks_opts p = { .workers = 1, .prune_share = 0.01, .prune_metric = 0 };
	struct nw_stacks *one, *one_t, *one_m, *one_p;
	char *want, *want_t, *want_p;
	uint32_t seed = 7;

	(void)state;
	fx_inline(fx, "e", "e;inl");
	for (unsigned th = 0; th < 3; th++) {
		struct nw_mthread *mt = fx_thread(fx, 1, 1 + th, "app");

		for (unsigned k = 0; k < 300; k++) {
			char path[128];
			size_t at = (size_t)snprintf(path, sizeof(path), "main");
			unsigned depth = 1 + next(&seed) % 7;

			for (unsigned d = 0; d < depth; d++)
				at += (size_t)snprintf(path + at, sizeof(path) - at, ";%s",
						       names[1 + next(&seed) % 7]);
			fx_add(fx, mt, path, 1 + next(&seed) % 5, 1000);
		}
	}
	one = build(fx, &o);
	one_t = build(fx, &t);
	one_m = build(fx, &m);
	one_p = build(fx, &p);
	want = folded(one, 0);
	want_t = folded(one_t, 0);
	want_p = folded(one_p, 0);
	for (unsigned i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct nw_stacks *s;
		char *got, a[512], b[512];

		o.workers = t.workers = m.workers = p.workers = counts[i];
		s = build(fx, &o);
		got = folded(s, 0);
		assert_string_equal(got, want);
		assert_int_equal(s->tree->n, one->tree->n);
		assert_int_equal(s->frames.n, one->frames.n);
		for (uint32_t f = 0; f < s->frames.n; f++)
			assert_string_equal(s->frames.v[f].name, one->frames.v[f].name);
		free(got);
		nw_stacks_free(s);

		s = build(fx, &t);
		got = folded(s, 0);
		assert_string_equal(got, want_t);
		free(got);
		nw_stacks_free(s);

		s = build(fx, &p);
		got = folded(s, 0);
		assert_string_equal(got, want_p);
		assert_int_equal(s->tree->n, one_p->tree->n);
		free(got);
		nw_stacks_free(s);

		/* Every physical node maps to a node of the same path. */
		s = build(fx, &m);
		for (uint32_t ti = 0; ti < fx->m->nthreads; ti++) {
			const struct nw_cct *src = fx->m->threads[ti].trees[0].cct;

			for (uint32_t n = 1; n < src->n; n++)
				assert_string_equal(
					path_of(s, s->node_map[ti][0][n], a, sizeof(a)),
					path_of(one_m, one_m->node_map[ti][0][n], b, sizeof(b)));
		}
		nw_stacks_free(s);
	}
	assert_true(one->tree->n > 500);
	free(want);
	free(want_t);
	free(want_p);
	nw_stacks_free(one);
	nw_stacks_free(one_t);
	nw_stacks_free(one_m);
	nw_stacks_free(one_p);
	fx_free(fx);
}

typedef int (*stream_view)(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o);

/* A view @fn of @fx's threads that @f selects, by metric @m, merged as visited: no tree kept. */
static char *view_of(const struct fx *fx, const struct nw_filter *f, unsigned m, stream_view fn)
{
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);
	struct nw_view_opts o = { .metric = m };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(s);
	assert_non_null(out);
	nw_stacks_defer(s, f, false);
	assert_int_equal(fn(out, s, &o), 0);
	/* Only the root is left of the tree. */
	assert_int_equal(s->tree->n, 1);
	nw_stacks_free(s);
	fclose(out);
	return buf;
}

/* The folded stacks of @fx's threads that @f selects, streamed: no tree built. */
static char *folded_stream(const struct fx *fx, const struct nw_filter *f, unsigned m)
{
	return view_of(fx, f, m, nw_view_folded);
}

/*
 * Folded stacks streamed from the merge are those of the built tree: names
 * in order, one name in two modules one frame of the line, subtrees of no
 * weight silent, a thread filter kept.  A visitor with per-thread stacks
 * is refused, and its error stops the build.
 */
static void test_visit(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *a = fx_thread(fx, 1, 1, "app"), *b = fx_thread(fx, 1, 2, "app");
	struct nw_filter only_b = NW_FILTER_ALL;
	struct nw_stacks_opts o = { .per_thread = true, .visit = fold_stop, .visit_names = true };
	struct nw_stacks *s;
	char *want, *got;

	(void)state;
	fx_add(fx, a, "main;zeta;leaf", 3, 300);
	fx_add(fx, a, "main;alpha", 2, 200);
	fx_add(fx, b, "main;alpha@/lib/liba.so;leaf", 4, 400);
	fx_add(fx, b, "main;alpha;x", 1, 100);
	fx_add(fx, b, "main", 5, 0);
	fx_path(fx, a, 0, "main;silent;deeper", 0, NULL);
	for (unsigned m = 0; m < 2; m++) {
		s = merged(fx, NULL);
		want = folded(s, m);
		nw_stacks_free(s);
		got = folded_stream(fx, NULL, m);
		assert_string_equal(got, want);
		free(got);
		free(want);
	}
	/* alpha in two modules is one name: one line each for main;alpha and below. */
	got = folded_stream(fx, NULL, 0);
	assert_string_equal(got, "main 5\nmain;alpha 2\nmain;alpha;leaf 4\nmain;alpha;x 1\n"
				 "main;zeta;leaf 3\n");
	free(got);
	only_b.tid = 2;
	got = folded_stream(fx, &only_b, 0);
	assert_string_equal(got, "main 5\nmain;alpha;leaf 4\nmain;alpha;x 1\n");
	free(got);
	s = nw_stacks_new(fx->m, fx->m->nmetrics);
	assert_int_equal(nw_stacks_build(s, &o), -EINVAL);
	o.per_thread = false;
	assert_int_equal(nw_stacks_build(s, &o), -ECANCELED);
	nw_stacks_free(s);
	fx_free(fx);
}

/* The flat profile of @fx's threads that @f selects: built (@stream false) or streamed. */
static char *flat(const struct fx *fx, const struct nw_filter *f, unsigned m, bool stream)
{
	struct nw_stacks_opts so = { .filter = f };
	struct nw_view_opts o = { .metric = m };
	struct nw_stacks *s;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (stream)
		return view_of(fx, f, m, nw_view_flat);
	s = build(fx, &so);
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(nw_view_flat(out, s, &o), 0);
	nw_stacks_free(s);
	fclose(out);
	return buf;
}

/*
 * The flat profile streamed from the merge is the one of the built tree:
 * recursion counted once in the cumulative weight, samples without a
 * stack in the total, either metric, a thread filter.
 */
static void test_flat_stream(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *a = fx_thread(fx, 1, 1, "app"), *b = fx_thread(fx, 1, 2, "app");
	struct nw_filter only_b = NW_FILTER_ALL;
	const struct nw_filter *filters[] = { NULL, &only_b };

	(void)state;
	only_b.tid = 2;
	fx_add(fx, a, "main;rec;work;rec;rec;leaf", 3, 300);
	fx_add(fx, a, "main;rec", 2, 200);
	fx_add(fx, b, "main;other@/lib/libo.so;leaf", 4, 400);
	fx_add(fx, b, "main;work;rec", 1, 100);
	fx_add(fx, b, "main", 5, 7000);
	fx_path(fx, a, 0, "main;silent", 0, NULL);
	for (unsigned fi = 0; fi < 2; fi++) {
		for (unsigned m = 0; m < 2; m++) {
			char *want = flat(fx, filters[fi], m, false), *got = flat(fx, filters[fi], m, true);

			assert_string_equal(got, want);
			free(want);
			free(got);
		}
	}
	fx_free(fx);
}

/* Each visit as a line: "depth name thread metrics". */
static int log_visit(void *arg, const struct nw_visit *v)
{
	const struct nw_stacks *s = ((void **)arg)[0];
	FILE *out = ((void **)arg)[1];

	fprintf(out, "%u %s %d %llu,%llu\n", v->depth, s->frames.v[v->frame].name,
		v->thread == UINT32_MAX ? -1 : (int)v->thread, (unsigned long long)v->metrics[0],
		(unsigned long long)v->metrics[1]);
	return 0;
}

/* The visits of @fx's stacks (@per_thread, by @names): of a built tree, or deferred. */
static char *visits(const struct fx *fx, bool per_thread, bool names, bool deferred)
{
	struct nw_stacks_opts so = { .per_thread = per_thread };
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	void *arg[2] = { s, out };

	assert_non_null(s);
	assert_non_null(out);
	if (deferred)
		nw_stacks_defer(s, NULL, per_thread);
	else
		assert_int_equal(nw_stacks_build(s, &so), 0);
	assert_int_equal(nw_stacks_visit(s, names, log_visit, arg), 0);
	/* Deferred stacks are visited once: the merge kept no tree. */
	if (deferred)
		assert_int_equal(nw_stacks_visit(s, names, log_visit, arg), -EINVAL);
	nw_stacks_free(s);
	fclose(out);
	return buf;
}

/*
 * A tree made before gives the visits the merge gives as it makes it:
 * merged, per thread (each thread's frame first, the threads in model
 * order), and by names (one name in two modules one node, its metrics
 * summed).  By names, deferred per-thread stacks are refused.
 */
static void test_visit_tree(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *a = fx_thread(fx, 1, 1, "app"), *b = fx_thread(fx, 1, 2, "app");
	struct nw_stacks *s;
	char *want, *got;

	(void)state;
	fx_add(fx, b, "main;alpha@/lib/liba.so;leaf", 4, 400);
	fx_add(fx, a, "main;zeta;leaf", 3, 300);
	fx_add(fx, a, "main;alpha", 2, 200);
	fx_add(fx, b, "main;alpha;x", 1, 100);
	fx_add(fx, b, "main", 5, 0);
	for (int k = 0; k < 3; k++) {
		bool per_thread = k == 1, names = k == 2;

		want = visits(fx, per_thread, names, true);
		got = visits(fx, per_thread, names, false);
		assert_string_equal(got, want);
		free(want);
		free(got);
	}
	got = visits(fx, false, true, false);
	assert_string_equal(got, "1 main -1 5,0\n2 alpha -1 2,200\n3 leaf -1 4,400\n"
				 "3 x -1 1,100\n2 zeta -1 0,0\n3 leaf -1 3,300\n");
	free(got);
	got = visits(fx, true, false, false);
	assert_non_null(strstr(got, "1 app-1 0 0,0\n2 main 0 0,0\n"));
	assert_non_null(strstr(got, "1 app-2 1 0,0\n2 main 1 5,0\n"));
	free(got);
	s = nw_stacks_new(fx->m, fx->m->nmetrics);
	nw_stacks_defer(s, NULL, true);
	assert_int_equal(nw_stacks_visit(s, true, log_visit, (void *[2]){ s, stdout }), -EINVAL);
	nw_stacks_free(s);
	fx_free(fx);
}

static void test_no_model(void **state)
{
	struct nw_stacks_opts o = { 0 };
	struct nw_stacks *s = nw_stacks_new(NULL, 2);

	(void)state;
	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &o), -EINVAL);
	nw_stacks_free(s);
	nw_stacks_free(NULL);
}

/* The frame table: one frame per (kind, name, module). */
static void test_intern(void **state)
{
	struct nw_frames p;
	int64_t a, b, c;

	(void)state;
	nw_frames_init(&p);
	a = nw_frames_intern(&p, NW_FRAME_FUNCTION, "f", NULL, 0, "/lib/a.so");
	b = nw_frames_intern(&p, NW_FRAME_FUNCTION, "f", "f.c", 12, "/lib/a.so");
	c = nw_frames_intern(&p, NW_FRAME_FUNCTION, "f", NULL, 0, "/lib/b.so");
	assert_true(a >= 0);
	assert_int_equal(a, b);
	assert_int_not_equal(a, c);
	assert_int_equal(nw_frames_intern(&p, NW_FRAME_FUNCTION, "f", NULL, 0, NULL),
			 nw_frames_intern(&p, NW_FRAME_FUNCTION, "f", NULL, 0, NULL));
	/* What a later occurrence knows fills in what the first lacked. */
	assert_string_equal(p.v[a].file, "f.c");
	assert_int_equal(p.v[a].line, 12);
	/* Many names: the index grows and keeps finding them. */
	for (int i = 0; i < 5000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "fn%d", i);
		assert_int_equal(nw_frames_intern(&p, NW_FRAME_FUNCTION, name, NULL, 0, "m"),
				 3 + i);
	}
	assert_int_equal(nw_frames_intern(&p, NW_FRAME_FUNCTION, "fn1234", NULL, 0, "m"), 3 + 1234);
	assert_int_equal(nw_frames_intern(&p, NW_FRAME_FUNCTION, "f", NULL, 0, "/lib/b.so"), c);
	/* The kind is part of the key; a frame needs a name. */
	assert_int_equal(nw_frames_intern(&p, NW_FRAME_THREAD, "f", NULL, 0, "/lib/b.so"), 5003);
	assert_int_equal(nw_frames_intern(&p, NW_FRAME_FUNCTION, NULL, NULL, 0, "m"), -EINVAL);
	assert_int_equal(p.n, 5004);
	nw_frames_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_threads),
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_inline_chain),
		cmocka_unit_test(test_unknown_and_address),
		cmocka_unit_test(test_per_thread),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_workers),
		cmocka_unit_test(test_visit),
		cmocka_unit_test(test_flat_stream),
		cmocka_unit_test(test_visit_tree),
		cmocka_unit_test(test_no_model),
		cmocka_unit_test(test_intern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
