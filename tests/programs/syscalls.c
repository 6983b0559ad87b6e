/* SPDX-License-Identifier: MIT */
/*
 * Time in the kernel, from known places (kernel frames, issue 14): for
 * about the CPU seconds given (default 2), rounds of
 *   - write_small: 2000 write(2) calls of one byte to /dev/null;
 *   - touch_pages: mmap 4 MiB, write one byte per page (a page fault each,
 *     the kernel zeroing the page), munmap;
 *   - user_work:   arithmetic in user space only.
 * So kernel frames stand below write_small (the write system call) and
 * touch_pages (the page fault path), and user_work has none.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void write_small(int fd)
{
	char c = 'x';

	for (int i = 0; i < 2000; i++)
		if (write(fd, &c, 1) != 1)
			abort();
}

__attribute__((noinline)) static void touch_pages(void)
{
	size_t len = 4 << 20, page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	for (size_t off = 0; off < len; off += page)
		p[off] = 1;
	munmap(p, len);
}

__attribute__((noinline)) static void user_work(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ull + 1;
	sink = x;
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = cpu_seconds() + (argc > 1 ? atof(argv[1]) : 2.0);
	int fd = open("/dev/null", O_WRONLY);

	if (fd < 0)
		return 1;
	while (cpu_seconds() < end) {
		write_small(fd);
		touch_pages();
		user_work();
	}
	close(fd);
	return 0;
}
