/* SPDX-License-Identifier: MIT */
/* Debug logging for library code (which otherwise never prints). */
#ifndef NW_LOG_H
#define NW_LOG_H

#include <stddef.h>

enum nw_log_level { NW_LOG_QUIET, NW_LOG_INFO, NW_LOG_DEBUG };

/* The one mutable global of src/: set by the front ends from -v / -q. */
extern enum nw_log_level nw_log_level;

__attribute__((format(printf, 1, 2))) void nw_debug(const char *fmt, ...);

/* Formats a message for the caller into @err (@errlen bytes); NULL or 0 is a no-op. */
__attribute__((format(printf, 3, 4))) void nw_set_err(char *err, size_t errlen, const char *fmt,
						      ...);

#endif
