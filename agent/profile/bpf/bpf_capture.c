// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_capture.c - the processes a BPF profile follows (bpf_int.h): the
 * targets running as it starts, found and told to the programs before
 * they attach, with where each PostgreSQL one keeps its labels
 * (bpf_pg.c) and, for an off-CPU profile, the threads already blocked
 * (bpf_preblocked.c); then, while it runs, the programs' announcements
 * (first sample of a process, fork, exec) read off the ring buffer and
 * each new process captured from /proc (proc.c) before it can exit; at
 * the end, the processes sampled but never captured, completed from
 * their parent.
 */
#include "agent/profile/bpf/bpf_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/samples/proc.h"
#include "common/array.h"

static void record_fork(struct bpf_state *st, uint32_t pid, uint32_t ppid)
{
	if (vm_grow(st->forks, &st->cap_forks, st->n_forks + 1) < 0)
		return;
	st->forks[st->n_forks++] = (struct fork_rec){ pid, ppid };
}

static bool take_execed(struct bpf_state *st, uint32_t pid)
{
	for (size_t i = 0; i < st->n_execed; i++)
		if (st->execed[i] == pid) {
			st->execed[i] = st->execed[--st->n_execed];
			return true;
		}
	return false;
}

static void record_exec(struct bpf_state *st, uint32_t pid)
{
	for (size_t i = 0; i < st->n_execed; i++)
		if (st->execed[i] == pid)
			return;
	if (vm_grow(st->execed, &st->cap_execed, st->n_execed + 1) < 0)
		return;
	st->execed[st->n_execed++] = pid;
}

/* Only the title: cheap, and PostgreSQL sets it after the fork. */
void vm_bpf_refresh_title(struct vm_process *p)
{
	char *t;
	int r = vm_proc_read_title("/proc", p->pid, &t);

	if (r == -ESRCH)
		p->exited = true;
	if (t) {
		free(p->title);
		p->title = t;
	}
}

/*
 * Tell every program where PostgreSQL process pid keeps its labels (its
 * children inherit it in the kernel); called with the lock held.
 */
static void register_pg(struct bpf_state *st, uint32_t pid)
{
	struct vm_process *p = vm_samples_find_process(&st->samples, pid);
	struct pg_proc pp;

	if (!p || p->pg_major ||
	    vm_bpf_pg_locate(st->iopool, st->binaries, &st->kept->pg_note,
			     "/proc", p, &pp))
		return;
	for (size_t i = 0; i < st->n_objs; i++)
		bpf_map_update_elem(vm_bpf_map_fd(st->objs[i], "pg_procs"),
				    &pid, &pp, BPF_ANY);
}

