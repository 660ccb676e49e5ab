/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * pglabels.bpf.h - PostgreSQL's wait event and query id of the current
 * backend, read from its own memory at the instant of a sample or a
 * context switch (included through targets.bpf.h by both programs).
 *
 * User space puts, per process it recognised as PostgreSQL of a known
 * version, where the two pointers are (pg.h) into `pg_procs`.  A backend
 * forked by such a process runs the same executable at the same
 * addresses, so the fork hook hands the entry to the child (by task
 * pointer, as targets.bpf.h follows forks) until user space has seen it.
 * Reads are bpf_probe_read_user: a page that is not present or an address
 * that is wrong yields no label, never a fault.
 */
#ifndef VMTOOLS_BPF_PGLABELS_BPF_H
#define VMTOOLS_BPF_PGLABELS_BPF_H

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/pg.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* thread group id */
	__type(value, struct pg_proc);
	__uint(max_entries, PG_MAX_PROCS);
} pg_procs SEC(".maps");

/* Children of PostgreSQL processes, by task pointer, until they run. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct pg_proc);
	__uint(max_entries, PG_MAX_PROCS);
} pg_children SEC(".maps");

static __always_inline void pg_follow_fork(__u32 parent, __u64 child)
{
	struct pg_proc *p = bpf_map_lookup_elem(&pg_procs, &parent);

	if (p)
		bpf_map_update_elem(&pg_children, &child, p, BPF_ANY);
}

static __always_inline void pg_forget_task(__u64 task)
{
	bpf_map_delete_elem(&pg_children, &task);
}

/* A new program: the addresses of the old one mean nothing. */
static __always_inline void pg_forget_process(__u32 tgid)
{
	bpf_map_delete_elem(&pg_procs, &tgid);
}

static __always_inline struct pg_proc *pg_find(__u32 tgid)
{
	struct pg_proc *p = bpf_map_lookup_elem(&pg_procs, &tgid);
	__u64 task;

	if (p)
		return p;
	task = bpf_get_current_task();
	p = bpf_map_lookup_elem(&pg_children, &task);
	if (!p)
		return NULL;
	/* The child's pid is known now: keep it by pid from here on. */
	bpf_map_update_elem(&pg_procs, &tgid, p, BPF_NOEXIST);
	return bpf_map_lookup_elem(&pg_procs, &tgid);
}

/* The current backend's wait event and query id into key, 0 when none. */
static __always_inline void pg_labels(__u32 tgid, __u32 *wait_event,
				      __u64 *query_id)
{
	struct pg_proc *p = pg_find(tgid);
	__u64 ptr = 0;

	*wait_event = 0;
	*query_id = 0;
	if (!p)
		return;
	if (p->wait_event_ptr &&
	    !bpf_probe_read_user(&ptr, sizeof(ptr),
				 (const void *)p->wait_event_ptr) &&
	    ptr)
		bpf_probe_read_user(wait_event, sizeof(*wait_event),
				    (const void *)ptr);
	ptr = 0;
	if (p->be_entry_ptr &&
	    !bpf_probe_read_user(&ptr, sizeof(ptr),
				 (const void *)p->be_entry_ptr) &&
	    ptr)
		bpf_probe_read_user(query_id, sizeof(*query_id),
				    (const void *)(ptr + p->query_id_off));
}

#endif
