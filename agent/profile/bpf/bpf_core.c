// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_core.c - what both BPF programs' drivers share (bpf_int.h): the
 * session's state made, the maps every program has (targets.bpf.h,
 * stacks.bpf.h) sized and filled, and the programs' per-CPU counters
 * summed.  The bottom of the backend's files: it calls none of them.
 */
#include "agent/profile/bpf/bpf_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

int vm_bpf_map_fd(struct bpf_object *obj, const char *name)
{
	return bpf_map__fd(bpf_object__find_map_by_name(obj, name));
}

void vm_bpf_set_size(struct bpf_object *obj, const char *name, uint32_t n)
{
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, name), n);
}

/*
 * The maps targets.bpf.h and stacks.bpf.h give every program, and the
 * bound of the records user space keeps of it.
 */
void vm_bpf_add_object(struct bpf_state *st, struct bpf_object *obj,
		       const struct vm_bpf_sizes *sz)
{
	st->sinks[st->n_objs].st = st;
	vm_stack_counts_init(&st->sinks[st->n_objs].counts, sz->counts_bytes);
	st->objs[st->n_objs++] = obj;
	vm_bpf_set_size(obj, "stack_records", sz->records_ring);
	vm_bpf_set_size(obj, "seen", sz->seen);
	vm_bpf_set_size(obj, "target_pids", sz->pids);
	vm_bpf_set_size(obj, "children", sz->children);
	if (st->unwinding && vm_bpf_unwind_use(&st->unwind, obj))
		/* The programs cannot be given the tables: none, then. */
		st->unwinding = false;
}

/* What the target filter of one object matches (targets.bpf.h). */
int vm_bpf_fill_targets(struct bpf_object *obj,
			const struct vm_profile_request *req,
			struct vm_error *err)
{
	int fd_comms = vm_bpf_map_fd(obj, "target_comms");
	int fd_pids = vm_bpf_map_fd(obj, "target_pids");
	uint8_t yes = 1;

	for (size_t i = 0; i < req->n_comms; i++) {
		char key[PROFILE_COMM_LEN] = { 0 };

		strncpy(key, req->comms[i], sizeof(key) - 1);
		if (bpf_map_update_elem(fd_comms, key, &yes, BPF_ANY))
			return vm_error_errno(
				err, errno,
				"cannot add command name %s to the BPF filter",
				req->comms[i]);
	}
	for (size_t i = 0; i < req->n_pids; i++) {
		uint32_t pid = req->pids[i];

		if (bpf_map_update_elem(fd_pids, &pid, &yes, BPF_ANY))
			return vm_error_errno(
				err, errno,
				"cannot add pid %u to the BPF filter", pid);
	}

	return 0;
}

/*
 * The state, handed to the caller at once: from here on every failure
 * leaves what was made for destroy() to release.
 */
int vm_bpf_new_state(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg, void *kept,
		     vm_process_seen_fn *seen, void **state,
		     struct vm_error *err)
{
	struct bpf_state *st = calloc(1, sizeof(*st));

	if (!st)
		return vm_error_set(err, ENOMEM, "out of memory");
	st->stop_fd = -1;
	st->seal_fd = -1;
	st->kept = kept;
	/* Without its maps, stacks are walked by frame pointer as before. */
	st->binaries = cfg->ctx ? cfg->ctx->binaries : NULL;
	st->symbols = cfg->ctx ? cfg->ctx->symbols : NULL;
	st->iopool = cfg->ctx ? cfg->ctx->iopool : NULL;
	st->files.iopool = st->iopool;
	st->fault_maps.iopool = st->iopool;
	st->unwinding = vm_bpf_unwind_open(&st->unwind, st->kept->store,
					   st->binaries, st->iopool, NULL) == 0;
	st->req = *req;
	st->seen = seen;
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->sealed_cond, NULL);
	*state = st;
	return 0;
}

/* The index of an object among those loaded (its sink's). */
size_t vm_bpf_obj_index(const struct bpf_state *st, struct bpf_object *obj)
{
	size_t i = 0;

	while (i < st->n_objs - 1 && st->objs[i] != obj)
		i++;
	return i;
}

/* Per-CPU counter idx summed over CPUs and programs. */
uint64_t vm_bpf_tell_cut(struct bpf_state *st)
{
	uint64_t cut = vm_bpf_stat_sum(st, PROFILE_STAT_WALKS_CUT);

	if (cut > st->cut_told)
		vm_bpf_unwind_cut(st->kept->store, cut - st->cut_told);
	st->cut_told = cut;
	return cut;
}

uint64_t vm_bpf_stat_sum(struct bpf_state *st, uint32_t idx)
{
	uint64_t *v, sum = 0;

	v = calloc(st->possible_cpus > 0 ? st->possible_cpus : 1,
		   sizeof(uint64_t));
	if (!v)
		return 0;
	for (size_t o = 0; o < st->n_objs; o++)
		if (bpf_map_lookup_elem(vm_bpf_map_fd(st->objs[o], "stats"),
					&idx, v) == 0)
			for (int i = 0; i < st->possible_cpus; i++)
				sum += v[i];
	free(v);
	return sum;
}
