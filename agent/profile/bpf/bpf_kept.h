/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_kept.h - what the BPF backend keeps for the agent's life
 * (bpf_kept.c): one per agent context (agent/profile/context.h), made at
 * the backend's first use in it and freed with it through the backend's
 * kept_new and kept_free (agent/profile/backend.h).  What one profile
 * leaves for the next and what the backend learns of the running kernel
 * live here, never in file-scope variables: a session reaches it as
 * st->kept (bpf_int.h), /healthz through the backend's status.
 */
#ifndef VMTOOLS_AGENT_BPF_KEPT_H
#define VMTOOLS_AGENT_BPF_KEPT_H

#include <pthread.h>
#include <stdbool.h>

#include "agent/profile/bpf/bpf_calibrate.h"
#include "agent/profile/bpf/bpf_map_pool.h"
#include "agent/profile/bpf/bpf_pg.h"
#include "agent/profile/bpf/bpf_unwind.h"
#include "agent/profile/engine.h"

struct vm_bpf_kept {
	/*
	 * The unwind tables' store every profile's programs share, and
	 * what the profiles left out of it or the kernel refused.
	 */
	struct vm_bpf_unwind_store *store;
	/* Where the kernel keeps a task's user registers, found once. */
	struct vm_bpf_calibration regs;
	/* Why the last PostgreSQL of an unknown version got no labels. */
	struct vm_pg_labels_note pg_note;
	/* The programs' preallocated maps, kept between profiles. */
	struct vm_bpf_map_pool maps;
	/*
	 * The kernel's verifier refused the programs with the unwinder
	 * (store's refusal says why): later sessions load them without it
	 * at once, instead of being refused again.  Read and set atomically.
	 */
	bool unwinder_refused;
	/*
	 * The programs were loaded once before any profile (prepare): how
	 * long it took, and why the kernel refused them ("" if it did not).
	 */
	bool prepared;
	uint64_t prepare_ms;
	char prepare_error[320];
	pthread_mutex_t prepare_lock;
};

/* The backend's operations (backend.h): NULL when out of memory. */
void *vm_bpf_kept_new(void);
void vm_bpf_kept_free(void *kept);
/*
 * The store emptied and the kept maps closed when no profile uses them
 * (the agent stopping).
 */
void vm_bpf_kept_release(void *kept);
/* What /healthz says of the backend, as struct vm_backend_status. */
void vm_bpf_kept_status(void *kept, struct vm_backend_status *out);

#endif
