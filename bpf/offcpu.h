/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * offcpu.h - structures shared by the BPF off-CPU profiler (offcpu.bpf.c)
 * and its user-space driver (agent/profile/bpf/bpf_offcpu.c).
 *
 * A target thread switched out is remembered in `blocked` (by task
 * pointer) with the time and its record (bpf/stacks.h: stacks, PostgreSQL
 * labels); when it is switched in again, the record goes to user space
 * with the time in between as its weight, where identical records are
 * counted.  Threads still switched out when the profile ends are left in
 * `blocked` for user space to count.
 */
#ifndef VMTOOLS_BPF_OFFCPU_H
#define VMTOOLS_BPF_OFFCPU_H

#include "bpf/profile.h"
#include "bpf/stacks.h"

/* A thread switched out, until it runs again. */
struct offcpu_start {
	__u64 ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	struct stack_record r; /* weight 0 until it runs again */
};

/*
 * pre_blocked's value for a thread blocked when the profile started whose
 * first switch in was not seen (offcpu.bpf.c).
 */
#define PRE_BLOCKED_RAN 1

#endif
