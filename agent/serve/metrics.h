/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - what GET /metrics reports, in the Prometheus text format:
 * sessions by outcome and by kind, samples and lost stacks, the last session's
 * duration, HTTP answers by status, build info.
 *
 * The counters live in one struct vm_metrics guarded by a mutex; the
 * rendering works on a copy (struct vm_metrics_snapshot) and is pure.
 */
#ifndef VMTOOLS_AGENT_METRICS_H
#define VMTOOLS_AGENT_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"
#include "agent/symbolize/debuginfod.h"
#include "agent/unwind/unwind_cache.h"

enum vm_outcome {
	VM_OUTCOME_COMPLETED, /* ran for its whole time */
	VM_OUTCOME_STOPPED, /* ended early by DELETE */
	VM_OUTCOME_CLIENT_GONE, /* the client hung up; nothing was sent */
	VM_OUTCOME_SHUTDOWN, /* ended early by SIGTERM/SIGINT */
	VM_OUTCOME_FAILED, /* the backend or the encoder failed */
	VM_OUTCOME_COUNT,
};

const char *vm_outcome_name(enum vm_outcome o);

/* HTTP statuses counted one by one; anything else is "other". */
#define VM_METRICS_CODES 12

struct vm_metrics_snapshot {
	uint64_t sessions[VM_OUTCOME_COUNT];
	uint64_t rejected_busy; /* 409 */
	uint64_t kinds[VM_KINDS]; /* sessions, by enum vm_profile_kind */
	uint64_t samples;
	uint64_t lost_stacks;
	double last_duration_seconds;
	uint64_t last_samples;
	bool running;
	uint64_t http[VM_METRICS_CODES + 1];
	double start_time_seconds;
	struct vm_debuginfod_stats debuginfod; /* read at snapshot time */
	struct vm_unwind_cache_stats unwind; /* read at snapshot time */
	/* Callers of user stacks found by unwind tables, by frame pointer. */
	uint64_t unwound_by_table, unwound_by_frame_pointer;
	/* Processes walked by frame pointer: past the unwinder's bounds. */
	uint64_t unwind_processes_skipped;
	/* Walks cut short: a bad read, no progress, off the stack or code. */
	uint64_t unwind_walks_cut;
};

struct vm_metrics {
	pthread_mutex_t lock;
	struct vm_metrics_snapshot s;
	struct vm_binaries *binaries; /* whose unwind tables are counted */
	struct vm_debuginfod *debuginfod; /* whose lookups are counted */
};

void vm_metrics_init(struct vm_metrics *m);
void vm_metrics_session(struct vm_metrics *m, enum vm_outcome o,
			uint64_t samples, uint64_t lost, double seconds);
void vm_metrics_rejected(struct vm_metrics *m);
/*
 * A session's user stacks: callers found by unwind tables, by frame
 * pointer, walks cut short, and processes walked by frame pointer past
 * the unwinder's bounds.
 */
void vm_metrics_unwound(struct vm_metrics *m, uint64_t by_table,
			uint64_t by_frame_pointer, uint64_t cut,
			uint64_t procs_skipped);
/* A session of this kind ended (besides vm_metrics_session). */
void vm_metrics_kind(struct vm_metrics *m, enum vm_profile_kind kind);
void vm_metrics_running(struct vm_metrics *m, bool running);
void vm_metrics_http(struct vm_metrics *m, unsigned status);
void vm_metrics_snapshot(struct vm_metrics *m, struct vm_metrics_snapshot *s);

/*
 * Render the exposition text; returns a malloc'd NUL-terminated string
 * (length in *len) or NULL when out of memory.
 */
char *vm_metrics_render(const struct vm_metrics_snapshot *s,
			const char *version, size_t *len);

#endif
