/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_unwind_rows.h - which rows of the unwind store (bpf_unwind.c) are
 * free (bpf_unwind_rows.c): runs of rows given to binaries and given
 * back when no process maps them any more, so the store serves binaries
 * first seen late in an agent's life.  Free runs are kept sorted and
 * joined with their neighbours; a run is taken from the first free run
 * it fits in.  Pure: no I/O, unit-tested (tests/unit/test_bpf_unwind.c).
 */
#ifndef VMTOOLS_AGENT_BPF_UNWIND_ROWS_H
#define VMTOOLS_AGENT_BPF_UNWIND_ROWS_H

#include <stddef.h>
#include <stdint.h>

struct vm_bpf_rows {
	struct vm_bpf_rows_run {
		uint32_t at, n;
	} * free; /* sorted by at, none adjacent */
	size_t n_free, cap_free;
	uint32_t size; /* rows in the store */
	uint32_t used; /* rows given out */
};

/* size rows, all free: 0, or -ENOMEM. */
int vm_bpf_rows_init(struct vm_bpf_rows *r, uint32_t size);
void vm_bpf_rows_destroy(struct vm_bpf_rows *r);

/* n rows into *at: 0, or -ENOSPC when no free run holds them. */
int vm_bpf_rows_take(struct vm_bpf_rows *r, uint32_t n, uint32_t *at);

/*
 * The n rows at at given back (taken before): 0, or -ENOMEM (they stay
 * taken: lost until the store is emptied, never given twice).
 */
int vm_bpf_rows_give(struct vm_bpf_rows *r, uint32_t at, uint32_t n);

#endif
