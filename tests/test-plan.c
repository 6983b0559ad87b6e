/* SPDX-License-Identifier: MIT */
/*
 * The output plan (report/plan.h) with outputs of test kinds that note
 * what they were given: each input made once for the outputs that read
 * it one after the other, the stacks merged as visited when nothing
 * reshapes them, pruning only where it cannot show, the model's trees
 * freed after their last reader (right after the last input made from
 * them), failures that stop the plan with a message; and the views'
 * table run through it.  Models from fixture.h:
 *
 *   thread app    (1/1): main;a;b 2  main;a 3  main;c;d 1  (a trace: main;a;b, main;a)
 *   thread worker (1/2): main;a;b 4  main;e 1
 */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/folded.h"
#include "report/outputs.h"
#include "report/plan.h"

/* What an output of a test kind was given when it ran. */
struct seen {
	struct nw_stacks *stacks;
	bool deferred;             /* stacks to be merged as they are visited */
	bool marked;               /* stacks an output before marked: the same input */
	uint32_t nodes;            /* the stacks' tree's */
	bool trees;                /* the model had its trees */
	bool base_trees;           /* the base had its trees */
	bool diff, timeline;
};

static struct seen seen[8];
static int nseen;
/* The thread count an output sets on the stacks it is given, to find them again. */
#define MARK 4242

static int note(struct nw_output_in *in)
{
	struct seen *s = &seen[nseen++];

	assert_true(nseen <= 8);
	*s = (struct seen){ .stacks = in->stacks, .trees = !in->model->m->trees_dropped,
			    .base_trees = in->base && !in->base->m->trees_dropped,
			    .diff = in->diff != NULL, .timeline = in->timeline != NULL };
	if (in->stacks) {
		s->deferred = in->stacks->deferred.pending;
		s->marked = in->stacks->nthreads == MARK;
		s->nodes = in->stacks->tree->n;
		in->stacks->nthreads = MARK;
	}
	if (in->out)
		fputs("x\n", in->out);
	return 0;
}

static int fail_quietly(struct nw_output_in *in)
{
	note(in);
	return -ENOSPC;
}

static int fail_saying(struct nw_output_in *in)
{
	note(in);
	snprintf(in->err, in->errlen, "no luck");
	return -ENOENT;
}

#define READS(fn, ...)                                                                         \
	static void fn(const struct nw_plan *p, const struct nw_measurement *m,                 \
		       struct nw_reads *r)                                                      \
	{                                                                                      \
		*r = (struct nw_reads){ __VA_ARGS__ };                                         \
	}

READS(reads_trees, .what = NW_READS_TREES)
READS(reads_tree, .what = NW_READS_TREE)
READS(reads_tree_pt, .what = NW_READS_TREE, .per_thread = true)
READS(reads_visits, .what = NW_READS_VISITS)
READS(reads_names_pt, .what = NW_READS_VISITS, .names = true, .per_thread = true)
READS(reads_pruned, .what = NW_READS_PRUNED, .prune_share = 0.3)
READS(reads_pruned_pt, .what = NW_READS_PRUNED, .prune_share = 0.3, .per_thread = true)
READS(reads_node_map, .what = NW_READS_NODE_MAP | NW_READS_TRACES)
READS(reads_diff, .what = NW_READS_DIFF)
READS(reads_two, .what = NW_READS_TREE | NW_READS_DIFF)

static const struct nw_output_kind k_trees = { "trees", reads_trees, note };
static const struct nw_output_kind k_tree = { "tree", reads_tree, note };
static const struct nw_output_kind k_tree_pt = { "tree-pt", reads_tree_pt, note };
static const struct nw_output_kind k_visits = { "visits", reads_visits, note };
static const struct nw_output_kind k_names_pt = { "names-pt", reads_names_pt, note };
static const struct nw_output_kind k_pruned = { "pruned", reads_pruned, note };
static const struct nw_output_kind k_pruned_pt = { "pruned-pt", reads_pruned_pt, note };
static const struct nw_output_kind k_node_map = { "node-map", reads_node_map, note };
static const struct nw_output_kind k_diff = { "diff", reads_diff, note };
static const struct nw_output_kind k_two = { "two", reads_two, note };
static const struct nw_output_kind k_quiet = { "quiet", reads_trees, fail_quietly };
static const struct nw_output_kind k_saying = { "saying", reads_trees, fail_saying };

