// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * oom.bpf.c - the OOM killer's victims, sent to user space at once
 * (agent/profile/bpf/bpf_oom.c): the tracepoint oom/mark_victim fires
 * when the kernel has chosen the task it kills, before the task has
 * exited, and this program copies what the record says of it into the
 * ring buffer, which wakes the reader at each record.
 *
 * A classic tracepoint, not a raw one: the raw tracepoint's arguments
 * changed (an int pid before Linux 6.8, a task pointer since, whose pid
 * only a struct offset reaches), while the record's fields are named in
 * the tracepoint's format.  User space reads that format at start-up and
 * sets where each field is (struct oom_offsets); no BTF, no kprobe, no
 * struct offset.
 */
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/oom.h"

const volatile struct oom_offsets offsets = { 0 };

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} oom_events SEC(".maps");

/* How many victims the ring buffer had no room for. */
__u64 lost = 0;

static __always_inline __u64 field_ul(void *ctx, __u32 off)
{
	__u64 v = 0;

	if (off)
		bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + off);
	return v;
}

SEC("tracepoint/oom/mark_victim")
int on_mark_victim(void *ctx)
{
	struct oom_event *e;
	__u32 loc = 0;
	__s32 pid = 0;

	e = bpf_ringbuf_reserve(&oom_events, sizeof(*e), 0);
	if (!e) {
		/* The reader is a whole ring buffer behind. */
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->time_ns = bpf_ktime_get_ns();
	bpf_probe_read_kernel(&pid, sizeof(pid), (char *)ctx + offsets.pid);
	e->pid = (__u32)pid;
	if (offsets.uid)
		bpf_probe_read_kernel(&e->uid, sizeof(e->uid),
				      (char *)ctx + offsets.uid);
	e->total_vm_kb = field_ul(ctx, offsets.total_vm);
	e->anon_rss_kb = field_ul(ctx, offsets.anon_rss);
	e->file_rss_kb = field_ul(ctx, offsets.file_rss);
	e->shmem_rss_kb = field_ul(ctx, offsets.shmem_rss);
	/* A __data_loc string: its offset in the low 16 bits. */
	if (offsets.comm_loc &&
	    !bpf_probe_read_kernel(&loc, sizeof(loc),
				   (char *)ctx + offsets.comm_loc))
		bpf_probe_read_kernel_str(e->comm, sizeof(e->comm),
					  (char *)ctx + (loc & 0xffff));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
