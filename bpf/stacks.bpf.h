/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * stacks.bpf.h - taking a sample's user and kernel stacks and sending them
 * to user space whole, for any BPF program that includes it (one .bpf.c
 * per object: the maps below are that object's).
 *
 * Why not BPF_MAP_TYPE_STACK_TRACE: a stack map keeps a stack in the slot
 * its hash picks and answers -EEXIST when another stack holds that slot,
 * so a share of the stacks is lost however large the map.  Here each
 * sample's stacks go into a per-CPU scratch record with bpf_get_stack and
 * out through the `stack_records` ring buffer, only the frames taken; user
 * space counts identical records (agent/profile/bpf/bpf_stack_counts.c).  A
 * record is lost only when the ring buffer is full, i.e. the reader fell a
 * whole buffer behind; stacks_submit() says so and the caller counts it.
 *
 * The ring buffer wakes the reader only once a quarter of it is used (an
 * on-demand profile's reader also drains it on a timer), not once per
 * sample.
 *
 * Use:
 *	struct stack_record *r = stacks_scratch();
 *	if (!r) return 0;
 *	stacks_task(r, bpf_get_current_pid_tgid());
 *	... r->weight, whether to keep the sample ...
 *	stacks_capture(ctx, r, &start);
 *	if (stacks_submit(r)) count the loss;
 * The object's user side sizes `stack_records` before load.
 *
 * The scratch record is one per CPU: two programs of one object that can
 * interrupt each other on a CPU (a tracepoint's and a perf_event's) must
 * not both fill it; give them separate objects, or a second scratch map.
 */
#ifndef VMTOOLS_BPF_STACKS_BPF_H
#define VMTOOLS_BPF_STACKS_BPF_H

#include "bpf/stacks.h"
#include "bpf/unwind.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_record);
	__uint(max_entries, 1);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} stack_records SEC(".maps");

/* This CPU's record to fill; NULL never happens but the verifier asks. */
static __always_inline struct stack_record *stacks_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stack_scratch, &zero);
}

/*
 * The current task into r: pid, tid and its command name padded with
 * zeroes.  bpf_get_current_comm copies with strscpy, which leaves the
 * bytes after the name as they were: in a scratch record reused by every
 * sample they would be a longer name's tail ("postgres\0agent"), so the
 * name would match no target_comms key and split identical samples.
 */
static __always_inline void stacks_task(struct stack_record *r, __u64 id)
{
	r->pid = id >> 32;
	r->tid = (__u32)id;
	__builtin_memset(r->comm, 0, sizeof(r->comm));
	bpf_get_current_comm(r->comm, sizeof(r->comm));
}

/*
 * Frames in n bytes of bpf_get_stack's answer (never more than it was
 * given, STACK_MAX_DEPTH frames): the mask cannot change the count, but it
 * is what lets the verifier bound the offsets and sizes computed from it.
 */
#define STACK_FRAMES(n) (((__u32)(n) / sizeof(__u64)) & 0x7f)
_Static_assert(STACK_MAX_DEPTH == 0x7f, "STACK_FRAMES masks to 127");

/*
 * The current user stack into r->ips, then the kernel stack after it.
 * The user stack is walked with unwind tables from the registers start
 * gives (unwind.bpf.h), or by bpf_get_stack's frame pointers where the
 * process has none.  A negative answer (-EFAULT: no user context, e.g. a
 * kernel thread) leaves that stack empty and is kept in *_err.
 */
static __always_inline void stacks_capture(void *ctx, struct stack_record *r,
					   const struct unwind_start *start)
{
	__u32 nu = 0, nk = 0;
	long n;

	n = unwind_user(start, r);
	if (n < 0) {
		n = bpf_get_stack(ctx, r->ips, STACK_MAX_DEPTH * sizeof(__u64),
				  BPF_F_USER_STACK);
		if (unwind_tables)
			stat_inc(PROFILE_STAT_WALKS_KERNEL);
	} else {
		/* Frames, as bpf_get_stack counts bytes. */
		n *= sizeof(__u64);
	}
	r->user_err = n < 0 ? n : 0;
	if (n > 0)
		nu = STACK_FRAMES(n);
	/* A sample taken in user mode has no kernel stack: no call for it. */
	n = start->user ? 0 :
			  bpf_get_stack(ctx, &r->ips[nu],
					STACK_MAX_DEPTH * sizeof(__u64), 0);
	r->kernel_err = n < 0 ? n : 0;
	if (n > 0)
		nk = STACK_FRAMES(n);
	r->n_user = nu;
	r->n_kernel = nk;
}

/*
 * The flags of a record about to go on `stack_records`: wake the reader
 * only once a quarter of the ring buffer is used.
 */
static __always_inline __u64 stacks_wakeup(void)
{
	if (bpf_ringbuf_query(&stack_records, BPF_RB_AVAIL_DATA) >=
	    bpf_ringbuf_query(&stack_records, BPF_RB_RING_SIZE) / 4)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/*
 * Send r, its frames only.  0, or -EAGAIN/-ENOSPC when the ring buffer is
 * full: the record is lost, for the caller to count.
 */
static __always_inline long stacks_submit(const struct stack_record *r)
{
	__u64 size =
		STACK_RECORD_HEAD +
		((r->n_user & 0x7f) + (r->n_kernel & 0x7f)) * sizeof(__u64);

	return bpf_ringbuf_output(&stack_records, (void *)r, size,
				  stacks_wakeup());
}

#endif
