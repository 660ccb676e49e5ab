// SPDX-License-Identifier: Apache-2.0
/*
 * unwind.c - walking a user stack with unwind tables (unwind.h).
 *
 * One step: the row for the pc gives the CFA (the stack pointer before
 * the call); the return address is at CFA - 8 and the caller's stack
 * pointer is the CFA; the caller's frame pointer was saved at CFA +
 * rbp_off, or is unchanged.  Every pc but the innermost and those after
 * a signal frame is a return address, looked up one byte back: a call
 * that ends its function must not be charged to the next one.
 */
#include "agent/unwind/unwind.h"

#include <stddef.h>

/* Where the kernel's rt_sigframe keeps the interrupted registers, from
 * the stack pointer __restore_rt runs with (struct ucontext_t on x86-64:
 * uc_mcontext at 40, gregs REG_RBP 10, REG_RSP 15, REG_RIP 16).
 */
#define UC_RBP (40 + 10 * 8)
#define UC_RSP (40 + 15 * 8)
#define UC_RIP (40 + 16 * 8)

enum step {
	STEP_OK,
	STEP_OUTERMOST,
	STEP_CUT,
};

/* The caller's registers by the frame pointer: no table covers the pc. */
static enum step by_frame_pointer(struct vm_unwind_regs *r,
				  vm_unwind_read_fn read, void *arg)
{
	uint64_t ra, rbp;

	if (!r->rbp || r->rbp <= r->rsp - 8 || !read(arg, r->rbp + 8, &ra) ||
	    !read(arg, r->rbp, &rbp))
		return STEP_CUT;
	r->rsp = r->rbp + 16;
	r->rbp = rbp;
	r->rip = ra;
	return STEP_OK;
}

/* The interrupted registers a signal frame saved. */
static enum step from_signal_frame(struct vm_unwind_regs *r,
				   vm_unwind_read_fn read, void *arg)
{
	uint64_t rip, rsp, rbp;

	if (!read(arg, r->rsp + UC_RIP, &rip) ||
	    !read(arg, r->rsp + UC_RSP, &rsp) ||
	    !read(arg, r->rsp + UC_RBP, &rbp))
		return STEP_CUT;
	*r = (struct vm_unwind_regs){ rip, rsp, rbp };
	return STEP_OK;
}

static enum step by_row(const struct vm_unwind_row *row,
			struct vm_unwind_regs *r, vm_unwind_read_fn read,
			void *arg)
{
	uint64_t cfa, ra, rbp = r->rbp;

	switch (row->cfa) {
	case VM_UNWIND_RSP:
		cfa = r->rsp + (int64_t)row->cfa_off;
		break;
	case VM_UNWIND_RBP:
		cfa = r->rbp + (int64_t)row->cfa_off;
		break;
	case VM_UNWIND_PLT:
		cfa = r->rsp + 8 +
		      (((r->rip & 15) >= (uint64_t)row->cfa_off) << 3);
		break;
	case VM_UNWIND_OUTERMOST:
		return STEP_OUTERMOST;
	default:
		return by_frame_pointer(r, read, arg);
	}
	/*
	 * In an epilogue past `pop %rbp` the rows still say where rbp was
	 * saved (GCC emits no restore), now below the stack pointer: the
	 * register holds the caller's value again, and a copied stack (perf's,
	 * from the stack pointer up) has no such slot.
	 */
	if (cfa <= r->rsp || !read(arg, cfa - 8, &ra) ||
	    (row->rbp_off && cfa + (int64_t)row->rbp_off >= r->rsp &&
	     !read(arg, cfa + (int64_t)row->rbp_off, &rbp)))
		return STEP_CUT;
	*r = (struct vm_unwind_regs){ ra, cfa, rbp };
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

	while (n < max && r.rip) {
		const struct vm_unwind_table *t;
		const struct vm_unwind_row *row = NULL;
		uint64_t link, sp = r.rsp;

		ips[n++] = r.rip;
		t = find(arg, exact ? r.rip : r.rip - 1, &link);
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
		if (r.rsp <= sp && !exact) {
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
