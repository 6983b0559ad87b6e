/* SPDX-License-Identifier: MIT */
/*
 * What libnarwhal-alloc (the allocation interposer, interpose.c) and the
 * recorder (record/alloc.c) agree on: the environment that configures
 * the interposer, the two marker functions the recorder puts uprobes on,
 * and the meaning of their arguments.  doc/ALLOCATIONS.md has the design.
 *
 * The interposer calls, for every allocation it samples (after the
 * allocation, before returning it):
 *
 *	narwhal_alloc_sample(void *ptr, size_t size, size_t rate, unsigned long flags)
 *
 * and, for a sampled pointer that is freed (before it is freed, so that
 * no other thread can be handed the same address first):
 *
 *	narwhal_free_sample(void *ptr)
 *
 * The recorder reads the arguments from the sample's user registers
 * (arch: the first integer argument registers).  @rate is the mean
 * sampling interval in bytes the allocation was sampled with (1: every
 * allocation), so the recorder weighs it as it was drawn.
 */
#ifndef NW_ALLOC_ABI_H
#define NW_ALLOC_ABI_H

/* The shared library preloaded into launched programs. */
#define NW_ALLOC_LIBRARY "libnarwhal-alloc.so"
#define NW_ALLOC_SAMPLE_FN "narwhal_alloc_sample"
#define NW_ALLOC_FREE_FN "narwhal_free_sample"

/* Mean bytes between samples (decimal); unset: NW_ALLOC_DEFAULT_RATE. */
#define NW_ALLOC_RATE_ENV "NARWHAL_ALLOC_RATE"
#define NW_ALLOC_DEFAULT_RATE 524288ul

/* narwhal_alloc_sample() flags: the pointer table was full, its free will not be seen. */
#define NW_ALLOC_UNTRACKED 1ul

#endif
