/* SPDX-License-Identifier: MIT */
/*
 * Recursion folding on hand-built symbolic trees (stacks without a model,
 * frames interned by hand): direct and mutual recursion, subtrees
 * re-parented onto existing nodes, what the sp tags say about each fold,
 * frames that are not functions, exact metrics, and random trees checked
 * against a folding done path by path.  Merged threads come from a model
 * (fixture.h) through the symbolic stacks.
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
#include "report/recursion.h"
#include "report/stacks.h"
#include "report/views.h"

#define APP "/bin/app"

static uint32_t fn(struct nw_stacks *p, const char *name)
{
	/* "[unknown]" is what the stacks make of a frame no module maps. */
	int64_t f = strcmp(name, "[unknown]")
			? nw_frames_intern(&p->frames, NW_FRAME_FUNCTION, name, NULL, 0, APP)
			: nw_frames_intern(&p->frames, NW_FRAME_UNKNOWN, name, NULL, 0, NULL);

	assert_true(f >= 0);
	return (uint32_t)f;
}

/*
 * Adds @samples (and 1000 * @samples of period) at @path ("main;a;b") of
 * @t.  Frame i (0 = outermost) gets sp tag @sps[i] when @sps is given,
 * else 0.  Returns the leaf node.
 */
static uint32_t add_sp(struct nw_stacks *p, struct nw_cct *t, const char *path, uint64_t samples,
		       const uint64_t *sps)
{
	char buf[4096], *save = NULL;
	uint32_t n = NW_CCT_ROOT, i = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save), i++) {
		n = nw_cct_child(t, n, fn(p, s), sps ? sps[i] : 0);
		assert_int_not_equal(n, NW_CCT_NONE);
	}
	nw_cct_metrics(t, n)[0] += samples;
	nw_cct_metrics(t, n)[1] += 1000 * samples;
	return n;
}

static uint32_t add(struct nw_stacks *p, struct nw_cct *t, const char *path, uint64_t samples)
{
	return add_sp(p, t, path, samples, NULL);
}

/* Stacks made by hand: no model, an empty tree of two metrics, frames interned by fn(). */
static struct nw_stacks *new_stacks(void)
{
	struct nw_stacks *p = nw_stacks_new(NULL, 2);

	assert_non_null(p);
	return p;
}

/* The view @view of @t (a tree over the frames of @p), as a string (the caller frees it). */
typedef int (*view_fn)(FILE *, struct nw_stacks *, const struct nw_view_opts *);

static char *view(view_fn v, const struct nw_stacks *p, const struct nw_cct *t, unsigned metric)
{
	struct nw_view_opts o = {.percent_limit = 0, .metric = metric};
	struct nw_stacks s = *p;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	s.tree = (struct nw_cct *)t;
	assert_int_equal(v(out, &s, &o), 0);
	fclose(out);
	return buf;
}

static void assert_folded(const struct nw_stacks *p, const struct nw_cct *t, const char *want)
{
	char *got = view(nw_view_folded, p, t, 0);

	if (strcmp(got, want) != 0)
		fail_msg("folded stacks:\n%s\nexpected:\n%s", got, want);
	free(got);
}

/* Sum of metric @m over the tree. */
static uint64_t total(const struct nw_cct *t, unsigned m)
{
	uint64_t s = 0;

	for (uint32_t i = 0; i < t->n; i++)
		s += nw_cct_metrics(t, i)[m];
	return s;
}

/* Self of metric @m per function, into @self (p->frames.n entries). */
static void self_by_func(const struct nw_stacks *p, const struct nw_cct *t, unsigned m,
			 uint64_t *self)
{
	memset(self, 0, p->frames.n * sizeof(*self));
	for (uint32_t i = 1; i < t->n; i++)
		self[t->nodes[i].ip] += nw_cct_metrics(t, i)[m];
}

