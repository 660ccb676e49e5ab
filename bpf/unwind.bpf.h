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
 * no kernel headers.  One step per frame, in a global function (the
 * verifier checks it once, whatever the call site, and the interpreter
 * runs it: a kernel without the JIT refuses bpf_loop's callbacks, not
 * calls), called by a loop of at most STACK_MAX_DEPTH rounds: the
 * mapping that holds the pc, the row that holds it (its page's entry in
 * the binary's index, which is the answer for most pcs, else halvings
 * among the few rows of the page), then the caller's registers by the
 * row's rule, by the signal frame __restore_rt returns through, or by
 * the frame pointer where no row covers the pc.  A read that fails, a
 * frame that does not move up the stack, or a rule that says "outermost"
 * ends the walk; at most STACK_MAX_DEPTH frames.
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

/* Set by user space before load: tables given, and where user regs are. */
const volatile bool unwind_tables = false;
const volatile __u32 regs_stack_off = 0; /* task_struct's stack pointer */
const volatile __u32 regs_thread_size = 0; /* 0: not measured */

/* Made by user space and shared by both objects (bpf_unwind.c). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_row);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
} unwind_rows SEC(".maps");

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
	__u64 pc, sp, fp;
	bool user; /* these are user registers; else find them */
};

/*
 * A walk's registers and counts live in a per-CPU map, not on the stack:
 * the step is a global function, which the verifier checks once with
 * whatever such a struct may hold, and the loop that calls it keeps
 * nothing on the stack that differs from one round to the next.
 */
struct unwind_state {
	__u64 pc, sp, fp;
	__u32 tgid; /* the process walked */
	__u32 n; /* frames taken */
	__u32 by_table, by_fp;
	__u32 map; /* the mapping of the last frame found, in proc->m */
	__u32 map2; /* the one before it (a stack goes libc, postgres, libc) */
	__u8 exact; /* pc is not a return address */
	__u8 cut; /* ended early: a bad read, no progress */
};

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
	/* The pc, the mode and the sp: one read; the fp: another. */
	if (bpf_probe_read_kernel(run, sizeof(run),
				  (void *)(regs + UNWIND_PT_REGS_RUN)) ||
	    !UNWIND_USER_MODE(run[UNWIND_PT_REGS_RUN_MODE]) ||
	    bpf_probe_read_kernel(&s->fp, 8,
				  (void *)(regs + UNWIND_PT_REGS_FP)))
		return false;
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

/* The row that holds pc, or NULL: none does, or no mapping holds pc. */
static __always_inline const struct unwind_row *
unwind_find(struct unwind_state *w, const struct unwind_proc *proc, __u64 pc)
{
	const struct unwind_map *m;
	const struct unwind_row *row;
	__u32 lo = 0, hi = proc->n, mid, first, tgid, k, at;
	__u64 rel;
	__u8 yes = 1;

	if (hi > UNWIND_MAX_MAPS)
		return NULL;
	/*
	 * Most callers are in the mapping of the frame before, or in the
	 * one before that: try them first.
	 */
	m = &proc->m[w->map & (UNWIND_MAX_MAPS - 1)];
	if (w->map < hi && pc >= m->start && pc < m->end)
		goto found;
	m = &proc->m[w->map2 & (UNWIND_MAX_MAPS - 1)];
	if (w->map2 < hi && pc >= m->start && pc < m->end) {
		mid = w->map2;
		w->map2 = w->map;
		w->map = mid;
	} else {
		for (int i = 0; i < 7 && lo < hi; i++) {
			mid = (lo + hi) / 2;
			if (pc < proc->m[mid & (UNWIND_MAX_MAPS - 1)].start)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (!lo)
			goto unknown;
		mid = (lo - 1) & (UNWIND_MAX_MAPS - 1);
		m = &proc->m[mid];
		if (pc >= m->end)
			goto unknown;
		w->map2 = w->map;
		w->map = mid;
	}
found:
	rel = pc - m->bias;
	if (!m->count || rel >> 32)
		return NULL;
	/* The last row whose address is at most rel, within its page. */
	first = m->first;
	k = (__u32)rel >> (m->shift & 31);
	if (k >= m->pages) {
		lo = first + m->count;
		hi = lo;
	} else {
		const struct unwind_row *e, *next;

		at = m->index + k;
		e = bpf_map_lookup_elem(&unwind_rows, &at);
		at++;
		next = bpf_map_lookup_elem(&unwind_rows, &at);
		if (!e || !next)
			return NULL;
		lo = first + (e->addr & UNWIND_COUNT_MASK);
		hi = first + (next->addr & UNWIND_COUNT_MASK);
		/* Before the page's first row: the rule it starts with. */
		if (lo > first &&
		    (lo == hi || ((__u32)rel & ((1u << (m->shift & 31)) - 1)) <
					 e->addr >> UNWIND_COUNT_BITS))
			return e;
	}
	for (int i = 0; i < UNWIND_ROW_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		row = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!row)
			return NULL;
		if (row->addr <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first)
		return NULL;
	lo--;
	return bpf_map_lookup_elem(&unwind_rows, &lo);
unknown:
	/* A file mapped since user space read the mappings: ask, once. */
	/* Keys from the stack: older kernels take no other memory. */
	tgid = w->tgid;
	if (!bpf_map_lookup_elem(&unwind_asked, &tgid)) {
		bpf_map_update_elem(&unwind_asked, &tgid, &yes, BPF_ANY);
		announce(PROFILE_EVENT_MAPS, tgid, 0);
	}
	return NULL;
}

static __always_inline bool unwind_read(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (void *)addr) == 0;
}

