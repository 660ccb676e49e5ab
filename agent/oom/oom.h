/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oom.h - OOM reports, in `serve` always (oom.c): the victims of the
 * kernel's OOM killer as the tracepoint names them
 * (agent/profile/oomwatch.h), each target among them described at once
 * (oom_report.h) and kept (oom_store.h) for GET /oom, /healthz and
 * /metrics.
 *
 * A victim's memory snapshot is taken on the watch's thread, which
 * nothing else waits for, the moment the kernel names it: the walk reads
 * the victim's memory while it dies, through the I/O pool with the
 * memory profile's deadline.  When its memory can no longer be read, the
 * report holds the last snapshot kept of it (agent/profile/memsnap.h:
 * what the on-demand memory profiles and continuous memory took), with
 * its age.  Its last CPU stacks come from the continuous profile's
 * history, when it runs.
 *
 * Nothing here is HTTP; agent/serve/ reads the reports and the stats.
 */
#ifndef VMTOOLS_AGENT_OOM_H
#define VMTOOLS_AGENT_OOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/history/history.h"
#include "agent/oom/oom_store.h"
#include "agent/profile/engine.h"
#include "common/error.h"

/* CPU stacks the report holds at most, the most sampled first. */
#define VM_OOM_CPU_STACKS 10

struct vm_oom_config {
	const char *dir; /* where the reports are kept; NULL: memory only */
	const char *const *comms; /* the targets; none: VM_DEFAULT_COMM */
	size_t n_comms;
	struct vm_engine_config engine; /* its context: the I/O pool, memkept */
	struct vm_history *history; /* NULL without --continuous */
	uint32_t history_seconds; /* how far back the CPU stacks are sought */
	/* The store's bounds; 0: its defaults */
	size_t max_reports, max_bytes;
};

struct vm_oom_stats {
	bool watching;
	char why[320]; /* why not, "" when watching */
	char source[128]; /* where the tracepoint's format was read */
	uint64_t victims; /* named by the kernel since the start */
	uint64_t targets; /* of them, targets: reported */
	/* Reports by where their snapshot came from, since the start. */
	uint64_t at_kill, kept, none;
	uint64_t lost; /* victims the ring buffer had no room for */
	struct vm_oom_store_stats store;
};

struct vm_oom;

/*
 * Open the store (a directory that cannot be used is an error) and
 * start watching; a kernel that cannot be watched is not an error: the
 * stats say why, and the reports kept are served all the same.
 */
int vm_oom_start(const struct vm_oom_config *cfg, struct vm_oom **out,
		 struct vm_error *err);
/* Stop watching (a report under way is finished first) and free. */
void vm_oom_stop(struct vm_oom *o);
void vm_oom_stats(struct vm_oom *o, struct vm_oom_stats *st);
struct vm_oom_store *vm_oom_store(struct vm_oom *o);
/*
 * The /metrics lines of st (oom_metrics.c): malloc'd text, length in
 * *len, NULL when out of memory.
 */
char *vm_oom_render_metrics(const struct vm_oom_stats *st, size_t *len);

#endif
