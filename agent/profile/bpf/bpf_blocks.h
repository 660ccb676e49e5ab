/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_blocks.h - what the off-CPU profile needs besides counting records
 * (bpf_blocks.c): joining each block's start and end as the program sends
 * them (bpf/offcpu.h), the blocks still going at the end, which end with
 * the profile; and, from /proc, the threads blocked since before the
 * profile that never ran during it.
 */
#ifndef VMTOOLS_AGENT_BPF_BLOCKS_H
#define VMTOOLS_AGENT_BPF_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

#include "bpf/offcpu.h"

struct vm_stack_counts;

/*
 * Each thread's last record, by task pointer, to count its blocks with.
 * The reader thread adds every off-CPU record to it as the ring buffer
 * delivers them, in order; a block lasting at least min_ns is counted
 * into counts.
 */
struct vm_offcpu_join {
	void *tree; /* tsearch tree of struct vm_offcpu_thread, by task */
	struct vm_offcpu_thread **v; /* the same, to free them */
	size_t n, cap, max; /* threads known, and their bound */
	uint64_t min_ns;
	struct vm_stack_counts *counts;
};

void vm_offcpu_join_init(struct vm_offcpu_join *j, struct vm_stack_counts *c,
			 uint64_t min_ns, size_t max_threads);

/*
 * One record off the ring buffer: a thread's record (struct
 * offcpu_record, frames only) or a block (struct offcpu_block).  0;
 * -EINVAL for a malformed record; -E2BIG or -ENOMEM for a record dropped,
 * -ENOENT for a block of a thread whose record is not here (dropped):
 * each counted in counts as vm_stack_counts_add counts them.
 */
int vm_offcpu_join_add(struct vm_offcpu_join *j, const void *data, size_t size);

/*
 * The profile ends at end_ns (CLOCK_MONOTONIC): the threads `blocked`
 * (blocked_fd, bpf/offcpu.bpf.c) has switched out since before then
 * end their blocks now; counted when at least min_ns and the thread still
 * exists under proc_root (a thread that exited was switched out for good,
 * not blocked).  0.
 */
int vm_offcpu_join_finish(struct vm_offcpu_join *j, int blocked_fd,
			  uint64_t end_ns, const char *proc_root);

void vm_offcpu_join_free(struct vm_offcpu_join *j);

/*
 * A target thread as the profile starts: how often it has been switched
 * so far.  A thread switched neither out nor in during the whole profile
 * and not running at its end was blocked all along, since before the
 * start: the program never saw it (it sees threads switch), so user space
 * counts it (vm_bpf_slept_throughout).
 */
struct vm_thread_switches {
	uint32_t pid, tid;
	uint64_t switches; /* voluntary + nonvoluntary context switches */
	uint64_t run_ns; /* its CPU time (schedstat); VM_RUN_NS_UNKNOWN */
};

#define VM_RUN_NS_UNKNOWN UINT64_MAX

/*
 * The threads of processes pids[] under proc_root, appended to *v (*n
 * of them, *cap allocated).  0 or -ENOMEM; a process that is gone is
 * skipped.
 */
int vm_bpf_snapshot_threads(const char *proc_root, const uint32_t *pids,
			    size_t n_pids, struct vm_thread_switches **v,
			    size_t *n, size_t *cap);

/*
 * Whether t has not been switched since its snapshot and is not running;
 * *state its state letter then ('S', 'D', ...).
 */
bool vm_bpf_slept_throughout(const char *proc_root,
			     const struct vm_thread_switches *t, char *state);

/*
 * Whether t has not been switched out since its snapshot and is running
 * or runnable now: woken since, it has run without a break, *ran_ns of
 * CPU time (0: it has not run yet), as /proc/PID/task/TID/schedstat
 * counts it (to the last scheduler tick).  false when not, or unknown.
 */
bool vm_bpf_running_since(const char *proc_root,
			  const struct vm_thread_switches *t, uint64_t *ran_ns);

#endif
