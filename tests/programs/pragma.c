/* SPDX-License-Identifier: MIT */
/*
 * #pragma narwhal (plugin/narwhal-plugin.cc), compiled by
 * tests/integration/sections-plugin.sh with -fplugin=narwhal-plugin.so.
 * Expected counts: "parse" 10 (three ways out), work 1 (named after the
 * function), "quoted name" 3, later 2 (the pragma is on its prototype),
 * fact 6 (recursive).  The last pragma of the file has no function: the
 * plugin warns.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

#pragma narwhal later
int later(int x);

#pragma narwhal parse
static int parse(int i)
{
	if (i % 2)
		return 1;
	sink += i;
	if (i % 3)
		return 2;
	return 3;
}

#pragma narwhal
int work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += parse(i);
	return s;
}

#pragma narwhal "quoted name"
static void quoted(void)
{
	sink++;
}

#pragma narwhal fact
static long fact(int n)
{
	return n <= 1 ? 1 : n * fact(n - 1);
}

int main(int argc, char **argv)
{
	int s = work(10);

	for (int i = 0; i < 3; i++)
		quoted();
	s += later(1) + later(2);
	printf("%d %ld\n", s, fact(6));
	return 0;
}

int later(int x)
{
	return x + sink;
}

#pragma narwhal orphan
