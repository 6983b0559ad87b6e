// SPDX-License-Identifier: MIT
// C++ allocations for narwhal-record --alloc (tests/integration/alloc.sh):
// operator new and new[] go through malloc, delete and delete[] through
// free.  "alloc-cxx N": cxx_objects makes N objects of 4000 bytes with new
// and deletes them; cxx_arrays N arrays of 3000 bytes with new[] and keeps
// them (live at exit).  Prints "expect FUNCTION BYTES OBJECTS" for each.
#include <cstdio>
#include <cstdlib>
#include <vector>

struct Block {
	char bytes[4000];
};

static Block *volatile sink;

__attribute__((noinline)) static void cxx_objects(long n)
{
	for (long i = 0; i < n; i++) {
		sink = new Block;
		delete sink;
	}
}

__attribute__((noinline)) static void cxx_arrays(long n, std::vector<char *> &keep)
{
	for (long i = 0; i < n; i++)
		keep[(size_t)i] = new char[3000];
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? std::atol(argv[1]) : 100;
	std::vector<char *> keep((size_t)n);

	cxx_objects(n);
	cxx_arrays(n, keep);
	std::printf("expect cxx_objects %ld %ld\n", n * 4000, n);
	std::printf("expect cxx_arrays %ld %ld\n", n * 3000, n);
	return 0;
}
