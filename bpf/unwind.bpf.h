/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind.bpf.h - the user stack of a sample walked in the kernel with the
 * binaries' unwind tables (bpf/unwind.h), so that code built without
 * frame pointers (PostgreSQL at -O2, libc) has its callers; included by
 * stacks.bpf.h for both programs.
 *
 * The walk starts from the user registers: a perf_event sample's own
 * when it interrupted user mode; else (a sample in a system call, every
 * switch out) those the kernel saved at the top of the task's kernel
 * stack on entry, found through the task_struct's stack pointer at the
 * offset the agent measured at start-up (bpf/calibrate.bpf.c) -- no BTF,
 * no kernel headers.  One step per frame, in a global function
 * (bpf/unwind_walk.bpf.h; the verifier checks it once, whatever the call
 * site, and the interpreter runs it: a kernel without the JIT refuses
 * bpf_loop's callbacks, not calls), called by a loop of at most
 * STACK_MAX_DEPTH rounds.  A read that fails, a frame that does not move
 * up the stack, or a rule that says "outermost" ends the walk; at most
 * STACK_MAX_DEPTH frames.
 *
 * A process has its mappings in `unwind_procs` once the agent has read
 * them; a child forked since uses its parent's (the same code at the same
 * addresses) until then.  A process with neither, or whose user registers
 * cannot be had, is walked by bpf_get_stack's frame pointers as before.
 * A pc in no mapping the agent gave asks it, once, to read the process's
 * mappings again (a library dlopen()ed since).
 */
#ifndef VMTOOLS_BPF_UNWIND_BPF_H
#define VMTOOLS_BPF_UNWIND_BPF_H

#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/stacks.h"
#include "bpf/targets.bpf.h"
#include "bpf/unwind.h"
#include "bpf/unwind_walk.bpf.h"

/* Set by user space before load: tables given, and where user regs are. */
const volatile bool unwind_tables = false;
const volatile __u32 regs_stack_off = 0; /* task_struct's stack pointer */
const volatile __u32 regs_thread_size = 0; /* 0: not measured */

/* Made by user space and shared by both objects (bpf_unwind.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* thread group id */
	__type(value, struct unwind_proc);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} unwind_procs SEC(".maps");

/* Processes whose mappings user space was asked to read again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1);
} unwind_asked SEC(".maps");

/* Where a walk starts. */
struct unwind_start {
	__u64 pc, sp, fp, lr; /* lr: arm64's link register, else 0 */
	bool user; /* these are user registers; else find them */
};

/* Where walks keep their state (unwind_walk.bpf.h says why). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_state);
	__uint(max_entries, 1);
} unwind_scratch SEC(".maps");

/* The user registers of the current task, saved at its kernel entry. */
static __always_inline bool unwind_saved_regs(struct unwind_start *s)
{
	__u64 task = bpf_get_current_task(), stack, regs;
	__u64 run[UNWIND_PT_REGS_RUN_WORDS];

	if (!regs_thread_size ||
	    bpf_probe_read_kernel(&stack, sizeof(stack),
				  (void *)(task + regs_stack_off)) ||
	    !stack)
		return false;
	regs = stack + regs_thread_size - UNWIND_PT_REGS_SIZE;
	/*
	 * The pc, the mode and the sp: one read; the fp: another on x86-64,
	 * the same on arm64, with the lr.
	 */
	if (bpf_probe_read_kernel(run, sizeof(run),
				  (void *)(regs + UNWIND_PT_REGS_RUN)) ||
	    !UNWIND_USER_MODE(run[UNWIND_PT_REGS_RUN_MODE]))
		return false;
#ifdef UNWIND_PT_REGS_RUN_FP
	s->fp = run[UNWIND_PT_REGS_RUN_FP];
	s->lr = run[UNWIND_PT_REGS_RUN_LR];
#else
	if (bpf_probe_read_kernel(&s->fp, 8,
				  (void *)(regs + UNWIND_PT_REGS_FP)))
		return false;
	s->lr = 0;
#endif
	s->pc = run[UNWIND_PT_REGS_RUN_PC];
	s->sp = run[UNWIND_PT_REGS_RUN_SP];
	return true;
}

/* The mappings tgid's stack is walked with: its own, or its parent's. */
static __always_inline const struct unwind_proc *unwind_proc_of(__u32 tgid)
{
	const struct unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	struct child_info *ci;
	__u64 task;

	if (p)
		return p;
	task = bpf_get_current_task();
	ci = bpf_map_lookup_elem(&children, &task);
	return ci ? bpf_map_lookup_elem(&unwind_procs, &ci->ppid) : NULL;
}

/*
 * The current task's user stack into r->ips (STACK_MAX_DEPTH of them) by
 * its unwind tables: the frames, or -1 when it has none or its user
 * registers cannot be had (the caller takes bpf_get_stack's then).
 */
static __always_inline long unwind_user(const struct unwind_start *start,
					struct stack_record *r)
{
	struct unwind_start s = *start;
	const struct unwind_proc *proc;
	struct unwind_state *w;
	__u32 zero = 0, tgid = r->pid;
	__u8 yes = 1;

	if (!unwind_tables)
		return -1;
	proc = unwind_proc_of(r->pid);
	w = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!proc || !w || (!s.user && !unwind_saved_regs(&s)))
		return -1;
	unwind_begin(w, s.pc, s.sp, s.fp, s.lr);
	for (int i = 0; i < STACK_MAX_DEPTH; i++)
		if (unwind_frame(w, r, proc))
			break;
	/* A file mapped since user space read the mappings: ask, once. */
	/* Keys from the stack: older kernels take no other memory. */
	if (w->unknown && !bpf_map_lookup_elem(&unwind_asked, &tgid)) {
		bpf_map_update_elem(&unwind_asked, &tgid, &yes, BPF_ANY);
		announce(PROFILE_EVENT_MAPS, tgid, 0);
	}
	stat_add(PROFILE_STAT_FRAMES_TABLE, w->walk.by_table);
	stat_add(PROFILE_STAT_FRAMES_FP, w->walk.by_fp);
	if (w->walk.cut)
		stat_inc(PROFILE_STAT_WALKS_CUT);
	return w->n & STACK_MAX_DEPTH;
}

#endif
