/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * offcpu.h - structures shared by the BPF off-CPU profiler (offcpu.bpf.c)
 * and its user-space driver (agent/profile/bpf/bpf_offcpu.c).
 *
 * A target thread switched out sends its block's start at once on the
 * `stack_records` ring buffer (struct offcpu_start: the time, its task
 * pointer and its record, bpf/stacks.h: stacks, PostgreSQL labels, only
 * the frames taken; or struct offcpu_again when the record is the one it
 * sent last); when it is switched in again, its end follows (struct
 * offcpu_end, by the same task pointer).  The ring buffer keeps
 * the order in which records were reserved, and a thread is switched in
 * only after its switch out has finished, so a block's end always comes
 * after its start.  User space joins the two (bpf_offcpu.c), drops blocks
 * shorter than min_block_us, and counts identical records.  The threads
 * still switched out when the profile ends are those of `blocked` with a
 * time: user space counts them until the end.
 */
#ifndef VMTOOLS_BPF_OFFCPU_H
#define VMTOOLS_BPF_OFFCPU_H

#include "bpf/profile.h"
#include "bpf/stacks.h"

/* A block starts: a thread switched out. */
struct offcpu_start {
	__u64 task; /* its task pointer, which its end names */
	__u64 ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	struct stack_record r; /* weight 0; only its frames are sent */
};

/* The bytes of a start before its frames: what every start has at least. */
#define OFFCPU_START_HEAD \
	(__builtin_offsetof(struct offcpu_start, r) + STACK_RECORD_HEAD)

/* The block of the thread with this task pointer ends: it runs again. */
struct offcpu_end {
	__u64 task;
	__u64 ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
};

/*
 * A block starts with the same record as the thread's last start sent
 * whole (struct offcpu_start): most blocks of a thread are where its last
 * one was (a backend waiting for its client), and 24 bytes cost a third
 * of the time of sending 250 again.  The program tells by a 64-bit hash of
 * the record (offcpu_hash in offcpu.bpf.c); user space keeps each
 * thread's last whole start.
 */
struct offcpu_again {
	__u64 task;
	__u64 ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 hash; /* of the record it repeats, never 0 */
};

_Static_assert(sizeof(struct offcpu_end) < sizeof(struct offcpu_again) &&
		       sizeof(struct offcpu_again) < OFFCPU_START_HEAD,
	       "starts, repeated starts and ends are told apart by size");

#endif
