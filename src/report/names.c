/* SPDX-License-Identifier: MIT */
/* Readable function names; see names.h. */
#include "report/names.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Longest name shortened; longer ones are shown whole. */
#define MAX_NAME 4096

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* Drops " [clone .isra.0]" and C's ".constprop.0", ".isra.0", ".part.0", ".cold" suffixes. */
static size_t strip_clones(const char *s, size_t n)
{
	static const char *const gcc[] = { ".isra", ".constprop", ".part", ".cold", ".lto_priv",
					   ".localalias", ".llvm" };
	bool again = true;

	while (again) {
		again = false;
		while (n && s[n - 1] == ' ')
			n--;
		if (n && s[n - 1] == ']') {
			size_t i = n - 1;

			while (i && s[i] != '[')
				i--;
			if (i >= 1 && s[i - 1] == ' ' && !strncmp(s + i, "[clone ", 7)) {
				n = i - 1;
				again = true;
				continue;
			}
		}
		/* ".name" or ".name.123" at the end. */
		for (size_t g = 0; g < sizeof(gcc) / sizeof(gcc[0]); g++) {
			size_t k = strlen(gcc[g]), e = n;

			while (e && isdigit((unsigned char)s[e - 1]))
				e--;
			if (e < n && e && s[e - 1] == '.')
				e--;
			else
				e = n;
			if (e >= k && !memcmp(s + e - k, gcc[g], k) && e - k > 0) {
				n = e - k;
				again = true;
				break;
			}
		}
	}
	return n;
}

/* Drops a Rust legacy hash, "::h" and 16 hex digits. */
static size_t strip_rust_hash(const char *s, size_t n)
{
	if (n < 19 || memcmp(s + n - 19, "::h", 3))
		return n;
	for (size_t i = n - 16; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return n;
	return n - 19;
}

/*
 * Does the keyword "operator" start at @s[i] (not "my_operator",
 * "operators")?
 */
static bool is_operator(const char *s, size_t i, size_t n)
{
	return i + 8 <= n && !strncmp(s + i, "operator", 8) &&
	       (i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')) &&
	       (i + 8 == n || !(isalnum((unsigned char)s[i + 8]) || s[i + 8] == '_'));
}

/*
 * The length of the operator symbol at @s (@n bytes), the longest that
 * matches: "<<" in "operator<< <int>", ">>" in "operator>><int>" (whose
 * "<int>" are template arguments).  0 when none ("operator new").
 */
static size_t operator_symbol(const char *s, size_t n)
{
	/* Longest first. */
	static const char ops[] = "<<= >>= <=> ->* () [] << >> <= >= == != && || ++ -- += -= *= /= "
				  "%= &= |= ^= -> + - * / % ^ & | ~ ! = < > ,";

	for (const char *o = ops; *o;) {
		size_t k = strcspn(o, " ");

		if (k <= n && !memcmp(s, o, k))
			return k;
		o += k + (o[k] == ' ');
	}
	return 0;
}

/*
 * The nesting depth of <> and () before each byte of @s[0, n), in
 * @depth, with operator names ("operator<<", "operator()") not counted.
 * False when the brackets do not balance.
 */
static bool depths(const char *s, size_t n, int *depth)
{
	int d = 0;

	for (size_t i = 0; i < n; i++) {
		depth[i] = d;
		if (is_operator(s, i, n)) {
			/* The operator's symbol belongs to its name. */
			size_t j = i + 8 + operator_symbol(s + i + 8, n - i - 8);

			for (size_t k = i + 1; k < j; k++)
				depth[k] = d;
			i = j - 1;
			continue;
		}
		if (s[i] == '<' || s[i] == '(' || s[i] == '[' || s[i] == '{')
			d++;
		else if (s[i] == '>' || s[i] == ')' || s[i] == ']' || s[i] == '}')
			d--;
		if (d < 0)
			return false;
	}
	return d == 0;
}

/*
 * The length of the qualifiers of an enclosing function at @s (" const",
 * " volatile &", ...) when "::" follows them ("ns::X::f() const::{lambda()#1}"),
 * else 0.
 */
static size_t scope_qualifiers(const char *s, size_t n)
{
	static const char *const words[] = { "const", "volatile", "noexcept", "&&", "&" };
	size_t j = 0;

	while (j < n && s[j] == ' ') {
		size_t k = 0;

		j++;
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]) && !k; w++) {
			size_t l = strlen(words[w]);

			if (j + l <= n && !memcmp(s + j, words[w], l) &&
			    (j + l == n || !(isalnum((unsigned char)s[j + l]) || s[j + l] == '_')))
				k = l;
		}
		if (!k)
			return 0;
		j += k;
		if (j + 2 <= n && s[j] == ':' && s[j + 1] == ':')
			return j;
	}
	return 0;
}

