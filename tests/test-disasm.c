/* SPDX-License-Identifier: MIT */
/*
 * Decoding (arch/disasm.h) and the --disasm view (report/disasm.h):
 *
 *  - x86-64 bytes of known instructions: their text (AT&T, as objdump
 *    and perf annotate print them), length, kind and direct targets;
 *    bytes that do not decode skipped one at a time;
 *  - aarch64 instruction words assembled by hand (subs, b.ne, bl, ret,
 *    cbz, nop), decoded on any host: capstone's text, kinds, targets;
 *  - the view on a model built by hand with a code store: every
 *    instruction with its self and total share (the shares add up to the
 *    function's), the address as --addresses prints it, a jump inside the
 *    function by arrow, a call by the callee's name, an inlined range
 *    marked with its name, a function cut by the per-function cap and one
 *    left out, a function matched only where it was inlined, --sort,
 *    aarch64 code in the store, and a measurement without code.
 */
#include <elf.h>
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arch/disasm.h"
#include "model/measurement.h"
#include "report/disasm.h"

/* Decodes all of @code at @addr into @v (room for @max); how many. */
static size_t decode_all(uint16_t machine, const uint8_t *code, size_t len, uint64_t addr,
			 struct nw_insn *v, size_t max)
{
	struct nw_disasm *d = NULL;
	size_t n = 0;

	assert_int_equal(nw_disasm_open(machine, &d), 0);
	for (size_t off = 0; off < len && n < max;) {
		assert_int_equal(nw_disasm_one(d, code + off, len - off, addr + off, &v[n]), 1);
		assert_true(v[n].size > 0);
		off += v[n].size;
		n++;
	}
	assert_int_equal(nw_disasm_one(d, code, 0, addr, &v[n < max ? n : 0]), 0);
	nw_disasm_free(d);
	return n;
}

static void test_x86(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8,             /* 0x1000 mov %rdi,%rax */
		0x48, 0x83, 0xe8, 0x01,       /* 0x1003 sub $0x1,%rax */
		0x75, 0xfa,                   /* 0x1007 jne 0x1003 */
		0xe8, 0xf2, 0x0f, 0x00, 0x00, /* 0x1009 call 0x2000 */
		0xff, 0xd0,                   /* 0x100e call *%rax */
		0xc3,                         /* 0x1010 ret */
		0x06,                         /* 0x1011 (bad in 64-bit mode) */
		0x48, 0xf7, 0xf6,             /* 0x1012 div %rsi */
	};
	struct nw_insn v[16];
	size_t n = decode_all(EM_X86_64, code, sizeof(code), 0x1000, v, 16);

	(void)state;
	assert_int_equal(n, 8);
	assert_string_equal(v[0].text, "movq   %rdi, %rax");
	assert_int_equal(v[0].size, 3);
	assert_int_equal(v[0].kind, NW_INSN_OTHER);
	assert_int_equal(v[1].addr, 0x1003);
	assert_string_equal(v[1].text, "subq   $1, %rax");
	assert_int_equal(v[2].kind, NW_INSN_JUMP);
	assert_true(v[2].has_target);
	assert_int_equal(v[2].target, 0x1003);
	assert_int_equal(v[3].kind, NW_INSN_CALL);
	assert_true(v[3].has_target);
	assert_int_equal(v[3].target, 0x2000);
	assert_int_equal(v[4].kind, NW_INSN_CALL);
	assert_false(v[4].has_target);
	assert_int_equal(v[5].kind, NW_INSN_RET);
	assert_true(v[6].bad);
	assert_int_equal(v[6].size, 1);
	assert_string_equal(v[6].text, "(bad)");
	assert_int_equal(v[7].addr, 0x1012);
	assert_string_equal(v[7].text, "divq   %rsi");
	assert_false(nw_disasm_supported(EM_386));
	{
		struct nw_disasm *d = NULL;

		assert_int_equal(nw_disasm_open(EM_386, &d), -ENOTSUP);
		assert_null(d);
		nw_disasm_free(NULL);
	}
}

/* aarch64 words, little-endian, assembled by hand (ARM ARM encodings). */
static const uint32_t arm_words[] = {
	0xf1000400, /* 0x4000 subs x0, x0, #1 */
	0x54ffffe1, /* 0x4004 b.ne 0x4000 (imm19 = -1) */
	0x94000002, /* 0x4008 bl 0x4010 (imm26 = 2) */
	0xb4000040, /* 0x400c cbz x0, 0x4014 (imm19 = 2) */
	0xd503201f, /* 0x4010 nop */
	0xd65f03c0, /* 0x4014 ret */
	0x00000000, /* 0x4018 udf #0, or (bad) */
};

