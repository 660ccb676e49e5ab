/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * oom.h - what bpf/oom.bpf.c sends user space for each victim of the OOM
 * killer (agent/profile/bpf/bpf_oom.c reads it).
 */
#ifndef VMTOOLS_BPF_OOM_H
#define VMTOOLS_BPF_OOM_H

#include <linux/types.h>

#define OOM_COMM_LEN 16

/*
 * Sizes in KiB as the tracepoint gives them (Linux 6.8 and later); 0 on
 * older kernels, whose tracepoint has only the pid, and comm "" then.
 */
struct oom_event {
	__u64 time_ns; /* bpf_ktime_get_ns() at the tracepoint */
	__u32 pid; /* the victim, as the kernel numbers a task */
	__u32 uid;
	__u64 total_vm_kb, anon_rss_kb, file_rss_kb, shmem_rss_kb;
	char comm[OOM_COMM_LEN];
};

/*
 * Where the fields are in the tracepoint's record, read from its format
 * at start-up; 0 (common_type's offset, never a field's) when the running
 * kernel's tracepoint has no such field.
 */
struct oom_offsets {
	__u32 pid, comm_loc, uid, total_vm, anon_rss, file_rss, shmem_rss;
};

#endif
