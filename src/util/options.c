/* SPDX-License-Identifier: MIT */
/* A front end's options from one table; see options.h. */
#include "util/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void nw_options_getopt(const struct nw_option *t, size_t n, struct option *longopts,
		       char *shortopts)
{
	*shortopts++ = '+';
	for (size_t i = 0; i < n; i++) {
		/* getopt's names come without the dashes. */
		longopts[i] = (struct option){ t[i].name + 2, t[i].has_arg, NULL, t[i].code };
		if (t[i].code >= NW_OPTION_LONG_ONLY)
			continue;
		*shortopts++ = (char)t[i].code;
		if (t[i].has_arg == required_argument)
			*shortopts++ = ':';
	}
	longopts[n] = (struct option){ 0 };
	*shortopts = 0;
}

void nw_options_help(FILE *f, const struct nw_option *t, size_t n)
{
	for (const struct nw_option *o = t; o < t + n; o++) {
		const char *help, *nl;
		char col[256];
		size_t k = 0;

		/* The options of one line, ", " between them; the first says its short letter. */
		for (;; o++) {
			if (o->code < NW_OPTION_LONG_ONLY)
				k += (size_t)snprintf(col + k, sizeof(col) - k, "-%c, ", o->code);
			else if (!k)
				k += (size_t)snprintf(col + k, sizeof(col) - k, "    ");
			k += (size_t)snprintf(col + k, sizeof(col) - k, "%s%s%s", o->name,
					      o->arg ? " " : "", o->arg ? o->arg : "");
			if (o->help || o + 1 == t + n || k >= sizeof(col))
				break;
			k += (size_t)snprintf(col + k, sizeof(col) - k, ", ");
		}
		fprintf(f, "  %-22s  ", col);
		for (help = o->help ? o->help : ""; (nl = strchr(help, '\n')); help = nl + 1)
			fprintf(f, "%.*s\n%26s", (int)(nl - help), help, "");
		fprintf(f, "%s\n", help);
	}
}

const char *nw_options_name(const struct nw_option *t, size_t n, int code, char *buf,
			    size_t len)
{
	snprintf(buf, len, "?");
	for (size_t i = 0; i < n; i++) {
		if (t[i].code != code)
			continue;
		if (code < NW_OPTION_LONG_ONLY)
			snprintf(buf, len, "-%c", code);
		else
			snprintf(buf, len, "%s", t[i].name);
		break;
	}
	return buf;
}

int nw_parse_count(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || !v || s[0] == '-')
		return -EINVAL;
	*ret = v;
	return 0;
}

int nw_parse_seconds(const char *s, bool zero, double max, double *ret)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(zero ? v >= 0 : v > 0) || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

int nw_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v *= 1024; end++; break;
	case 'M': case 'm': v *= 1024 * 1024; end++; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > 1e18)
		return -EINVAL;
	*ret = (uint64_t)v;
	return 0;
}

int nw_parse_cpus(const char *s, unsigned max, bool **ret)
{
	bool *v = calloc(max, sizeof(*v));
	const char *p = s;

	if (!v)
		return -ENOMEM;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;

		if (end == p || a >= max)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || b < a || b >= max)
				goto bad;
		}
		for (unsigned long c = a; c <= b; c++)
			v[c] = true;
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	free(*ret);
	*ret = v;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

int nw_parse_size_pair(const char *s, uint64_t *first, uint64_t *second)
{
	const char *comma = strchr(s, ',');
	char head[64];

	if (!comma)
		return nw_parse_size(s, first);
	if ((size_t)(comma - s) >= sizeof(head))
		return -EINVAL;
	snprintf(head, sizeof(head), "%.*s", (int)(comma - s), s);
	return nw_parse_size(head, first) || nw_parse_size(comma + 1, second) ? -EINVAL : 0;
}
