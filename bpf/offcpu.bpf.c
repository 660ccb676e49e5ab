// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * offcpu.bpf.c - the off-CPU profiler: on every context switch, the time
 * target threads spend switched out, sent to user space with the stacks
 * (and PostgreSQL wait event and query id) they were switched out in, as
 * the CPU profiler sends its samples (stacks.bpf.h, offcpu.h).
 *
 * One raw tracepoint, sched_switch(preempt, prev, next, prev_state):
 * at that instant the current task is still `prev`, so its pid, command
 * name, stacks and memory are the current task's, and `next` is only a
 * pointer -- which is all that is needed to find it again: a target
 * thread's switch out sends its stacks and labels at once, unless they
 * are the ones it sent last, and the switch in of a task pointer
 * remembered in `blocked` sends the block's times (offcpu.h), as
 * targets.bpf.h follows forks.  No BTF, no kernel struct offsets, no
 * kprobe.  Every switch out counts, a preemption included: time spent
 * runnable but waiting for a CPU is time the thread did not run, which a
 * wall-clock profile needs to add up.
 *
 * Why not keep the record in a map until the end, and send only the
 * blocks long enough: the stacks must be taken at the switch out anyway,
 * and copying a 2 KiB record into a hash (allocated per block), looking
 * it up, sending and deleting it cost more than a 24-byte record, the
 * whole record going only when it changed; user space drops blocks
 * shorter than min_block_us.
 *
 * prev_state (Linux 5.18 and later; on_switch_compat before, where the
 * state is unknown) tells a thread preempted, still runnable, from one
 * sleeping; a thread switched out for the last time (TASK_DEAD) is not
 * recorded.  Its values are those the tracepoint's format prints, not a
 * struct's layout.
 *
 * A thread already blocked when the profile starts has no entry: its
 * switch in names only a pointer never seen.  User space lists such
 * threads by tid in `pre_blocked` before attaching; the CPU's last switch
 * in (`last_in`, one store per switch) tells the first switch out of one
 * of them when it started running, which ends its block from before the
 * profile (agent/profile/bpf/bpf_preblocked.c counts it).  A task_struct
 * freed is forgotten (sched_process_free), so a reused pointer never ends
 * another thread's block.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/offcpu.h"
#include "bpf/profile.h"
#include "bpf/stacks.bpf.h"
#include "bpf/targets.bpf.h"

/*
 * Target threads, by task pointer: when they were switched out (0 once
 * they run again) and the hash of the last record they sent.  An entry
 * stays while its thread lives (freed with the task_struct, on_free), so
 * a thread that blocks again finds its entry and only stores the time.
 * 16 bytes an entry, preallocated: no allocation on a switch.  Sized by
 * user space (bpf_sizing.c), like the maps of targets.bpf.h.
 */
struct offcpu_thread {
	__u64 since; /* bpf_ktime_get_ns() of its switch out; 0: running */
	__u64 last; /* offcpu_hash() of its last record sent; 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); /* task pointer */
	__type(value, struct offcpu_thread);
	__uint(max_entries, 16384);
} blocked SEC(".maps");

/* Where a switch out is put together, per CPU, before it is sent. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_record);
	__uint(max_entries, 1);
} record_scratch SEC(".maps");

/*
 * Threads blocked when the profile started, by tid (filled by user space):
 * 0 until the thread is first switched out, then when it was switched in
 * (bpf_ktime_get_ns()), or PRE_BLOCKED_RAN when that switch in was not
 * seen (it ran since before the program saw its CPU).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} pre_blocked SEC(".maps");

/* Per CPU: the task last switched in and when. */
struct last_in {
	__u64 task;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct last_in);
	__uint(max_entries, 1);
} last_in SEC(".maps");

/* On every switch, after switch_out: `next` starts running now. */
static __always_inline void note_switch_in(__u64 next, __u64 now)
{
	__u32 zero = 0;
	struct last_in *in = bpf_map_lookup_elem(&last_in, &zero);

	if (in) {
		in->task = next;
		in->ns = now;
	}
}

/* A target thread switched out: the end of its block from before. */
static __always_inline void end_pre_block(__u64 prev, __u32 tid)
{
	__u64 *first = bpf_map_lookup_elem(&pre_blocked, &tid);
	struct last_in *in;
	__u32 zero = 0;

	if (!first || *first)
		return;
	in = bpf_map_lookup_elem(&last_in, &zero);
	*first = in && in->task == prev && in->ns ? in->ns : PRE_BLOCKED_RAN;
}

/* `next` runs again: the end of its block, if it was a target's. */
static __always_inline void switch_in(__u64 next, __u64 now)
{
	struct offcpu_thread *t = bpf_map_lookup_elem(&blocked, &next);
	struct offcpu_block *b;

	if (!t || !t->since)
		return;
	b = bpf_ringbuf_reserve(&stack_records, sizeof(*b), 0);
	if (b) {
		b->task = next;
		b->start_ns = t->since;
		b->end_ns = now;
		/*
		 * Records sent whole wake the reader (stacks_wakeup), and a
		 * timer drains the rest: asking how full the ring is would
		 * cost more than this record.
		 */
		bpf_ringbuf_submit(b, BPF_RB_NO_WAKEUP);
	} else {
		/* The reader is a whole ring buffer behind. */
		stat_inc(PROFILE_STAT_RECORDS_LOST);
	}
	t->since = 0;
}

