// SPDX-License-Identifier: Apache-2.0
/*
 * nofpdl.c - libnofpdl.so, a shared library of ours built as nofp is
 * (-O2 -fomit-frame-pointer, -fPIC: the Makefile says so) that nofp does
 * not link: `nofp --dlopen S` loads it by path S seconds after it started,
 * while a profile is running, and calls nofpdl_entry through the pointer
 * dlsym gives: nofpdl_entry -> nofpdl_middle -> nofpdl_inner ->
 * nofpdl_leaf, which burns CPU.  None has a frame pointer, and the
 * library was not mapped when the profile began: only its .eh_frame, read
 * once the profiler learns of the new mapping, names the callers.
 */
/* What nofp looks up, declared here for -Wmissing-prototypes. */
void nofpdl_entry(unsigned long rounds);
void nofpdl_middle(unsigned long rounds);
void nofpdl_inner(unsigned long rounds);
unsigned long nofpdl_leaf(unsigned long rounds);

static volatile unsigned long dl_sink;

__attribute__((noinline)) unsigned long nofpdl_leaf(unsigned long rounds)
{
	for (unsigned long i = 0; i < rounds; i++)
		dl_sink += i * i; /* volatile: every round runs */
	return dl_sink;
}

__attribute__((noinline)) void nofpdl_inner(unsigned long rounds)
{
	dl_sink += nofpdl_leaf(rounds); /* not a tail call */
}

__attribute__((noinline)) void nofpdl_middle(unsigned long rounds)
{
	nofpdl_inner(rounds);
	dl_sink++;
}

__attribute__((noinline)) void nofpdl_entry(unsigned long rounds)
{
	nofpdl_middle(rounds);
	dl_sink++;
}