/* The known profile; app has a trace of two samples, worker none. */
static struct fx *known_profile(void)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th = fx_thread(fx, 1, 1, "app");
	uint32_t ab = fx_add(fx, th, "main;a;b", 2, 2000), a = fx_add(fx, th, "main;a", 3, 3000);

	th->trace = calloc(1, sizeof(*th->trace));
	assert_non_null(th->trace);
	nw_trace_init(th->trace, 1000000, 1000);
	for (int i = 0; i < 2; i++) {
		struct nw_trace_event ev = { .time = 1000000 + 1000 * (uint64_t)i, .value = 1000,
					     .node = i ? a : ab, .kind = NW_TRACE_SAMPLE };

		assert_int_equal(nw_trace_add(th->trace, &ev), 0);
	}
	fx->m->run.clock_start_ns = 1000000;
	fx->m->run.clock_end_ns = 2000000;
	fx_add(fx, th, "main;c;d", 1, 1000);
	th = fx_thread(fx, 1, 2, "worker");
	fx_add(fx, th, "main;a;b", 4, 4000);
	fx_add(fx, th, "main;e", 1, 1000);
	return fx;
}

/* A file for the views to write, removed at the end of the test. */
static char out_path[] = "/tmp/nw-test-plan-XXXXXX";

static int setup(void **state)
{
	int fd = mkstemp(out_path);

	assert_true(fd >= 0);
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	unlink(out_path);
	return 0;
}

/*
 * Runs the outputs @kinds (@n, views: to out_path) on a new known
 * profile with options @o (filter and views' file filled in): seen[]
 * says what they got.  The plan's result; its message in @err.
 */
static int run_plan(struct nw_report_opts *o, const struct nw_output_kind *const *kinds, int n,
		    char *err, size_t errlen, bool *dropped)
{
	struct fx *fx = known_profile();
	struct nw_plan_model model = { fx->m, "known", "known", 0, NULL };
	struct nw_plan *p;
	int ret;

	o->output = o->output ? o->output : out_path;
	p = nw_plan_new(o);
	assert_non_null(p);
	for (int i = 0; i < n; i++)
		assert_int_equal(nw_plan_add(p, kinds[i], NULL), 0);
	nseen = 0;
	ret = nw_plan_run(p, &model, NULL, err, errlen);
	if (dropped)
		*dropped = fx->m->trees_dropped;
	nw_plan_free(p);
	fx_free(fx);
	return ret;
}

/*
 * Outputs that read the same input one after the other share it; one
 * further on, after another output's input, gets it made again (not
 * held meanwhile).  Merged and per-thread trees are not the same input.
 */
static void test_share(void **state)
{
	const struct nw_output_kind *k[] = { &k_tree, &k_tree, &k_tree_pt, &k_tree };
	struct nw_report_opts o = { 0 };
	char err[256];

	assert_int_equal(run_plan(&o, k, 4, err, sizeof(err), NULL), 0);
	assert_int_equal(nseen, 4);
	assert_false(seen[0].marked);
	assert_true(seen[1].marked);
	assert_ptr_equal(seen[1].stacks, seen[0].stacks);
	assert_false(seen[2].marked);
	assert_false(seen[3].marked);
	assert_true(seen[2].nodes > seen[0].nodes);
	assert_int_equal(seen[3].nodes, seen[0].nodes);
}

/*
 * Visits are of the merge itself (no tree) when nothing reshapes or
 * inverts the stacks and they are not by names per thread; else of a
 * tree, shared with a reader of the same tree.
 */
