/* SPDX-License-Identifier: MIT */
/*
 * Readable function names (report/names.h) on names as the demangler
 * gives them: g++ symbols demangled by c++filt (libiberty's
 * cplus_demangle, which narwhal's symbolizer calls too) and rustc's
 * legacy and v0 symbols.  Then the frame table's use of them
 * (report/frames.h) and the views: short names by default, whole names
 * with full_names, and folded stacks always whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "report/frames.h"
#include "report/names.h"
#include "report/folded.h"
#include "report/views.h"

/*
 * @name shortens to @want: into a roomy buffer, into one of exactly
 * strlen(name) + 1 bytes (as the frame table calls it), into one just big
 * enough for @want, and cut by one byte in one a byte smaller.
 */
static void check(const char *name, const char *want)
{
	char big[8192];
	size_t n = strlen(name) + 1, w = strlen(want);
	char *exact = malloc(n);

	assert_non_null(exact);
	if (nw_short_name(name, big, sizeof(big)) != big)
		fail_msg("nw_short_name(\"%s\") did not return its buffer", name);
	if (strcmp(big, want))
		fail_msg("nw_short_name(\"%s\")\n  is \"%s\"\n  expected \"%s\"", name, big, want);
	nw_short_name(name, exact, n);
	if (strcmp(exact, want))
		fail_msg("nw_short_name(\"%s\", %zu bytes)\n  is \"%s\"\n  expected \"%s\"", name,
			 n, exact, want);
	nw_short_name(name, exact, w + 1);
	if (strcmp(exact, want))
		fail_msg("nw_short_name(\"%s\", %zu bytes)\n  is \"%s\"\n  expected \"%s\"", name,
			 w + 1, exact, want);
	if (w) {
		nw_short_name(name, exact, w);
		if (strncmp(exact, want, w - 1) || exact[w - 1])
			fail_msg(
			    "nw_short_name(\"%s\", %zu bytes)\n  is \"%s\"\n  expected \"%.*s\"",
			    name, w, exact, (int)w - 1, want);
	}
	free(exact);
}

