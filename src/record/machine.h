/* SPDX-License-Identifier: MIT */
/*
 * What this machine allows and offers a recording: the settings a
 * recorder reads from /proc before it opens anything.  machine.c also
 * holds recorder.h's nw_recorder_paranoid(), nw_recorder_kernel_hidden()
 * and nw_recorder_events().
 */
#ifndef NW_RECORD_MACHINE_H
#define NW_RECORD_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwind.h"

/*
 * Ring pages per CPU when none are asked for: 512 KiB in fp mode; with
 * stack copies 8 MiB (500 samples of 16 KiB), within 64 MiB for all CPUs.
 * With --alloc four times that: a burst of allocation samples is not
 * spread over time as timer samples are.
 */
unsigned nw_recorder_ring_pages(enum nw_callgraph mode, bool alloc);

/* The frames a chain keeps at most: the kernel's limit for fp chains. */
uint32_t nw_recorder_max_stack(enum nw_callgraph mode);

#endif
