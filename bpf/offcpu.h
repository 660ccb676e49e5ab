/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * offcpu.h - structures shared by the BPF off-CPU profiler (offcpu.bpf.c)
 * and its user-space driver (agent/profile/bpf/bpf_offcpu.c).
 *
 * A target thread switched out is remembered in `blocked` (by task
 * pointer) with the time and its struct profile_key (profile.h: stacks,
 * PostgreSQL labels); when it is switched in again, the time in between
 * is added to `counts` under that key.  Threads still switched out when
 * the profile ends are left in `blocked` for user space to count.
 */
#ifndef VMTOOLS_BPF_OFFCPU_H
#define VMTOOLS_BPF_OFFCPU_H

#include "bpf/profile.h"

/* What `counts` holds per key. */
struct offcpu_value {
	__u64 switches; /* blocks counted */
	__u64 ns; /* their total time switched out */
};

/* A thread switched out, until it runs again. */
struct offcpu_start {
	__u64 ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	struct profile_key key;
};

#endif