static void arm_bytes(uint8_t *b)
{
	for (size_t i = 0; i < sizeof(arm_words) / sizeof(arm_words[0]); i++)
		for (int k = 0; k < 4; k++)
			b[4 * i + k] = (uint8_t)(arm_words[i] >> (8 * k));
}

static void test_aarch64(void **state)
{
	uint8_t b[sizeof(arm_words)];
	struct nw_insn v[16];
	size_t n;

	(void)state;
	arm_bytes(b);
	n = decode_all(EM_AARCH64, b, sizeof(b), 0x4000, v, 16);
	assert_int_equal(n, 7);
	assert_string_equal(v[0].text, "subs   x0, x0, #1");
	assert_int_equal(v[0].kind, NW_INSN_OTHER);
	assert_int_equal(v[1].kind, NW_INSN_JUMP);
	assert_true(v[1].has_target);
	assert_int_equal(v[1].target, 0x4000);
	assert_non_null(strstr(v[1].text, "b.ne"));
	assert_int_equal(v[2].kind, NW_INSN_CALL);
	assert_int_equal(v[2].target, 0x4010);
	assert_int_equal(v[3].kind, NW_INSN_JUMP);
	assert_int_equal(v[3].target, 0x4014);
	assert_non_null(strstr(v[3].text, "cbz    x0"));
	assert_string_equal(v[4].text, "nop");
	assert_int_equal(v[5].kind, NW_INSN_RET);
	assert_string_equal(v[5].text, "ret");
	/* Every instruction is a word, decoded or not. */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(v[i].size, 4);
		assert_int_equal(v[i].addr, 0x4000 + 4 * i);
	}
	/* A word cut short. */
	{
		struct nw_disasm *d = NULL;
		struct nw_insn in;

		assert_int_equal(nw_disasm_open(EM_AARCH64, &d), 0);
		assert_int_equal(nw_disasm_one(d, b, 2, 0x4000, &in), 1);
		assert_true(in.bad);
		assert_int_equal(in.size, 2);
		nw_disasm_free(d);
	}
}

/* ---- the view ---- */

#define BASE 0x400000ull

struct vfx {
	struct nw_measurement *m;
	struct nw_cct *cct;
};

