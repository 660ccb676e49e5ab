// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_offcpu.c - reading the off-CPU profiler's `counts` and `blocked`
 * maps (bpf_offcpu.h).  Both are read key by key: a profile has as many
 * entries as distinct blocking stacks and threads, far fewer than a CPU
 * profile's samples, and sampling has stopped, so nothing changes
 * meanwhile.
 */
#include "agent/profile/bpf/bpf_offcpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/array.h"

static int push(struct vm_bpf_block **v, size_t *n, size_t *cap,
		const struct profile_key *key, uint64_t switches, uint64_t ns)
{
	if (vm_grow(*v, cap, *n + 1))
		return -ENOMEM;
	(*v)[(*n)++] = (struct vm_bpf_block){ *key, switches, ns };
	return 0;
}

static bool thread_exists(const char *proc_root, uint32_t pid, uint32_t tid)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%u/task/%u", proc_root, pid, tid);
	return access(path, F_OK) == 0;
}

int vm_bpf_read_blocks(int counts_fd, int blocked_fd, uint64_t end_ns,
		       uint64_t min_ns, const char *proc_root,
		       struct vm_bpf_block **out, size_t *n)
{
	struct profile_key key, next, *prev = NULL;
	struct vm_bpf_block *v = NULL;
	__u64 task, next_task, *prev_task = NULL;
	size_t cnt = 0, cap = 0;
	int r = 0;

	while (bpf_map_get_next_key(counts_fd, prev, &next) == 0) {
		struct offcpu_value val;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(counts_fd, &key, &val))
			continue;
		r = push(&v, &cnt, &cap, &key, val.switches, val.ns);
		if (r < 0)
			goto fail;
	}
	while (bpf_map_get_next_key(blocked_fd, prev_task, &next_task) == 0) {
		struct offcpu_start s;

		task = next_task;
		prev_task = &task;
		if (bpf_map_lookup_elem(blocked_fd, &task, &s) ||
		    s.ns >= end_ns || end_ns - s.ns < min_ns ||
		    !thread_exists(proc_root, s.key.pid, s.key.tid))
			continue;
		r = push(&v, &cnt, &cap, &s.key, 1, end_ns - s.ns);
		if (r < 0)
			goto fail;
	}
	*out = v;
	*n = cnt;
	return 0;
fail:
	free(v);
	return r;
}