static void assert_metrics_kept(const struct nw_stacks *p, const struct nw_cct *a,
				const struct nw_cct *b)
{
	uint64_t *sa = calloc(p->frames.n + 1, sizeof(*sa));
	uint64_t *sb = calloc(p->frames.n + 1, sizeof(*sb));

	assert_non_null(sa);
	assert_non_null(sb);
	for (unsigned m = 0; m < 2; m++) {
		assert_int_equal(total(a, m), total(b, m));
		self_by_func(p, a, m, sa);
		self_by_func(p, b, m, sb);
		for (uint32_t f = 0; f < p->frames.n; f++)
			if (sa[f] != sb[f])
				fail_msg("self of %s (metric %u): %llu before folding, %llu after",
					 p->frames.v[f].name, m, (unsigned long long)sa[f],
					 (unsigned long long)sb[f]);
	}
	free(sa);
	free(sb);
}

/* No function with a module appears twice on any root-to-node path. */
static void assert_no_repeats(const struct nw_stacks *p, const struct nw_cct *t)
{
	for (uint32_t i = 1; i < t->n; i++)
		for (uint32_t a = t->nodes[i].parent; a != NW_CCT_ROOT; a = t->nodes[a].parent)
			if (t->nodes[a].ip == t->nodes[i].ip && p->frames.v[t->nodes[i].ip].module)
				fail_msg("%s repeats on a path", p->frames.v[t->nodes[i].ip].name);
}

static void test_direct(void **state)
{
	struct nw_stacks *p = new_stacks();
	struct nw_cct *t = nw_cct_new(2), *f;
	static const uint64_t sps[] = {0x7000, 0x6f00, 0x6e00, 0x6d00, 0x6c00};
	struct nw_fold_stats st;

	assert_non_null(t);
	add_sp(p, t, "main;fib;fib;fib;leaf", 3, sps);
	add_sp(p, t, "main;fib;fib", 2, sps);
	add_sp(p, t, "main;fib", 1, sps);
	/* Without folding the recursion is nested. */
	assert_folded(p, t, "main;fib 1\nmain;fib;fib 2\nmain;fib;fib;fib;leaf 3\n");

	f = nw_recursion_fold(&p->frames, t, &st);
	assert_non_null(f);
	assert_folded(p, f, "main;fib 3\nmain;fib;leaf 3\n");
	assert_int_equal(f->n, 4); /* root, main, fib, leaf */
	/* The two deeper fib frames, each below the shallower one. */
	assert_int_equal(st.folded, 2);
	assert_int_equal(st.confirmed, 2);
	assert_int_equal(st.same_frame + st.unordered + st.no_sp, 0);
	/* The folded node keeps the shallowest frame's tag. */
	assert_int_equal(
	    f->nodes[nw_cct_find(f, nw_cct_find(f, NW_CCT_ROOT, fn(p, "main")), fn(p, "fib"))].sp,
	    0x6f00);
	assert_metrics_kept(p, t, f);
	/*
	 * The flat view counts a function once per stack: with nothing between
	 * the invocations (direct recursion), folding changes nothing there.
	 */
	for (unsigned m = 0; m < 2; m++) {
		char *flat_t = view(nw_view_flat, p, t, m), *flat_f = view(nw_view_flat, p, f, m);

		assert_string_equal(flat_t, flat_f);
		free(flat_t);
		free(flat_f);
	}
	nw_cct_free(f);
	nw_cct_free(t);
	nw_stacks_free(p);
}

static void test_mutual(void **state)
{
	struct nw_stacks *p = new_stacks();
	struct nw_cct *t = nw_cct_new(2), *f;
	struct nw_fold_stats st;

	assert_non_null(t);
	add(p, t, "a;b;a;b;x", 4);
	add(p, t, "a;b;a", 2);
	add(p, t, "a;b;a;b", 1);
	add(p, t, "a;b;a;c", 5);
	f = nw_recursion_fold(&p->frames, t, &st);
	assert_non_null(f);
	/* a;b;a;c: the deeper a is a's node, c goes below it. */
	assert_folded(p, f, "a 2\na;b 1\na;b;x 4\na;c 5\n");
	assert_no_repeats(p, f);
	assert_metrics_kept(p, t, f);
	/* The deeper a (into a) and the deepest b (into the existing b below a). */
	assert_int_equal(st.folded, 2);
	assert_int_equal(st.no_sp, 2);
	assert_int_equal(st.confirmed, 0);
	nw_cct_free(f);
	nw_cct_free(t);
	nw_stacks_free(p);
}

