// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_kept.c - what the BPF backend keeps for the agent's life, made,
 * let go and told to /healthz (bpf_kept.h).
 */
#include "agent/profile/bpf/bpf_kept.h"

#include <stdio.h>
#include <stdlib.h>

void *vm_bpf_kept_new(void)
{
	struct vm_bpf_kept *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->store = vm_bpf_unwind_store_new(0, 0);
	if (!k->store) {
		free(k);
		return NULL;
	}
	vm_bpf_calibration_init(&k->regs);
	vm_pg_labels_note_init(&k->pg_note);
	pthread_mutex_init(&k->prepare_lock, NULL);
	vm_bpf_map_pool_init(&k->maps);
	return k;
}

void vm_bpf_kept_free(void *kept)
{
	struct vm_bpf_kept *k = kept;

	if (!k)
		return;
	vm_bpf_unwind_store_free(k->store);
	vm_bpf_calibration_destroy(&k->regs);
	vm_pg_labels_note_destroy(&k->pg_note);
	pthread_mutex_destroy(&k->prepare_lock);
	vm_bpf_map_pool_destroy(&k->maps);
	free(k);
}

void vm_bpf_kept_release(void *kept)
{
	struct vm_bpf_kept *k = kept;

	vm_bpf_unwind_release(k->store);
	vm_bpf_map_pool_let_go(&k->maps);
}

/*
 * Where the user registers are (bpf_calibrate.c), what the unwind store
 * and maps left out and whether the kernel refused the unwinder (bpf_unwind.c),
 * and why a PostgreSQL went without labels (bpf_pg.c).
 */
void vm_bpf_kept_status(void *kept, struct vm_backend_status *out)
{
	struct vm_bpf_kept *k = kept;
	const struct vm_user_regs_where *w = vm_bpf_user_regs(&k->regs);

	out->user_regs_found = w->found;
	if (w->found) {
		out->user_regs_stack_offset = w->stack_off;
		out->user_regs_thread_size = w->thread_size;
	} else {
		snprintf(out->user_regs_error, sizeof(out->user_regs_error),
			 "%s", w->why);
	}
	vm_bpf_unwind_store_usage(k->store, &out->unwind_store_runs,
				  &out->unwind_store_rows);
	out->unwind_walks_cut = vm_bpf_unwind_cuts(k->store);
	vm_bpf_unwind_skipped(k->store, &out->unwind_store_skipped,
			      out->unwind_store_last_skipped,
			      sizeof(out->unwind_store_last_skipped));
	vm_bpf_unwind_procs_skipped(k->store, &out->unwind_procs_skipped,
				    out->unwind_procs_last_skipped,
				    sizeof(out->unwind_procs_last_skipped));
	vm_bpf_unwind_refusal(k->store, out->unwind_refused,
			      sizeof(out->unwind_refused));
	vm_pg_labels_note(&k->pg_note, out->pg_labels_note,
			  sizeof(out->pg_labels_note));
	pthread_mutex_lock(&k->prepare_lock);
	out->programs_prepared = k->prepared;
	out->programs_load_ms = k->prepare_ms;
	vm_bpf_map_pool_stats(&k->maps, &out->programs_maps_kept,
			      &out->programs_maps_reused);
	snprintf(out->programs_error, sizeof(out->programs_error), "%s",
		 k->prepare_error);
	pthread_mutex_unlock(&k->prepare_lock);
}
