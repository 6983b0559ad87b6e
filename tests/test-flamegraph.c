/* SPDX-License-Identifier: MIT */
/*
 * The SVG flame graph of the stacks of a known model (fixture.h, one thread):
 *
 *   main;a;b 30000  main;a 10000  main;z 59999  main;tiny 1    (total 100000)
 *
 * main, a, b live in /bin/app, z and tiny in /lib/libz.so.  At the default
 * width (1180 pixels of frames) a sample is 0.0118 px, so tiny (under a
 * tenth of a pixel) is not drawn.  XML validity, rendering and the script
 * in a browser are checked by tests/integration/export-flamegraph.sh.
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

#include "export/flamegraph.h"
#include "fixture.h"

/* Adds @w to metric @m at @path; every frame is in /src/x.c at line 7. */
static void add(struct fx *fx, const char *path, unsigned m, uint64_t w)
{
	struct nw_mthread *th = fx->m->nthreads ? fx_th(fx, 0) : fx_thread(fx, 1, 1, "app");
	char buf[256], keys[1024] = "", *save = NULL;
	uint64_t v[2] = { 0, 0 };

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = strtok_r(buf, ";", &save); s; s = strtok_r(NULL, ";", &save)) {
		char key[300];

		snprintf(key, sizeof(key), "%s%s", s,
			 s[0] == 'z' || strcmp(s, "tiny") == 0 ? "@/lib/libz.so" : "");
		fx_func(fx, key, "/src/x.c", 7);
		snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s%s",
			 keys[0] ? ";" : "", key);
	}
	assert_true(m < 2);
	v[m] = w;
	fx_addv(fx, th, keys, 0, v, 2);
}

static struct fx *known_tree(uint64_t zw)
{
	struct fx *fx = fx_new(NULL, 0);

	add(fx, "main;a;b", 0, 30000);
	add(fx, "main;a", 0, 10000);
	add(fx, "main;z", 0, zw);
	add(fx, "main;tiny", 0, 1);
	return fx;
}

/* The stacks of @fx, without what @o cannot draw when @prune. */
static struct nw_stacks *stacks_for(const struct fx *fx, const struct nw_flamegraph_opts *o,
				    bool prune)
{
	struct nw_stacks_opts so = { 0 };
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);

	if (prune) {
		so.prune_share = nw_flamegraph_min_share(o);
		so.prune_metric = o->metric;
	}
	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &so), 0);
	return s;
}

static struct nw_stacks *stacks_of(const struct fx *fx)
{
	static const struct nw_flamegraph_opts none = { .base_metric = -1 };

	return stacks_for(fx, &none, false);
}

/* The flame graph of the stacks of @fx, built whole or without what it cannot draw. */
static char *draw_stacks(const struct fx *fx, const struct nw_flamegraph_opts *o, bool prune)
{
	struct nw_stacks *st = stacks_for(fx, o, prune);
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	assert_int_equal(nw_flamegraph_write(f, st, o), 0);
	fclose(f);
	nw_stacks_free(st);
	return s;
}

static char *draw(const struct fx *fx, const struct nw_flamegraph_opts *o)
{
	return draw_stacks(fx, o, false);
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *q = strstr(s, what); q; q = strstr(q + 1, what))
		n++;
	return n;
}

/* The <g> element of the frame whose tooltip starts "@name\n" (a copy). */
static char *frame(const char *svg, const char *name)
{
	char key[300];
	const char *t, *g, *end;
	char *c;

	snprintf(key, sizeof(key), "<title>%s\n", name);
	t = strstr(svg, key);
	if (!t)
		fail_msg("no frame %s", name);
	assert_null(strstr(t + 1, key));
	for (g = t; g > svg && strncmp(g, "<g class=\"f\"", 12) != 0; g--)
		;
	end = strstr(t, "</g>");
	assert_non_null(end);
	c = strndup(g, (size_t)(end - g));
	assert_non_null(c);
	return c;
}

