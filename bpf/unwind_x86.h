/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind_x86.h - what the unwinder knows of x86-64, and nothing else
 * does: chosen by bpf/unwind.h for the BPF programs (bpf/unwind.bpf.h,
 * bpf/profile.bpf.c) and for the agent (agent/unwind/, the calibration
 * in agent/profile/bpf/bpf_calibrate.c, perf's registers in
 * agent/profile/perf/perfdata_record.c).  The walk keeps three
 * registers, named pc, sp and fp everywhere else: rip, rsp and rbp here.
 * Another architecture is another file like this one beside it.
 */
#ifndef VMTOOLS_BPF_UNWIND_X86_H
#define VMTOOLS_BPF_UNWIND_X86_H

#define UNWIND_ARCH_NAME "x86-64"

/* DWARF's numbers of rbp, rsp and the return address column (rip). */
#define UNWIND_DWARF_FP 6
#define UNWIND_DWARF_SP 7
#define UNWIND_DWARF_RA 16

/*
 * `call` pushed the return address: it is at CFA - 8, in every frame, so
 * a row spends no bits on it (bpf/unwind.h), and there is no link
 * register; CFA offsets are any number of bytes; a return address is
 * the whole word.
 */
#define UNWIND_RA_OFF (-8)
#define UNWIND_RA_BITS 0
#define UNWIND_CFA_SCALE 1
#define UNWIND_PC_MASK (~0ull)

/*
 * A frame set up by `push %rbp; mov %rsp,%rbp`: at fp the caller's fp, at
 * fp + 8 the return address, the caller's sp just above them.
 */
#define UNWIND_FP_FRAME 16
/* So the caller's sp is exactly fp + 16. */
#define UNWIND_FP_SP_EXACT 1

/*
 * The interrupted registers in the kernel's rt_sigframe, from the stack
 * pointer __restore_rt (rt_sigreturn) runs with: struct ucontext_t,
 * uc_mcontext at 40, gregs REG_RBP (10), REG_RSP (15), REG_RIP (16), in
 * that order up the stack.
 */
#define UNWIND_SIGNAL_FP (40 + 10 * 8)
#define UNWIND_SIGNAL_SP (40 + 15 * 8)
#define UNWIND_SIGNAL_PC (40 + 16 * 8)

/*
 * struct pt_regs, which the kernel saves at the top of a task's kernel
 * stack on entry: its size, where rbp is, and a run of words read at once
 * that holds rip, cs, eflags and rsp (the pc, the mode, the sp).
 */
#define UNWIND_PT_REGS_SIZE 168
#define UNWIND_PT_REGS_FP 32
#define UNWIND_PT_REGS_RUN 128
#define UNWIND_PT_REGS_RUN_WORDS 4
#define UNWIND_PT_REGS_RUN_PC 0
#define UNWIND_PT_REGS_RUN_MODE 1
#define UNWIND_PT_REGS_RUN_SP 3

/* A mode word (cs) of user mode: privilege level 3. */
#define UNWIND_USER_MODE(cs) (((cs)&3) == 3)

/* A perf_event program's registers (bpf_user_pt_regs_t is pt_regs). */
#define UNWIND_CTX_PC(regs) ((regs)->rip)
#define UNWIND_CTX_SP(regs) ((regs)->rsp)
#define UNWIND_CTX_FP(regs) ((regs)->rbp)
#define UNWIND_CTX_MODE(regs) ((regs)->cs)
#define UNWIND_CTX_LR(regs) 0

/* perf's numbers of the sampled user registers (enum perf_event_x86_regs). */
#define UNWIND_PERF_REG_FP 6 /* PERF_REG_X86_BP */
#define UNWIND_PERF_REG_SP 7 /* PERF_REG_X86_SP */
#define UNWIND_PERF_REG_PC 8 /* PERF_REG_X86_IP */

/*
 * Whether the code at p (len bytes) sets up a frame pointer: push %rbp;
 * mov %rsp,%rbp (55 48 89 e5), after an endbr64 (f3 0f 1e fa) or not.
 */
static inline int unwind_fp_prologue(const unsigned char *p, unsigned long len)
{
	if (len >= 8 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e &&
	    p[3] == 0xfa) {
		p += 4;
		len -= 4;
	}
	return len >= 4 && p[0] == 0x55 && p[1] == 0x48 && p[2] == 0x89 &&
	       p[3] == 0xe5;
}

#endif
