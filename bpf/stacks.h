/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * stacks.h - one sampled stack as a BPF program hands it to user space
 * (bpf/stacks.bpf.h writes it, agent/profile/bpf/bpf_stack_counts.c reads
 * it).
 *
 * A record carries its stacks whole, so nothing is lost to a stack map's
 * hash slot being taken: user space counts identical records.  Only the
 * frames taken travel (n_user + n_kernel of ips[]), user frames first.
 */
#ifndef VMTOOLS_BPF_STACKS_H
#define VMTOOLS_BPF_STACKS_H

#define STACK_MAX_DEPTH 127
#define STACK_COMM_LEN 16

struct stack_record {
	__u32 pid; /* thread group id, what user space calls the pid */
	__u32 tid;
	__u64 weight; /* what it counts: 1 for a CPU sample, ns off-CPU */
	char comm[STACK_COMM_LEN];
	__u16 n_user; /* frames in ips[], user stack first */
	__u16 n_kernel;
	__s16 user_err; /* 0, or bpf_get_stack's -errno (-EFAULT: none) */
	__s16 kernel_err;
	/* PostgreSQL's, read from the backend (pg.h); 0 when none */
	__u32 wait_event; /* wait_event_info, class in the top byte */
	__u32 sched_state; /* off-CPU: enum profile_sched_state, else 0 */
	__u64 query_id; /* st_query_id of the backend's status entry */
	/*
	 * Page faults: the address that faulted, which user space replaces
	 * by the kind of its mapping before counting; 0 for other records.
	 */
	__u64 fault_addr;
	__u64 ips[2 * STACK_MAX_DEPTH];
};

/* The bytes of a record before ips[]: what every record has at least. */
#define STACK_RECORD_HEAD __builtin_offsetof(struct stack_record, ips)

#endif
