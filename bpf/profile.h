/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * profile.h - structures shared by the BPF CPU profiler (profile.bpf.c) and
 * its user-space driver in agent/.
 */
#ifndef VMTOOLS_BPF_PROFILE_H
#define VMTOOLS_BPF_PROFILE_H

#define PROFILE_MAX_STACK_DEPTH 127
#define PROFILE_COMM_LEN 16

struct profile_key {
	__u32 pid; /* thread group id, what user space calls the pid */
	__u32 tid;
	__s32 user_stack_id; /* negative: no user stack (kernel thread, lost) */
	__s32 kernel_stack_id;
	char comm[PROFILE_COMM_LEN];
};

#endif
