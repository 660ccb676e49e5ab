// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * stack-cost.bpf.c - the least an off-CPU profiler that takes exact stacks
 * pays on this kernel, for bench/offcpu.sh (and bench/offcpu-vm.sh in a
 * guest): four programs on the sched_switch raw tracepoint (no BTF, like
 * bpf/offcpu.bpf.c), attached one at a time, that do only this on each
 * switch:
 *
 *	filter	read the outgoing task's command name, compare it with
 *		"postgres" (the target filter, nothing else)
 *	kstack	the filter, then bpf_get_stack() of the kernel stack when the
 *		outgoing task is postgres
 *	ustack	the filter, then bpf_get_stack() of the user stack
 *	both	the filter, then both stacks: what an exact off-CPU profiler
 *		must take at least on every switch out of a target
 *
 * Each counts, per CPU, its stack calls and the frames they returned, so
 * the loader (stack-cost.c) can tell the cost of one call.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#define DEPTH 127

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64[DEPTH]);
	__uint(max_entries, 1);
} scratch SEC(".maps");

/* [0]: stack helper calls, [1]: frames they returned */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2);
} counts SEC(".maps");

static __always_inline int is_postgres(void)
{
	char c[16] = {};

	bpf_get_current_comm(c, sizeof(c));
	return c[0] == 'p' && c[1] == 'o' && c[2] == 's' && c[3] == 't' &&
	       c[4] == 'g' && c[5] == 'r' && c[6] == 'e' && c[7] == 's' &&
	       c[8] == 0;
}

static __always_inline void count(__u32 key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counts, &key);

	if (v)
		*v += n;
}

/* One stack into the scratch buffer, counted. */
static __always_inline void take(void *ctx, __u64 flags)
{
	__u32 zero = 0;
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero);
	long n;

	if (!buf)
		return;
	n = bpf_get_stack(ctx, buf, DEPTH * sizeof(__u64), flags);
	count(0, 1);
	if (n > 0)
		count(1, n / sizeof(__u64));
}

SEC("raw_tp/sched_switch")
int filter(void *ctx)
{
	if (is_postgres())
		count(0, 0);
	return 0;
}

SEC("raw_tp/sched_switch")
int kstack(void *ctx)
{
	if (is_postgres())
		take(ctx, 0);
	return 0;
}

SEC("raw_tp/sched_switch")
int ustack(void *ctx)
{
	if (is_postgres())
		take(ctx, BPF_F_USER_STACK);
	return 0;
}

SEC("raw_tp/sched_switch")
int both(void *ctx)
{
	if (is_postgres()) {
		take(ctx, BPF_F_USER_STACK);
		take(ctx, 0);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