/* Attribute @attr (the first one, as in `width="`) of @el as a number. */
static double attr(const char *el, const char *attr)
{
	char key[64];
	const char *a;

	snprintf(key, sizeof(key), " %s=\"", attr);
	a = strstr(el, key);
	if (!a)
		fail_msg("no %s in %s", attr, el);
	return strtod(a + strlen(key), NULL);
}

static char *fill(const char *el)
{
	const char *a = strstr(el, "fill=\"");

	assert_non_null(a);
	return strndup(a + 6, strcspn(a + 6, "\""));
}

static void test_layout(void **state)
{
	struct fx *p = known_tree(59999);
	struct nw_flamegraph_opts o = { .title = "T", .subtitle = "sub", .base_metric = -1 };
	char *svg, *el;

	(void)state;
	svg = draw(p, &o);
	assert_non_null(strstr(svg, "<?xml version=\"1.0\""));
	assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, "</svg>\n"));
	assert_non_null(strstr(svg, ">T</text>"));
	assert_non_null(strstr(svg, ">sub</text>"));
	/* all, main, a, b, z: tiny is too narrow to draw. */
	assert_int_equal(count(svg, "<g class=\"f\""), 5);
	assert_null(strstr(svg, "<title>tiny"));

	el = frame(svg, "all");
	assert_non_null(strstr(el, "100000 samples (100.00%)"));
	assert_true(attr(el, "width") == 1180.0);
	free(el);
	el = frame(svg, "main");
	assert_non_null(strstr(el, "data-s=\"0\" data-w=\"100000\" data-d=\"1\""));
	free(el);
	/* Widths by weight; children in name order after their parent's start. */
	el = frame(svg, "a");
	assert_non_null(strstr(el, "data-s=\"0\" data-w=\"40000\" data-d=\"2\""));
	assert_true(attr(el, "x") == 10.0);
	assert_true(attr(el, "width") == 472.0);
	assert_non_null(strstr(el, "40000 samples (40.00%)\nx.c:7 app"));
	assert_non_null(strstr(el, ">a</text>"));
	free(el);
	el = frame(svg, "b");
	assert_non_null(strstr(el, "data-d=\"3\""));
	assert_true(attr(el, "width") == 354.0);
	free(el);
	el = frame(svg, "z");
	assert_non_null(strstr(el, "data-s=\"40001\" data-w=\"59999\""));
	assert_true(attr(el, "x") == 482.01);
	assert_true(attr(el, "width") == 707.99);
	assert_non_null(strstr(el, "59999 samples (60.00%)"));
	free(el);
	/* An icicle: the root on top, deeper frames lower down. */
	el = frame(svg, "all");
	{
		char *b = frame(svg, "b");

		assert_true(attr(el, "y") == 66);
		assert_true(attr(b, "y") - attr(el, "y") == 3 * 16);
		free(b);
	}
	free(el);
	/* As deep as b (depth 3): 66 + 4 rows + the foot; nothing hidden. */
	assert_non_null(strstr(svg, "height=\"180\" viewBox=\"0 0 1200 180\""));
	assert_non_null(strstr(svg, "<g id=\"foot\" transform=\"translate(0,130)\">"));
	assert_null(strstr(svg, "style=\"display:none\"><title>"));
	/* The script, with the layout's numbers in place. */
	assert_non_null(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA["));
	assert_non_null(strstr(svg, "X0 = 10, CW = 7.20"));
	assert_null(strstr(svg, "XPAD_PX"));
	assert_non_null(strstr(svg, "id=\"search\""));
	assert_non_null(strstr(svg, "id=\"reset\""));
	free(svg);
	fx_free(p);
}

/*
 * The graph is as deep as its deepest frame at least a pixel wide, not
 * as its deepest stack: a chain of 10 frames under thin (0.59 px at the
 * default width) is in the file, hidden, below the depth of a.
 */
static void test_depth(void **state)
{
	struct fx *p = fx_new(NULL, 0);
	struct nw_flamegraph_opts o = { .base_metric = -1 };
	char *svg, *el;

	(void)state;
	add(p, "main;a", 0, 100000);
	add(p, "main;thin;t1;t2;t3;t4;t5;t6;t7;t8;t9;t10", 0, 50);
	svg = draw(p, &o);
	/* all, main, a, thin and t1..t10: every frame of the stacks is there. */
	assert_int_equal(count(svg, "<g class=\"f\""), 14);
	/* Depth 2 (a, and thin beside it) is the last shown: 50 + 3 rows + the foot. */
	assert_non_null(strstr(svg, "height=\"148\" viewBox=\"0 0 1200 148\""));
	assert_non_null(strstr(svg, "data-top=\"50\" data-fh=\"16\" data-foot=\"50\""));
	el = frame(svg, "thin");
	assert_null(strstr(el, "display:none"));
	assert_true(attr(el, "y") == 50 + 2 * 16);
	assert_true(attr(el, "width") < 1);
	free(el);
	/* t1 (depth 3) and everything under it: in the file, hidden. */
	el = frame(svg, "t1");
	assert_non_null(strstr(el, "data-d=\"3\" style=\"display:none\""));
	free(el);
	el = frame(svg, "t10");
	assert_non_null(strstr(el, "data-d=\"12\" style=\"display:none\""));
	free(el);
	assert_int_equal(count(svg, "style=\"display:none\"><title>"), 10);
	free(svg);
	fx_free(p);
}

static void test_colours(void **state)
{
	struct nw_flamegraph_opts o = { .base_metric = -1 };
	struct fx *t1, *t2;
	char *s1, *s2, *a, *b, *z1, *z2, *fa, *fb, *fz1, *fz2;
	int r, g, bl;

	(void)state;
	t1 = known_tree(59999);
	t2 = known_tree(5);
	s1 = draw(t1, &o);
	s2 = draw(t2, &o);
	a = frame(s1, "a");
	b = frame(s1, "b");
	z1 = frame(s1, "z");
	z2 = frame(s2, "z");
	fa = fill(a);
	fb = fill(b);
	fz1 = fill(z1);
	fz2 = fill(z2);
	/* Stable: the same frame has the same colour in another graph. */
	assert_string_equal(fz1, fz2);
	/* Per module: another module, another colour. */
	assert_string_not_equal(fa, fz1);
	assert_string_not_equal(fb, fz1);
	assert_int_equal(sscanf(fa, "rgb(%d,%d,%d)", &r, &g, &bl), 3);
	/* The legend names both modules. */
	assert_non_null(strstr(s1, ">app</text>"));
	assert_non_null(strstr(s1, ">libz.so</text>"));
	free(fa);
	free(fb);
	free(fz1);
	free(fz2);
	free(a);
	free(b);
	free(z1);
	free(z2);
	free(s1);
	free(s2);
	fx_free(t1);
	fx_free(t2);
}

static void test_differential(void **state)
{
	struct fx *p = fx_new(NULL, 0);
	struct nw_flamegraph_opts o = { .metric = 1, .base_metric = 0 };
	char *svg, *el, *c;
	int r, g, b;

	(void)state;
	/* Base (metric 0): a 75, z 25.  New (metric 1): a 25, z 75. */
	add(p, "main;a", 0, 75);
	add(p, "main;z", 0, 25);
	add(p, "main;a", 1, 25);
	add(p, "main;z", 1, 75);
	svg = draw(p, &o);
	el = frame(svg, "z");
	assert_non_null(strstr(el, "75 samples (75.00%; base 25.00%, change +50.00%)"));
	c = fill(el);
	assert_int_equal(sscanf(c, "rgb(%d,%d,%d)", &r, &g, &b), 3);
	assert_true(r > 150 && b < 100); /* grew: red, at full strength */
	free(c);
	free(el);
	el = frame(svg, "a");
	assert_non_null(strstr(el, "change -50.00%"));
	c = fill(el);
	assert_int_equal(sscanf(c, "rgb(%d,%d,%d)", &r, &g, &b), 3);
	assert_true(b > 150 && r < 100); /* shrank: blue */
	free(c);
	free(el);
	el = frame(svg, "main");
	c = fill(el);
	assert_int_equal(sscanf(c, "rgb(%d,%d,%d)", &r, &g, &b), 3);
	assert_true(r == g && g == b); /* unchanged: grey */
	free(c);
	free(el);
	assert_non_null(strstr(svg, "full colour = 50.00%"));
	free(svg);
	fx_free(p);
}

static void test_text(void **state)
{
	static const char long_name[] = "a_function_name_much_too_long_for_its_frame";
	struct fx *p = fx_new(NULL, 0);
	struct nw_flamegraph_opts o = { .base_metric = -1, .width = 220 };
	char path[200], *svg;

	(void)state;
	/* 200 px of frames: the long name gets 100 px, room for 13 characters. */
	snprintf(path, sizeof(path), "main;%s", long_name);
	add(p, path, 0, 50);
	add(p, "main;operator<<(std::ostream&, \"x\")", 0, 49);
	add(p, "main;bad\xff", 0, 1);
	svg = draw(p, &o);
	assert_non_null(strstr(svg, ">a_function_..</text>"));
	assert_non_null(strstr(svg, "<title>a_function_name_much_too_long_for_its_frame\n"));
	assert_non_null(strstr(svg, "<title>operator&lt;&lt;(std::ostream&amp;, &quot;x&quot;)\n"));
	assert_null(strstr(svg, "operator<<"));
	assert_non_null(strstr(svg, "<title>bad?\n"));
	/* The 2 px frame has no room for a label. */
	assert_non_null(strstr(svg, "\"2.00\" height=\"15\" fill=\""));
	free(svg);
	fx_free(p);
}

static void test_errors(void **state)
{
	struct fx *p = known_tree(1);
	struct nw_flamegraph_opts o = { .metric = 2, .base_metric = -1 };
	struct nw_stacks *t = stacks_of(p);
	FILE *f = fopen("/dev/null", "w");

	(void)state;
	assert_non_null(f);
	assert_int_equal(nw_flamegraph_write(f, t, &o), -EINVAL);
	o.metric = 0;
	o.base_metric = 5;
	assert_int_equal(nw_flamegraph_write(f, t, &o), -EINVAL);
	/* A frame index outside the table. */
	o.base_metric = -1;
	t->tree->nodes[1].ip = 999;
	assert_int_equal(nw_flamegraph_write(f, t, &o), -EINVAL);
	fclose(f);
	nw_stacks_free(t);
	fx_free(p);
}

/*
 * Stacks built without the subtrees too narrow to draw (nw_flamegraph_min_share)
 * draw the same file, at the default width and at a narrow one.
 */
static void test_pruned_same(void **state)
{
	struct fx *fx = known_tree(2000000);
	struct nw_flamegraph_opts o = { .title = "t", .metric = 0, .base_metric = -1 };
	char *whole, *pruned;

	(void)state;
	add(fx, "main;tiny;t2;t3", 0, 1);
	add(fx, "main;a;tiny;t4", 0, 3);
	{
		/* Pruning leaves nodes out (t2 and t3, t4 below tiny). */
		struct nw_stacks *a = stacks_for(fx, &o, false), *b = stacks_for(fx, &o, true);

		assert_int_equal(a->tree->n, b->tree->n + 3);
		nw_stacks_free(a);
		nw_stacks_free(b);
	}
	for (unsigned w = 0; w <= 300; w += 300) {
		o.width = w;
		whole = draw_stacks(fx, &o, false);
		pruned = draw_stacks(fx, &o, true);
		assert_string_equal(whole, pruned);
		assert_null(strstr(whole, "<title>t3\n"));
		free(whole);
		free(pruned);
	}
	fx_free(fx);
}

static void test_empty(void **state)
{
	struct fx *p = fx_new(NULL, 0);
	struct nw_flamegraph_opts o = { .base_metric = -1 };
	char *svg;

	(void)state;
	svg = draw(p, &o);
	assert_int_equal(count(svg, "<g class=\"f\""), 1);
	assert_non_null(strstr(svg, "<title>all\n0 samples (0.00%)"));
	free(svg);
	fx_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_colours),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_pruned_same),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
