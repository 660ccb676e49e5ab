/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_offcpu.h - reading the off-CPU profiler's maps once it has stopped
 * (bpf_offcpu.c): the blocks counted per key, and the threads still
 * switched out at the end, whose blocks end with the profile.
 */
#ifndef VMTOOLS_AGENT_BPF_OFFCPU_H
#define VMTOOLS_AGENT_BPF_OFFCPU_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/offcpu.h"

struct vm_bpf_block {
	struct profile_key key;
	uint64_t switches;
	uint64_t ns;
};

/*
 * Every entry of `counts` (counts_fd), then one per thread of `blocked`
 * (blocked_fd) switched out since at (CLOCK_MONOTONIC ns) until end_ns,
 * when at least min_ns and the thread still exists under proc_root (a
 * thread that exited was switched out for good, not blocked).  *out is
 * malloc'd; 0 or a negative errno.
 */
int vm_bpf_read_blocks(int counts_fd, int blocked_fd, uint64_t end_ns,
		       uint64_t min_ns, const char *proc_root,
		       struct vm_bpf_block **out, size_t *n);

#endif
