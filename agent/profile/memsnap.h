/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memsnap.h - one process's memory snapshot made small (memsnap.c): its
 * labels, its heaviest memory contexts by path, and the kernel's three
 * pseudo-frames, cut from the samples of a memory profile (memory.c).
 * An OOM report holds one; and the last one of each target is kept, so
 * that a victim whose memory can no longer be read at its kill is still
 * described, by what was last seen of it (vm_oom_keep_snapshot).
 *
 * The kept ones are bounded: VM_MEMSNAP_KEPT_PIDS processes (the oldest
 * snapshot goes first), VM_MEMSNAP_KEPT_CONTEXTS contexts each, paths of
 * at most VM_MEMSNAP_PATH_MAX bytes: a few MiB whatever the targets do.
 */
#ifndef VMTOOLS_AGENT_MEMSNAP_H
#define VMTOOLS_AGENT_MEMSNAP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"

/* The pseudo-frames of a PostgreSQL process's snapshot (docs/memory.md). */
#define VM_MEM_FRAME_OUTSIDE "[private memory outside contexts]"
#define VM_MEM_FRAME_SHARED "[shared memory]"
#define VM_MEM_FRAME_FILES "[mapped files]"

#define VM_MEMSNAP_KEPT_PIDS 256
#define VM_MEMSNAP_KEPT_CONTEXTS 32
/* The heaviest contexts an OOM report taken at the kill holds. */
#define VM_MEMSNAP_REPORT_CONTEXTS 200
/* Bytes of one context's path, "TopMemoryContext;...;leaf"; cut past. */
#define VM_MEMSNAP_PATH_MAX 512

struct vm_memsnap_context {
	char *path; /* root first, ';' between names */
	uint64_t bytes; /* the context's own mem_allocated */
};

struct vm_memsnap {
	uint32_t pid;
	uint64_t unix_ms; /* when it was taken */
	char comm[VM_COMM_LEN];
	char *title; /* may be NULL */
	/*
	 * /proc/PID/cgroup when kept (NULL: not read): a victim that has
	 * exited shows the root cgroup there, not the one it ran in.
	 */
	char *cgroup;
	unsigned pg_major, pg_minor;
	uint64_t query_id;
	uint32_t wait_event; /* wait_event_info */
	uint64_t n_contexts; /* read, all of them */
	uint64_t contexts_bytes; /* their sum */
	uint64_t outside, shared, files; /* the pseudo-frames' bytes */
	struct vm_memsnap_context *v; /* the heaviest, heaviest first */
	size_t n;
};

/*
 * pid's snapshot from s (a memory profile's samples, taken at
 * s->time_nanos) into out, its max heaviest contexts kept.  0; -ENOENT
 * when s has none of pid's contexts; -ENOMEM.
 */
int vm_memsnap_from_samples(const struct vm_samples *s, uint32_t pid,
			    size_t max, struct vm_memsnap *out);
int vm_memsnap_copy(const struct vm_memsnap *from, struct vm_memsnap *to);
void vm_memsnap_free(struct vm_memsnap *m);

/* The last snapshot of each target. */
struct vm_memkept {
	pthread_mutex_t lock;
	struct vm_memsnap v[VM_MEMSNAP_KEPT_PIDS]; /* pid 0: a free slot */
	uint64_t kept; /* snapshots kept since the start */
};

struct vm_memkept *vm_memkept_new(void);
void vm_memkept_free(struct vm_memkept *k);
/*
 * Keep the snapshot of each PostgreSQL process of s (the samples of a
 * memory profile), replacing that pid's last: every memory snapshot
 * calls it (the on-demand profile's, continuous memory's).  k NULL is
 * nothing.  0 or -ENOMEM.
 */
int vm_oom_keep_snapshot(struct vm_memkept *k, const struct vm_samples *s);
/* A copy of pid's last snapshot; -ENOENT when none is kept. */
int vm_memkept_get(struct vm_memkept *k, uint32_t pid, struct vm_memsnap *out);
/* Snapshots kept now. */
size_t vm_memkept_count(struct vm_memkept *k);

#endif
