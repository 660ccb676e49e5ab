// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * profile.bpf.c - the CPU profiler: a perf_event program attached to a
 * CPU-clock event on every CPU, sending each sample of the target
 * processes with its user and kernel stacks and PostgreSQL's wait event
 * and query id to user space (stacks.bpf.h), where identical samples are
 * counted.  The target filter, fork following and the raw tracepoints
 * that keep them are targets.bpf.h's, shared with the off-CPU profiler
 * (offcpu.bpf.c).
 *
 * The faults profiler is the same program on another event: do_fault is
 * attached to the page-fault software event of every CPU instead (one
 * sample every `period` faults) and keeps the faulting address too.  A
 * profile loads one of the two programs, never both, so they never share
 * the per-CPU scratch record.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/profile.h"
#include "bpf/targets.bpf.h"
#include "bpf/stacks.bpf.h"

/*
 * One sample of the current task, from the registers of the event's
 * context: the interrupted code's for a CPU-clock sample, the faulting
 * code's for a page fault (user mode, or the kernel touching user memory
 * for it).
 */
static __always_inline int sample(struct bpf_perf_event_data *ctx,
				  __u64 fault_addr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct stack_record *r = stacks_scratch();
	struct unwind_start start;
	__u32 pid = id >> 32;

	if (!r)
		return 0;
	stacks_task(r, id);
	r->weight = 1;
	r->fault_addr = fault_addr;
	if (!is_target(pid, r->comm) && !join_as_child(pid))
		return 0;
	stat_inc(PROFILE_STAT_SAMPLES);

	/* A sample in user mode has the user registers; else they are found. */
	start.user = UNWIND_USER_MODE(UNWIND_CTX_MODE(&ctx->regs));
	start.pc = UNWIND_CTX_PC(&ctx->regs);
	start.sp = UNWIND_CTX_SP(&ctx->regs);
	start.fp = UNWIND_CTX_FP(&ctx->regs);
	start.lr = UNWIND_CTX_LR(&ctx->regs);
	stacks_capture(ctx, r, &start);
	pg_labels(pid, &r->wait_event, &r->query_id);
	r->sched_state = 0;
	if (stacks_submit(r))
		/* The reader is a whole ring buffer behind. */
		stat_inc(PROFILE_STAT_RECORDS_LOST);

	announce_once(pid);
	return 0;
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, 0);
}

/* The event samples the fault's address (PERF_SAMPLE_ADDR): ctx->addr. */
SEC("perf_event")
int do_fault(struct bpf_perf_event_data *ctx)
{
	return sample(ctx, ctx->addr);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