static void test_visits(void **state)
{
	const struct nw_output_kind *k[] = { &k_visits, &k_names_pt, &k_tree };
	struct nw_report_opts o = { 0 };
	struct nw_stack_filter sf = { 0 };
	regex_t re;
	char err[256];

	assert_int_equal(run_plan(&o, k, 3, err, sizeof(err), NULL), 0);
	assert_true(seen[0].deferred);
	assert_int_equal(seen[0].nodes, 1);
	assert_false(seen[1].deferred);
	assert_true(seen[1].nodes > 1);
	assert_int_equal(regcomp(&re, "^a$", REG_EXTENDED | REG_NOSUB), 0);
	sf.focus = &re;
	o = (struct nw_report_opts){ .stack_filter = &sf };
	assert_int_equal(run_plan(&o, k, 3, err, sizeof(err), NULL), 0);
	assert_false(seen[0].deferred);
	/* Focused on a: main, a, b. */
	assert_int_equal(seen[0].nodes, 4);
	o = (struct nw_report_opts){ .fold_recursion = true };
	k[1] = &k_tree;
	assert_int_equal(run_plan(&o, k, 3, err, sizeof(err), NULL), 0);
	assert_false(seen[0].deferred);
	assert_true(seen[1].marked);
	regfree(&re);
}

/* A pruned tree is pruned merged and unshaped only; per thread it is whole. */
static void test_prune(void **state)
{
	const struct nw_output_kind *k[] = { &k_pruned, &k_tree, &k_pruned_pt, &k_tree_pt };
	struct nw_report_opts o = { 0 };
	char err[256];

	assert_int_equal(run_plan(&o, k, 4, err, sizeof(err), NULL), 0);
	/* main;c;d and main;e weigh 1 of 11 each: under 0.3, not expanded. */
	assert_int_equal(seen[0].nodes, 6);
	assert_int_equal(seen[1].nodes, 7);
	assert_int_equal(seen[2].nodes, seen[3].nodes);
	o.fold_recursion = true;
	assert_int_equal(run_plan(&o, k, 2, err, sizeof(err), NULL), 0);
	assert_int_equal(seen[0].nodes, seen[1].nodes);
}

/*
 * The model's trees go after their last reader: right after the last
 * input made from them when the output reads them no other way; the
 * stacks merged as visited and the node map need them while they run.
 */
static void test_trees_dropped(void **state)
{
	const struct nw_output_kind *k1[] = { &k_trees, &k_tree, &k_tree, &k_trees };
	const struct nw_output_kind *k2[] = { &k_trees, &k_tree, &k_tree };
	const struct nw_output_kind *k3[] = { &k_visits, &k_node_map, &k_node_map };
	struct nw_report_opts o = { 0 };
	char err[256];
	bool dropped;

	assert_int_equal(run_plan(&o, k1, 4, err, sizeof(err), &dropped), 0);
	for (int i = 0; i < 4; i++)
		assert_true(seen[i].trees);
	assert_true(dropped);
	assert_int_equal(run_plan(&o, k2, 3, err, sizeof(err), &dropped), 0);
	assert_true(seen[0].trees);
	assert_false(seen[1].trees);
	assert_false(seen[2].trees);
	assert_int_equal(run_plan(&o, k3, 3, err, sizeof(err), &dropped), 0);
	for (int i = 0; i < 3; i++)
		assert_true(seen[i].trees);
	assert_true(seen[1].timeline && seen[2].timeline);
	assert_true(dropped);
}

/*
 * A failure stops the plan with the output's message, else "FILE:
 * strerror"; a file that cannot be opened is said so before the output
 * runs; an output that reads two inputs is refused.
 */
static void test_failures(void **state)
{
	const struct nw_output_kind *k[] = { &k_saying, &k_trees };
	struct nw_filter worker = { .tid = 2, .pid = -1 };
	struct nw_report_opts o = { 0 };
	char err[256], want[300];

	assert_int_equal(run_plan(&o, k, 2, err, sizeof(err), NULL), -ENOENT);
	assert_string_equal(err, "no luck");
	assert_int_equal(nseen, 1);
	k[0] = &k_quiet;
	assert_int_equal(run_plan(&o, k, 2, err, sizeof(err), NULL), -ENOSPC);
	snprintf(want, sizeof(want), "%s: %s", out_path, strerror(ENOSPC));
	assert_string_equal(err, want);
	o.output = "/nonexistent/dir/out";
	k[0] = &k_trees;
	assert_int_equal(run_plan(&o, k, 2, err, sizeof(err), NULL), -ENOENT);
	assert_string_equal(err, "/nonexistent/dir/out: No such file or directory");
	assert_int_equal(nseen, 0);
	o.output = NULL;
	k[0] = &k_two;
	assert_int_equal(run_plan(&o, k, 2, err, sizeof(err), NULL), -EINVAL);
	assert_int_equal(nseen, 0);
	/* No timeline without traces (worker has none): said before anything runs. */
	o.filter = &worker;
	k[0] = &k_node_map;
	assert_int_equal(run_plan(&o, k, 1, err, sizeof(err), NULL), -ENODATA);
	assert_non_null(strstr(err, "known: no trace of the threads selected"));
}