/*
 * Marks the top-level spaces of @s[0, n) that are part of the name, not
 * the one after a return type, with depth -1: those of an operator's name
 * up to its parameter list ("operator new", "operator unsigned long",
 * "operator< <int>"), and those before the qualifiers of an enclosing
 * function ("ns::X::f() const::{lambda()#1}::operator()").
 */
static void name_spaces(const char *s, size_t n, int *depth, int d0)
{
	for (size_t i = 0; i < n; i++) {
		if (depth[i] != d0)
			continue;
		if (is_operator(s, i, n)) {
			size_t j = i + 8 + operator_symbol(s + i + 8, n - i - 8);

			for (; j < n && !(s[j] == '(' && depth[j] == d0); j++)
				if (s[j] == ' ' && depth[j] == d0)
					depth[j] = -1;
			i = j - 1;
		} else if (s[i] == ' ') {
			size_t k = scope_qualifiers(s + i, n - i);

			for (size_t j = i; j < i + k; j++)
				if (s[j] == ' ')
					depth[j] = -1;
		}
	}
}

/*
 * Where the name starts when @s[lo, n) (at depth @d0, its parameter list
 * gone) is a declarator around it: a function returning a pointer or a
 * reference to a function or an array, or a member pointer, as
 * "int (*ns::f<int>(int) const)(char)" without its "(char)",
 * "int (*ns::f<int>(int)) [3]", "int (ns::X::*ns::f<int>(int))(char)".
 * Its end in *end; 0 when @s is no such declarator.
 */
static size_t declarator(const char *s, size_t lo, size_t n, const int *depth, int d0, size_t *end)
{
	size_t i, j;

	/* An array's bounds after the parentheses */
	if (n > lo && s[n - 1] == ']' && depth[n - 1] == d0 + 1) {
		while (--n > lo && !(s[n] == '[' && depth[n] == d0))
			;
		while (n > lo && s[n - 1] == ' ')
			n--;
	}
	if (n <= lo || s[n - 1] != ')' || depth[n - 1] != d0 + 1)
		return 0;
	for (i = n - 1; i > lo && !(s[i] == '(' && depth[i] == d0); i--)
		;
	if (s[i] != '(' || depth[i] != d0)
		return 0;
	/* "(*", "(&", "(ns::X<int>::*" */
	for (j = i + 1; j < n - 1 && (depth[j] > d0 + 1 || isalnum((unsigned char)s[j]) ||
				      s[j] == '_' || s[j] == ':' || s[j] == '<');
	     j++)
		;
	if (j >= n - 1 || (s[j] != '*' && s[j] != '&') ||
	    (j > i + 1 && !(j >= i + 3 && s[j - 1] == ':' && s[j - 2] == ':')))
		return 0;
	while (j < n - 1 && (s[j] == '*' || s[j] == '&'))
		j++;
	*end = n - 1;
	return j;
}

char *nw_short_name(const char *name, char *buf, size_t len)
{
	static const char *const quals[] = { " const", " volatile", " &&", " &", " noexcept" };
	char tmp[MAX_NAME];
	int depth[MAX_NAME];
	size_t n = strlen(name), lo = 0, start, end;
	int d0 = 0;

	if (!len)
		return buf;
	if (n >= MAX_NAME) {
		snprintf(buf, len, "%s", name);
		return buf;
	}
	/* Shortened in @tmp, then cut to @len: the readable form fits more often. */
	memcpy(tmp, name, n + 1);
	n = strip_clones(tmp, n);
	n = strip_rust_hash(tmp, n);
	if (!depths(tmp, n, depth)) {
		snprintf(buf, len, "%.*s", (int)n, tmp);
		return buf;
	}
	for (;;) {
		bool more = true;

		/* Qualifiers after the parameter list, then the list itself. */
		while (more) {
			more = false;
			for (size_t q = 0; q < sizeof(quals) / sizeof(quals[0]); q++)
				if (ends_with(tmp + lo, n - lo, quals[q])) {
					n -= strlen(quals[q]);
					more = true;
				}
		}
		if (n > lo && tmp[n - 1] == ')' && depth[n - 1] == d0 + 1) {
			size_t i = n - 1;

			while (i > lo && !(tmp[i] == '(' && depth[i] == d0))
				i--;
			/* "operator()" alone is a name, not a parameter list. */
			if (tmp[i] == '(' && depth[i] == d0 && i > lo)
				n = i;
		}
		/* The name in a declarator around it: one level in, and again. */
		start = declarator(tmp, lo, n, depth, d0, &end);
		if (!start)
			break;
		lo = start;
		n = end;
		d0++;
	}
	/* The return type: what precedes the last top-level space not part of the name. */
	name_spaces(tmp + lo, n - lo, depth + lo, d0);
	start = lo;
	for (size_t i = n; i-- > lo;) {
		if (tmp[i] == ' ' && depth[i] == d0) {
			start = i + 1;
			break;
		}
	}
	snprintf(buf, len, "%.*s", (int)(n - start), tmp + start);
	return buf;
}
