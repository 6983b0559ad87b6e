/* SPDX-License-Identifier: MIT */
/*
 * libnarwhal-alloc: the allocation interposer narwhal-record --alloc
 * preloads into the programs it launches (LD_PRELOAD, inherited by their
 * children and exec'd programs).  It defines the allocator's entry points
 * and forwards each to glibc's own (__libc_malloc and friends, exported
 * for this purpose, so nothing goes through dlsym or recurses), and
 * samples by bytes (alloc/sampler.h): the unsampled path is a thread-local
 * countdown.  A sampled allocation goes into a lock-free set of pointers
 * (alloc/ptrtable.h) and is reported by calling narwhal_alloc_sample(),
 * on which the recorder has a uprobe that takes the stack with the
 * unwinder of its call-graph mode; a free of a sampled pointer calls
 * narwhal_free_sample().  alloc/abi.h is the contract with the recorder.
 *
 * No locks anywhere (fork, threads created during a malloc and signal
 * handlers that allocate never wait on this library); state per thread is
 * initial-exec TLS, which needs no allocation on first use.  Process-wide
 * state is the rate and the pointer set, both set once with atomics: a
 * library called from anywhere has no context to pass down (as the
 * sections runtime, src/runtime/rt.h).  It links libc and libm only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "alloc/abi.h"
#include "alloc/ptrtable.h"
#include "alloc/sampler.h"

#define API __attribute__((visibility("default")))
/* A marker stays a call of its own (the asm in it keeps any compiler from dropping the call). */
#if defined(__clang__)
#define MARKER __attribute__((noinline))
#else
#define MARKER __attribute__((noinline, noipa))
#endif

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *ptr);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

/* 4 Mi slots (32 MiB of address space, touched as used), 16 Ki filter counters. */
#define TABLE_BITS 22
#define FILTER_BITS 14

static __thread struct nw_alloc_sampler tls_sampler __attribute__((tls_model("initial-exec")));

static uint64_t g_rate;		    /* 0: not read yet */
static struct nw_ptrtable *g_table; /* NULL: not mapped yet; (void *)-1: mapping failed */
static uint64_t g_seed_counter;

/* Declared by malloc.h, or not at all (the markers: only the recorder calls them, by uprobe). */
API void narwhal_alloc_sample(void *ptr, size_t size, size_t rate, unsigned long flags);
API void narwhal_free_sample(void *ptr);
API void *memalign(size_t align, size_t size);
API void *pvalloc(size_t size);

/* The marker functions: empty, never inlined, cloned or merged, each with its own body. */
API MARKER void narwhal_alloc_sample(void *ptr, size_t size, size_t rate, unsigned long flags)
{
	__asm__ volatile("nop; nop" : : "r"(ptr), "r"(size), "r"(rate), "r"(flags) : "memory");
}

API MARKER void narwhal_free_sample(void *ptr)
{
	__asm__ volatile("nop" : : "r"(ptr) : "memory");
}

static uint64_t read_rate(void)
{
	uint64_t r = __atomic_load_n(&g_rate, __ATOMIC_RELAXED);
	const char *s;

	if (r)
		return r;
	s = getenv(NW_ALLOC_RATE_ENV);
	r = NW_ALLOC_DEFAULT_RATE;
	if (s && *s) {
		char *end;
		unsigned long long v = strtoull(s, &end, 10);

		if (!*end && v > 0)
			r = v;
	}
	__atomic_store_n(&g_rate, r, __ATOMIC_RELAXED);
	return r;
}

static struct nw_ptrtable *table(void)
{
	struct nw_ptrtable *t = __atomic_load_n(&g_table, __ATOMIC_ACQUIRE), *expected = NULL;
	size_t slots = sizeof(uintptr_t) << TABLE_BITS, filter = sizeof(uint32_t) << FILTER_BITS;
	char *mem;

