/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oomwatch.h - the OOM killer's victims as the kernel picks them: the
 * eBPF program on the tracepoint oom/mark_victim (bpf/oom.bpf.c), driven
 * by agent/profile/bpf/bpf_oom.c, hands each victim to a callback on a
 * thread of its own, at once; what a report makes of it is the caller's
 * (agent/oom/).  The tracepoint's format, read from tracefs at start-up,
 * says where its fields are (oom_format.c, pure).
 */
#ifndef VMTOOLS_AGENT_OOMWATCH_H
#define VMTOOLS_AGENT_OOMWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"
#include "common/error.h"

/* One victim; sizes in bytes, 0 where the kernel's tracepoint has none. */
struct vm_oom_victim {
	uint64_t time_ns; /* CLOCK_MONOTONIC, at the tracepoint */
	uint64_t unix_ms; /* the same instant, wall clock */
	uint32_t pid; /* the task the kernel chose */
	uint32_t uid;
	bool has_sizes; /* the tracepoint gave uid and the sizes */
	uint64_t total_vm, anon_rss, file_rss, shmem_rss;
	char comm[VM_COMM_LEN]; /* "" when the tracepoint has none */
};

/*
 * Where the record's fields are (0: the field is not in this kernel's
 * tracepoint) and the tracepoint's id.
 */
struct vm_oom_format {
	uint32_t id;
	uint32_t pid, comm_loc, uid, total_vm, anon_rss, file_rss, shmem_rss;
};

/*
 * The text of events/oom/mark_victim/format into out (id left alone).
 * 0; -EINVAL when it has no int pid field, with a sentence.
 */
int vm_oom_format_parse(const char *text, struct vm_oom_format *out,
			struct vm_error *err);

/* Called on the watch's thread for each victim, one at a time. */
typedef void vm_oom_victim_fn(const struct vm_oom_victim *v, void *arg);

struct vm_oom_watch;

/*
 * Load and attach the program and start the thread that calls fn.
 * -ENODEV (no tracepoint or tracefs), -EPERM (not allowed to load BPF),
 * with a sentence; the agent runs on without OOM reports.
 */
int vm_oom_watch_start(vm_oom_victim_fn *fn, void *arg,
		       struct vm_oom_watch **out, struct vm_error *err);
/* Stop the thread (a callback under way ends first) and free. */
void vm_oom_watch_stop(struct vm_oom_watch *w);
/* Victims the ring buffer had no room for, since the start. */
uint64_t vm_oom_watch_lost(struct vm_oom_watch *w);
/* Where the tracepoint's format was read: a sentence for /healthz. */
const char *vm_oom_watch_source(struct vm_oom_watch *w);

#endif
