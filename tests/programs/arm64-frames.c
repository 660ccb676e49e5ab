// SPDX-License-Identifier: Apache-2.0
/*
 * arm64-frames.c - an arm64 program whose call frame information
 * tests/unit/test_unwind_arm64.c reads on any host: built by the arm64
 * cross compiler with pointer authentication (-mbranch-protection=
 * standard: paciasp signs x30 and the CFI says so with
 * DW_CFA_AARCH64_negate_ra_state), never run.  frames_caller sets up a
 * frame record and, for its variable-length array, takes its CFA from
 * x29; frames_leaf saves nothing (its return address stays in x30).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int frames_leaf(int x);
__attribute__((noinline)) int frames_caller(int n);

__attribute__((noinline)) int frames_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int frames_caller(int n)
{
	volatile int v[n + 1];

	for (int i = 0; i <= n; i++)
		v[i] = frames_leaf(i);
	return v[n] + frames_leaf(n);
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", frames_caller(argc + 3));
	return 0;
}
