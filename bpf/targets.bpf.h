/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * targets.bpf.h - what the CPU profiler (profile.bpf.c) and the off-CPU
 * profiler (offcpu.bpf.c) share: the in-kernel target filter, fork
 * following, the announcements of processes to user space, the per-CPU
 * counters, and the raw tracepoints that keep them (fork, exit, exec).
 * Each program's object includes it once and gets its own copy of the
 * maps; user space fills them the same way for both (bpf_core.c).
 *
 * Targets are selected in the kernel: a process is a target when its
 * command name is in `target_comms` or its thread group id is in
 * `target_pids`.  A child forked by a process in `target_pids` joins it,
 * so new PostgreSQL backends of a profiled postmaster are profiled too.
 *
 * Only UAPI headers are used, no vmlinux.h, no CO-RE and no kernel struct
 * offsets, so the objects load on kernels without BTF and without tracefs.
 * Fork following needs the child's pid, which lives in task_struct;
 * instead of reading it, the fork hook remembers the child's task pointer
 * (the raw tracepoint's argument), and the child is recognised when it
 * runs by bpf_get_current_task() -- the same pointer -- where its pid is
 * known.  The exit hook forgets the pointer, so a reused task_struct is
 * never mistaken for the child.
 */
#ifndef VMTOOLS_BPF_TARGETS_BPF_H
#define VMTOOLS_BPF_TARGETS_BPF_H

#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/pglabels.bpf.h"
#include "bpf/profile.h"

/* Set by user space before load. */
const volatile bool filter_comm = false; /* match target_comms */
const volatile bool filter_pid = false; /* match target_pids */
const volatile __u32 self_tgid = 0; /* the agent: never profiled */

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

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v && n)
		*v += n;
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

/* The first event of a process: user space captures it from /proc. */
static __always_inline void announce_once(__u32 tgid)
{
	__u64 task;
	struct child_info *ci;
	__u8 yes = 1;

	if (bpf_map_lookup_elem(&seen, &tgid))
		return;
	task = bpf_get_current_task();
	ci = bpf_map_lookup_elem(&children, &task);
	bpf_map_update_elem(&seen, &tgid, &yes, BPF_ANY);
	/* The parent, whose mappings a child that exits soon had. */
	announce(PROFILE_EVENT_FIRST_SAMPLE, tgid, ci ? ci->ppid : 0);
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
	pg_follow_fork(parent, child);
	return 0;
}

/* Any task exits: its pointer may be reused, forget it. */
SEC("raw_tp/sched_process_exit")
int on_exit(unsigned long long *ctx)
{
	__u64 task = bpf_get_current_task();

	bpf_map_delete_elem(&children, &task);
	pg_forget_task(task);
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
	pg_forget_process(tgid);
	announce(PROFILE_EVENT_EXEC, tgid, 0);
	return 0;
}

#endif