/* The caller by the frame pointer: no row covers the pc. */
static __always_inline bool unwind_by_fp(struct unwind_state *w)
{
	__u64 frame[2]; /* the caller's fp, the return address */

	if (!w->fp || w->fp <= w->sp - 8 ||
	    bpf_probe_read_user(frame, sizeof(frame), (void *)w->fp))
		return false;
	w->sp = w->fp + UNWIND_FP_FRAME;
	w->fp = frame[0];
	w->pc = frame[1];
	return true;
}

/*
 * __restore_rt: the interrupted registers, in the signal frame the kernel
 * put at the stack pointer, read at once from the fp's to the pc's.
 */
static __always_inline bool unwind_by_signal(struct unwind_state *w)
{
	__u64 g[(UNWIND_SIGNAL_PC - UNWIND_SIGNAL_FP) / 8 + 1];

	if (bpf_probe_read_user(g, sizeof(g),
				(void *)(w->sp + UNWIND_SIGNAL_FP)))
		return false;
	w->fp = g[0];
	w->sp = g[(UNWIND_SIGNAL_SP - UNWIND_SIGNAL_FP) / 8];
	w->pc = g[(UNWIND_SIGNAL_PC - UNWIND_SIGNAL_FP) / 8];
	return true;
}

/* 1: a caller; 0: the outermost frame; -1: cut. */
static __always_inline int unwind_by_row(struct unwind_state *w,
					 const struct unwind_row *row)
{
	__s64 cfa_off = unwind_row_cfa_off(row);
	__s64 fp_off = unwind_row_fp_off(row);
	__u64 cfa, ra, fp = w->fp;

	switch (unwind_row_cfa(row)) {
	case UNWIND_SP:
		cfa = w->sp + cfa_off;
		break;
	case UNWIND_FP:
		cfa = w->fp + cfa_off;
		break;
	case UNWIND_PLT:
		cfa = w->sp + 8 + (((w->pc & 15) >= (__u64)cfa_off) << 3);
		break;
	default:
		return 0;
	}
	if (cfa <= w->sp)
		return -1;
	/*
	 * Past `pop %rbp` in an epilogue the row still says where fp was
	 * saved, now below the stack pointer: fp holds the caller's again.
	 */
	if (fp_off && cfa + fp_off < w->sp) {
		if (!unwind_read(&ra, cfa + UNWIND_RA_OFF))
			return -1;
	} else if (fp_off == UNWIND_RA_OFF - 8) {
		/* The usual prologue: fp just below the return address. */
		__u64 pair[2];

		if (bpf_probe_read_user(pair, sizeof(pair),
					(void *)(cfa + fp_off)))
			return -1;
		fp = pair[0];
		ra = pair[1];
	} else if (!unwind_read(&ra, cfa + UNWIND_RA_OFF) ||
		   (fp_off && !unwind_read(&fp, cfa + fp_off))) {
		return -1;
	}
	w->pc = ra;
	w->sp = cfa;
	w->fp = fp;
	return 1;
}

/*
 * One frame of the walk w of the stack going into r, with the mappings of
 * proc: its pc kept, its caller's registers found.  1 ends the walk.
 * Global: checked once.
 */
__noinline int unwind_frame(struct unwind_state *w, struct stack_record *r,
			    const struct unwind_proc *proc)
{
	const struct unwind_row *row;
	__u64 sp;
	int s;

	if (!w || !r || !proc || w->n >= STACK_MAX_DEPTH || !w->pc)
		return 1;
	sp = w->sp;
	r->ips[w->n & STACK_MAX_DEPTH] = w->pc;
	w->n++;
	row = unwind_find(w, proc, w->exact ? w->pc : w->pc - 1);
	w->exact = 0;
	if (row && unwind_row_cfa(row) == UNWIND_SIGNAL) {
		s = unwind_by_signal(w) ? 1 : -1;
		w->exact = 1;
	} else if (row && unwind_row_cfa(row) != UNWIND_NONE) {
		s = unwind_by_row(w, row);
		w->by_table += s > 0;
	} else {
		s = unwind_by_fp(w) ? 1 : -1;
		w->by_fp += s > 0;
	}
	if (s < 0 || (s > 0 && !w->exact && w->sp <= sp)) {
		w->cut = 1;
		return 1;
	}
	return s > 0 ? 0 : 1;
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
	__u32 zero = 0;

	if (!unwind_tables)
		return -1;
	proc = unwind_proc_of(r->pid);
	w = bpf_map_lookup_elem(&unwind_scratch, &zero);
	if (!proc || !w || (!s.user && !unwind_saved_regs(&s)))
		return -1;
	w->pc = s.pc;
	w->sp = s.sp;
	w->fp = s.fp;
	w->tgid = r->pid;
	w->n = w->by_table = w->by_fp = w->map = 0;
	w->map2 = UNWIND_MAX_MAPS; /* none yet */
	w->exact = 1;
	w->cut = 0;
	for (int i = 0; i < STACK_MAX_DEPTH; i++)
		if (unwind_frame(w, r, proc))
			break;
	stat_add(PROFILE_STAT_FRAMES_TABLE, w->by_table);
	stat_add(PROFILE_STAT_FRAMES_FP, w->by_fp);
	if (w->cut)
		stat_inc(PROFILE_STAT_WALKS_CUT);
	return w->n & STACK_MAX_DEPTH;
}

#endif
