/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * stacks.bpf.h - the user and kernel stack maps of a profiler and taking
 * the current task's stacks into a struct profile_key, shared by the CPU
 * (profile.bpf.c) and off-CPU (offcpu.bpf.c) programs.
 *
 * Sizes are set by user space from the profile's expected events.  User
 * and kernel stacks go to separate maps: a stack map loses a stack
 * whenever its hash slot is taken, so each map holding half the stacks
 * halves the collisions.
 */
#ifndef VMTOOLS_BPF_STACKS_BPF_H
#define VMTOOLS_BPF_STACKS_BPF_H

#include <linux/bpf.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/profile.h"

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} user_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} kernel_stacks SEC(".maps");

static __always_inline void count_stack_error(long id)
{
	if (id >= 0)
		return;
	if (id == -EEXIST)
		/* Another stack hashed to the same slot: this one is lost. */
		stat_inc(PROFILE_STAT_STACK_COLLISION);
	else if (id == -ENOMEM)
		/* Every entry of the stack map is taken. */
		stat_inc(PROFILE_STAT_STACK_FULL);
	else
		/* -EFAULT: nothing to walk (e.g. no user context). */
		stat_inc(PROFILE_STAT_STACK_FAULT);
}

/* ctx: the program's context (perf_event or raw tracepoint). */
static __always_inline void take_stacks(void *ctx, struct profile_key *key)
{
	key->kernel_stack_id = bpf_get_stackid(ctx, &kernel_stacks, 0);
	count_stack_error(key->kernel_stack_id);
	key->user_stack_id =
		bpf_get_stackid(ctx, &user_stacks, BPF_F_USER_STACK);
	count_stack_error(key->user_stack_id);
}

#endif