/* What a plan reads of a model as opened: the trees for all but a threads view, the traces. */
static void test_reads(void **state)
{
	struct fx *fx = known_profile();
	struct nw_report_opts o = { 0 };
	struct nw_plan *p = nw_plan_new(&o);

	assert_non_null(p);
	assert_int_equal(nw_plan_reads(p, fx->m), 0);
	assert_int_equal(nw_plan_add(p, &nw_views[NW_VIEW_THREADS], NULL), 0);
	assert_int_equal(nw_plan_reads(p, fx->m), 0);
	assert_int_equal(nw_plan_add(p, &k_visits, NULL), 0);
	assert_int_equal(nw_plan_reads(p, fx->m), NW_READS_TREES);
	assert_int_equal(nw_plan_add(p, &nw_views[NW_VIEW_TIMELINE], NULL), 0);
	assert_int_equal(nw_plan_reads(p, fx->m), NW_READS_TREES | NW_READS_TRACES);
	nw_plan_free(p);
	fx_free(fx);
}

/* --diff: the two models joined once for the outputs that read it, both models' trees freed. */
static void test_diff(void **state)
{
	struct fx *fx = known_profile(), *bfx = known_profile();
	struct nw_report_opts o = { .diff = true, .output = out_path };
	struct nw_plan_model model = { fx->m, "new", "new", 0, NULL };
	struct nw_plan_model base = { bfx->m, "old", "old", 0, NULL };
	struct nw_plan *p = nw_plan_new(&o);
	char err[256];

	assert_non_null(p);
	assert_int_equal(nw_plan_add(p, &k_trees, NULL), 0);
	assert_int_equal(nw_plan_add(p, &k_diff, NULL), 0);
	assert_int_equal(nw_plan_add(p, &k_diff, NULL), 0);
	nseen = 0;
	assert_int_equal(nw_plan_run(p, &model, &base, err, sizeof(err)), 0);
	assert_int_equal(nseen, 3);
	assert_true(seen[0].trees && seen[0].base_trees);
	assert_true(seen[1].diff && seen[2].diff);
	assert_false(seen[1].trees || seen[1].base_trees);
	/* Without a base there is nothing to join. */
	assert_int_equal(nw_plan_run(p, &model, NULL, err, sizeof(err)), -EINVAL);
	nw_plan_free(p);
	fx_free(fx);
	fx_free(bfx);
}

/* The contents of @path (the caller frees them). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);
	size_t n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/*
 * The views' table through a plan: folded stacks as the view writes
 * them, each from its own merge; --callers without a match says so.
 */
static void test_views(void **state)
{
	const struct nw_output_kind *k[] = { &nw_views[NW_VIEW_FOLDED],
					     &nw_views[NW_VIEW_FOLDED] };
	struct nw_report_opts o = { 0 };
	struct fx *fx = known_profile();
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);
	struct nw_view_opts vo = { 0 };
	char *buf = NULL, *got, err[256];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	regex_t re;

	assert_non_null(s);
	assert_non_null(out);
	nw_stacks_defer(s, NULL, false);
	assert_int_equal(nw_view_folded(out, s, &vo), 0);
	fclose(out);
	assert_int_equal(run_plan(&o, k, 1, err, sizeof(err), NULL), 0);
	got = slurp(out_path);
	assert_string_equal(got, buf);
	free(got);
	assert_int_equal(regcomp(&re, "^nothing$", REG_EXTENDED | REG_NOSUB), 0);
	o = (struct nw_report_opts){ .re = &re, .re_text = "^nothing$" };
	k[0] = &nw_views[NW_VIEW_CALLERS];
	assert_int_equal(run_plan(&o, k, 2, err, sizeof(err), NULL), -ENOENT);
	assert_string_equal(err, "known: no function matches ^nothing$");
	regfree(&re);
	free(buf);
	nw_stacks_free(s);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_visits),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_trees_dropped),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_reads),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_views),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
