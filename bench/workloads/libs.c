/* SPDX-License-Identifier: MIT */
/*
 * Bench workload that loads many shared libraries.
 *
 *   libs DIR NLIBS UNITS
 *
 * dlopens DIR/libbench0.so .. DIR/libbench<NLIBS-1>.so (made by the bench
 * from a one-function template: double bench_fn<K>(double)), then spreads
 * UNITS units of work (about 0.1 ms each) evenly over the libraries'
 * functions, round-robin, so that every library is sampled.  Prints
 * "rusage USER_S SYS_S WALL_S" at the end like work.c.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

typedef double (*fn_t)(double);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double start = now(), x = 0;
	int nlibs;
	long units;
	fn_t *fns;
	struct rusage ru;

	if (argc != 4 || (nlibs = atoi(argv[2])) < 1 || (units = atol(argv[3])) < 0) {
		fprintf(stderr, "usage: libs DIR NLIBS UNITS\n");
		return 2;
	}
	fns = calloc(nlibs, sizeof(*fns));
	if (!fns)
		return 1;
	for (int k = 0; k < nlibs; k++) {
		char path[4096], sym[32];
		void *lib;

		snprintf(path, sizeof(path), "%s/libbench%d.so", argv[1], k);
		snprintf(sym, sizeof(sym), "bench_fn%d", k);
		lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!lib || !(*(void **)&fns[k] = dlsym(lib, sym))) {
			fprintf(stderr, "libs: %s\n", dlerror());
			return 1;
		}
	}
	for (long u = 0; u < units; u++)
		x = fns[u % nlibs](x);
	getrusage(RUSAGE_SELF, &ru);
	printf("rusage %.6f %.6f %.6f %g\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, now() - start, x > 0 ? 1.0 : 0.0);
	free(fns);
	return 0;
}
