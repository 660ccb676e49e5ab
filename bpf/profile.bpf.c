// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * profile.bpf.c - the CPU profiler: a perf_event program attached to a
 * CPU-clock event on every CPU, sending each sample of the target
 * processes with its user and kernel stacks and PostgreSQL's wait event
 * and query id to user space (stacks.bpf.h), where identical samples are
 * counted.  The target filter, fork following and the raw tracepoints
 * that keep them are targets.bpf.h's, shared with the off-CPU profiler
 * (offcpu.bpf.c).
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

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct stack_record *r = stacks_scratch();
	struct unwind_start start;
	__u32 pid = id >> 32;

	if (!r)
		return 0;
	stacks_task(r, id);
	r->weight = 1;
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
