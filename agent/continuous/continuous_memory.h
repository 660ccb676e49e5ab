/* SPDX-License-Identifier: Apache-2.0 */
/*
 * continuous_memory.h - the memory snapshots of `serve --continuous`
 * (continuous_memory.c): every --memory-every seconds, a snapshot of the
 * targets (the engine's memory kind, docs/memory.md) kept in a history
 * of its own (agent/history/, kind VM_KIND_MEMORY) and queued for the
 * push, on a thread of its own so that a slow walk never delays a CPU
 * window.  continuous.c owns it; the HTTP layer reads its history.
 */
#ifndef VMTOOLS_AGENT_CONTINUOUS_MEMORY_H
#define VMTOOLS_AGENT_CONTINUOUS_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "agent/continuous/push.h"
#include "agent/history/history.h"
#include "agent/profile/engine.h"
#include "common/error.h"

/* Seconds between two snapshots by default; 0 turns them off. */
#define VM_CONTINUOUS_DEFAULT_MEMORY_EVERY 60
/*
 * The snapshots' history takes this share of --history-max-bytes, beside
 * the CPU windows' own bound.
 */
#define VM_CONTINUOUS_MEMORY_BYTES_SHARE 4 /* a quarter */

struct vm_continuous_memory_config {
	uint32_t every; /* seconds between snapshots, > 0 */
	const char *const *comms; /* targets, as the CPU windows' */
	size_t n_comms;
	struct vm_history *history; /* kind VM_KIND_MEMORY, not owned */
	struct vm_push *push; /* NULL: no push; not owned */
	const struct vm_engine_config *engine;
};

struct vm_continuous_memory_stats {
	uint64_t snapshots; /* taken and kept so far */
	char last_error[256]; /* why the last one failed, "" if it did not */
};

struct vm_continuous_memory;

/* Start the thread; the first snapshot is taken one beat later. */
int vm_continuous_memory_start(const struct vm_continuous_memory_config *cfg,
			       struct vm_continuous_memory **out,
			       struct vm_error *err);
/* Stop (a walk under way ends within its deadline) and free. */
void vm_continuous_memory_stop(struct vm_continuous_memory *m);
void vm_continuous_memory_stats(struct vm_continuous_memory *m,
				struct vm_continuous_memory_stats *st);

#endif
