/* SPDX-License-Identifier: MIT */
/*
 * Fixture for tests/test-symbol.c, built with -O2 -g (and a copy without
 * -g).  The test finds the lines it expects through the "@name" markers in
 * this file, and addresses through the ELF symbol table, so the layout may
 * change freely.
 */
#include <stdlib.h>

volatile int symtest_sink;
int symtest_data = 42;

int symtest_caller(int x);
int symtest_leaf(int x);

static inline __attribute__((always_inline)) int symtest_helper(int x) /* @helper-decl */
{
	int r = 0;

	for (int i = 0; i < x; i++)
		r += i * symtest_sink;
	/* The label gives the test an address inside the inlined code. */
	__asm__ volatile(".globl symtest_inline_pc\nsymtest_inline_pc:\n\tnop"); /* @helper-pc */
	return r;
}

__attribute__((noinline)) int symtest_caller(int x) /* @caller-decl */
{
	return symtest_helper(x) + 1; /* @caller-call */
}

__attribute__((noinline)) int symtest_leaf(int x) /* @leaf-decl */
{
	return x * 3 + symtest_sink;
} /* @leaf-end */

/* A C function under a C++ mangled name: nw::mangled(int). */
int symtest_mangled(int x) __asm__("_ZN2nw7mangledEi");
__attribute__((noinline)) int symtest_mangled(int x) /* @mangled-decl */
{
	return x - symtest_sink;
}

int main(int argc, char **argv)
{
	(void)argv;
	symtest_data += symtest_caller(argc) + symtest_leaf(argc) + symtest_mangled(argc);
	return symtest_data == 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
