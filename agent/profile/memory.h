/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memory.h - the memory snapshot outside a session (memory.c): the OOM
 * reports take one of their victim at once, without the engine's start,
 * symbolizing or encoding.
 */
#ifndef VMTOOLS_AGENT_MEMORY_H
#define VMTOOLS_AGENT_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/profile/engine.h"

/*
 * What a memory profile's samples hold for the processes pids[n], into
 * out (zeroed by the caller): each one's contexts and the kernel's
 * breakdown, read through cfg's context (its I/O pool, its binaries);
 * with contexts_only, the contexts alone (no smaps, no title): the
 * fewest reads that hold the process's memory.  A process gone or
 * unreadable is said in out's notes.  0, or -ENOMEM.
 */
int vm_memory_snapshot(const struct vm_engine_config *cfg, const uint32_t *pids,
		       size_t n, bool contexts_only, struct vm_samples *out,
		       struct vm_error *err);

#endif
