// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * profile.bpf.c - the CPU profiler: a perf_event program attached to a
 * CPU-clock event on every CPU, counting samples per {pid, tid, user stack,
 * kernel stack} of the target processes, and raw tracepoints that follow
 * the forks and execs of the target processes.
 *
 * Targets are selected in the kernel: a process is sampled when its command
 * name is in `target_comms` or its thread group id is in `target_pids`.  A
 * child forked by a process in `target_pids` joins it, so new PostgreSQL
 * backends of a profiled postmaster are sampled too.
 *
 * Only UAPI headers are used, no vmlinux.h, no CO-RE and no kernel struct
 * offsets, so the object loads on kernels without BTF and without tracefs.
 * Fork following needs the child's pid, which lives in task_struct; instead
 * of reading it, the fork hook remembers the child's task pointer (the raw
 * tracepoint's argument), and the child is recognised when it runs by
 * bpf_get_current_task() -- the same pointer -- where its pid is known.
 * The exit hook forgets the pointer, so a reused task_struct is never
 * mistaken for the child.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/profile.h"

/* Set by user space before load. */
const volatile bool filter_comm = false; /* match target_comms */
const volatile bool filter_pid = false; /* match target_pids */
const volatile __u32 self_tgid = 0; /* the agent: never sampled */

/*
 * Which of the two sets of maps (counts, user_stacks, kernel_stacks, or
 * their _b twins) samples go to.  A continuous profile seals a window by
 * flipping it from user space, waiting for the programs that still run on
 * the old set (see sync_outer), then reading and emptying that set while
 * sampling goes on into the other: no gap, no overlap, no reload.  An
 * on-demand profile never flips it, and its _b maps have one entry.
 */
volatile __u32 window_set = 0;

/*
 * Sizes are set by user space from frequency x CPUs x seconds.  User and
 * kernel stacks go to separate maps: a stack map loses a stack whenever
 * its hash slot is taken, so each map holding half the stacks halves the
 * collisions.
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} user_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} kernel_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 16384);
} counts SEC(".maps");

/* The second set, see window_set; sized like the first by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 1);
} user_stacks_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 1);
} kernel_stacks_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 1);
} counts_b SEC(".maps");

/*
 * Never read by the programs: updating a map-in-map from user space
 * returns only after an RCU grace period, by which time every program
 * that read the old window_set has finished.
 */
struct sync_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} sync_inner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__type(key, __u32);
	__uint(max_entries, 1);
	__array(values, struct sync_inner);
} sync_outer SEC(".maps") = {
	.values = { [0] = &sync_inner },
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, PROFILE_COMM_LEN);
	__type(value, __u8);
	__uint(max_entries, PROFILE_MAX_COMMS);
} target_comms SEC(".maps");

/*
 * Pids given, and the children they fork while the profile runs.  This and
 * the next two maps are sized by user space too
 * (agent/profile/bpf/bpf_sizing.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 65536);
} target_pids SEC(".maps");

/* Children forked by targets, by task pointer, until they exit. */
struct child_info {
	__u32 ppid; /* the parent's thread group id */
	__u32 via_pid; /* the parent was a target by pid: follow the child */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct child_info);
	__uint(max_entries, 65536);
} children SEC(".maps");

/* Processes already announced to user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 16384);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, PROFILE_STAT_NR);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU: no other writer */
}

static __always_inline bool is_target(__u32 tgid, const char *comm)
{
	if (tgid == 0 || tgid == self_tgid)
		return false; /* idle, or ourselves */
	if (filter_pid && bpf_map_lookup_elem(&target_pids, &tgid))
		return true;
	if (filter_comm && bpf_map_lookup_elem(&target_comms, comm))
		return true;
	return false;
}

/*
 * The current task is a child of a --pid target that has not been seen
 * yet (it is recognised by its task pointer, see on_fork): it joins the
 * targets now.
 */
static __always_inline bool join_as_child(__u32 tgid)
{
	struct child_info *ci;
	__u64 task;
	__u8 yes = 1;

	if (!filter_pid)
		return false;
	task = bpf_get_current_task();
	ci = bpf_map_lookup_elem(&children, &task);
	if (!ci || !ci->via_pid)
		return false;
	bpf_map_update_elem(&target_pids, &tgid, &yes, BPF_ANY);
	stat_inc(PROFILE_STAT_FORKS);
	return true;
}

