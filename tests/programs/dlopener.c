/* SPDX-License-Identifier: MIT */
/*
 * dlopener LIBRARY: burns 0.3 s in before_dlopen, then loads LIBRARY with
 * dlopen, calls its plug_work (0.3 s) and unloads it.  The process's set of
 * executable mappings changes in the middle, so the measurement holds two
 * epochs, and plug_work must be named although the library is gone at exit.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "spin.h"

__attribute__((noinline)) static void before_dlopen(void)
{
	NW_SPIN(0.3);
}

int main(int argc, char **argv)
{
	int (*work)(void);
	void *lib;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: dlopener LIBRARY\n");
		return 2;
	}
	before_dlopen();
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopener: %s\n", dlerror());
		return 1;
	}
	*(void **)&work = dlsym(lib, "plug_work");
	if (!work) {
		fprintf(stderr, "dlopener: %s\n", dlerror());
		dlclose(lib);
		return 1;
	}
	ret = work();
	dlclose(lib);
	return ret == 42 ? 0 : 1;
}