	if (t)
		return t == (void *)-1 ? NULL : t;
	mem = mmap(NULL, sizeof(*t) + filter + slots, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		t = (void *)-1;
		__atomic_compare_exchange_n(&g_table, &expected, t, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE);
		return NULL;
	}
	t = (struct nw_ptrtable *)mem;
	t->filter = (uint32_t *)(mem + sizeof(*t));
	t->slots = (uintptr_t *)(mem + sizeof(*t) + filter);
	t->sbits = TABLE_BITS;
	t->fbits = FILTER_BITS;
	if (!__atomic_compare_exchange_n(&g_table, &expected, t, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Another thread mapped one first: use that. */
		munmap(mem, sizeof(*t) + filter + slots);
		t = expected;
	}
	return t == (void *)-1 ? NULL : t;
}

/*
 * The slow path of account(): the thread's first allocation (its sampler
 * is seeded: left is 0 until then), a sample, or every allocation at rate
 * 1 (left stays 0).  Returns @p.
 */
static __attribute__((noinline)) void *account_slow(void *p, size_t size)
{
	struct nw_alloc_sampler *s = &tls_sampler;
	uint64_t rate = read_rate();
	struct nw_ptrtable *t;
	unsigned long flags = 0;

	if (!s->rng) {
		struct timespec ts = {0};
		uint64_t seed;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)(uintptr_t)s ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		       (__atomic_add_fetch(&g_seed_counter, 1, __ATOMIC_RELAXED) *
			0x9E3779B97F4A7C15ULL);
		nw_alloc_sampler_seed(s, seed, rate);
		if (rate <= 1)
			s->left = 0; /* every allocation comes here */
	}
	if (rate > 1 && !nw_alloc_sample(s, size, rate))
		return p;
	if (!p)
		return p;
	t = table();
	if (!t || !nw_ptrtable_insert(t, (uintptr_t)p))
		flags |= NW_ALLOC_UNTRACKED;
	narwhal_alloc_sample(p, size, (size_t)rate, flags);
	return p;
}

/*
 * Counts @size bytes down to the thread's next sample: the whole
 * unsampled path, inlined into each entry point.  Returns @p.
 */
static inline __attribute__((always_inline)) void *account(void *p, size_t size)
{
	struct nw_alloc_sampler *s = &tls_sampler;

	if (__builtin_expect((uint64_t)s->left > size, 1)) {
		s->left -= (int64_t)size;
		return p;
	}
	return account_slow(p, size);
}

/* A pointer about to be freed: reported first when it was sampled. */
static inline __attribute__((always_inline)) void release(void *p)
{
	struct nw_ptrtable *t = __atomic_load_n(&g_table, __ATOMIC_ACQUIRE);

	if (__builtin_expect(t != NULL, 0) && p && t != (void *)-1 &&
	    nw_ptrtable_remove(t, (uintptr_t)p))
		narwhal_free_sample(p);
}

API void *malloc(size_t size)
{
	return account(__libc_malloc(size), size);
}

API void free(void *ptr)
{
	release(ptr);
	__libc_free(ptr);
}

API void *calloc(size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return account(__libc_calloc(n, size), total);
}

/* realloc is a free of the old block and an allocation of the new size. */
API void *realloc(void *ptr, size_t size)
{
	release(ptr);
	if (ptr && !size) {
		__libc_free(ptr);
		return NULL;
	}
	return account(__libc_realloc(ptr, size), size);
}

API void *reallocarray(void *ptr, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, total);
}

API int posix_memalign(void **ret, size_t align, size_t size)
{
	void *p;

	if (align % sizeof(void *) || (align & (align - 1)) || !align)
		return EINVAL;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*ret = account(p, size);
	return 0;
}

API void *aligned_alloc(size_t align, size_t size)
{
	if (align & (align - 1) || !align) {
		errno = EINVAL;
		return NULL;
	}
	return account(__libc_memalign(align, size), size);
}

API void *memalign(size_t align, size_t size)
{
	return account(__libc_memalign(align, size), size);
}

API void *valloc(size_t size)
{
	return account(__libc_valloc(size), size);
}

API void *pvalloc(size_t size)
{
	return account(__libc_pvalloc(size), size);
}
