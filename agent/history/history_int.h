/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history_int.h - how a window is put into the history, shared by the two
 * ways one comes in: symbolized (history.c) and as pprof (history_pprof.c).
 * Only agent/history/ includes it.
 *
 *   vm_history_lock(h);
 *   vm_history_begin(h);
 *   vm_history_stack(h, ...);   once per stack
 *   vm_history_commit(h, w);    or vm_history_abort(h)
 *   vm_history_unlock(h);
 */
#ifndef VMTOOLS_AGENT_HISTORY_INT_H
#define VMTOOLS_AGENT_HISTORY_INT_H

/*
 * The most samples a window read from a file may have, in one stack or in
 * all (1000 Hz for a day on 12,000 CPUs is less): more is not a window
 * this agent wrote, and summing such counts over a span could wrap.
 */
#define VM_HISTORY_MAX_COUNT (1ULL << 40)

#include "agent/history/history.h"

/* One frame as it comes in; mapping NULL when it has none. */
struct vm_history_frame_in {
	uint64_t addr;
	const struct vm_sym_mapping *mapping;
	const char *function; /* NULL when unknown */
};

/*
 * Who a stack was sampled in and PostgreSQL's labels of it; the strings
 * may be NULL (none), query_id 0 (none).
 */
struct vm_history_labels {
	uint32_t pid, tid;
	const char *comm;
	const char *backend_type;
	const char *wait_event; /* "Class:Name", as symbolize.h names it */
	uint64_t query_id;
	/* A memory snapshot's context: its ident and type (AllocSet, ...) */
	const char *context_ident, *context_type;
};

void vm_history_lock(struct vm_history *h);
void vm_history_unlock(struct vm_history *h);

void vm_history_begin(struct vm_history *h);
/*
 * count: the stack's samples, or a memory snapshot's bytes; objects: a
 * memory snapshot's contexts on it (0 in a CPU window).  0 or -ENOMEM.
 */
int vm_history_stack(struct vm_history *h, const struct vm_history_labels *l,
		     const struct vm_history_frame_in *frames, size_t n_frames,
		     uint64_t count, uint32_t objects);
/* The window begun, kept; then the bounds applied.  0 or -ENOMEM. */
int vm_history_commit(struct vm_history *h, const struct vm_history_window *w);
void vm_history_abort(struct vm_history *h);

#endif
