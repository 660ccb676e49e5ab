// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * offcpu.bpf.c - the off-CPU profiler: on every context switch, the time
 * target threads spend switched out, added to the stacks (and PostgreSQL
 * wait event and query id) they were switched out in (offcpu.h).
 *
 * One raw tracepoint, sched_switch(preempt, prev, next, prev_state):
 * at that instant the current task is still `prev`, so its pid, command
 * name, stacks and memory are the current task's, and `next` is only a
 * pointer -- which is all that is needed to find it again: the thread
 * switched out is remembered by its task pointer, as targets.bpf.h
 * follows forks.  No BTF, no kernel struct offsets, no kprobe.  Every
 * switch out counts, a preemption included: time spent runnable but
 * waiting for a CPU is time the thread did not run, which a wall-clock
 * profile needs to add up.
 *
 * prev_state (Linux 5.18 and later; on_switch_compat before, where the
 * state is unknown) tells a thread preempted, still runnable, from one
 * sleeping; a thread switched out for the last time (TASK_DEAD) is not
 * recorded.  Its values are those the tracepoint's format prints, not a
 * struct's layout.
 *
 * Blocks shorter than `min_block_ns` are not counted (the switch-in still
 * clears the thread's entry).  A task_struct freed is forgotten
 * (sched_process_free), so a reused pointer never ends another thread's
 * block.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/offcpu.h"
#include "bpf/profile.h"
#include "bpf/targets.bpf.h"
#include "bpf/stacks.bpf.h"

/* Set by user space before load. */
const volatile __u64 min_block_ns = 0;

/* Sized by user space (bpf_sizing.c), like the maps of targets.bpf.h. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); /* task pointer */
	__type(value, struct offcpu_start);
	__uint(max_entries, 16384);
} blocked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, struct offcpu_value);
	__uint(max_entries, 16384);
} counts SEC(".maps");

static __always_inline void add_block(const struct profile_key *key, __u64 ns)
{
	struct offcpu_value one = { 1, ns }, *val;
	long r;

	val = bpf_map_lookup_elem(&counts, key);
	if (!val) {
		r = bpf_map_update_elem(&counts, key, &one, BPF_NOEXIST);
		if (r == 0)
			return;
		if (r != -EEXIST) {
			/* -E2BIG: the counts map is full. */
			stat_inc(PROFILE_STAT_COUNTS_FULL);
			return;
		}
		/* Another CPU inserted the same key meanwhile. */
		val = bpf_map_lookup_elem(&counts, key);
		if (!val)
			return;
	}
	__sync_fetch_and_add(&val->switches, 1);
	__sync_fetch_and_add(&val->ns, ns);
}

/* `next` runs again: the end of its block, if it was a target's. */
static __always_inline void switch_in(__u64 next, __u64 now)
{
	struct offcpu_start *s = bpf_map_lookup_elem(&blocked, &next);

	if (!s)
		return;
	if (now - s->ns >= min_block_ns)
		add_block(&s->key, now - s->ns);
	bpf_map_delete_elem(&blocked, &next);
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

/* The current task, `prev`, stops running: remember where. */
static __always_inline void switch_out(void *ctx, __u64 prev, __u64 now,
				       __u32 state)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct offcpu_start s = {};

	s.key.pid = id >> 32;
	s.key.tid = (__u32)id;
	bpf_get_current_comm(s.key.comm, sizeof(s.key.comm));
	if (!is_target(s.key.pid, s.key.comm) && !join_as_child(s.key.pid))
		return;
	stat_inc(PROFILE_STAT_SWITCHES);
	take_stacks(ctx, &s.key);
	pg_labels(s.key.pid, &s.key.wait_event, &s.key.query_id);
	s.key.sched_state = state;
	s.ns = now;
	if (bpf_map_update_elem(&blocked, &prev, &s, BPF_ANY))
		/* -E2BIG: more threads switched out at once than room. */
		stat_inc(PROFILE_STAT_BLOCKED_FULL);
	announce_once(s.key.pid);
}

SEC("raw_tp/sched_switch")
int on_switch(unsigned long long *ctx)
{
	__u64 now = bpf_ktime_get_ns();

	switch_in(ctx[2], now);
	if (!(!ctx[0] && (ctx[3] & TASK_DEAD)))
		switch_out(ctx, ctx[1], now, sched_state(ctx[0], ctx[3]));
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