/* prev_state's bits, as include/linux/sched.h has had them since 4.14. */
#define TASK_INTERRUPTIBLE 0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_DEAD 0x0080

static __always_inline __u32 sched_state(bool preempt, __u64 prev_state)
{
	if (preempt || prev_state == 0)
		return PROFILE_SCHED_RUNNABLE;
	if (prev_state & TASK_UNINTERRUPTIBLE)
		return PROFILE_SCHED_UNINTERRUPTIBLE;
	if (prev_state & TASK_INTERRUPTIBLE)
		return PROFILE_SCHED_SLEEPING;
	return PROFILE_SCHED_UNKNOWN;
}

/*
 * A 64-bit hash of a record's content, its weight left out: whether a
 * thread blocks where it did last (offcpu.h).  Two different records of a
 * thread hash alike with odds of about one in 2^64; the block would then
 * be counted with the last one's stacks.
 */
static __always_inline __u64 offcpu_hash(const struct stack_record *r)
{
	const __u64 *w = (const __u64 *)r;
	__u32 n = (r->n_user & 0x7f) + (r->n_kernel & 0x7f);
	__u64 h = 0x9e3779b97f4a7c15ULL;

	/* pid and tid; comm; counts and errors; wait event, state; query */
	h = (h ^ w[0]) * 0xff51afd7ed558ccdULL;
	for (__u32 i = 2; i < STACK_RECORD_HEAD / sizeof(__u64); i++) {
		h = (h ^ w[i]) * 0xff51afd7ed558ccdULL;
		h ^= h >> 33;
	}
	for (__u32 i = 0; i < 2 * STACK_MAX_DEPTH && i < n; i++) {
		h = (h ^ r->ips[i]) * 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

/*
 * The current task, `prev`, stops running: its stacks and labels, sent
 * now unless they are those it sent last; switch_in() sends its block.
 */
static __always_inline void switch_out(void *ctx, __u64 prev, __u64 now,
				       __u32 state)
{
	__u64 id = bpf_get_current_pid_tgid(), size, hash;
	struct offcpu_thread *t, fresh = { 0, 0 };
	struct offcpu_record *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&record_scratch, &zero);
	if (!s)
		return;
	stacks_task(&s->r, id);
	if (!is_target(s->r.pid, s->r.comm) && !join_as_child(s->r.pid))
		return;
	stat_inc(PROFILE_STAT_SWITCHES);
	t = bpf_map_lookup_elem(&blocked, &prev);
	if (!t) {
		/*
		 * The thread's first switch out seen: the end of its block
		 * from before the profile, if it had one.
		 */
		end_pre_block(prev, s->r.tid);
		if (bpf_map_update_elem(&blocked, &prev, &fresh, BPF_ANY)) {
			/* -E2BIG: no room to remember this thread. */
			stat_inc(PROFILE_STAT_BLOCKED_FULL);
			return;
		}
		/*
		 * Its first block: its process is announced if it is new (a
		 * lookup in `seen` spared on every later block; on_exec below
		 * makes an exec's first block a first one again).
		 */
		announce_once(s->r.pid);
		t = bpf_map_lookup_elem(&blocked, &prev);
		if (!t)
			return;
	}
	/* In the kernel: the user registers are those saved at its entry. */
	stacks_capture(ctx, &s->r, &(struct unwind_start){ .user = false });
	pg_labels(s->r.pid, &s->r.wait_event, &s->r.query_id);
	s->r.sched_state = state;
	s->r.weight = 0;
	hash = offcpu_hash(&s->r);
	if (hash != t->last) {
		s->task = prev;
		size = OFFCPU_RECORD_HEAD +
		       ((s->r.n_user & 0x7f) + (s->r.n_kernel & 0x7f)) *
			       sizeof(__u64);
		if (bpf_ringbuf_output(&stack_records, s, size,
				       stacks_wakeup())) {
			/* The reader is a whole ring buffer behind. */
			stat_inc(PROFILE_STAT_RECORDS_LOST);
			/* This block is lost, and the next record goes whole. */
			t->last = 0;
			return;
		}
		t->last = hash;
	}
	t->since = now;
}

SEC("raw_tp/sched_switch")
int on_switch(unsigned long long *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	switch_in(ctx[2], now);
	if (!(!ctx[0] && (ctx[3] & TASK_DEAD)))
		switch_out(ctx, ctx[1], now, sched_state(ctx[0], ctx[3]));
	note_switch_in(ctx[2], now);
	return 0;
}

/*
 * Before Linux 5.18 the tracepoint has no prev_state, and a program that
 * reads it is refused at attach: user space attaches this one instead.
 */
SEC("raw_tp/sched_switch")
int on_switch_compat(unsigned long long *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	switch_in(ctx[2], now);
	switch_out(ctx, ctx[1], now, PROFILE_SCHED_UNKNOWN);
	note_switch_in(ctx[2], now);
	return 0;
}

/*
 * A program replaced its own (targets.bpf.h's on_exec forgets it was
 * announced): its next block is announced again, as a first one.
 */
SEC("raw_tp/sched_process_exec")
int on_exec_blocked(void *ctx)
{
	__u64 task = bpf_get_current_task();

	bpf_map_delete_elem(&blocked, &task);
	return 0;
}

/* A task_struct is freed: its pointer may be reused. */
SEC("raw_tp/sched_process_free")
int on_free(unsigned long long *ctx)
{
	__u64 task = ctx[0];

	bpf_map_delete_elem(&blocked, &task);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