static __always_inline void announce(__u32 kind, __u32 pid, __u32 ppid)
{
	struct profile_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(PROFILE_STAT_EVENTS_LOST);
		return;
	}
	e->kind = kind;
	e->pid = pid;
	e->ppid = ppid;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void count_stack_error(long id)
{
	if (id >= 0)
		return;
	if (id == -EEXIST)
		/* Another stack hashed to the same slot: this one is lost. */
		stat_inc(PROFILE_STAT_STACK_COLLISION);
	else if (id == -ENOMEM)
		/* Every entry of the stack map is taken. */
		stat_inc(PROFILE_STAT_STACK_FULL);
	else
		/* -EFAULT: nothing to walk (e.g. no user context). */
		stat_inc(PROFILE_STAT_STACK_FAULT);
}

/* Count one sample of key in one set of maps (see window_set). */
static __always_inline void record(struct bpf_perf_event_data *ctx,
				   struct profile_key *key, void *counts_map,
				   void *ustacks, void *kstacks)
{
	__u64 one = 1, *val;
	long r;

	key->kernel_stack_id = bpf_get_stackid(ctx, kstacks, 0);
	count_stack_error(key->kernel_stack_id);
	key->user_stack_id = bpf_get_stackid(ctx, ustacks, BPF_F_USER_STACK);
	count_stack_error(key->user_stack_id);

	val = bpf_map_lookup_elem(counts_map, key);
	if (val) {
		__sync_fetch_and_add(val, 1);
	} else {
		r = bpf_map_update_elem(counts_map, key, &one, BPF_NOEXIST);
		if (r == -EEXIST) {
			/* Another CPU inserted the same key meanwhile. */
			val = bpf_map_lookup_elem(counts_map, key);
			if (val)
				__sync_fetch_and_add(val, 1);
		} else if (r) {
			/* -E2BIG: the counts map is full. */
			stat_inc(PROFILE_STAT_COUNTS_FULL);
		}
	}
}

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profile_key key = {};
	__u8 yes = 1;

	key.pid = id >> 32;
	key.tid = (__u32)id;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (!is_target(key.pid, key.comm) && !join_as_child(key.pid))
		return 0;
	stat_inc(PROFILE_STAT_SAMPLES);

	if (window_set & 1)
		record(ctx, &key, &counts_b, &user_stacks_b, &kernel_stacks_b);
	else
		record(ctx, &key, &counts, &user_stacks, &kernel_stacks);

	if (!bpf_map_lookup_elem(&seen, &key.pid)) {
		__u64 task = bpf_get_current_task();
		struct child_info *ci = bpf_map_lookup_elem(&children, &task);

		bpf_map_update_elem(&seen, &key.pid, &yes, BPF_ANY);
		/* The parent, whose mappings a child that exits soon had. */
		announce(PROFILE_EVENT_FIRST_SAMPLE, key.pid,
			 ci ? ci->ppid : 0);
	}
	return 0;
}

/*
 * sched_process_fork(parent, child) runs in the parent for every new task,
 * threads included (a thread's process is a target already).
 */
SEC("raw_tp/sched_process_fork")
int on_fork(unsigned long long *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32;
	char comm[PROFILE_COMM_LEN] = {};
	struct child_info ci = {};
	__u64 child = ctx[1];

	bpf_get_current_comm(comm, sizeof(comm));
	/* A child forking before its first sample joins first. */
	if (!is_target(parent, comm) && !join_as_child(parent))
		return 0;
	ci.ppid = parent;
	ci.via_pid = filter_pid &&
		     bpf_map_lookup_elem(&target_pids, &parent) != NULL;
	bpf_map_update_elem(&children, &child, &ci, BPF_ANY);
	return 0;
}

/* Any task exits: its pointer may be reused, forget it. */
SEC("raw_tp/sched_process_exit")
int on_exit(unsigned long long *ctx)
{
	__u64 task = bpf_get_current_task();

	bpf_map_delete_elem(&children, &task);
	return 0;
}

/*
 * A target replaced its program: its mappings changed.  Forget that it was
 * announced, so its next sample announces it again once the dynamic loader
 * has mapped its libraries, and tell user space now.  Only the current
 * task is needed, so the raw tracepoint (no tracefs, no BTF) does.
 */
SEC("raw_tp/sched_process_exec")
int on_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	char comm[PROFILE_COMM_LEN] = {};

	bpf_get_current_comm(comm, sizeof(comm));
	if (!is_target(tgid, comm))
		return 0;
	bpf_map_delete_elem(&seen, &tgid);
	announce(PROFILE_EVENT_EXEC, tgid, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
