/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_read.h - reading the eBPF profiler's maps once sampling has stopped
 * (bpf_read.c): the counts map in batches, and each stack of the stack
 * maps once, however many counts share it.
 */
#ifndef VMTOOLS_AGENT_BPF_READ_H
#define VMTOOLS_AGENT_BPF_READ_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/profile.h"

struct vm_bpf_count {
	struct profile_key key;
	uint64_t count;
};

/*
 * Every entry of the counts map fd (max_entries of them at most) into a
 * malloc'd *out; 0 or a negative errno.
 */
int vm_bpf_read_counts(int fd, uint32_t max_entries, struct vm_bpf_count **out,
		       size_t *n);

/*
 * Fills ips (PROFILE_MAX_STACK_DEPTH entries) with the stack id; 0 or a
 * negative errno.  bpf_read.c's reads a stack map; tests give their own.
 */
typedef int (*vm_stack_read_fn)(void *ctx, int32_t id, uint64_t *ips);

/* The stacks read so far, by id (ids are below the map's max_entries). */
struct vm_stack_cache {
	vm_stack_read_fn read;
	void *ctx;
	uint32_t n_ids;
	uint32_t *slot; /* per id: 0 not read yet, else index + 1 in where */
	struct {
		size_t off; /* in ips */
		uint32_t n; /* frames */
	} * where;
	size_t n_where, cap_where;
	uint64_t *ips; /* every stack read, one after the other */
	size_t n_ips, cap_ips;
	uint64_t reads; /* calls to read, for tests */
};

/* 0 or -ENOMEM. */
int vm_stack_cache_init(struct vm_stack_cache *c, uint32_t n_ids,
			vm_stack_read_fn read, void *ctx);

/*
 * The frames of stack id (no frame for a negative id, one that could not
 * be read or is out of range); *ips stays valid until the next call.
 * -ENOMEM only.
 */
int vm_stack_cache_get(struct vm_stack_cache *c, int32_t id,
		       const uint64_t **ips, uint32_t *n);

void vm_stack_cache_free(struct vm_stack_cache *c);

/* The vm_stack_read_fn of a stack map: ctx is the map's fd as intptr_t. */
int vm_bpf_read_stack(void *ctx, int32_t id, uint64_t *ips);

#endif
