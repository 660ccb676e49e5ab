// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_offcpu.c - the user side of the off-CPU profiler, bpf/offcpu.bpf.c
 * (bpf_int.h): its skeleton opened, its records joined into blocks
 * (bpf_blocks.c) as the reader thread drains them, and at the end the
 * blocks no switch showed: those still going, the threads that slept
 * throughout, those woken and running since, those blocked before the
 * programs attached (bpf_preblocked.c).  Each of tens of thousands of
 * threads costs a binary search and one read of /proc at the end.
 */
#include "agent/profile/bpf/bpf_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/symbolize/symbolize.h"
#include "common/cleanup.h"
#include "common/clock.h"

/*
 * The off-CPU profiler's skeleton opened, not loaded, and the join of its
 * blocks set up: blocks come at the rate threads switch, not at the
 * sampling frequency, which an off-CPU profile does not use, so its maps
 * are never sized for less than the default frequency (n_online CPUs).
 */
int vm_bpf_offcpu_open(struct bpf_state *st,
		       const struct vm_profile_request *req, size_t n_online,
		       struct vm_bpf_sizes *sz, struct vm_error *err)
{
	if (req->frequency < VM_FREQUENCY_DEFAULT)
		vm_bpf_map_sizes(VM_FREQUENCY_DEFAULT, n_online, req->seconds,
				 req->n_pids > 0, sz);
	st->off = offcpu_bpf__open();
	if (!st->off)
		return vm_error_errno(
			err, errno,
			"cannot open the BPF off-CPU profiler object");
	SET_FILTER(st->off, req);
	SET_UNWIND(st->off, st);
	vm_bpf_add_object(st, st->off->obj, sz);
	/* A wall-clock profile counts every block: the time adds up. */
	vm_offcpu_join_init(&st->join, &st->sinks[st->n_objs - 1].counts,
			    req->kind == VM_KIND_OFFCPU ?
				    (uint64_t)req->min_block_us * 1000 :
				    0,
			    sz->blocked);
	vm_bpf_set_size(st->off->obj, "stack_records", sz->blocks_ring);
	vm_bpf_set_size(st->off->obj, "blocked", sz->blocked);
	return 0;
}

/* An off-CPU block's start or end: joined, then counted. */
int vm_bpf_offcpu_on_record(void *ctx, void *data, size_t size)
{
	struct bpf_state *st = ctx;

	vm_offcpu_join_add(&st->join, data, size);
	return 0;
}

/* The thread tid of those blocked before the programs attached, or NULL. */
static const struct vm_pre_blocked *pre_blocked(const struct bpf_state *st,
						uint32_t tid)
{
	return vm_pre_blocked_find(&st->pre, tid);
}

/*
 * A block that began before the profile, worth value ns: on the stack
 * /proc gave as the profile started when there is one (a user pc and the
 * kernel stack), else none; its state, wait event and query id from
 * then when known, else state (the letter), wait_event and query_id.
 */
static int add_early_block(struct bpf_state *st, uint32_t pid, uint32_t tid,
			   uint64_t value, char state, uint32_t wait_event,
			   uint64_t query_id)
{
	const struct vm_pre_blocked *pre = pre_blocked(st, tid);
	const struct vm_process *p = vm_samples_find_process(&st->samples, pid);
	struct vm_sample *x;

	if (vm_samples_add(&st->samples, pid, tid, p ? p->comm : NULL, 1,
			   pre && pre->user_pc ? &pre->user_pc : NULL,
			   pre && pre->user_pc ? 1 : 0,
			   pre ? pre->kernel_ips : NULL,
			   pre ? pre->n_kernel : 0))
		return -ENOMEM;
	x = &st->samples.v[st->samples.n - 1];
	if (pre) {
		state = pre->state;
		/* Read as the profile started; else now (the same, asleep). */
		if (pre->wait_event)
			wait_event = pre->wait_event;
		if (pre->query_id)
			query_id = pre->query_id;
	}
	x->state = VM_STATE_BLOCKED;
	x->sched_state = state == 'D' ? VM_SCHED_UNINTERRUPTIBLE :
					VM_SCHED_SLEEPING;
	x->value = value;
	x->wait_event = wait_event;
	x->query_id = query_id;
	x->before_start = 1;
	return 0;
}

/*
 * A thread blocked as the profile started (st->pre) that has not been
 * switched out since, and runs now: woken during the profile, it has run
 * without a break, so the program saw only its switch in, a task pointer
 * it cannot tie to the thread.  Its block ended when it began to run:
 * now less the CPU time it has used since the start (schedstat, to the
 * last tick; all of the profile when it has not run yet).
 */
