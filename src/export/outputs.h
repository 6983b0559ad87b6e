/* SPDX-License-Identifier: MIT */
/*
 * narwhal-report's exports as outputs of a plan (report/plan.h): one
 * table, each export with what it reads and how it is written, in the
 * order a report writes them (the HTML report first: it reads the
 * model's trees, which the others may free).
 */
#ifndef NW_EXPORT_OUTPUTS_H
#define NW_EXPORT_OUTPUTS_H

#include "report/plan.h"

enum nw_export {
	NW_EXPORT_HTML,
	NW_EXPORT_PPROF,
	NW_EXPORT_SPEEDSCOPE,
	NW_EXPORT_CHROME_TRACE,
	NW_EXPORT_FLAMEGRAPH,
	NW_EXPORTS,
};

extern const struct nw_output_kind nw_exports[NW_EXPORTS];

#endif
