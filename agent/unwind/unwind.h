/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind.h - a user stack walked with unwind tables (unwind_table.h) in
 * user space (unwind.c): from the registers of the innermost frame and a
 * way to read the stack, each caller's return address, through code with
 * or without frame pointers.  For the perf backend's copied stacks
 * (PERF_SAMPLE_STACK_USER), with the step the BPF programs take
 * (bpf/unwind_step.h), and held equal to their walk by
 * tests/unit/test_unwind_steps.c.
 *
 * Where no table covers a pc the frame pointer is followed instead; a
 * signal frame (__restore_rt) is crossed through the ucontext the kernel
 * saved.  The stack and the tables are untrusted: every read may fail,
 * and a walk ends at the outermost frame, at max frames, or cut (and
 * counted so): at a read that fails, a frame that does not move up the
 * stack or leaves it, a return address in no executable mapping; never
 * looping.
 */
#ifndef VMTOOLS_AGENT_UNWIND_H
#define VMTOOLS_AGENT_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/unwind_table.h"

/*
 * The architecture's pc, sp and fp (bpf/unwind_x86.h: rip, rsp, rbp;
 * bpf/unwind_arm64.h: pc, sp, x29), and its link register (arm64's x30;
 * 0: none, or not known).
 */
struct vm_unwind_regs {
	uint64_t pc, sp, fp, lr;
};

/*
 * The table for run-time address pc and pc's link-time address in it
 * (*link), or NULL when no table covers pc; *outside set when no
 * executable mapping of the process holds pc (a return address there
 * cuts the walk).
 */
typedef const struct vm_unwind_table *(*vm_unwind_find_fn)(void *arg,
							   uint64_t pc,
							   uint64_t *link,
							   bool *outside);

/* The 8 bytes at addr of the stack into *value; false when unreadable. */
typedef bool (*vm_unwind_read_fn)(void *arg, uint64_t addr, uint64_t *value);

/* How a walk went, summed over walks. */
struct vm_unwind_counts {
	uint64_t by_table; /* callers found from a table's row */
	uint64_t by_frame_pointer; /* where no table covered the pc */
	uint64_t outermost; /* walks that ended at the outermost frame */
	/*
	 * Walks that ended early: a bad read, no progress, off the stack,
	 * a return address in no executable mapping.
	 */
	uint64_t cut;
};

/*
 * Walk the stack from regs: the pcs, innermost first, into ips (at most
 * max), and each frame's stack pointer into sps (its callee's CFA; NULL:
 * not wanted).  The count.
 */
size_t vm_unwind_stack(const struct vm_unwind_regs *regs,
		       vm_unwind_find_fn find, vm_unwind_read_fn read,
		       void *arg, uint64_t *ips, uint64_t *sps, size_t max,
		       struct vm_unwind_counts *counts);

#endif