static int add_woken_runner(struct bpf_state *st,
			    const struct vm_thread_switches *t, uint64_t end_ns)
{
	const struct vm_pre_blocked *pre = pre_blocked(st, t->tid);
	uint64_t ran, now, woke;

	if (!pre || !vm_bpf_running_since("/proc", t, &ran))
		return 0;
	now = vm_clock_ns(CLOCK_MONOTONIC);
	woke = now > ran ? now - ran : 0;
	if (woke > end_ns)
		woke = end_ns;
	if (woke <= st->start_ns || woke - st->start_ns < st->join.min_ns)
		return 0;
	return add_early_block(st, t->pid, t->tid, woke - st->start_ns,
			       pre->state, pre->wait_event, pre->query_id);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The threads of samples first.. (the off-CPU program's), sorted: whether
 * each of tens of thousands of threads was seen is then a binary search.
 */
static uint32_t *seen_tids(const struct bpf_state *st, size_t first, size_t *n)
{
	uint32_t *v;

	*n = st->samples.n - first;
	v = malloc((*n ? *n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t j = 0; j < *n; j++)
		v[j] = st->samples.v[first + j].tid;
	qsort(v, *n, sizeof(*v), cmp_u32);
	return v;
}

/*
 * Threads blocked since before the start that never ran: the program saw
 * no switch of theirs, so no stack but the one /proc gave at the start;
 * their wait event and query id are read now when none was read at the
 * start: the ones they had all along.  Samples from index first on are the
 * off-CPU program's.
 */
static int add_sleepers(struct bpf_state *st, size_t first, uint64_t end_ns)
{
	int fd = vm_bpf_map_fd(st->off->obj, "pg_procs");
	size_t n_seen;
	_cleanup_free_ uint32_t *seen = seen_tids(st, first, &n_seen);

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < st->n_threads; i++) {
		const struct vm_thread_switches *t = &st->threads[i];
		uint32_t wait_event = 0;
		uint64_t query_id = 0;
		struct pg_proc pp;
		char task_state;

		if (n_seen &&
		    bsearch(&t->tid, seen, n_seen, sizeof(*seen), cmp_u32))
			continue;
		if (!vm_bpf_slept_throughout("/proc", t, &task_state)) {
			if (add_woken_runner(st, t, end_ns))
				return -ENOMEM;
			continue;
		}
		if (bpf_map_lookup_elem(fd, &t->pid, &pp) == 0)
			vm_bpf_pg_read_labels(t->pid, &pp, &wait_event,
					      &query_id);
		if (add_early_block(st, t->pid, t->tid, end_ns - st->start_ns,
				    task_state, wait_event, query_id))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Threads blocked before the programs attached that then ran: blocked
 * from the start until their first switch in, which the program kept in
 * `pre_blocked` (offcpu.bpf.c).
 */
/* The symbolizer's kernel table, the session's symbol cache's. */
static int kernel_addrs(void *arg, const char *const *names, size_t n,
			uint64_t *addrs)
{
	return vm_symbolize_kernel_addrs(arg, names, n, addrs);
}

static int add_pre_blocks(struct bpf_state *st, uint64_t end_ns)
{
	int fd = bpf_map__fd(st->off->maps.pre_blocked);

	vm_pre_blocked_resolve(&st->pre, kernel_addrs, st->symbols);
	for (size_t i = 0; i < st->pre.n; i++) {
		const struct vm_pre_blocked *pre = &st->pre.v[i];
		__u64 in = 0;

		if (bpf_map_lookup_elem(fd, &pre->tid, &in) ||
		    in <= PRE_BLOCKED_RAN || in <= st->start_ns)
			continue;
		/* Switched in as the programs were being detached. */
		if (in > end_ns)
			in = end_ns;
		if (in - st->start_ns < st->join.min_ns)
			continue;
		if (add_early_block(st, pre->pid, pre->tid, in - st->start_ns,
				    pre->state, pre->wait_event, pre->query_id))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The off-CPU profiler's blocks, those still going ending at end_ns, and
 * the threads that slept throughout.
 */
int vm_bpf_offcpu_collect(struct bpf_state *st, uint64_t end_ns,
			  struct vm_error *err)
{
	struct vm_stack_counts *c =
		&st->sinks[vm_bpf_obj_index(st, st->off->obj)].counts;
	size_t first = st->samples.n;

	vm_offcpu_join_finish(&st->join, bpf_map__fd(st->off->maps.blocked),
			      end_ns, "/proc");
	if (vm_stack_counts_to_blocks(c, &st->samples) ||
	    add_sleepers(st, first, end_ns) || add_pre_blocks(st, end_ns))
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}
