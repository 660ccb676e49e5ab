/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_stack_counts.h - counting the stack records a BPF program sends
 * (bpf_stack_counts.c): each struct stack_record (bpf/stacks.h) read off
 * the ring buffer while the profile runs is added to a table of distinct
 * records with their summed weight, turned into a struct vm_samples at the
 * end.
 *
 * The table holds each distinct {pid, tid, comm, user stack, kernel stack}
 * once, only its frames, up to max_bytes; a new record beyond that is
 * dropped and counted, as a record the ring buffer could not take is.
 */
#ifndef VMTOOLS_AGENT_BPF_STACK_COUNTS_H
#define VMTOOLS_AGENT_BPF_STACK_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "agent/samples/sample.h"
#include "bpf/stacks.h"

struct vm_stack_node;

struct vm_stack_counts {
	void *tree; /* tsearch tree of struct vm_stack_node */
	struct vm_stack_node **v; /* the same, in arrival order */
	size_t n, cap;
	size_t bytes, max_bytes; /* held by the nodes, and its bound */
	uint64_t records; /* added, dropped and malformed included */
	uint64_t dropped; /* new records past max_bytes, or out of memory */
	uint64_t malformed; /* shorter or longer than their frame counts */
};

void vm_stack_counts_init(struct vm_stack_counts *c, size_t max_bytes);

/*
 * Count one record of size bytes as read off the ring buffer.  0; -EINVAL
 * for a malformed record, -E2BIG or -ENOMEM for one dropped (both counted
 * in c, nothing else changed).
 */
int vm_stack_counts_add(struct vm_stack_counts *c, const void *data,
			size_t size);

/*
 * Every distinct record into s as one sample, with its PostgreSQL labels;
 * 0 or -ENOMEM.  A CPU sample's count is the records' summed weight; an
 * off-CPU block's (vm_stack_counts_to_blocks) is how many records there
 * were, and their summed weight its nanoseconds.
 */
int vm_stack_counts_to_samples(const struct vm_stack_counts *c,
			       struct vm_samples *s);
int vm_stack_counts_to_blocks(const struct vm_stack_counts *c,
			      struct vm_samples *s);

void vm_stack_counts_free(struct vm_stack_counts *c);

#endif