/* A re-parented subtree merges with what the shallower node already has. */
static void test_reparent_merges(void **state)
{
	struct nw_stacks *p = new_stacks();
	struct nw_cct *t = nw_cct_new(2), *f;

	assert_non_null(t);
	add(p, t, "main;f;g;h", 1);
	add(p, t, "main;f;k;f;g;h", 2);
	add(p, t, "main;f;k;f;g", 3);
	add(p, t, "main;f;k", 4);
	f = nw_frames_fold_recursion(&p->frames, t);
	assert_non_null(f);
	assert_folded(p, f, "main;f;g 3\nmain;f;g;h 3\nmain;f;k 4\n");
	/* root, main, f, g, h, k: one node per function on each path */
	assert_int_equal(f->n, 6);
	assert_metrics_kept(p, t, f);
	nw_cct_free(f);
	nw_cct_free(t);
	nw_stacks_free(p);
}

/* What the sp tags say: below (new invocation), equal (one frame), above, unknown. */
static void test_sp_classes(void **state)
{
	struct nw_stacks *p = new_stacks();
	struct nw_cct *t = nw_cct_new(2), *f;
	static const uint64_t below[] = {0x9000, 0x8000, 0x7000, 0x6000};
	static const uint64_t equal[] = {0x9000, 0x8000, 0x8000, 0x7000};
	static const uint64_t above[] = {0x9000, 0x8000, 0x8800, 0x7000};
	static const uint64_t zero[] = {0x9000, 0x8000, 0, 0x7000};
	struct nw_fold_stats st;

	assert_non_null(t);
	add_sp(p, t, "main;r1;r1;x", 1, below);
	add_sp(p, t, "main;r2;r2;x", 1, equal);
	add_sp(p, t, "main;r3;r3;x", 1, above);
	add_sp(p, t, "main;r4;r4;x", 1, zero);
	f = nw_recursion_fold(&p->frames, t, &st);
	assert_non_null(f);
	assert_int_equal(st.folded, 4);
	assert_int_equal(st.confirmed, 1);
	assert_int_equal(st.same_frame, 1);
	assert_int_equal(st.unordered, 1);
	assert_int_equal(st.no_sp, 1);
	/* Every one is folded: the result never depends on where a tag came from. */
	assert_folded(p, f, "main;r1;x 1\nmain;r2;x 1\nmain;r3;x 1\nmain;r4;x 1\n");
	nw_cct_free(f);
	nw_cct_free(t);
	nw_stacks_free(p);
}

/* [unknown] is not a function: two of them on a path are not a recursion. */
static void test_unknown_not_folded(void **state)
{
	struct nw_stacks *p = new_stacks();
	struct nw_cct *t = nw_cct_new(2), *f;
	struct nw_fold_stats st;

	assert_non_null(t);
	add(p, t, "[unknown];x;[unknown];y", 2);
	add(p, t, "[unknown];x;[unknown];x;z", 1);
	f = nw_recursion_fold(&p->frames, t, &st);
	assert_non_null(f);
	assert_folded(p, f, "[unknown];x;[unknown];y 2\n[unknown];x;z 1\n");
	assert_int_equal(st.folded, 1); /* the second x only */
	assert_metrics_kept(p, t, f);
	nw_cct_free(f);
	nw_cct_free(t);
	nw_stacks_free(p);
}

