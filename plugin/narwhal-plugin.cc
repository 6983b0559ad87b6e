// SPDX-License-Identifier: MIT
//
// narwhal-plugin: a GCC plugin for C and C++ that instruments functions
// named by a pragma with libnarwhal (doc/SECTIONS.md):
//
//     #pragma narwhal solve          // section "solve"
//     void solve(void) { ... }
//
//     #pragma narwhal                // section named after the function
//     int parse(const char *s) { ... }
//
//     gcc -fplugin=narwhal-plugin.so prog.c -lnarwhal
//
// The pragma applies to the function declared or defined next (a C++
// member function defined in its class included).  Its body becomes
//
//     { int tok = narwhal_enter(&site, "NAME", "FILE", LINE);
//       try { BODY } finally { narwhal_exit(tok); } }
//
// with a zeroed static site per function, so that every return (and in C++
// every exception leaving the function) closes the section: the same
// construct as the cleanup attribute of NARWHAL_FUNC().  It is added to the
// GENERIC body before gimplification (PLUGIN_PRE_GENERICIZE), so it works
// at every optimization level and survives inlining.
#include "gcc-plugin.h"
#include "plugin-version.h"

#include "tree.h"
#include "stringpool.h"
#include "attribs.h"
#include "c-family/c-common.h"
#include "c-family/c-pragma.h"
#include "diagnostic-core.h"
#include "langhooks.h"
#include "toplev.h"
#include "tree-iterator.h"

#include <string>
#include <vector>

int plugin_is_GPL_compatible; // MIT, which is GPL-compatible

