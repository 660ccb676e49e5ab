// SPDX-License-Identifier: Apache-2.0
/*
 * unwind.c - walking a user stack with unwind tables (unwind.h).
 *
 * One step: the row for the pc gives the CFA (the stack pointer before
 * the call); the return address is at CFA + UNWIND_RA_OFF and the
 * caller's stack pointer is the CFA; the caller's frame pointer was saved
 * at CFA + fp_off, or is unchanged (what is the architecture's is in
 * bpf/unwind_x86.h, through bpf/unwind.h).  Every pc but the innermost and those after
 * a signal frame is a return address, looked up one byte back: a call
 * that ends its function must not be charged to the next one.
 */
#include "agent/unwind/unwind.h"

#include <stddef.h>

#include "bpf/unwind.h"

enum step {
	STEP_OK,
	STEP_OUTERMOST,
	STEP_CUT,
};

/* The caller's registers by the frame pointer: no table covers the pc. */
static enum step by_frame_pointer(struct vm_unwind_regs *r,
				  vm_unwind_read_fn read, void *arg)
{
	uint64_t ra, fp;

	if (!r->fp || r->fp <= r->sp - 8 || !read(arg, r->fp + 8, &ra) ||
	    !read(arg, r->fp, &fp))
		return STEP_CUT;
	r->sp = r->fp + UNWIND_FP_FRAME;
	r->fp = fp;
	r->pc = ra;
	return STEP_OK;
}

/* The interrupted registers a signal frame saved. */
static enum step from_signal_frame(struct vm_unwind_regs *r,
				   vm_unwind_read_fn read, void *arg)
{
	uint64_t pc, sp, fp;

	if (!read(arg, r->sp + UNWIND_SIGNAL_PC, &pc) ||
	    !read(arg, r->sp + UNWIND_SIGNAL_SP, &sp) ||
	    !read(arg, r->sp + UNWIND_SIGNAL_FP, &fp))
		return STEP_CUT;
	*r = (struct vm_unwind_regs){ pc, sp, fp };
	return STEP_OK;
}

static enum step by_row(const struct vm_unwind_row *row,
			struct vm_unwind_regs *r, vm_unwind_read_fn read,
			void *arg)
{
	uint64_t cfa, ra, fp = r->fp;

	switch (row->cfa) {
	case VM_UNWIND_SP:
		cfa = r->sp + (int64_t)row->cfa_off;
		break;
	case VM_UNWIND_FP:
		cfa = r->fp + (int64_t)row->cfa_off;
		break;
	case VM_UNWIND_PLT:
		cfa = r->sp + 8 +
		      (((r->pc & 15) >= (uint64_t)row->cfa_off) << 3);
		break;
	case VM_UNWIND_OUTERMOST:
		return STEP_OUTERMOST;
	default:
		return by_frame_pointer(r, read, arg);
	}
	/*
	 * In an epilogue past `pop %rbp` the rows still say where fp was
	 * saved (GCC emits no restore), now below the stack pointer: the
	 * register holds the caller's value again, and a copied stack (perf's,
	 * from the stack pointer up) has no such slot.
	 */
	if (cfa <= r->sp || !read(arg, cfa + UNWIND_RA_OFF, &ra) ||
	    (row->fp_off && cfa + (int64_t)row->fp_off >= r->sp &&
	     !read(arg, cfa + (int64_t)row->fp_off, &fp)))
		return STEP_CUT;
	*r = (struct vm_unwind_regs){ ra, cfa, fp };
	return STEP_OK;
}

size_t vm_unwind_stack(const struct vm_unwind_regs *regs,
		       vm_unwind_find_fn find, vm_unwind_read_fn read,
		       void *arg, uint64_t *ips, size_t max,
		       struct vm_unwind_counts *counts)
{
	struct vm_unwind_regs r = *regs;
	bool exact = true; /* the innermost pc, or one a signal interrupted */
	enum step s = STEP_OK;
	size_t n = 0;

	while (n < max && r.pc) {
		const struct vm_unwind_table *t;
		const struct vm_unwind_row *row = NULL;
		uint64_t link, sp = r.sp;

		ips[n++] = r.pc;
		t = find(arg, exact ? r.pc : r.pc - 1, &link);
		if (t)
			row = vm_unwind_lookup(t, link);
		exact = false;
		if (row && row->signal) {
			s = from_signal_frame(&r, read, arg);
			exact = true;
		} else if (row && row->cfa != VM_UNWIND_NONE) {
			s = by_row(row, &r, read, arg);
			counts->by_table += s == STEP_OK;
		} else {
			s = by_frame_pointer(&r, read, arg);
			counts->by_frame_pointer += s == STEP_OK;
		}
		if (s != STEP_OK)
			break;
		/* A caller's frame is above its callee's; else it loops. */
		if (r.sp <= sp && !exact) {
			s = STEP_CUT;
			break;
		}
	}
	if (s == STEP_OUTERMOST)
		counts->outermost++;
	else if (s == STEP_CUT)
		counts->cut++;
	return n;
}
