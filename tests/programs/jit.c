/* SPDX-License-Identifier: MIT */
/*
 * jit: a tiny JIT.  Writes a counting loop as machine code into an
 * anonymous page, makes the page executable, names the code jit_hot_loop
 * in /tmp/perf-<pid>.map (the perf map convention) and runs it for 0.3 s
 * of CPU.  A second entry, jit_cold_stub, names code that never runs.
 * Prints "jit pid PID" on stdout; the map file is left in place (a JIT's
 * map outlives it, for the profiler to read) and is the caller's to remove.
 * Exits 77 on an architecture it has no code for.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "spin.h"

/* void loop(uint64_t n): counts n down to 0 (n > 0), then returns. */
#if defined(__x86_64__)
static const unsigned char loop_code[] = {
    0x48, 0x89, 0xf8,	    /* mov %rdi,%rax */
    0x48, 0x83, 0xe8, 0x01, /* 1: sub $1,%rax */
    0x75, 0xfa,		    /* jne 1b */
    0xc3,		    /* ret */
};
#elif defined(__aarch64__)
static const unsigned char loop_code[] = {
    0x00, 0x04, 0x00, 0xf1, /* 1: subs x0, x0, #1 */
    0xe1, 0xff, 0xff, 0x54, /* b.ne 1b */
    0xc0, 0x03, 0x5f, 0xd6, /* ret */
};
#endif

int main(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	long page = sysconf(_SC_PAGESIZE);
	/* Not at the page's start: the map's lines hold absolute addresses. */
	size_t hot_off = 0x40, cold_off = 0x100;
	void (*hot)(uint64_t);
	unsigned char *mem;
	char path[64];
	double end;
	FILE *f;

	mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("jit: mmap");
		return 1;
	}
	memcpy(mem + hot_off, loop_code, sizeof(loop_code));
	memcpy(mem + cold_off, loop_code, sizeof(loop_code));
	__builtin___clear_cache((char *)mem, (char *)mem + page);
	if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC) < 0) {
		perror("jit: mprotect");
		return 1;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %zx jit_hot_loop\n", (unsigned long)(uintptr_t)(mem + hot_off),
		sizeof(loop_code));
	fprintf(f, "%lx %zx jit_cold_stub\n", (unsigned long)(uintptr_t)(mem + cold_off),
		sizeof(loop_code));
	if (fclose(f) != 0) {
		perror(path);
		return 1;
	}
	printf("jit pid %d\n", (int)getpid());
	fflush(stdout);

	/* A data pointer to a function pointer without a cast the compiler frowns on. */
	{
		unsigned char *p = mem + hot_off;

		memcpy(&hot, &p, sizeof(hot));
	}
	end = nw_thread_cpu_seconds() + 0.3;
	while (nw_thread_cpu_seconds() < end)
		hot(1u << 20);
	return 0;
#else
	fprintf(stderr, "jit: no machine code for this architecture\n");
	return 77;
#endif
}