namespace {

// A pragma seen and not yet given to a function.
struct pending_pragma {
	std::string name; // empty: the function's own name
	location_t loc;
	std::string file;
	int line;
};

std::vector<pending_pragma> pending;
unsigned site_counter;
tree enter_decl, exit_decl;

const char attr_name[] = "narwhal section";

// #pragma narwhal [NAME | "NAME"]
void handle_pragma(cpp_reader *)
{
	tree x = NULL_TREE;
	location_t loc = UNKNOWN_LOCATION;
	enum cpp_ttype tok = pragma_lex(&x, &loc);
	std::string name;

	if (tok == CPP_NAME) {
		name = IDENTIFIER_POINTER(x);
	} else if (tok == CPP_STRING) {
		name = TREE_STRING_POINTER(x);
	} else if (tok != CPP_EOF) {
		warning_at(loc, 0, "%<#pragma narwhal%> takes a section name, or nothing");
		return;
	}
	if (tok != CPP_EOF && pragma_lex(&x) != CPP_EOF)
		warning_at(loc, 0, "junk at the end of %<#pragma narwhal%>");
	expanded_location xl = expand_location(loc);
	pending.push_back({ name, loc, xl.file ? xl.file : "", xl.line });
}

void register_pragmas(void *, void *)
{
	c_register_pragma(NULL, "narwhal", handle_pragma);
}

/*
 * Gives @fndecl the nearest pending pragma above it in the same file, if
 * any.  Called where a function definition starts (and, for the C++ member
 * functions defined in their class, whose bodies are parsed after the
 * class, when the body is done), and where a function is declared (the
 * definition inherits the declaration's attributes).
 */
void claim(tree fndecl)
{
	if (!fndecl || TREE_CODE(fndecl) != FUNCTION_DECL || pending.empty() ||
	    lookup_attribute(attr_name, DECL_ATTRIBUTES(fndecl)))
		return;
	expanded_location xl = expand_location(DECL_SOURCE_LOCATION(fndecl));
	if (!xl.file)
		return;
	int best = -1;
	for (size_t i = 0; i < pending.size(); i++) {
		if (pending[i].file == xl.file && pending[i].line < xl.line &&
		    (best < 0 || pending[i].line > pending[best].line))
			best = (int)i;
	}
	if (best < 0)
		return;
	const std::string &name = pending[best].name;
	tree str = build_string(name.size() + 1, name.c_str());
	DECL_ATTRIBUTES(fndecl) = tree_cons(get_identifier(attr_name), build_tree_list(NULL_TREE, str),
					    DECL_ATTRIBUTES(fndecl));
	pending.erase(pending.begin() + best);
}

void start_function(void *gcc_data, void *)
{
	claim((tree)gcc_data);
}

void finish_decl(void *gcc_data, void *)
{
	tree decl = (tree)gcc_data;

	if (decl && TREE_CODE(decl) == FUNCTION_DECL && !DECL_SAVED_TREE(decl))
		claim(decl);
}

tree runtime_decl(const char *name, tree type)
{
	tree decl = build_fn_decl(name, type);

	// The C name also from C++: no mangling.
	SET_DECL_ASSEMBLER_NAME(decl, get_identifier(name));
	return decl;
}

void make_runtime_decls()
{
	if (enter_decl)
		return;
	tree const_char_ptr = build_pointer_type(build_qualified_type(char_type_node, TYPE_QUAL_CONST));
	enter_decl = runtime_decl("narwhal_enter",
				  build_function_type_list(integer_type_node, ptr_type_node,
							   const_char_ptr, const_char_ptr,
							   integer_type_node, NULL_TREE));
	exit_decl = runtime_decl("narwhal_exit", build_function_type_list(void_type_node,
									  integer_type_node,
									  NULL_TREE));
}

tree string_literal(const char *s)
{
	return build_string_literal(strlen(s) + 1, s);
}

// The body of @fndecl, parsed and not yet gimplified: wrap it.
void instrument(void *gcc_data, void *)
{
	tree fndecl = (tree)gcc_data;
	tree attr, body;

	if (!fndecl || TREE_CODE(fndecl) != FUNCTION_DECL)
		return;
	claim(fndecl);
	attr = lookup_attribute(attr_name, DECL_ATTRIBUTES(fndecl));
	body = DECL_SAVED_TREE(fndecl);
	if (!attr || !body || body == error_mark_node)
		return;
	if (lookup_attribute("naked", DECL_ATTRIBUTES(fndecl))) {
		warning_at(DECL_SOURCE_LOCATION(fndecl), 0,
			   "%<#pragma narwhal%> ignored for a naked function");
		return;
	}
	make_runtime_decls();

	location_t loc = DECL_SOURCE_LOCATION(fndecl);
	const char *name = TREE_STRING_POINTER(TREE_VALUE(TREE_VALUE(attr)));
	std::string fn = lang_hooks.decl_printable_name(fndecl, 1);
	if (!name[0])
		name = fn.c_str();

	// static struct narwhal_site: 3 zeroed 64-bit words (narwhal.h).
	char site_name[64];
	snprintf(site_name, sizeof(site_name), "__narwhal_site.%u", site_counter++);
	tree site_type = build_array_type_nelts(long_long_unsigned_type_node, 3);
	tree site = build_decl(loc, VAR_DECL, get_identifier(site_name), site_type);
	TREE_STATIC(site) = 1;
	TREE_USED(site) = 1;
	TREE_ADDRESSABLE(site) = 1;
	DECL_ARTIFICIAL(site) = 1;
	DECL_IGNORED_P(site) = 1;
	DECL_CONTEXT(site) = fndecl;
	SET_DECL_ALIGN(site, 64);
	rest_of_decl_compilation(site, 0, 0);

	tree tok = build_decl(loc, VAR_DECL, get_identifier("__narwhal_token"), integer_type_node);
	DECL_ARTIFICIAL(tok) = 1;
	DECL_IGNORED_P(tok) = 1;
	TREE_USED(tok) = 1;
	DECL_CONTEXT(tok) = fndecl;

	tree enter = build_call_expr(enter_decl, 4, build_fold_addr_expr(site), string_literal(name),
				     string_literal(DECL_SOURCE_FILE(fndecl)),
				     build_int_cst(integer_type_node, DECL_SOURCE_LINE(fndecl)));
	tree init = build2(MODIFY_EXPR, integer_type_node, tok, enter);
	tree leave = build_call_expr(exit_decl, 1, tok);
	tree guarded = build2(TRY_FINALLY_EXPR, void_type_node, body, leave);
	SET_EXPR_LOCATION(init, loc);
	SET_EXPR_LOCATION(guarded, loc);

	tree stmts = alloc_stmt_list();
	append_to_statement_list(init, &stmts);
	append_to_statement_list(guarded, &stmts);
	tree bind = build3(BIND_EXPR, void_type_node, tok, stmts, NULL_TREE);
	TREE_SIDE_EFFECTS(bind) = 1;
	SET_EXPR_LOCATION(bind, loc);
	DECL_SAVED_TREE(fndecl) = bind;
}

void finish_unit(void *, void *)
{
	for (const pending_pragma &p : pending)
		warning_at(p.loc, 0,
			   "%<#pragma narwhal%> not followed by a function definition; ignored");
	pending.clear();
}

} // namespace

int plugin_init(struct plugin_name_args *info, struct plugin_gcc_version *version)
{
	static struct plugin_info about = {
		"1.0", "#pragma narwhal NAME before a function: time it with libnarwhal"
	};

	if (!plugin_default_version_check(version, &gcc_version)) {
		error("narwhal-plugin was built for GCC %s; rebuild it for this compiler",
		      gcc_version.basever);
		return 1;
	}
	register_callback(info->base_name, PLUGIN_INFO, NULL, &about);
	register_callback(info->base_name, PLUGIN_PRAGMAS, register_pragmas, NULL);
	register_callback(info->base_name, PLUGIN_START_PARSE_FUNCTION, start_function, NULL);
	register_callback(info->base_name, PLUGIN_FINISH_DECL, finish_decl, NULL);
	register_callback(info->base_name, PLUGIN_PRE_GENERICIZE, instrument, NULL);
	register_callback(info->base_name, PLUGIN_FINISH_UNIT, finish_unit, NULL);
	return 0;
}