/* The root's own samples and an empty tree. */
static void test_root_and_empty(void **state)
{
	struct nw_stacks *p = new_stacks();
	struct nw_cct *t = nw_cct_new(2), *f;

	assert_non_null(t);
	f = nw_frames_fold_recursion(&p->frames, t);
	assert_non_null(f);
	assert_int_equal(f->n, 1);
	nw_cct_free(f);
	nw_cct_metrics(t, NW_CCT_ROOT)[0] = 7;
	add(p, t, "main;main", 1);
	f = nw_frames_fold_recursion(&p->frames, t);
	assert_non_null(f);
	assert_int_equal(f->n, 2);
	assert_int_equal(nw_cct_metrics(f, NW_CCT_ROOT)[0], 7);
	assert_int_equal(nw_cct_metrics(f, 1)[0], 1);
	assert_metrics_kept(p, t, f);
	nw_cct_free(f);
	nw_cct_free(t);
	nw_stacks_free(p);
}

/* The symbolic stacks of the threads of @fx that @f selects. */
static struct nw_stacks *stacks_of(const struct fx *fx, const struct nw_filter *f)
{
	struct nw_stacks_opts o = {.filter = f};
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &o), 0);
	return s;
}

/* Adds @samples (and 1000 * @samples of period) at @path of @th, frame i tagged @sps[i]. */
static void add_thread(struct fx *fx, struct nw_mthread *th, const char *path, uint64_t samples,
		       const uint64_t *sps)
{
	uint64_t v[2] = {samples, 1000 * samples};

	fx_put(fx, th, 0, fx_path(fx, th, 0, path, 0, sps), v, 2);
}

/* Frame @node's ip of one stacks' tree, as the frame of the same name in another's (@arg). */
struct frame_map {
	const struct nw_frames *from;
	struct nw_frames *to;
};

static uint64_t map_frame(const struct nw_cct *src, uint32_t node, void *arg)
{
	struct frame_map *fm = arg;
	const struct nw_func *f = &fm->from->v[src->nodes[node].ip];
	int64_t i = nw_frames_intern(fm->to, f->kind, f->name, f->file, f->line, f->module);

	assert_true(i >= 0);
	return (uint64_t)i;
}

/* Folding a merged tree equals merging the folded thread trees. */
static void test_merged_threads(void **state)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_stacks *p, *one;
	struct nw_mthread *th;
	struct nw_cct *m, *fm, *fa, *acc;
	/* One tag per frame: five for start;walk;walk;walk;leaf. */
	static const uint64_t hi[] = {0x7fff0000, 0x7ffe0000, 0x7ffd0000, 0x7ffc0000, 0x7ffb0000};
	static const uint64_t lo[] = {0x10000, 0x0f000, 0x0e000, 0x0d000};
	char *a, *b;

	th = fx_thread(fx, 1, 1, "one");
	add_thread(fx, th, "start;walk", 1, lo);
	add_thread(fx, th, "start;walk;walk;walk", 3, lo);
	th = fx_thread(fx, 1, 2, "two");
	/* Tags of another stack, far above: the merged tree mixes them. */
	add_thread(fx, th, "start;walk;walk;walk;leaf", 5, hi);
	p = stacks_of(fx, NULL);
	m = p->tree;
	fm = nw_frames_fold_recursion(&p->frames, m);
	assert_non_null(fm);
	acc = nw_cct_new(2);
	assert_non_null(acc);
	for (uint32_t i = 0; i < fx->m->nthreads; i++) {
		struct nw_filter only = {.tid = fx->m->threads[i].tid, .pid = -1};
		struct frame_map map;

		/* Each thread's stacks have frames of their own: matched by name into p's. */
		one = stacks_of(fx, &only);
		map = (struct frame_map){.from = &one->frames, .to = &p->frames};
		fa = nw_frames_fold_recursion(&one->frames, one->tree);
		assert_non_null(fa);
		assert_int_equal(nw_cct_merge(acc, fa, map_frame, &map), 0);
		nw_cct_free(fa);
		nw_stacks_free(one);
	}
	a = view(nw_view_folded, p, fm, 0);
	b = view(nw_view_folded, p, acc, 0);
	assert_string_equal(a, b);
	assert_string_equal(a, "start;walk 4\nstart;walk;leaf 5\n");
	free(a);
	free(b);
	assert_metrics_kept(p, m, fm);
	nw_cct_free(acc);
	nw_cct_free(fm);
	nw_stacks_free(p);
	fx_free(fx);
}

