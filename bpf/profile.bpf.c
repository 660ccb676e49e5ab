// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * profile.bpf.c - the CPU profiler: a perf_event program attached to a
 * CPU-clock event on every CPU, counting samples per {pid, tid, user stack,
 * kernel stack, PostgreSQL wait event and query id} of the target
 * processes.  The target filter, fork following and the raw tracepoints
 * that keep them are targets.bpf.h's, shared with the off-CPU profiler
 * (offcpu.bpf.c); the stack maps are stacks.bpf.h's.
 */
#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <linux/errno.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/profile.h"
#include "bpf/targets.bpf.h"
#include "bpf/stacks.bpf.h"

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
	long r;

	key.pid = id >> 32;
	key.tid = (__u32)id;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (!is_target(key.pid, key.comm) && !join_as_child(key.pid))
		return 0;
	stat_inc(PROFILE_STAT_SAMPLES);

	take_stacks(ctx, &key);
	pg_labels(key.pid, &key.wait_event, &key.query_id);

	val = bpf_map_lookup_elem(&counts, &key);
	if (val) {
		__sync_fetch_and_add(val, 1);
	} else {
		r = bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
		if (r == -EEXIST) {
			/* Another CPU inserted the same key meanwhile. */
			val = bpf_map_lookup_elem(&counts, &key);
			if (val)
				__sync_fetch_and_add(val, 1);
		} else if (r) {
			/* -E2BIG: the counts map is full. */
			stat_inc(PROFILE_STAT_COUNTS_FULL);
		}
	}

	announce_once(key.pid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
