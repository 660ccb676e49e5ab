// SPDX-License-Identifier: Apache-2.0
/*
 * nofplib.c - libnofp.so, a shared library of ours built as nofp is
 * (-O2 -fomit-frame-pointer, and -fPIC: the Makefile says so), which nofp
 * calls through its PLT: nofplib_entry -> nofplib_middle ->
 * nofplib_inner -> nofplib_leaf, which burns CPU.  The calls inside the
 * library go through its own PLT too (exported functions may be
 * interposed), so nothing here is inlined and no frame has a frame
 * pointer: only .eh_frame names the callers.
 */
/* The functions nofp calls, declared here for -Wmissing-prototypes. */
void nofplib_entry(unsigned long rounds);
void nofplib_middle(unsigned long rounds);
void nofplib_inner(unsigned long rounds);
unsigned long nofplib_leaf(unsigned long rounds);

static volatile unsigned long lib_sink;

__attribute__((noinline)) unsigned long nofplib_leaf(unsigned long rounds)
{
	for (unsigned long i = 0; i < rounds; i++)
		lib_sink += i * i; /* volatile: every round runs */
	return lib_sink;
}

__attribute__((noinline)) void nofplib_inner(unsigned long rounds)
{
	lib_sink += nofplib_leaf(rounds); /* not a tail call */
}

__attribute__((noinline)) void nofplib_middle(unsigned long rounds)
{
	nofplib_inner(rounds);
	lib_sink++;
}

__attribute__((noinline)) void nofplib_entry(unsigned long rounds)
{
	nofplib_middle(rounds);
	lib_sink++;
}
