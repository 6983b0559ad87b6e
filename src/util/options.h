/* SPDX-License-Identifier: MIT */
/*
 * A front end's options from one table (doc/STYLE: pprof's commands
 * table): getopt_long's long and short options and --help's list are made
 * from it, so they cannot drift; and the parsers of the values options
 * take (counts, seconds, sizes, CPU lists).
 */
#ifndef NW_OPTIONS_H
#define NW_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The codes of options without a short letter start here, above any character. */
#define NW_OPTION_LONG_ONLY 256

/*
 * One option: its long name as it is typed ("--output": the table reads
 * as the help it makes), whether it takes an argument (getopt's
 * no_argument, required_argument), its code (its short letter, or
 * NW_OPTION_LONG_ONLY and up), the argument's name in --help, and its
 * help: lines split by \n; NULL: the option shares the next one's line.
 */
struct nw_option {
	const char *name;
	int has_arg;
	int code;
	const char *arg;
	const char *help;
};

/*
 * getopt_long's tables for the @n options of @t: @longopts holds n + 1
 * entries, @shortopts 2n + 2 bytes ("+" first: options end at the first
 * word that is not one).
 */
void nw_options_getopt(const struct nw_option *t, size_t n, struct option *longopts,
		       char *shortopts);
/*
 * --help's list: per option "-x, --name ARG" (or "    --name ARG") in a
 * column of 22 and its help beside it, two spaces on (further lines
 * indented to it).
 */
void nw_options_help(FILE *f, const struct nw_option *t, size_t n);
/* The option of @code as the user writes it ("-F", "--duration") into @buf. */
const char *nw_options_name(const struct nw_option *t, size_t n, int code, char *buf,
			    size_t len);

/* A positive decimal count.  -EINVAL. */
int nw_parse_count(const char *s, uint64_t *ret);
/* Seconds above 0 (or 0 too, @zero), at most @max.  -EINVAL. */
int nw_parse_seconds(const char *s, bool zero, double max, double *ret);
/* Bytes: "4096", "512K", "500M", "2G" (a B may follow).  -EINVAL. */
int nw_parse_size(const char *s, uint64_t *ret);
/* "SIZE" or "SIZE,SIZE" (nw_parse_size() each): the second left alone when absent.  -EINVAL. */
int nw_parse_size_pair(const char *s, uint64_t *first, uint64_t *second);
/*
 * CPUs: "0,2-3" as @max flags (malloc'd; *@ret, freed first, takes it).
 * -EINVAL (a CPU @max or above), -ENOMEM.
 */
int nw_parse_cpus(const char *s, unsigned max, bool **ret);

#endif
