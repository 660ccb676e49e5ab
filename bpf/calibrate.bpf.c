// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * calibrate.bpf.c - where a task's user registers are, measured once at
 * start-up without BTF (agent/profile/bpf/bpf_calibrate.c): at a system
 * call of one thread of the agent's own, the raw sys_enter tracepoint is
 * handed the pt_regs the call entered with, which the kernel keeps at the
 * top of the thread's kernel stack.  The program copies that address, the
 * task pointer and the first bytes of the task_struct; user space finds
 * among them the pointer to the kernel stack that puts the registers at
 * its top, and so the offset and stack size the profilers use
 * (bpf/unwind.bpf.h).
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/unwind.h"

const volatile __u64 calibrate_tid_tgid = 0; /* the thread to watch */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct calibrate_seen);
	__uint(max_entries, 1);
} seen_regs SEC(".maps");

SEC("raw_tp/sys_enter")
int on_sys_enter(unsigned long long *ctx)
{
	struct calibrate_seen *s;
	__u32 zero = 0;

	if (bpf_get_current_pid_tgid() != calibrate_tid_tgid)
		return 0;
	s = bpf_map_lookup_elem(&seen_regs, &zero);
	if (!s || s->regs)
		return 0;
	s->task = bpf_get_current_task();
	if (bpf_probe_read_kernel(s->words, sizeof(s->words), (void *)s->task))
		return 0;
	s->regs = ctx[0];
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