/* A symbol entry at @addr: @chain "outer;inner" (outermost first), at @line of app.c. */
static void sym(struct vfx *v, uint64_t addr, const char *chain, uint32_t line)
{
	struct nw_symframe *fr = NULL;
	char *buf = strdup(chain), *save = NULL;
	uint32_t n = 0;

	assert_non_null(buf);
	for (char *t = strtok_r(buf, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		fr = realloc(fr, (n + 1) * sizeof(*fr));
		assert_non_null(fr);
		memmove(fr + 1, fr, n * sizeof(*fr));
		memset(fr, 0, sizeof(*fr));
		fr->function = strdup(t);
		fr->file = strdup("/src/app.c");
		fr->decl_file = strdup("/src/app.c");
		fr->line = line;
		fr->decl_line = 1;
		n++;
	}
	free(buf);
	assert_int_equal(nw_symtab_add(v->m->symtab, 0, addr, fr, n), 0);
	nw_symtab_sort(v->m->symtab);
}

/* A path of PCs (ELF addresses, outermost first) with @w samples at its leaf. */
static void path(struct vfx *v, const uint64_t *pcs, size_t n, uint64_t w)
{
	uint32_t node = NW_CCT_ROOT;

	for (size_t i = 0; i < n; i++)
		node = nw_cct_child(v->cct, node, BASE + pcs[i], 0);
	nw_cct_metrics(v->cct, node)[0] += w;
}

static struct vfx *view_model(void)
{
	static const uint8_t hot[] = {
		0x48, 0x89, 0xf8,             /* 0x1000 mov */
		0x48, 0x83, 0xe8, 0x01,       /* 0x1003 sub: inlined helper */
		0x75, 0xfa,                   /* 0x1007 jne 0x1003: inlined helper */
		0xe8, 0xf2, 0x0f, 0x00, 0x00, /* 0x1009 call 0x2000 */
		0xc3,                         /* 0x100e ret */
		0x90,                         /* 0x100f nop */
	};
	static const uint8_t callee[] = { 0x90, 0x90, 0xc3 };
	static const uint8_t nops[] = { 0x90, 0x90, 0x90, 0x90 };
	uint8_t arm[sizeof(arm_words)];
	struct vfx *v = calloc(1, sizeof(*v));
	struct nw_map map = { .start = BASE, .end = BASE + 0x100000, .module = 0 };
	struct nw_code_line lines[2];
	struct nw_code_inline inl;
	struct nw_mthread *th;
	struct nw_codestore *cs;
	struct nw_epoch *e;

	assert_non_null(v);
	v->m = nw_measurement_new();
	assert_non_null(v->m);
	assert_int_equal(nw_measurement_add_metric(v->m, "cpu-clock", NW_METRIC_SAMPLES, 1), 0);
	assert_int_equal(nw_module_intern(v->m->modules, "/bin/app", NULL, 0), 0);
	e = nw_epoch_new(&map, 1, 0);
	assert_int_equal(nw_measurement_add_epoch(v->m, e), 0);
	th = nw_measurement_add_thread(v->m, 1, 1, "app", NULL);
	th->nepochs = 1;
	v->cct = nw_cct_new(1);
	assert_int_equal(nw_mthread_add_tree(th, 0, v->cct), 0);
	/* hot: 6 samples at 0x1003, 2 at 0x1007, 2 in callee under the call at 0x1009. */
	path(v, (const uint64_t[]){ 0x1003 }, 1, 6);
	path(v, (const uint64_t[]){ 0x1007 }, 1, 2);
	path(v, (const uint64_t[]){ 0x100e, 0x2001 }, 2, 2);
	/* big: cut after 4 of 100 bytes, a sample past them; lost: left out; arm: aarch64. */
	path(v, (const uint64_t[]){ 0x3050 }, 1, 3);
	path(v, (const uint64_t[]){ 0x4000 }, 1, 1);
	path(v, (const uint64_t[]){ 0x5004 }, 1, 4);
	sym(v, 0x1003, "hot;helper", 12);
	sym(v, 0x1007, "hot;helper", 13);
	sym(v, 0x100d, "hot", 20);
	sym(v, 0x2001, "callee", 30);
	sym(v, 0x3050, "big", 40);
	sym(v, 0x4000, "lost", 50);
	sym(v, 0x5004, "arm", 60);
	cs = nw_codestore_new();
	assert_non_null(cs);
	lines[0] = (struct nw_code_line){ 0, (uint32_t)nw_codestore_string(cs, "/src/app.c"), 11 };
	lines[1] = (struct nw_code_line){ 9, lines[0].file, 20 };
	inl = (struct nw_code_inline){ 3, 9, (uint32_t)nw_codestore_string(cs, "helper"), 1 };
	assert_non_null(nw_codestore_add(cs, 0, EM_X86_64, NW_CODE_STORED, NW_CODE_FILE, 0x1000,
					 sizeof(hot), hot, sizeof(hot), lines, 2, &inl, 1));
	assert_non_null(nw_codestore_add(cs, 0, EM_X86_64, NW_CODE_STORED, NW_CODE_FILE, 0x2000,
					 sizeof(callee), callee, sizeof(callee), NULL, 0, NULL, 0));
	assert_non_null(nw_codestore_add(cs, 0, EM_X86_64, NW_CODE_STORED, NW_CODE_FILE, 0x3000,
					 100, nops, sizeof(nops), NULL, 0, NULL, 0));
	assert_non_null(nw_codestore_add(cs, 0, EM_X86_64, NW_CODE_CAPPED, NW_CODE_FILE, 0x4000,
					 16, NULL, 0, NULL, 0, NULL, 0));
	arm_bytes(arm);
	assert_non_null(nw_codestore_add(cs, 0, EM_AARCH64, NW_CODE_STORED, NW_CODE_FILE, 0x5000,
					 sizeof(arm), arm, sizeof(arm), NULL, 0, NULL, 0));
	nw_codestore_sort(cs);
	v->m->code = cs;
	return v;
}

static void view_free(struct vfx *v)
{
	nw_measurement_free(v->m);
	free(v);
}

/* The view of the functions matching @re, as text (malloc'd); its result in *@rc. */
static char *view(struct vfx *v, const char *re, bool sort, int *rc)
{
	struct nw_disasm_opts o = { .metric = 0, .sort = sort };
	struct nw_filter f = { .tid = -1, .pid = -1 };
	char *buf = NULL;
	size_t len = 0;
	regex_t r;
	FILE *out;

	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	o.func = &r;
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	*rc = nw_view_disasm(out, v->m, &f, &o);
	fclose(out);
	regfree(&r);
	return buf;
}

/* The line of @text holding @needle (a copy, malloc'd), or NULL. */
static char *line_with(const char *text, const char *needle)
{
	const char *p = strstr(text, needle), *b, *e;
	char *l;

	if (!p)
		return NULL;
	for (b = p; b > text && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	l = strndup(b, e ? (size_t)(e - b) : strlen(b));
	assert_non_null(l);
	return l;
}

/* The SELF% and TOTAL% at the start of @line (blank: 0). */
static void shares(const char *line, double *self, double *total)
{
	*self = *total = 0;
	sscanf(line, "%lf%%  %lf%%", self, total);
}

static void test_view(void **state)
{
	struct vfx *v = view_model();
	double self, total, sum = 0;
	char *out, *l;
	int rc;

	(void)state;
	out = view(v, "^hot$", false, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "Function: hot (app.c:1) in app\n"));
	/* 8 samples of 18 in its own code; 10 with it on the stack. */
	assert_non_null(strstr(out, "Self:  44.4% (8)   Total:  55.6% (10)"));
	assert_non_null(strstr(out, "Code: app+0x1000, 16 bytes, stored whole (x86-64)"));
	l = line_with(out, "app+0x1003");
	shares(l, &self, &total);
	assert_true(self > 33.2 && self < 33.4);
	assert_non_null(strstr(l, "subq   $1, %rax"));
	/* A jump target inside the function, and the range inlined there. */
	assert_non_null(strstr(l, ">app+0x1003"));
	assert_non_null(strstr(l, "app.c:11 [helper]"));
	free(l);
	assert_non_null(strstr(out, "-- inlined: helper --"));
	l = line_with(out, "app+0x1007");
	assert_non_null(strstr(l, "jne    0x1003 <hot+0x3> ^"));
	free(l);
	/* The call: the callee by name, its total (the return address's row) on it. */
	l = line_with(out, "app+0x1009");
	assert_non_null(strstr(l, "callq  0x2000 <callee>"));
	shares(l, &self, &total);
	assert_true(self == 0 && total > 11.0 && total < 11.2);
	assert_non_null(strstr(l, "app.c:20"));
	free(l);
	/* Every instruction, sampled or not; the self shares add up to the function's. */
	for (const char *a = "app+0x1000\0app+0x1003\0app+0x1007\0app+0x1009\0app+0x100e\0"
			     "app+0x100f\0";
	     *a; a += strlen(a) + 1) {
		l = line_with(out, a);
		assert_non_null(l);
		shares(l, &self, &total);
		sum += self;
		free(l);
	}
	assert_true(sum > 44.3 && sum < 44.6);
	free(out);

	/* --sort: the hottest instruction first. */
	out = view(v, "^hot$", true, &rc);
	assert_int_equal(rc, 0);
	l = strstr(out, "ADDRESS");
	assert_non_null(l);
	l = strchr(l, '\n') + 1;
	assert_true(strstr(l, "app+0x1003") < strstr(l, "app+0x1007"));
	assert_true(strstr(l, "app+0x1007") < strstr(l, "app+0x1000"));
	free(out);

	/* Cut by the per-function cap: said, and the sample past the bytes listed. */
	out = view(v, "^big$", false, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "the first 4 stored (cut at the per-function cap"));
	l = line_with(out, "app+0x3050");
	assert_non_null(strstr(l, "(past the stored bytes)"));
	shares(l, &self, &total);
	assert_true(self > 16.6 && self < 16.8);
	free(l);
	free(out);

	/* Left out: why, and its samples by address. */
	out = view(v, "^lost$", false, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "not stored (left out: the total cap"));
	assert_non_null(strstr(out, "app+0x4000"));
	free(out);

	/*
	 * Every function at once: the rows of helper (inlined, left out) come
	 * between those kept, and each kept row keeps its own code record.
	 */
	out = view(v, ".", false, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "Function: hot (app.c:1) in app\n"));
	assert_non_null(strstr(out, "Function: big"));
	assert_non_null(strstr(out, "Function: arm"));
	assert_non_null(strstr(out, "helper: inlined into hot"));
	l = line_with(out, "app+0x1003");
	shares(l, &self, &total);
	assert_true(self > 33.2 && self < 33.4);
	free(l);
	free(out);

	/* Inlined only: where its code is. */
	out = view(v, "^helper$", false, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "helper: inlined into hot"));
	free(out);

	/* aarch64 bytes in the store, decoded as such. */
	out = view(v, "^arm$", false, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "(aarch64)"));
	l = line_with(out, "app+0x5004");
	assert_non_null(strstr(l, "b.ne"));
	assert_non_null(strstr(l, "<arm+0x0> ^"));
	free(l);
	assert_non_null(strstr(out, "bl     #0x5010 <arm+0x10>"));
	free(out);

	/* No match; no code at all. */
	free(view(v, "^nothing$", false, &rc));
	assert_int_equal(rc, -ENOENT);
	nw_codestore_free(v->m->code);
	v->m->code = NULL;
	free(view(v, "^hot$", false, &rc));
	assert_int_equal(rc, -ENODATA);
	view_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86),
		cmocka_unit_test(test_aarch64),
		cmocka_unit_test(test_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
