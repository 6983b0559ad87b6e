/* SPDX-License-Identifier: MIT */
/*
 * The HTML report's page, compiled in: web/report.html with web/report.css
 * and web/report.js inline, cut where the profile goes.  Generated at build
 * time by scripts/embed-web.py (src/export/meson.build); export/html.c
 * writes before, the data, after.
 */
#ifndef NW_WEBPAGE_H
#define NW_WEBPAGE_H

extern const char nw_webpage_before[];
extern const char nw_webpage_after[];

#endif
