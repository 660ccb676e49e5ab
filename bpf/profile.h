/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * profile.h - structures shared by the BPF CPU profiler (profile.bpf.c) and
 * its user-space driver (agent/profile/bpf/bpf_backend.c).
 *
 * The program counts samples in `counts`, keyed by struct profile_key; the
 * stack ids in the key index `user_stacks` and `kernel_stacks`.  Per-CPU
 * counters (enum profile_stat) say what could not be recorded.  Events
 * (struct profile_event) on the ring buffer tell user space about target
 * processes to capture /proc state of while they live.
 *
 * The off-CPU profiler (offcpu.bpf.c, offcpu.h) uses the same key, stack
 * maps, counters and events; targets.bpf.h holds what both programs share.
 */
#ifndef VMTOOLS_BPF_PROFILE_H
#define VMTOOLS_BPF_PROFILE_H

#define PROFILE_MAX_STACK_DEPTH 127
#define PROFILE_COMM_LEN 16
#define PROFILE_MAX_COMMS 64

struct profile_key {
	__u32 pid; /* thread group id, what user space calls the pid */
	__u32 tid;
	__s32 user_stack_id; /* negative: -errno from bpf_get_stackid */
	__s32 kernel_stack_id;
	char comm[PROFILE_COMM_LEN];
	/* PostgreSQL's, read from the backend (pg.h); 0 when none */
	__u32 wait_event; /* wait_event_info, class in the top byte */
	__u32 sched_state; /* off-CPU: enum profile_sched_state */
	__u64 query_id; /* st_query_id of the backend's status entry */
};

/* Indexes of the per-CPU `stats` array. */
enum profile_stat {
	PROFILE_STAT_SAMPLES, /* samples of target processes */
	PROFILE_STAT_STACK_COLLISION, /* -EEXIST: stack id slot taken */
	PROFILE_STAT_STACK_FULL, /* -ENOMEM: stack map out of entries */
	PROFILE_STAT_STACK_FAULT, /* -EFAULT or other: no stack walked */
	PROFILE_STAT_COUNTS_FULL, /* counts map full: sample not recorded */
	PROFILE_STAT_EVENTS_LOST, /* ring buffer full: process not announced */
	PROFILE_STAT_FORKS, /* samples of children of --pid targets joining */
	PROFILE_STAT_SWITCHES, /* off-CPU: switches out of target threads */
	PROFILE_STAT_BLOCKED_FULL, /* off-CPU: `blocked` full, block lost */
	PROFILE_STAT_NR,
};

/*
 * What a thread switched out was doing (the off-CPU program; 0 for CPU
 * samples, and where the kernel does not say, before Linux 5.18).
 */
enum profile_sched_state {
	PROFILE_SCHED_UNKNOWN,
	PROFILE_SCHED_RUNNABLE, /* preempted: waiting for a CPU only */
	PROFILE_SCHED_SLEEPING, /* waiting for an event (S) */
	PROFILE_SCHED_UNINTERRUPTIBLE, /* waiting, uninterruptibly (D) */
};

enum profile_event_kind {
	PROFILE_EVENT_FIRST_SAMPLE = 1, /* a process sampled the first time */
	PROFILE_EVENT_EXEC = 3, /* a target ran execve(): new mappings */
};

struct profile_event {
	__u32 kind;
	__u32 pid; /* the process to capture */
	__u32 ppid; /* a child of a target: the parent's tgid, else 0 */
	__u32 pad;
};

#endif
