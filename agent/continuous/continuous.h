/* SPDX-License-Identifier: Apache-2.0 */
/*
 * continuous.h - `serve --continuous` (continuous.c): one engine session
 * of the eBPF profiler that runs for the agent's life at a low frequency,
 * beside the on-demand profiles of the service (service.h), and seals a
 * window every interval into the history (agent/history/), its directory
 * and the push queue (push.h); beside it, a memory snapshot every
 * memory_every seconds (continuous_memory.h) into a history of its own
 * and the push queue.
 *
 * Nothing here is HTTP; the HTTP layer reads the history and the stats.
 */
#ifndef VMTOOLS_AGENT_CONTINUOUS_H
#define VMTOOLS_AGENT_CONTINUOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/history/history.h"
#include "agent/history/history_dir.h"
#include "agent/profile/engine.h"
#include "agent/continuous/continuous_memory.h"
#include "agent/continuous/push.h"
#include "common/error.h"

#define VM_CONTINUOUS_DEFAULT_FREQUENCY 19
#define VM_CONTINUOUS_DEFAULT_INTERVAL 10

struct vm_continuous_config {
	uint32_t frequency; /* Hz */
	uint32_t interval; /* seconds per window */
	uint32_t memory_every; /* seconds between memory snapshots, 0: none */
	const char *const *comms; /* targets, as the service's defaults */
	size_t n_comms;
	struct vm_history_config history;
	const char *history_dir; /* NULL: memory only */
	const struct vm_push_config *push; /* NULL: no push */
	struct vm_engine_config engine;
};

struct vm_continuous_stats {
	bool sampling; /* the session runs now */
	uint64_t windows; /* sealed so far */
	char last_error[256]; /* why it does not sample, "" when it does */
	uint64_t history_bytes;
	uint64_t history_dropped;
	bool has_dir;
	struct vm_history_dir_status dir;
	bool has_push;
	struct vm_push_stats push;
	bool has_memory; /* memory snapshots are taken */
	struct vm_continuous_memory_stats memory;
	uint64_t memory_history_bytes;
};

struct vm_continuous;

/*
 * Open the history (and load its directory), start pushing, then start
 * sampling on a thread of its own.  A profiler that cannot start (no BPF)
 * is not fatal: it is tried again every interval and said in the stats.
 * Errors are about the options: a history directory that cannot be
 * opened, libcurl missing.
 */
int vm_continuous_start(const struct vm_continuous_config *cfg,
			struct vm_continuous **out, struct vm_error *err);
/* Seal the last, partial window, then stop and free everything. */
void vm_continuous_stop(struct vm_continuous *c);

struct vm_history *vm_continuous_history(struct vm_continuous *c);
/* The memory snapshots' history; NULL when memory_every is 0. */
struct vm_history *vm_continuous_memory_history(struct vm_continuous *c);
const struct vm_continuous_config *
vm_continuous_config(struct vm_continuous *c);
void vm_continuous_stats(struct vm_continuous *c,
			 struct vm_continuous_stats *st);

/*
 * The /metrics lines of st (continuous_metrics.c): malloc'd text, length
 * in *len, NULL when out of memory.
 */
char *vm_continuous_render_metrics(const struct vm_continuous_stats *st,
				   size_t *len);

#endif
