/* SPDX-License-Identifier: MIT */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

enum nw_log_level nw_log_level = NW_LOG_INFO;

void nw_debug(const char *fmt, ...)
{
	va_list ap;

	if (nw_log_level < NW_LOG_DEBUG)
		return;
	va_start(ap, fmt);
	fputs("narwhal: debug: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void nw_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
