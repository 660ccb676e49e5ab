// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * profile.bpf.c - the CPU profiler: a perf_event program attached to a
 * CPU-clock event on every CPU, counting samples per {pid, tid, user stack,
 * kernel stack} of the target processes.
 *
 * Only UAPI headers are used, no vmlinux.h and no CO-RE relocation, so the
 * object loads on kernels built without BTF.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/profile.h"

/* Set by user space before load. */
const volatile __u32 target_pid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 16384);
} counts SEC(".maps");

SEC("perf_event")
int do_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct profile_key key = {};
	__u64 one = 1, *val;

	key.pid = id >> 32;
	key.tid = (__u32)id;
	if (target_pid && key.pid != target_pid)
		return 0;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.kernel_stack_id = bpf_get_stackid(ctx, &stacks, 0);
	key.user_stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

	val = bpf_map_lookup_elem(&counts, &key);
	if (val)
		__sync_fetch_and_add(val, 1);
	else
		bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
