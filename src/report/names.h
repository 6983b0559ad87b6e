/* SPDX-License-Identifier: MIT */
/*
 * Readable function names, as perf and pprof show them: a demangled C++
 * or Rust name without its return type, its parameter list, the
 * qualifiers after it and GCC's clone suffixes ("[clone .isra.0]",
 * ".constprop.0"), and a Rust legacy name without its hash
 * ("::h0123456789abcdef").  Template arguments are kept, as are operator
 * names ("operator()", "operator<<") and lambdas ("{lambda(int)#1}").
 *
 *   int ns::Foo<int>::bar(char const*) const [clone .isra.0]
 *     -> ns::Foo<int>::bar
 *   std::vector<int, std::allocator<int> >::push_back(int const&)
 *     -> std::vector<int, std::allocator<int> >::push_back
 *   core::fmt::write::h0123456789abcdef -> core::fmt::write
 */
#ifndef NW_NAMES_H
#define NW_NAMES_H

#include <stddef.h>

/*
 * The readable form of @name into @buf (@len bytes, cut when longer);
 * a name with nothing to shorten is copied as it is.  Returns @buf.
 */
char *nw_short_name(const char *name, char *buf, size_t len);

#endif
