/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_sizing.h - the pure decisions of the eBPF backend, apart from the
 * I/O so they are unit-tested (bpf_sizing.c): BPF map sizes from
 * frequency x CPUs x duration, and the online CPU list.
 */
#ifndef VMTOOLS_AGENT_BPF_SIZING_H
#define VMTOOLS_AGENT_BPF_SIZING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm_bpf_sizes {
	uint32_t records_ring; /* bytes of the stack_records ring buffer */
	uint32_t blocks_ring; /* the same for the off-CPU program */
	size_t counts_bytes; /* bound of the distinct records user space keeps */
	uint32_t seen; /* processes announced (LRU) */
	uint32_t pids; /* target_pids: given pids and their children */
	uint32_t children; /* children of targets alive at once */
	uint32_t blocked; /* off-CPU: target threads switched out at once */
	uint64_t expected_samples; /* frequency x CPUs x seconds */
};

/* by_pid: the profile has --pid targets (target_pids is used). */
void vm_bpf_map_sizes(uint32_t frequency, size_t cpus, uint32_t seconds,
		      bool by_pid, struct vm_bpf_sizes *out);

/*
 * Parse a kernel CPU list ("0-3,8,10-11").  Writes up to cap CPU numbers
 * to cpus (may be NULL) and the total count to *n.  -EINVAL if malformed.
 */
int vm_parse_cpu_list(const char *s, int *cpus, size_t cap, size_t *n);

#endif
