// SPDX-License-Identifier: Apache-2.0
/*
 * nofp.c - a workload built as most code is, without frame pointers
 * (-O2 -fomit-frame-pointer: the Makefile says so for this file), whose
 * stacks are known: main -> nofp_outer -> nofp_middle -> nofp_recurse
 * (ten calls deep) -> nofp_leaf, which burns CPU, and every fourth round
 * through libc: nofp_middle -> qsort -> nofp_compare.  A profiler that
 * follows frame pointers loses the callers of every frame here; one that
 * unwinds with .eh_frame names each.
 *
 * usage: nofp [--seconds S] [--comm NAME]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void nofp_leaf(void)
{
	for (int i = 0; i < 200000; i++)
		sink += (unsigned long)i * i;
}

__attribute__((noinline)) int nofp_compare(const void *a, const void *b)
{
	for (int i = 0; i < 200; i++)
		sink += i;
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) void nofp_recurse(int depth)
{
	if (depth > 0)
		nofp_recurse(depth - 1);
	else
		nofp_leaf();
	sink++; /* not a tail call */
}

__attribute__((noinline)) void nofp_middle(int round)
{
	int v[256];

	if (round % 4 == 0) {
		for (int i = 0; i < 256; i++)
			v[i] = (i * 7919) % 256;
		qsort(v, 256, sizeof(v[0]), nofp_compare);
	} else {
		nofp_recurse(9);
	}
	sink++;
}

__attribute__((noinline)) void nofp_outer(double until)
{
	for (int round = 0; now() < until; round++)
		nofp_middle(round);
	sink++;
}

int main(int argc, char **argv)
{
	double seconds = 5;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--comm"))
			prctl(PR_SET_NAME, argv[i + 1]);
	}
	nofp_outer(now() + seconds);
	return 0;
}