/* ---- random trees against a path-by-path reference ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

struct ref_line {
	char stack[512];
	uint64_t count;
};

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const struct ref_line *)a)->stack, ((const struct ref_line *)b)->stack);
}

/*
 * Folds one path the way the definition reads: walking root to leaf, a
 * function already on the folded path cuts the path back to it.
 */
static void ref_fold(const char *const *path, int n, char *out, size_t len)
{
	const char *st[64];
	int depth = 0;

	for (int i = 0; i < n; i++) {
		int j;

		for (j = 0; j < depth; j++)
			if (strcmp(st[j], path[i]) == 0 && strcmp(path[i], "[unknown]") != 0)
				break;
		if (j < depth)
			depth = j + 1;
		else
			st[depth++] = path[i];
	}
	out[0] = '\0';
	for (int j = 0; j < depth; j++) {
		strncat(out, st[j], len - strlen(out) - 1);
		if (j + 1 < depth)
			strncat(out, ";", len - strlen(out) - 1);
	}
}

static void test_random_against_reference(void **state)
{
	static const char *const names[] = {"a", "b", "c", "d", "[unknown]"};
	enum { PATHS = 60, ROUNDS = 200 };
	uint64_t seed = 42;

	for (int round = 0; round < ROUNDS; round++) {
		struct nw_stacks *p = new_stacks();
		struct nw_cct *t = nw_cct_new(2), *f;
		struct ref_line *ref = calloc(PATHS, sizeof(*ref));
		char *want = calloc(PATHS, 600), *w = want;
		uint32_t nref = 0;

		assert_non_null(t);
		assert_non_null(ref);
		assert_non_null(want);
		for (int k = 0; k < PATHS; k++) {
			const char *path[12];
			char joined[256] = "";
			int n = 1 + (int)(rng_next(&seed) % 12);
			uint64_t c = 1 + rng_next(&seed) % 5;

			for (int i = 0; i < n; i++) {
				path[i] = names[rng_next(&seed) % 5];
				strcat(joined, path[i]);
				if (i + 1 < n)
					strcat(joined, ";");
			}
			add(p, t, joined, c);
			ref_fold(path, n, ref[nref].stack, sizeof(ref[nref].stack));
			ref[nref++].count = c;
		}
		/* The reference folded view: sorted, equal stacks summed. */
		qsort(ref, nref, sizeof(*ref), cmp_ref);
		for (uint32_t i = 0; i < nref;) {
			uint64_t c = 0;
			uint32_t j = i;

			while (j < nref && strcmp(ref[j].stack, ref[i].stack) == 0)
				c += ref[j++].count;
			w += sprintf(w, "%s %llu\n", ref[i].stack, (unsigned long long)c);
			i = j;
		}
		f = nw_frames_fold_recursion(&p->frames, t);
		assert_non_null(f);
		assert_folded(p, f, want);
		assert_no_repeats(p, f);
		assert_metrics_kept(p, t, f);
		nw_cct_free(f);
		nw_cct_free(t);
		free(ref);
		free(want);
		nw_stacks_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_direct),
	    cmocka_unit_test(test_mutual),
	    cmocka_unit_test(test_reparent_merges),
	    cmocka_unit_test(test_sp_classes),
	    cmocka_unit_test(test_unknown_not_folded),
	    cmocka_unit_test(test_root_and_empty),
	    cmocka_unit_test(test_merged_threads),
	    cmocka_unit_test(test_random_against_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
