/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind_step.h - one frame of a user stack walk, written once for both
 * walks: compiled into the BPF programs (bpf/unwind_walk.bpf.h) and into
 * the agent (agent/unwind/unwind.c).  From a frame's registers and the
 * row that holds its pc (bpf/unwind.h's packing; NULL when none does),
 * its caller's: by the row's rule (the CFA, the stack pointer before the
 * call, from sp or fp; the return address where it was saved -- on
 * x86-64 just below the CFA -- or, on arm64, still in the link register
 * where only the innermost frame or one a signal interrupted may have it;
 * fp where it was saved, or unchanged), by the signal frame the signal
 * trampoline returns through, or by the frame pointer where no row holds
 * the pc.  A return address loses what is not address in it
 * (UNWIND_PC_MASK: arm64's pointer authentication code).
 *
 * The includer reads the stack: it defines, before including this file,
 *   bool unwind_read_stack(void *ctx, void *dst, __u32 size, __u64 addr)
 * (size bytes at addr into dst, a multiple of 8; false when unreadable):
 * bpf_probe_read_user in BPF, the walk's read callback in user space,
 * a captured stack in tests/unit/test_unwind_steps.c, which holds the two
 * walks equal.  The stack and the tables are untrusted (a table is what
 * the file's owner wrote): every read may fail, and a walk that leaves
 * the stack or the code is cut, not taken for a caller -- a frame that
 * does not move up the stack, or moves further than a thread's stack
 * can reach (UNWIND_STACK_MAX from where the walk, or the signal frame
 * it crossed, started), and a return address that is 0 or in no
 * executable mapping of the process (the includer's find says so, to
 * unwind_walk_lost()).
 */
#ifndef VMTOOLS_BPF_UNWIND_STEP_H
#define VMTOOLS_BPF_UNWIND_STEP_H

#include <stdbool.h>

#include "bpf/unwind.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * How far above the first frame's stack pointer a caller's may be: a
 * thread's stack is 8 MiB (the kernel's and glibc's default), 64 MiB is
 * a limit raised eight times over, and past it the walk has left the
 * stack.  The walk knows no more of the stack's region (the programs see
 * no kernel types); only stack pointers are compared, nothing is read.
 */
#define UNWIND_STACK_MAX (64ull << 20)

/*
 * The architecture's pc, sp and fp (bpf/unwind_x86.h: rip, rsp, rbp;
 * bpf/unwind_arm64.h: pc, sp, x29) and its link register (arm64's x30;
 * 0 where there is none, or its value is not known).
 */
struct unwind_regs {
	__u64 pc, sp, fp, lr;
	/*
	 * sp is only a lower bound (found by a frame record on arm64,
	 * UNWIND_FP_SP_EXACT 0): a row that counts from it cuts the walk.
	 */
	__u64 sp_inexact;
};

/* A walk so far: the registers of the frame it is at, and how it went. */
struct unwind_walk {
	struct unwind_regs r;
	__u64 base; /* the sp of the first frame, or of a signal's */
	__u32 by_table; /* callers found by a row */
	__u32 by_fp; /* by the frame pointer, where no row holds the pc */
	/*
	 * r.pc is not a return address: the innermost frame's, or the one a
	 * signal interrupted, whose r.lr is its link register.
	 */
	__u8 exact;
	__u8 outermost; /* ended at the outermost frame */
	/*
	 * Ended early: a read that failed, no progress, off the stack, a
	 * return address in no executable mapping.
	 */
	__u8 cut;
};

static __always_inline void unwind_walk_begin(struct unwind_walk *w, __u64 pc,
					      __u64 sp, __u64 fp, __u64 lr)
{
	w->r.pc = pc;
	w->r.sp = sp;
	w->r.fp = fp;
	w->r.lr = lr;
	w->r.sp_inexact = 0;
	w->base = sp;
	w->by_table = w->by_fp = 0;
	w->exact = 1; /* the innermost pc */
	w->outermost = w->cut = 0;
}

/*
 * The address whose row holds the frame's rules: its pc, or one byte
 * before a return address (a call that ends its function must not be
 * charged to the next one).
 */
static __always_inline __u64 unwind_walk_pc(const struct unwind_walk *w)
{
	return w->exact ? w->r.pc : w->r.pc - 1;
}

/* The caller by the frame pointer: no row covers the pc. */
static __always_inline bool unwind_by_fp(struct unwind_regs *r, void *ctx)
{
	__u64 frame[2]; /* the caller's fp, the return address */

	if (!r->fp || r->fp <= r->sp - 8 ||
	    !unwind_read_stack(ctx, frame, sizeof(frame), r->fp))
		return false;
	r->sp = r->fp + UNWIND_FP_FRAME;
	r->fp = frame[0];
	r->pc = frame[1] & UNWIND_PC_MASK;
	r->lr = 0;
	r->sp_inexact = !UNWIND_FP_SP_EXACT;
	return true;
}

/*
 * The signal trampoline (x86-64's __restore_rt, arm64's
 * __kernel_rt_sigreturn): the interrupted registers, in the signal frame
 * the kernel put at the stack pointer, read at once from the fp's to the
 * pc's.
 */
static __always_inline bool unwind_by_signal(struct unwind_regs *r, void *ctx)
{
	__u64 g[(UNWIND_SIGNAL_PC - UNWIND_SIGNAL_FP) / 8 + 1];

	if (!unwind_read_stack(ctx, g, sizeof(g), r->sp + UNWIND_SIGNAL_FP))
		return false;
	r->fp = g[0];
	r->sp = g[(UNWIND_SIGNAL_SP - UNWIND_SIGNAL_FP) / 8];
	r->pc = g[(UNWIND_SIGNAL_PC - UNWIND_SIGNAL_FP) / 8];
#ifdef UNWIND_SIGNAL_LR
	r->lr = g[(UNWIND_SIGNAL_LR - UNWIND_SIGNAL_FP) / 8];
#else
	r->lr = 0;
#endif
	r->sp_inexact = 0;
	return true;
}

/*
 * 1: a caller; UNWIND_BY_LR: a caller, whose return address was in the
 * link register; 0: the outermost frame; -1: cut.  exact: r is the
 * innermost frame, or one a signal interrupted (its lr is live).
 */
#define UNWIND_BY_LR 2

static __always_inline int unwind_by_row(struct unwind_regs *r,
					 const struct unwind_row *row,
					 void *ctx, bool exact)
{
	__s64 cfa_off = unwind_row_cfa_off(row);
	__s64 fp_off = unwind_row_fp_off(row);
	__s64 ra_off = unwind_row_ra_off(row);
	__u64 cfa, ra, fp = r->fp;

	switch (unwind_row_cfa(row)) {
	case UNWIND_SP:
		if (r->sp_inexact)
			return -1;
		cfa = r->sp + cfa_off;
		break;
	case UNWIND_FP:
		cfa = r->fp + cfa_off;
		break;
	case UNWIND_PLT:
		cfa = r->sp + 8 + (((r->pc & 15) >= (__u64)cfa_off) << 3);
		break;
	default:
		return 0;
	}
	/*
	 * The return address still in the link register (arm64, before a
	 * function saves it): only the innermost frame's, or an interrupted
	 * one's, is; any other frame's lr was lost to the call it made.  Such
	 * a frame may have no stack of its own (a leaf: CFA = sp).
	 */
	if (cfa < r->sp || (cfa == r->sp && ra_off))
		return -1;
	if (!ra_off) {
		if (!exact || !r->lr ||
		    (fp_off && !unwind_read_stack(ctx, &fp, 8, cfa + fp_off)))
			return -1;
		r->pc = r->lr & UNWIND_PC_MASK;
		r->sp = cfa;
		r->fp = fp;
		r->lr = 0;
		r->sp_inexact = 0;
		return UNWIND_BY_LR;
	}
	/*
	 * Past `pop %rbp` in an epilogue the row still says where fp was
	 * saved (GCC emits no restore), now below the stack pointer: fp holds
	 * the caller's again, and a copied stack (perf's, from the stack
	 * pointer up) has no such slot.
	 */
	if (fp_off && cfa + fp_off < r->sp) {
		if (!unwind_read_stack(ctx, &ra, 8, cfa + ra_off))
			return -1;
	} else if (fp_off && fp_off == ra_off - 8) {
		/*
		 * The usual prologue: fp just below the return address (x86-64's
		 * push %rbp, arm64's frame record).
		 */
		__u64 pair[2];

		if (!unwind_read_stack(ctx, pair, sizeof(pair), cfa + fp_off))
			return -1;
		fp = pair[0];
		ra = pair[1];
	} else if (!unwind_read_stack(ctx, &ra, 8, cfa + ra_off) ||
		   (fp_off && !unwind_read_stack(ctx, &fp, 8, cfa + fp_off))) {
		return -1;
	}
	r->pc = ra & UNWIND_PC_MASK;
	r->sp = cfa;
	r->fp = fp;
	r->lr = 0; /* the caller's, overwritten by the call */
	r->sp_inexact = 0;
	return 1;
}

/*
 * One frame: w's registers become its caller's, by row, the row that
 * holds unwind_walk_pc(w) (NULL: none does).  0: on to the caller; 1: the
 * walk ends, at the outermost frame or cut (w says which).
 */
static __always_inline int
unwind_walk_step(struct unwind_walk *w, const struct unwind_row *row, void *ctx)
{
	__u64 sp = w->r.sp;
	bool exact = w->exact;
	int s;

	w->exact = 0;
	if (row && unwind_row_cfa(row) == UNWIND_SIGNAL) {
		s = unwind_by_signal(&w->r, ctx) ? 1 : -1;
		w->exact = 1;
	} else if (row && unwind_row_cfa(row) != UNWIND_NONE) {
		s = unwind_by_row(&w->r, row, ctx, exact);
		w->by_table += s > 0;
	} else {
		s = unwind_by_fp(&w->r, ctx) ? 1 : -1;
		w->by_fp += s > 0;
	}
	/*
	 * A caller's frame is above its callee's (else it loops), on the
	 * same stack; a signal's interrupted frame may be on another.  A
	 * leaf's caller found in the link register may share its sp: once,
	 * as the link register is taken only from an exact frame.
	 */
	if (w->exact)
		w->base = w->r.sp;
	if (s < 0 || (s > 0 && !w->exact &&
		      (w->r.sp < sp || (w->r.sp == sp && s != UNWIND_BY_LR) ||
		       w->r.sp - w->base > UNWIND_STACK_MAX))) {
		w->cut = 1;
		return 1;
	}
	w->outermost = s == 0;
	return s > 0 ? 0 : 1;
}

/*
 * The walk is at a pc in no executable mapping of the process (0
 * included): a return address there is not one (a false table, a
 * corrupt stack), and the walk is cut; the first frame's pc, or the one
 * a signal interrupted, is one the process runs (a file mapped since
 * its mappings were read), and the walk goes on by the frame pointer.
 * A return address in a file mapped since is cut too, until the
 * mappings are read again (the BPF walk asks for it).  1: the walk
 * ends.
 */
static __always_inline int unwind_walk_lost(struct unwind_walk *w)
{
	if (w->exact)
		return 0;
	w->cut = 1;
	return 1;
}

#endif
