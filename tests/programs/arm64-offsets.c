// SPDX-License-Identifier: Apache-2.0
/*
 * arm64-offsets.c - bpf/unwind_arm64.h's numbers held to the arm64 UAPI
 * headers at compile time: where the kernel's signal frame keeps the
 * interrupted x29, x30, sp and pc, the size and fields of the user
 * registers a perf_event program sees, and perf's register numbers.
 * Compiled (never run) by the Makefile with the arm64 cross compiler,
 * whose headers (linux-libc-dev-arm64-cross) are the kernel's; a number
 * that moved fails the build.  The kernel's own struct pt_regs (336
 * bytes, not in the UAPI) is measured at start-up instead
 * (agent/profile/bpf/bpf_calibrate.c).
 */
#include <stddef.h>

#include <asm/perf_regs.h>
#include <asm/ptrace.h>
#include <asm/siginfo.h>
#include <asm/signal.h>
#include <asm/sigcontext.h>
#include <asm/ucontext.h>

#include "bpf/unwind_arm64.h"

/* The kernel's signal frame (rt_sigframe), at the sp the trampoline runs with. */
struct rt_sigframe {
	siginfo_t info;
	struct ucontext uc;
};

#define AT(field) offsetof(struct rt_sigframe, uc.uc_mcontext.field)

_Static_assert(AT(regs[29]) == UNWIND_SIGNAL_FP, "x29 in the signal frame");
_Static_assert(AT(regs[30]) == UNWIND_SIGNAL_LR, "x30 in the signal frame");
_Static_assert(AT(sp) == UNWIND_SIGNAL_SP, "sp in the signal frame");
_Static_assert(AT(pc) == UNWIND_SIGNAL_PC, "pc in the signal frame");

/* struct pt_regs starts with struct user_pt_regs. */
#define REG(field) offsetof(struct user_pt_regs, field)

_Static_assert(REG(regs[29]) == UNWIND_PT_REGS_RUN + 8 * UNWIND_PT_REGS_RUN_FP,
	       "x29 in pt_regs");
_Static_assert(REG(regs[30]) == UNWIND_PT_REGS_RUN + 8 * UNWIND_PT_REGS_RUN_LR,
	       "x30 in pt_regs");
_Static_assert(REG(sp) == UNWIND_PT_REGS_RUN + 8 * UNWIND_PT_REGS_RUN_SP,
	       "sp in pt_regs");
_Static_assert(REG(pc) == UNWIND_PT_REGS_RUN + 8 * UNWIND_PT_REGS_RUN_PC,
	       "pc in pt_regs");
_Static_assert(REG(pstate) == UNWIND_PT_REGS_RUN + 8 * UNWIND_PT_REGS_RUN_MODE,
	       "pstate in pt_regs");
_Static_assert(sizeof(struct user_pt_regs) < UNWIND_PT_REGS_SIZE,
	       "pt_regs holds user_pt_regs");

_Static_assert(PERF_REG_ARM64_X29 == UNWIND_PERF_REG_FP, "perf's x29");
_Static_assert(PERF_REG_ARM64_LR == UNWIND_PERF_REG_LR, "perf's lr");
_Static_assert(PERF_REG_ARM64_SP == UNWIND_PERF_REG_SP, "perf's sp");
_Static_assert(PERF_REG_ARM64_PC == UNWIND_PERF_REG_PC, "perf's pc");

int arm64_offsets_checked;
