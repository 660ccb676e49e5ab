/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * profile.h - structures shared by the BPF CPU profiler (profile.bpf.c) and
 * its user-space driver (agent/profile/bpf/bpf_cpu.c).
 *
 * The program sends each sample with its stacks to user space
 * (bpf/stacks.h: struct stack_record on the `stack_records` ring buffer),
 * where identical samples are counted.  Per-CPU counters (enum
 * profile_stat) say what could not be recorded.  Events (struct
 * profile_event) on the `events` ring buffer tell user space about target
 * processes to capture /proc state of while they live.
 *
 * The off-CPU profiler (offcpu.bpf.c, offcpu.h) sends the same records,
 * and uses the same counters and events; targets.bpf.h holds what both
 * programs share.
 */
#ifndef VMTOOLS_BPF_PROFILE_H
#define VMTOOLS_BPF_PROFILE_H

#include "bpf/stacks.h"

#define PROFILE_MAX_STACK_DEPTH STACK_MAX_DEPTH
#define PROFILE_COMM_LEN STACK_COMM_LEN
#define PROFILE_MAX_COMMS 64

/* Indexes of the per-CPU `stats` array. */
enum profile_stat {
	PROFILE_STAT_SAMPLES, /* samples of target processes */
	PROFILE_STAT_RECORDS_LOST, /* ring buffer full: sample not recorded */
	PROFILE_STAT_EVENTS_LOST, /* ring buffer full: process not announced */
	PROFILE_STAT_FORKS, /* samples of children of --pid targets joining */
	PROFILE_STAT_SWITCHES, /* off-CPU: switches out of target threads */
	PROFILE_STAT_BLOCKED_FULL, /* off-CPU: `blocked` full, block lost */
	PROFILE_STAT_FRAMES_TABLE, /* callers found by unwind tables */
	PROFILE_STAT_FRAMES_FP, /* by frame pointer, where no row covered */
	PROFILE_STAT_WALKS_CUT, /* walks ended by a bad read or no progress */
	PROFILE_STAT_WALKS_KERNEL, /* stacks bpf_get_stack walked: no tables */
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
	PROFILE_EVENT_MAPS = 4, /* a pc in no mapping given: read them again */
};

struct profile_event {
	__u32 kind;
	__u32 pid; /* the process to capture */
	__u32 ppid; /* a child of a target: the parent's tgid, else 0 */
	__u32 pad;
};

#endif
