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
static void name_spaces(const char *s, size_t n, int *depth)
{
	for (size_t i = 0; i < n; i++) {
		if (depth[i] != 0)
			continue;
		if (is_operator(s, i, n)) {
			size_t j = i + 8 + operator_symbol(s + i + 8, n - i - 8);

			for (; j < n && !(s[j] == '(' && depth[j] == 0); j++)
				if (s[j] == ' ' && depth[j] == 0)
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

char *nw_short_name(const char *name, char *buf, size_t len)
{
	static const char *const quals[] = { " const", " volatile", " &&", " &", " noexcept" };
	int depth[MAX_NAME];
	size_t n = strlen(name), start = 0;
	bool more = true;

	if (!len)
		return buf;
	if (n >= MAX_NAME || n >= len) {
		snprintf(buf, len, "%s", name);
		return buf;
	}
	memcpy(buf, name, n + 1);
	n = strip_clones(buf, n);
	n = strip_rust_hash(buf, n);
	if (!depths(buf, n, depth)) {
		buf[n] = '\0';
		return buf;
	}
	/* Qualifiers after the parameter list, then the list itself. */
	while (more) {
		more = false;
		for (size_t q = 0; q < sizeof(quals) / sizeof(quals[0]); q++)
			if (ends_with(buf, n, quals[q])) {
				n -= strlen(quals[q]);
				more = true;
			}
	}
	if (n && buf[n - 1] == ')' && depth[n - 1] == 1) {
		size_t i = n - 1;

		while (i && !(buf[i] == '(' && depth[i] == 0))
			i--;
		/* "operator()" alone is a name, not a parameter list. */
		if (buf[i] == '(' && depth[i] == 0 && i > 0)
			n = i;
	}
	/* The return type: what precedes the last top-level space not part of the name. */
	name_spaces(buf, n, depth);
	for (size_t i = n; i-- > 0;) {
		if (buf[i] == ' ' && depth[i] == 0) {
			start = i + 1;
			break;
		}
	}
	memmove(buf, buf + start, n - start);
	buf[n - start] = '\0';
	return buf;
}
