/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * offcpu.h - structures shared by the BPF off-CPU profiler (offcpu.bpf.c)
 * and its user-space driver (agent/profile/bpf/bpf_offcpu.c).
 *
 * Two records go on the `stack_records` ring buffer.  When a target
 * thread is switched out, its record (struct offcpu_record: task pointer,
 * bpf/stacks.h's stacks and PostgreSQL labels, only the frames taken)
 * goes at once, unless it is the one the thread sent last: most blocks of
 * a thread are where its last one was (a backend waiting for its client),
 * which the program tells by a 64-bit hash of the record.  When the thread
 * is switched in again, its block goes (struct offcpu_block: task
 * pointer, when it was switched out and in), to be counted with the
 * thread's last record.  The ring buffer keeps the order in which records
 * were reserved, and a thread is switched in only after its switch out
 * has finished, so a block always comes after the record it is counted
 * with.  User space keeps each thread's last record (bpf_blocks.c), drops
 * blocks shorter than min_block_us, and counts identical records.  The
 * threads still switched out when the profile ends are those of `blocked`
 * with a time: user space counts them until the end.
 */
#ifndef VMTOOLS_BPF_OFFCPU_H
#define VMTOOLS_BPF_OFFCPU_H

#include "bpf/profile.h"
#include "bpf/stacks.h"

/* A thread's record as it is switched out, when not the same as last. */
struct offcpu_record {
	__u64 task; /* its task pointer, which its blocks name */
	struct stack_record r; /* weight 0; only its frames are sent */
};

/* The bytes of a record before its frames: what every one has at least. */
#define OFFCPU_RECORD_HEAD \
	(__builtin_offsetof(struct offcpu_record, r) + STACK_RECORD_HEAD)

/* The thread with this task pointer runs again: its block. */
struct offcpu_block {
	__u64 task;
	__u64 start_ns, end_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

_Static_assert(sizeof(struct offcpu_block) < OFFCPU_RECORD_HEAD,
	       "records and blocks are told apart by their size");

/*
 * pre_blocked's value for a thread blocked when the profile started whose
 * first switch in was not seen (offcpu.bpf.c).
 */
#define PRE_BLOCKED_RAN 1

#endif
