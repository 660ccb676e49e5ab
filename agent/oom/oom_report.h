/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oom_report.h - one OOM report as JSON (oom_report.c): what the agent
 * knew of a victim of the OOM killer at its kill, gathered by oom.c.
 * Pure: every fact comes in the struct, so tests build reports without
 * a kernel.  docs/api.md ("GET /oom/ID") lists the fields.
 */
#ifndef VMTOOLS_AGENT_OOM_REPORT_H
#define VMTOOLS_AGENT_OOM_REPORT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/oom/oom_cgroup.h"
#include "agent/profile/memsnap.h"
#include "agent/profile/oomwatch.h"

/* Where a report's memory snapshot came from. */
#define VM_OOM_SNAPSHOT_AT_KILL "at_kill"
#define VM_OOM_SNAPSHOT_KEPT "kept"
#define VM_OOM_SNAPSHOT_NONE "none"

struct vm_oom_facts {
	const struct vm_oom_victim *victim;
	const char *comm; /* the victim's, from the tracepoint or /proc */
	const char *title; /* may be NULL */
	const char *backend_type; /* NULL: not a PostgreSQL process */
	const char *wait_event; /* "Class:Name", NULL: none or unknown */
	const char *snapshot_source; /* VM_OOM_SNAPSHOT_* */
	const struct vm_memsnap *snap; /* NULL with _NONE */
	/* Why no snapshot was taken at the kill ("" when one was). */
	const char *not_at_kill;
	/* From the tracepoint to the snapshot's end (at_kill). */
	uint64_t snapshot_ms;
	const struct vm_oom_cgroup *cgroup;
	/* {"source": ..., "stacks": [...]}, taken over; NULL: none */
	struct json_object *cpu;
};

/* The report's id, "<Unix ms, 13 digits>-<pid>", into id[VM_OOM_ID_MAX]. */
void vm_oom_report_id(const struct vm_oom_victim *v, char *id, size_t size);

/* The report, malloc'd JSON text; NULL when out of memory. */
char *vm_oom_report_json(const struct vm_oom_facts *f, size_t *len);

#endif
