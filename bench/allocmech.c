/* SPDX-License-Identifier: MIT */
/*
 * bench-allocmech: what one malloc+free pair costs under each mechanism
 * doc/ALLOCATIONS.md weighs (bench/alloc.py runs it):
 *
 *   bench-allocmech N                       plain (or under LD_PRELOAD=libnarwhal-alloc.so)
 *   bench-allocmech N uprobe LIBC OFFSET [stack]
 *       a uprobe on LIBC at file OFFSET (malloc's entry) through the uprobe
 *       PMU, sample_period 1, on this thread, its ring drained by a second
 *       thread as a recorder would; "stack": with the user registers and a
 *       16 KiB stack copy, as --call-graph dwarf takes them.
 *
 * Prints "ns_per_pair N" and, with a uprobe, "samples N lost N".
 */
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING_PAGES 1024

static atomic_int done;
static uint64_t nsamples, nlost;

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Drains the ring: counts samples and lost records, as a recorder's reader would. */
static void *drain(void *arg)
{
	struct perf_event_mmap_page *pg = arg;
	unsigned char *data = (unsigned char *)pg + getpagesize();
	uint64_t size = pg->data_size;

	while (!atomic_load(&done) ||
	       __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) != pg->data_tail) {
		uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = pg->data_tail;

		while (tail < head) {
			struct perf_event_header h;
			uint64_t off = tail % size;

			if (off + sizeof(h) <= size)
				memcpy(&h, data + off, sizeof(h));
			else
				break;
			if (h.type == PERF_RECORD_SAMPLE)
				nsamples++;
			else if (h.type == PERF_RECORD_LOST) {
				uint64_t l;

				memcpy(&l, data + (off + 16) % size, 8);
				nlost += l;
			}
			tail += h.size ? h.size : 8;
		}
		__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
		usleep(200);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct perf_event_mmap_page *pg = NULL;
	pthread_t th;
	uint64_t t0, t1;
	int fd = -1;

	if (argc > 4 && !strcmp(argv[2], "uprobe")) {
		struct perf_event_attr a = {0};
		FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
		int type = -1;

		if (!f || fscanf(f, "%d", &type) != 1) {
			fprintf(stderr, "no uprobe PMU\n");
			return 1;
		}
		fclose(f);
		a.size = sizeof(a);
		a.type = (uint32_t)type;
		a.config1 = (uint64_t)(uintptr_t)argv[3];
		a.config2 = strtoull(argv[4], NULL, 0);
		a.sample_period = 1;
		a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
		if (argc > 5 && !strcmp(argv[5], "stack")) {
			a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			a.sample_regs_user = 0xff0fff; /* x86-64: the general registers, ip, sp */
			a.sample_stack_user = 16384;
		}
		a.exclude_callchain_kernel = 1;
		fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
		if (fd < 0) {
			perror("perf_event_open");
			return 1;
		}
		pg = mmap(NULL, (RING_PAGES + 1) * (size_t)getpagesize(), PROT_READ | PROT_WRITE,
			  MAP_SHARED, fd, 0);
		if (pg == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		pthread_create(&th, NULL, drain, pg);
	}
	/* Warm up the allocator's caches, then time. */
	for (long i = 0; i < 1000; i++)
		free(malloc(32));
	t0 = now();
	for (long i = 0; i < n; i++) {
		void *volatile p = malloc(16 + (size_t)(i & 63));

		free(p);
	}
	t1 = now();
	if (pg) {
		atomic_store(&done, 1);
		pthread_join(th, NULL);
		printf("samples %llu lost %llu\n", (unsigned long long)nsamples,
		       (unsigned long long)nlost);
	}
	printf("ns_per_pair %.1f\n", (double)(t1 - t0) / (double)n);
	return 0;
}
