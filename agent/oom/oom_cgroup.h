/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oom_cgroup.h - the memory cgroup of an OOM victim, as an OOM report
 * gives it (oom_cgroup.c): its limit, usage and events, from cgroup v2's
 * memory.max, memory.current, memory.peak and memory.events where the
 * memory controller is on the unified hierarchy, else from cgroup v1's
 * memory.limit_in_bytes, memory.usage_in_bytes,
 * memory.max_usage_in_bytes, memory.failcnt and memory.oom_control (a
 * hybrid host keeps the memory controller on v1).  The report says which.
 * The parsers are pure; the reads are of the kernel's files.
 */
#ifndef VMTOOLS_AGENT_OOM_CGROUP_H
#define VMTOOLS_AGENT_OOM_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_OOM_CGROUP_EVENTS 12
#define VM_OOM_CGROUP_PATH_MAX 512

struct vm_oom_cgroup {
	const char *version; /* "v2", "v1", or NULL: not read (why says) */
	char path[VM_OOM_CGROUP_PATH_MAX]; /* in its hierarchy */
	bool limited; /* false: no limit ("max", or v1's near 2^63) */
	uint64_t limit, usage, peak; /* bytes */
	/* "name value" lines: v2's memory.events, v1's oom_control + failcnt */
	struct vm_oom_cgroup_event {
		char name[24];
		uint64_t value;
	} events[VM_OOM_CGROUP_EVENTS];
	size_t n_events;
	char why[160];
	char dir[VM_OOM_CGROUP_PATH_MAX + 256]; /* where its files are */
	/* Found from the last snapshot kept: the victim had exited. */
	bool from_kept;
};

/*
 * The lines of /proc/PID/cgroup: the unified hierarchy's path ("0::P")
 * into v2 and the memory controller's ("N:...memory...:P") into v1, each
 * "" when absent.
 */
void vm_oom_cgroup_parse_proc(const char *text, char *v2, char *v1,
			      size_t size);

/* "name value" lines appended to out's events, up to its bound. */
void vm_oom_cgroup_parse_events(const char *text, struct vm_oom_cgroup *out);

/*
 * The mount points of cgroup2 and of the v1 hierarchy holding the memory
 * controller, from the text of /proc/self/mountinfo ("" when none).
 */
void vm_oom_cgroup_parse_mounts(const char *text, char *v2, char *v1,
				size_t size);

/*
 * pid's memory cgroup, found now into out (version NULL and why when
 * not): what a victim's /proc says while it lives; its files are read
 * later, by vm_oom_cgroup_read.
 */
void vm_oom_cgroup_find(uint32_t pid, struct vm_oom_cgroup *out);
/* The same from the text of a /proc/PID/cgroup read earlier. */
void vm_oom_cgroup_find_text(const char *text, struct vm_oom_cgroup *out);
/* Found, and not the root: what a process that has exited shows. */
bool vm_oom_cgroup_found(const struct vm_oom_cgroup *cg);
/* The limit, usage and events of the cgroup found (nothing when none). */
void vm_oom_cgroup_read(struct vm_oom_cgroup *out);

#endif