int vm_bpf_on_event(void *ctx, void *data, size_t size)
{
	struct bpf_state *st = ctx;
	struct profile_event e;
	struct vm_process *p;

	if (size < sizeof(e))
		return 0;
	memcpy(&e, data, sizeof(e));
	/* Its mappings, for the programs' unwind tables (the feeder's). */
	if (st->unwinding)
		vm_bpf_unwind_ask(
			&st->unwind, e.pid,
			e.kind == PROFILE_EVENT_FIRST_SAMPLE ? e.ppid : 0);
	pthread_mutex_lock(&st->lock);
	if (e.ppid && e.kind == PROFILE_EVENT_FIRST_SAMPLE)
		record_fork(st, e.pid, e.ppid);
	p = vm_samples_find_process(&st->samples, e.pid);
	if (e.kind == PROFILE_EVENT_EXEC) {
		/*
		 * The loader has not mapped the libraries yet: capture what
		 * there is (the process may exit soon) and again at its next
		 * first sample, or at the end.
		 */
		record_exec(st, e.pid);
		vm_proc_capture(&st->samples, &st->files, e.pid, "/proc", NULL);
		register_pg(st, e.pid);
	} else if (p && p->n_maps && e.kind != PROFILE_EVENT_MAPS &&
		   !take_execed(st, e.pid)) {
		vm_bpf_refresh_title(p);
	} else if (vm_proc_capture(&st->samples, &st->files, e.pid, "/proc",
				   NULL) == 0) {
		register_pg(st, e.pid);
		p = vm_samples_find_process(&st->samples, e.pid);
		if (p)
			st->seen(st->symbols, p);
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/*
 * The targets already running (found before the programs attached, see
 * vm_bpf_find_running): each captured and its PostgreSQL labels told to the
 * programs (again, now with its version kept for naming); for an off-CPU
 * profile, how often their threads have been switched so far; then their
 * symbols read (slow).
 */
void *vm_bpf_capture_running(void *arg)
{
	struct bpf_state *st = arg;
	const uint32_t *pids = st->running;
	size_t n_pids = st->n_running;

	for (size_t i = 0; i < n_pids; i++) {
		struct vm_process *p;

		pthread_mutex_lock(&st->lock);
		p = vm_samples_find_process(&st->samples, pids[i]);
		if (!p || !p->n_maps)
			vm_proc_capture(&st->samples, &st->files, pids[i],
					"/proc", NULL);
		register_pg(st, pids[i]);
		pthread_mutex_unlock(&st->lock);
	}
	if (st->off) {
		pthread_mutex_lock(&st->lock);
		vm_bpf_snapshot_threads("/proc", pids, n_pids, &st->threads,
					&st->n_threads, &st->cap_threads);
		pthread_mutex_unlock(&st->lock);
	}
	for (size_t i = 0; i < n_pids; i++) {
		struct vm_process *p;

		pthread_mutex_lock(&st->lock);
		p = vm_samples_find_process(&st->samples, pids[i]);
		if (p)
			st->seen(st->symbols, p);
		pthread_mutex_unlock(&st->lock);
	}
	return NULL;
}

/*
 * The targets running now, and where each PostgreSQL one keeps its labels
 * told to the programs before they attach, so that the first sample or
 * switch of every backend is labelled: the backend waiting on a lock when
 * the profile starts is switched out once.  Capturing them (slow) is left
 * to the event thread.
 */
void vm_bpf_find_running(struct bpf_state *st)
{
	/* Without a list of /proc, only the announcements find targets. */
	if (vm_proc_scan_targets("/proc", (const char *const *)st->req.comms,
				 st->req.n_comms, st->req.pids, st->req.n_pids,
				 &st->running, &st->n_running, NULL) < 0)
		return;
	for (size_t i = 0; i < st->n_running; i++) {
		struct pg_proc pp = { 0 };
		bool pg;

		/* Their stacks complete from the first sample on. */
		if (st->unwinding)
			vm_bpf_unwind_feed(&st->unwind, st->running[i], 0);
		pg = vm_bpf_pg_locate_pid(st->iopool, st->binaries,
					  &st->kept->pg_note, "/proc",
					  st->running[i], &pp) == 0;

		for (size_t o = 0; pg && o < st->n_objs; o++)
			bpf_map_update_elem(vm_bpf_map_fd(st->objs[o],
							  "pg_procs"),
					    &st->running[i], &pp, BPF_ANY);
		if (st->off)
			vm_pre_blocked_scan(&st->pre, "/proc", st->running[i],
					    pg ? &pp : NULL);
	}
	vm_pre_blocked_sort(&st->pre);
	/* The program tells when each is first switched in. */
	for (size_t i = 0; st->off && i < st->pre.n; i++) {
		__u64 zero = 0;

		bpf_map_update_elem(bpf_map__fd(st->off->maps.pre_blocked),
				    &st->pre.v[i].tid, &zero, BPF_NOEXIST);
	}
}

/* Processes sampled but never captured: now, or from their parent. */
void vm_bpf_complete_processes(struct bpf_state *st)
{
	struct vm_samples *s = &st->samples;

	for (size_t i = 0; i < s->n; i++) {
		uint32_t pid = s->v[i].pid;
		struct vm_process *p = vm_samples_find_process(s, pid), *parent;

		if (p && p->n_maps && !take_execed(st, pid))
			continue;
		if (vm_proc_capture(s, &st->files, pid, "/proc", NULL) == 0)
			continue;
		p = vm_samples_get_process(s, pid);
		if (!p)
			return;
		p->exited = true;
		if (!p->comm[0])
			memcpy(p->comm, s->v[i].comm, sizeof(p->comm));
		if (p->n_maps)
			continue; /* what was captured while it lived */
		for (size_t f = 0; f < st->n_forks; f++) {
			if (st->forks[f].pid != pid)
				continue;
			parent = vm_samples_find_process(s, st->forks[f].ppid);
			/* A child runs its parent's mappings until it execs. */
			for (size_t m = 0; parent && m < parent->n_maps; m++)
				vm_process_add_mapping(p, &parent->maps[m]);
			/* And the labels' layout it inherited in the kernel. */
			if (parent) {
				p->pg_major = parent->pg_major;
				p->pg_minor = parent->pg_minor;
			}
			break;
		}
	}
}
