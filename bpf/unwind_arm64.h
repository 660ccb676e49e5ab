/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind_arm64.h - what the unwinder knows of arm64 (AArch64), and
 * nothing else does: chosen by bpf/unwind.h as bpf/unwind_x86.h is for
 * x86-64.  The walk's pc, sp and fp are pc, sp and x29; arm64 adds the
 * link register x30 (lr), which holds the return address until a
 * function saves it: only the innermost frame's, or the one a signal
 * interrupted, may still be there (bpf/unwind_step.h).
 *
 * A return address may carry a pointer-authentication code in its top
 * bits (paciasp signs x30 before it is saved; the kernel may enable it
 * for user space): every return address is masked to the user virtual
 * address bits, 48 (the kernel's 4 KiB-page configurations, Debian's
 * and Neon's, give user space 48 bits; addresses above 2^48 are only
 * ever handed out to a process that asks mmap for them).  The top byte,
 * ignored by the hardware (TBI), goes with them.
 */
#ifndef VMTOOLS_BPF_UNWIND_ARM64_H
#define VMTOOLS_BPF_UNWIND_ARM64_H

#define UNWIND_ARCH_NAME "arm64"

/* DWARF's numbers of x29, sp and the return address column (x30). */
#define UNWIND_DWARF_FP 29
#define UNWIND_DWARF_SP 31
#define UNWIND_DWARF_RA 30

/*
 * The return address is where a row says (CFA + ra_off), or still in the
 * link register (ra_off 0): a row keeps its own ra_off (bpf/unwind.h).
 */
#define UNWIND_LINK_REGISTER 1
#define UNWIND_RA_BITS 8
/* A CFA offset is a multiple of 8: sp is 16-aligned, x29 too. */
#define UNWIND_CFA_SCALE 8

/* What is left of a return address once its authentication code is off. */
#define UNWIND_PC_MASK ((1ull << 48) - 1)

/*
 * A frame record ({x29, x30}, stored by `stp x29, x30, [sp, #-N]!` and
 * pointed to by x29): at fp the caller's fp, at fp + 8 the return
 * address.  The caller's sp is at least fp + 16 (the record is at the
 * bottom of its frame when a function has locals above it): taken as
 * such, it still moves up the stack, but a caller whose row counts from
 * sp cannot be stepped from it (the walk is cut there, not misread).
 */
#define UNWIND_FP_FRAME 16
#define UNWIND_FP_SP_EXACT 0

/*
 * The interrupted registers in the kernel's rt_sigframe, from the stack
 * pointer __kernel_rt_sigreturn (the vDSO's) runs with: siginfo (128
 * bytes), then struct ucontext whose uc_mcontext (struct sigcontext) is
 * at 176 in it: fault_address, regs[31], sp, pc.  So x29 at
 * 304 + 8 + 29 * 8, x30 next, then sp and pc (the arm64 uapi headers
 * <asm/sigcontext.h>, <asm/ucontext.h>; tests/programs/arm64-offsets.c
 * holds these numbers to them).
 */
#define UNWIND_SIGNAL_FP 544
#define UNWIND_SIGNAL_LR 552
#define UNWIND_SIGNAL_SP 560
#define UNWIND_SIGNAL_PC 568

/*
 * struct pt_regs, which the kernel saves at the top of a task's kernel
 * stack on entry (6.1 to 6.12: 336 bytes): regs[31], sp, pc, pstate,
 * then the kernel's own fields.  One run of words holds x29, x30, sp, pc
 * and pstate (the mode).
 */
#define UNWIND_PT_REGS_SIZE 336
#define UNWIND_PT_REGS_RUN (29 * 8)
#define UNWIND_PT_REGS_RUN_WORDS 5
#define UNWIND_PT_REGS_RUN_FP 0
#define UNWIND_PT_REGS_RUN_LR 1
#define UNWIND_PT_REGS_RUN_SP 2
#define UNWIND_PT_REGS_RUN_PC 3
#define UNWIND_PT_REGS_RUN_MODE 4

/*
 * A mode word (pstate) of user mode: M[4:0] of EL0t, AArch64 (an AArch32
 * task's mode has bit 4 set: not walked with these rules).
 */
#define UNWIND_USER_MODE(pstate) (((pstate)&0x1f) == 0)

/* A perf_event program's registers (bpf_user_pt_regs_t: user_pt_regs). */
#define UNWIND_CTX_PC(r) ((r)->pc)
#define UNWIND_CTX_SP(r) ((r)->sp)
#define UNWIND_CTX_FP(r) ((r)->regs[29])
#define UNWIND_CTX_LR(r) ((r)->regs[30])
#define UNWIND_CTX_MODE(r) ((r)->pstate)

/* perf's numbers of the sampled user registers (enum perf_event_arm64_regs). */
#define UNWIND_PERF_REG_FP 29 /* PERF_REG_ARM64_X29 */
#define UNWIND_PERF_REG_LR 30 /* PERF_REG_ARM64_LR */
#define UNWIND_PERF_REG_SP 31 /* PERF_REG_ARM64_SP */
#define UNWIND_PERF_REG_PC 32 /* PERF_REG_ARM64_PC */

/*
 * Whether the code at p (len bytes) sets up a frame record: stp x29,
 * x30, [sp, #-N]! (0xa9800000 | imm7 << 15 | 30 << 10 | 31 << 5 | 29,
 * any N), after a paciasp/bti c or not.
 */
static inline unsigned unwind_arm64_insn(const unsigned char *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 |
	       (unsigned)p[3] << 24;
}

static inline int unwind_fp_prologue(const unsigned char *p, unsigned long len)
{
	/* paciasp, bti c: hint instructions a signed function starts with. */
	while (len >= 8 && (unwind_arm64_insn(p) == 0xd503233f ||
			    unwind_arm64_insn(p) == 0xd503245f)) {
		p += 4;
		len -= 4;
	}
	return len >= 4 && (unwind_arm64_insn(p) & 0xffc07fff) == 0xa9807bfd;
}

#endif