/* Names with nothing to shorten come back as they are. */
static void test_unchanged(void **state)
{
	static const char *const same[] = {
	    /* C */
	    "main",
	    "memcpy@plt",
	    "_GLOBAL__sub_I_main",
	    "__libc_start_call_main",
	    "x.y",
	    /* Other frames */
	    "[unknown]",
	    "app+0x1234",
	    /* Already short, or names without a parameter list */
	    "ns::Foo<int>::bar",
	    "ns::arr()::a",
	    "demo::f::{{closure}}",
	    "demo::f::{closure#0}",
	    "<demo::W<u8> as demo::Tr>::run",
	    "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
	    "<demo::W<u8>>::get",
	    "demo::W<T>::get",
	    /* Rust v0 as c++filt prints it (verbose: crate hashes in brackets) */
	    "demo[7a4293bfb124356f]::f",
	    "<demo[7a4293bfb124356f]::W<u8> as demo[7a4293bfb124356f]::Tr>::run",
	    /* Not a Rust hash: a 'g', 15 digits, no "::h" */
	    "demo::f::h0123456789abcdeg",
	    "demo::f::h0123456789abcde",
	    "demo::f:h0123456789abcdef0",
	    "",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		check(same[i], same[i]);
}

/* GCC's clone suffixes, C++ ("[clone .isra.0]") and C (".constprop.0"). */
static void test_clones(void **state)
{
	(void)state;
	check("foo.constprop.0", "foo");
	check("foo.isra.0", "foo");
	check("foo.part.0", "foo");
	check("foo.cold", "foo");
	check("foo.lto_priv.0", "foo");
	check("foo.localalias", "foo");
	check("foo.llvm.1234567", "foo");
	check("foo.isra.0.part.0", "foo");
	check("foo.constprop.0.isra.0.cold", "foo");
	/* c++filt of _ZN2nsL6helperEPNS_1SEi.isra.0 and friends */
	check("ns::helper(ns::S*, int) [clone .isra.0]", "ns::helper");
	check("ns::helper(ns::S*, int) [clone .constprop.0] [clone .isra.0]", "ns::helper");
	check("ns::big(ns::S*, int) [clone .cold]", "ns::big");
	check("ns::big(ns::S*, int) [clone .part.0]", "ns::big");
	check("ns::Foo<int>::bar(char const*) const [clone .isra.0]", "ns::Foo<int>::bar");
	check("int ns::Foo<int>::bar(char const*) const [clone .isra.0]", "ns::Foo<int>::bar");
	check("uselambda()::{lambda(int)#1}::operator()(int) const [clone .constprop.0]",
	      "uselambda()::{lambda(int)#1}::operator()");
	check("std::vector<int, std::allocator<int> >::operator=(std::vector<int, "
	      "std::allocator<int> > const&) [clone .isra.0]",
	      "std::vector<int, std::allocator<int> >::operator=");
}

/* The parameter list and the qualifiers after it. */
static void test_signatures(void **state)
{
	(void)state;
	check("usef()", "usef");
	check("ns::call(ns::S*)", "ns::call");
	check("ns::Foo<int>::bar(char const*) const", "ns::Foo<int>::bar");
	check("ns::X::f() &&", "ns::X::f");
	check("ns::X::g() volatile &", "ns::X::g");
	check("ns::Foo<int>::bar() const volatile", "ns::Foo<int>::bar");
	check("ns::Foo<int>::bar() const &", "ns::Foo<int>::bar");
	check("ns::X::operator=(ns::X&&) noexcept", "ns::X::operator=");
	/* Function pointers and arrays in the parameter list */
	check("ns::reg(void (*)(int, char), int (*) [3])", "ns::reg");
	check("qsort_r(void*, unsigned long, unsigned long, int (*)(void const*, void const*, "
	      "void*), void*)",
	      "qsort_r");
	check("ns::use(ns::M<std::__cxx11::basic_string<char, std::char_traits<char>, "
	      "std::allocator<char> >, int>&)",
	      "ns::use");
}

/* Return types (printed for function templates), template arguments kept. */
static void test_templates(void **state)
{
	(void)state;
	check("std::vector<int, std::allocator<int> > foo<int>(int)", "foo<int>");
	check("int shift<3>()", "shift<3>");
	check("void ns::tf<int>(int)", "ns::tf<int>");
	check("unsigned int ns::churn<unsigned int>(unsigned int)", "ns::churn<unsigned int>");
	check("char const* ns::name<int>()", "ns::name<int>");
	check("std::vector<int, std::allocator<int> >::push_back(int const&)",
	      "std::vector<int, std::allocator<int> >::push_back");
	check("decltype (({parm#1}.begin)()) std::begin<std::vector<int> >(std::vector<int>&)",
	      "std::begin<std::vector<int> >");
	check("std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > "
	      ">::operator[](int const&)",
	      "std::map<int, int, std::less<int>, std::allocator<std::pair<int const, int> > "
	      ">::operator[]");
	check("ns::Foo<(anonymous namespace)::T>::bar()", "ns::Foo<(anonymous namespace)::T>::bar");
}

/* Operator names keep their symbol, whatever it looks like. */
static void test_operators(void **state)
{
	(void)state;
	check("ns::X::operator()(int)", "ns::X::operator()");
	check("ns::X::operator->()", "ns::X::operator->");
	check("ns::X::operator->*(int)", "ns::X::operator->*");
	check("ns::X::operator<(ns::X const&) const", "ns::X::operator<");
	check("ns::X::operator<=(ns::X const&) const", "ns::X::operator<=");
	check("ns::X::operator==(ns::X const&) const", "ns::X::operator==");
	check("ns::X::operator!=(ns::X const&) const", "ns::X::operator!=");
	check("ns::X::operator>>(int)", "ns::X::operator>>");
	check("ns::X::operator<<=(int)", "ns::X::operator<<=");
	check("ns::X::operator,(int)", "ns::X::operator,");
	check("ns::X::operator=(ns::X&&)", "ns::X::operator=");
	check("ns::operator<<(std::basic_ostream<char, std::char_traits<char> >&, ns::X const&)",
	      "ns::operator<<");
	check("ns::X::operator\"\"_km(unsigned long long)", "ns::X::operator\"\"_km");
	/* Template operators: GCC writes a space between "<" and "<" */
	check("bool ns::X::operator< <int>(int) const", "ns::X::operator< <int>");
	check("int ns::X::operator<< <int>(int)", "ns::X::operator<< <int>");
	check("int ns::X::operator()<int>(int)", "ns::X::operator()<int>");
	/* Named operators and conversions: their space is part of the name */
	check("operator new(unsigned long, int)", "operator new");
	check("operator delete(void*, unsigned long)", "operator delete");
	check("ns::X::operator new[](unsigned long)", "ns::X::operator new[]");
	check("ns::X::operator bool() const", "ns::X::operator bool");
	check("ns::X::operator int*() const", "ns::X::operator int*");
	check("ns::X::operator int*<int>()", "ns::X::operator int*<int>");
	check("ns::X::operator std::vector<int, std::allocator<int> >() const",
	      "ns::X::operator std::vector<int, std::allocator<int> >");
}

/*
 * An operator's symbol is the longest one that matches, and only after the
 * keyword: the template arguments of "operator>><int>" and
 * "operator<=><int>" (GCC writes no space there) are brackets, and so are
 * those of an identifier that merely contains "operator".
 */
static void test_operator_symbols(void **state)
{
	(void)state;
	/* c++filt of _ZN2ns1XrsIiEEiT_ and _ZNK2ns1XssIiEEiT_ (g++ -std=c++20) */
	check("int ns::X::operator>><int>(int)", "ns::X::operator>><int>");
	check("int ns::X::operator<=><int>(int) const", "ns::X::operator<=><int>");
	check("ns::X::operator<=>(ns::X const&) const", "ns::X::operator<=>");
	check("ns::X::operator>>=(int)", "ns::X::operator>>=");
	check("ns::binary_operator<int>::apply(int)", "ns::binary_operator<int>::apply");
	check("ns::operators<int>::apply(int) const", "ns::operators<int>::apply");
	check("std::vector<my_operator, std::allocator<my_operator> > ns::make<my_operator>()",
	      "ns::make<my_operator>");
	check("ns::operator_<int>(int)", "ns::operator_<int>");
}

/* Destructors, anonymous namespaces, lambdas. */
static void test_special_names(void **state)
{
	(void)state;
	check("ns::X::~X()", "ns::X::~X");
	check("ns::Foo<int>::~Foo()", "ns::Foo<int>::~Foo");
	check("(anonymous namespace)::f()", "(anonymous namespace)::f");
	check("(anonymous namespace)::Y::run(int) const", "(anonymous namespace)::Y::run");
	check("uselambda()::{lambda(int)#1}::operator()(int) const",
	      "uselambda()::{lambda(int)#1}::operator()");
	check("ns::tf<int>(int)::{lambda(int)#1}::operator()(int) const",
	      "ns::tf<int>(int)::{lambda(int)#1}::operator()");
	check("std::_Function_handler<int (int), uselambda()::{lambda(int)#1}>::_M_invoke(std::_"
	      "Any_data const&, int&&)",
	      "std::_Function_handler<int (int), uselambda()::{lambda(int)#1}>::_M_invoke");
	check("std::function<int (int)>::function<uselambda()::{lambda(int)#1}&, "
	      "void>(uselambda()::{lambda(int)#1}&)",
	      "std::function<int (int)>::function<uselambda()::{lambda(int)#1}&, void>");
	check("void std::_Function_base::_Base_manager<uselambda()::{lambda(int)#1}>::_M_init_"
	      "functor<uselambda()::{lambda(int)#1} const&>(std::_Any_data&, "
	      "uselambda()::{lambda(int)#1} const&)",
	      "std::_Function_base::_Base_manager<uselambda()::{lambda(int)#1}>::_M_init_functor<"
	      "uselambda()::{lambda(int)#1} const&>");
	check("uselambda()::{lambda(int)#1} const* std::__addressof<uselambda()::{lambda(int)#1} "
	      "const>(uselambda()::{lambda(int)#1} const&)",
	      "std::__addressof<uselambda()::{lambda(int)#1} const>");
	check("std::enable_if<is_invocable_r_v<int, uselambda()::{lambda(int)#1}&, int>, "
	      "int>::type std::__invoke_r<int, uselambda()::{lambda(int)#1}&, "
	      "int>(uselambda()::{lambda(int)#1}&, int&&)",
	      "std::__invoke_r<int, uselambda()::{lambda(int)#1}&, int>");
}

/*
 * Spaces that are part of the name, not the one after a return type: a
 * conversion operator's type, and the qualifiers of the member function a
 * lambda or a local class is in (c++filt of _ZNK2ns1XcvmEv,
 * _ZZNK2ns1X3fooEvENKUlvE_clEv, _ZZNO2ns1X3barEvENKUlvE_clEv).
 */
static void test_spaces_in_names(void **state)
{
	(void)state;
	check("ns::X::operator unsigned long() const", "ns::X::operator unsigned long");
	check("ns::X::operator char const*() const", "ns::X::operator char const*");
	check("ns::X::operator unsigned long<int>()", "ns::X::operator unsigned long<int>");
	check("ns::X::foo() const::{lambda()#1}::operator()() const",
	      "ns::X::foo() const::{lambda()#1}::operator()");
	check("ns::X::foo() const::{lambda()#1}::operator()() const [clone .isra.0]",
	      "ns::X::foo() const::{lambda()#1}::operator()");
	check("ns::X::bar() &&::{lambda()#1}::operator()() const",
	      "ns::X::bar() &&::{lambda()#1}::operator()");
	check("ns::X::g() volatile &::{lambda()#1}::operator()() const",
	      "ns::X::g() volatile &::{lambda()#1}::operator()");
	check("ns::X::foo() const::S::run() const", "ns::X::foo() const::S::run");
	check("ns::X::operator<(ns::X const&) const::{lambda()#1}::operator()() const",
	      "ns::X::operator<(ns::X const&) const::{lambda()#1}::operator()");
	check("ns::X::operator unsigned long() const::{lambda()#1}::operator()() const",
	      "ns::X::operator unsigned long() const::{lambda()#1}::operator()");
	/* A qualifier in a return type is not a scope's */
	check("char const* ns::name<int>()", "ns::name<int>");
	check("ns::Y const& ns::get<int>() const", "ns::get<int>");
}

/*
 * Function templates returning a pointer or a reference to a function or
 * an array, or a member pointer: the name is inside the declarator
 * (c++filt of _Z5getfpIiEPFT_S0_ES0_, _ZNK2ns1X5getfpIiEEPFiT_ES2_,
 * _ZN2ns1X3pmfIiEEMS0_FiT_ES2_, _ZN2ns1X3arrIiEEPA3_T_S2_,
 * _ZN2ns1X4frefIiEERFvT_ES2_, _ZN2ns6nestedIiEEPFPFiT_EcES1_).
 */
static void test_declarators(void **state)
{
	(void)state;
	check("int (*getfp<int>(int))(int)", "getfp<int>");
	check("int (*ns::X::getfp<int>(int) const)(int)", "ns::X::getfp<int>");
	check("int (ns::X::*ns::X::pmf<int>(int))(int)", "ns::X::pmf<int>");
	check("int (ns::Y<int>::*ns::X::pmf<int>(int))(int)", "ns::X::pmf<int>");
	check("int (*ns::X::arr<int>(int)) [3]", "ns::X::arr<int>");
	check("void (&ns::X::fref<int>(int))(int)", "ns::X::fref<int>");
	check("int (*(*ns::nested<int>(int))(char))(int)", "ns::nested<int>");
	check("int (*(anonymous namespace)::f<int>())(int)", "(anonymous namespace)::f<int>");
	check("std::vector<int, std::allocator<int> > (*ns::make<int>())(int) [clone .isra.0]",
	      "ns::make<int>");
	/* Not declarators */
	check("(anonymous namespace)", "(anonymous namespace)");
	check("ns::X::operator delete[](void*)", "ns::X::operator delete[]");
	check("ns::X::operator()(int (*)(int))", "ns::X::operator()");
}

/* Rust: the legacy hash goes; v0 names (libiberty, not verbose) have none. */
static void test_rust(void **state)
{
	(void)state;
	/* c++filt of rustc's legacy symbols (verbose, so with the hash) */
	check("core::fmt::write::h0123456789abcdef", "core::fmt::write");
	check("demo::f::hbda77b53aac46f5e", "demo::f");
	check("demo::hm::hfcc04d00a9a2b233", "demo::hm");
	check("<demo::W<u8> as demo::Tr>::run::ha1791bf572dc0d5a",
	      "<demo::W<u8> as demo::Tr>::run");
	check("demo::W<T>::get::h1054e37dc80b6959", "demo::W<T>::get");
	check("demo::f::{{closure}}::h0123456789ABCDEF", "demo::f::{{closure}}");
	/* ThinLTO's suffix after the hash */
	check("core::fmt::write::h0123456789abcdef.llvm.1234", "core::fmt::write");
	/* cplus_demangle(DMGL_PARAMS | DMGL_ANSI) of the v0 symbols: nothing to remove */
	check("<demo::W<u8> as demo::Tr>::run", "<demo::W<u8> as demo::Tr>::run");
	check("<demo::W<u8>>::get", "<demo::W<u8>>::get");
}

/* A small buffer: cut, always NUL-terminated, never written past. */
static void test_small_buffer(void **state)
{
	const char *c = "a_rather_long_c_function_name";
	char buf[16];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_ptr_equal(nw_short_name(c, buf, 8), buf);
	assert_string_equal(buf, "a_rathe");
	assert_int_equal(buf[8], 'x');

	memset(buf, 'x', sizeof(buf));
	nw_short_name(c, buf, 1);
	assert_string_equal(buf, "");
	assert_int_equal(buf[1], 'x');

	/* No room at all: nothing written. */
	memset(buf, 'x', sizeof(buf));
	assert_ptr_equal(nw_short_name(c, buf, 0), buf);
	assert_int_equal(buf[0], 'x');

	/* Just enough room for the name and its NUL. */
	nw_short_name("ns::f(int)", buf, 11);
	assert_string_equal(buf, "ns::f");

	/* The readable form is what is cut, not the whole name. */
	nw_short_name("int ns::Foo<int>::bar(char const*) const", buf, sizeof(buf));
	assert_string_equal(buf, "ns::Foo<int>::b");
	nw_short_name("int ns::Foo<int>::bar(char const*) const", buf, 6);
	assert_string_equal(buf, "ns::F");
}

/*
 * A long C++ name into the 1024 bytes the lines view gives: its readable
 * form, not the first 1023 bytes of its signature.
 */
static void test_long_signature(void **state)
{
	const char *arg = "std::__cxx11::basic_string<char, std::char_traits<char>, "
			  "std::allocator<char> > const&";
	char name[2048], buf[1024];
	int len;

	(void)state;
	len =
	    snprintf(name, sizeof(name), "std::vector<int, std::allocator<int> > ns::parse<int>(");
	for (int i = 0; i < 20; i++)
		len += snprintf(name + len, sizeof(name) - (size_t)len, "%s%s", i ? ", " : "", arg);
	len += snprintf(name + len, sizeof(name) - (size_t)len, ") const");
	assert_true(len > 1024 && (size_t)len < sizeof(name));
	nw_short_name(name, buf, sizeof(buf));
	assert_string_equal(buf, "ns::parse<int>");
}

/* Unbalanced brackets and names longer than 4096 bytes are shown whole. */
static void test_odd_names(void **state)
{
	size_t n = 5000;
	char *name = malloc(n + 1), *buf = malloc(n + 1);

	(void)state;
	check("ns::f(int", "ns::f(int");
	check("ns::f)(", "ns::f)(");
	check("ns::Foo<int::bar()", "ns::Foo<int::bar()");
	/* Unbalanced, but the clone suffix still goes */
	check("ns::f(int [clone .isra.0]", "ns::f(int");

	assert_non_null(name);
	assert_non_null(buf);
	memset(name, 'a', n);
	memcpy(name, "int ns::", 8);
	memcpy(name + n - 7, "(int)  ", 7);
	name[n - 2] = '\0';
	nw_short_name(name, buf, n + 1);
	assert_string_equal(buf, name);
	free(name);
	free(buf);
}

/* The frame table keeps a short name only for functions whose name shortens. */
static void test_frames(void **state)
{
	struct nw_frames f;
	int64_t a, b, c, d, e;

	(void)state;
	nw_frames_init(&f);
	a = nw_frames_intern(&f, NW_FRAME_FUNCTION, "int ns::Foo<int>::bar(char const*) const",
			     "/src/foo.cc", 3, "/bin/app");
	b = nw_frames_intern(&f, NW_FRAME_FUNCTION, "main", "/src/main.c", 1, "/bin/app");
	c = nw_frames_intern(&f, NW_FRAME_ADDRESS, "app+0x1234", NULL, 0, "/bin/app");
	d = nw_frames_intern(&f, NW_FRAME_FUNCTION, "core::fmt::write::h0123456789abcdef", NULL, 0,
			     "/bin/app");
	/* The same name again: the same frame. */
	e = nw_frames_intern(&f, NW_FRAME_FUNCTION, "int ns::Foo<int>::bar(char const*) const",
			     NULL, 0, "/bin/app");
	assert_true(a >= 0 && b >= 0 && c >= 0 && d >= 0);
	assert_int_equal(e, a);
	assert_int_equal(f.n, 4);

	assert_string_equal(f.v[a].short_name, "ns::Foo<int>::bar");
	assert_string_equal(nw_func_name(&f.v[a], false), "ns::Foo<int>::bar");
	assert_string_equal(nw_func_name(&f.v[a], true),
			    "int ns::Foo<int>::bar(char const*) const");

	assert_null(f.v[b].short_name);
	assert_string_equal(nw_func_name(&f.v[b], false), "main");
	assert_string_equal(nw_func_name(&f.v[b], true), "main");

	/* Only functions are shortened. */
	assert_null(f.v[c].short_name);
	assert_string_equal(nw_func_name(&f.v[c], false), "app+0x1234");

	assert_string_equal(nw_func_name(&f.v[d], false), "core::fmt::write");
	assert_string_equal(nw_func_name(&f.v[d], true), "core::fmt::write::h0123456789abcdef");
	nw_frames_fini(&f);
}

/* ---- the views ---- */

#define FOO "int ns::Foo<int>::bar(char const*) const"
#define OP "ns::X::operator()(int)"
#define RS "core::fmt::write::h0123456789abcdef"

/*
 * main;FOO 3, main;FOO;OP 2, main;RS 1: C++ and Rust names that shorten,
 * below one that does not.
 */
static struct fx *cxx_profile(void)
{
	struct fx *fx = fx_new(NULL, 0);
	struct nw_mthread *th;

	fx_func(fx, "main", "/src/main.c", 1);
	fx_func(fx, FOO, "/src/foo.cc", 12);
	th = fx_thread(fx, 1, 1, "app");
	fx_add(fx, th, "main;" FOO, 3, 3000);
	fx_add(fx, th, "main;" FOO ";" OP, 2, 2000);
	fx_add(fx, th, "main;" RS, 1, 1000);
	return fx;
}

typedef int (*view_fn)(FILE *, struct nw_stacks *, const struct nw_view_opts *);

/* The views of a tree only, as a view_fn. */
static int tree_view(FILE *out, struct nw_stacks *s, const struct nw_view_opts *o)
{
	return nw_view_tree(out, s, o);
}

static char *view(view_fn fn, const struct fx *fx, bool full)
{
	struct nw_stacks_opts so = {0};
	struct nw_view_opts o = {.metric = 0, .full_names = full};
	struct nw_stacks *s = nw_stacks_new(fx->m, fx->m->nmetrics);
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	assert_non_null(s);
	assert_int_equal(nw_stacks_build(s, &so), 0);
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(fn(out, s, &o), 0);
	fclose(out);
	nw_stacks_free(s);
	return buf;
}

static void assert_contains(const char *s, const char *want)
{
	if (!strstr(s, want))
		fail_msg("no \"%s\" in:\n%s", want, s);
}

static void test_views_tree(void **state)
{
	struct fx *fx = cxx_profile();
	char *s;

	(void)state;
	s = view(tree_view, fx, false);
	assert_contains(s, " INCL%   SELF%  FUNCTION\n"
			   "100.0%    0.0%  main\n"
			   " 83.3%   50.0%    ns::Foo<int>::bar\n"
			   " 33.3%   33.3%      ns::X::operator()\n"
			   " 16.7%   16.7%    core::fmt::write\n");
	free(s);

	s = view(tree_view, fx, true);
	assert_contains(s, " INCL%   SELF%  FUNCTION\n"
			   "100.0%    0.0%  main\n"
			   " 83.3%   50.0%    " FOO "\n"
			   " 33.3%   33.3%      " OP "\n"
			   " 16.7%   16.7%    " RS "\n");
	free(s);
	fx_free(fx);
}

static void test_views_flat(void **state)
{
	struct fx *fx = cxx_profile();
	char *s;

	(void)state;
	s = view(nw_view_flat, fx, false);
	assert_contains(s, " SELF%  CUMUL%  FUNCTION\n"
			   " 50.0%   83.3%  ns::Foo<int>::bar (foo.cc:12)\n"
			   " 33.3%   33.3%  ns::X::operator()\n"
			   " 16.7%   16.7%  core::fmt::write\n"
			   "  0.0%  100.0%  main (main.c:1)\n");
	free(s);

	s = view(nw_view_flat, fx, true);
	assert_contains(s, " SELF%  CUMUL%  FUNCTION\n"
			   " 50.0%   83.3%  " FOO " (foo.cc:12)\n"
			   " 33.3%   33.3%  " OP "\n"
			   " 16.7%   16.7%  " RS "\n"
			   "  0.0%  100.0%  main (main.c:1)\n");
	free(s);
	fx_free(fx);
}

/* Folded stacks are for other tools: whole names, with or without full_names. */
static void test_views_folded(void **state)
{
	/* Sorted by the whole names */
	static const char *const want = "main;" RS " 1\n"
					"main;" FOO " 3\n"
					"main;" FOO ";" OP " 2\n";
	struct fx *fx = cxx_profile();
	char *s;

	(void)state;
	s = view(nw_view_folded, fx, false);
	assert_string_equal(s, want);
	free(s);
	s = view(nw_view_folded, fx, true);
	assert_string_equal(s, want);
	free(s);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unchanged),
		cmocka_unit_test(test_clones),
		cmocka_unit_test(test_signatures),
		cmocka_unit_test(test_templates),
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_operator_symbols),
		cmocka_unit_test(test_special_names),
		cmocka_unit_test(test_spaces_in_names),
		cmocka_unit_test(test_declarators),
		cmocka_unit_test(test_rust),
		cmocka_unit_test(test_small_buffer),
		cmocka_unit_test(test_long_signature),
		cmocka_unit_test(test_odd_names),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_views_tree),
		cmocka_unit_test(test_views_flat),
		cmocka_unit_test(test_views_folded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
