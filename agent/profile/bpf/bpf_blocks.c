// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_blocks.c - the off-CPU profile's blocks counted with the records
 * its program sends (bpf/offcpu.h), those still going at the end from
 * `blocked`, and the threads blocked since before the profile found from
 * /proc (bpf_blocks.h).
 *
 * Each thread's last record is kept, its frames only, in one buffer per
 * thread reused by its next record: a block costs a tree search by task
 * pointer, not an allocation.
 */
#include "agent/profile/bpf/bpf_blocks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/profile/bpf/bpf_stack_counts.h"
#include "agent/samples/proc.h"
#include "common/array.h"
#include "common/cleanup.h"

/* A thread's last record (len 0: none kept). */
struct vm_offcpu_thread {
	uint64_t task;
	size_t len, cap; /* bytes of rec, the stack_record's frames only */
	struct stack_record *rec;
};

static int thread_cmp(const void *a, const void *b)
{
	const struct vm_offcpu_thread *x = a, *y = b;

	return x->task < y->task ? -1 : x->task > y->task;
}

void vm_offcpu_join_init(struct vm_offcpu_join *j, struct vm_stack_counts *c,
			 uint64_t min_ns, size_t max_threads)
{
	memset(j, 0, sizeof(*j));
	j->counts = c;
	j->min_ns = min_ns;
	j->max = max_threads;
}

static struct vm_offcpu_thread *thread_find(struct vm_offcpu_join *j,
					    uint64_t task)
{
	struct vm_offcpu_thread key = { .task = task }, **found;

	found = tfind(&key, &j->tree, thread_cmp);
	return found ? *found : NULL;
}

static int dropped(struct vm_offcpu_join *j, int err)
{
	j->counts->records++;
	j->counts->dropped++;
	return err;
}

/* A block of task from start_ns to end_ns, counted if long enough. */
static int add_block(struct vm_offcpu_join *j, uint64_t task, uint64_t start_ns,
		     uint64_t end_ns)
{
	struct vm_offcpu_thread *t = thread_find(j, task);

	/* Its record was dropped here (bounds, memory): so is the block. */
	if (!t || !t->len)
		return dropped(j, -ENOENT);
	if (end_ns < start_ns || end_ns - start_ns < j->min_ns)
		return 0;
	t->rec->weight = end_ns - start_ns;
	return vm_stack_counts_add(j->counts, t->rec, t->len);
}

static int add_record(struct vm_offcpu_join *j, const struct offcpu_record *r,
		      size_t size)
{
	size_t len = size - offsetof(struct offcpu_record, r);
	struct vm_offcpu_thread *t = thread_find(j, r->task);

	if (!t) {
		if (j->n >= j->max)
			return dropped(j, -E2BIG);
		if (vm_grow(j->v, &j->cap, j->n + 1) < 0 ||
		    !(t = calloc(1, sizeof(*t))))
			return dropped(j, -ENOMEM);
		t->task = r->task;
		if (!tsearch(t, &j->tree, thread_cmp)) {
			free(t);
			return dropped(j, -ENOMEM);
		}
		j->v[j->n++] = t;
	}
	t->len = 0;
	if (t->cap < len) {
		struct stack_record *rec = realloc(t->rec, len);

		if (!rec)
			return dropped(j, -ENOMEM);
		t->rec = rec;
		t->cap = len;
	}
	memcpy(t->rec, &r->r, len);
	t->len = len;
	return 0;
}

int vm_offcpu_join_add(struct vm_offcpu_join *j, const void *data, size_t size)
{
	const struct offcpu_record *r = data;
	struct offcpu_block b;
	size_t frames;

	if (size == sizeof(b)) {
		memcpy(&b, data, sizeof(b));
		return add_block(j, b.task, b.start_ns, b.end_ns);
	}
	if (size < OFFCPU_RECORD_HEAD || size > sizeof(*r))
		goto malformed;
	frames = (size_t)r->r.n_user + r->r.n_kernel;
	if (r->r.n_user > STACK_MAX_DEPTH || r->r.n_kernel > STACK_MAX_DEPTH ||
	    size != OFFCPU_RECORD_HEAD + frames * sizeof(__u64))
		goto malformed;
	return add_record(j, r, size);
malformed:
	j->counts->records++;
	j->counts->malformed++;
	return -EINVAL;
}

static bool thread_exists(const char *proc_root, uint32_t pid, uint32_t tid)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%u/task/%u", proc_root, pid, tid);
	return access(path, F_OK) == 0;
}

int vm_offcpu_join_finish(struct vm_offcpu_join *j, int blocked_fd,
			  uint64_t end_ns, const char *proc_root)
{
	__u64 task, next, *prev = NULL;

	while (bpf_map_get_next_key(blocked_fd, prev, &next) == 0) {
		/* bpf/offcpu.bpf.c's struct offcpu_thread: since, last */
		__u64 t[2];
		struct vm_offcpu_thread *kept;

		task = next;
		prev = &task;
		if (bpf_map_lookup_elem(blocked_fd, &task, t) || !t[0] ||
		    t[0] >= end_ns)
			continue;
		kept = thread_find(j, task);
		/* A thread that exited was switched out for good. */
		if (kept && kept->len &&
		    !thread_exists(proc_root, kept->rec->pid, kept->rec->tid))
			continue;
		/* A dropped record is counted in counts. */
		add_block(j, task, t[0], end_ns);
	}
	return 0;
}

static void no_free(void *p)
{
	(void)p;
}

void vm_offcpu_join_free(struct vm_offcpu_join *j)
{
	tdestroy(j->tree, no_free);
	for (size_t i = 0; i < j->n; i++) {
		free(j->v[i]->rec);
		free(j->v[i]);
	}
	free(j->v);
	memset(j, 0, sizeof(*j));
}

/* The CPU time of one thread now, VM_RUN_NS_UNKNOWN when unreadable. */
static uint64_t read_run_ns(const char *proc_root, uint32_t pid, uint32_t tid)
{
	uint64_t ns;

	if (vm_proc_read_task_run_ns(proc_root, pid, tid, &ns))
		return VM_RUN_NS_UNKNOWN;
	return ns;
}

int vm_bpf_snapshot_threads(const char *proc_root, const uint32_t *pids,
			    size_t n_pids, struct vm_thread_switches **v,
			    size_t *n, size_t *cap)
{
	for (size_t i = 0; i < n_pids; i++) {
		char path[64];
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "%s/%u/task", proc_root, pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);
			uint64_t switches;
			char state;

			if (!tid ||
			    vm_proc_read_task_status(proc_root, pids[i], tid,
						     &state, &switches))
				continue;
			if (vm_grow(*v, cap, *n + 1)) {
				closedir(d);
				return -ENOMEM;
			}
			(*v)[(*n)++] = (struct vm_thread_switches){
				pids[i], tid, switches,
				read_run_ns(proc_root, pids[i], tid)
			};
		}
		closedir(d);
	}
	return 0;
}

bool vm_bpf_slept_throughout(const char *proc_root,
			     const struct vm_thread_switches *t, char *state)
{
	uint64_t switches;

	return vm_proc_read_task_status(proc_root, t->pid, t->tid, state,
					&switches) == 0 &&
	       switches == t->switches && *state != 'R';
}

bool vm_bpf_running_since(const char *proc_root,
			  const struct vm_thread_switches *t, uint64_t *ran_ns)
{
	uint64_t switches, now;
	char state;

	if (t->run_ns == VM_RUN_NS_UNKNOWN ||
	    vm_proc_read_task_status(proc_root, t->pid, t->tid, &state,
				     &switches) ||
	    switches != t->switches || state != 'R')
		return false;
	now = read_run_ns(proc_root, t->pid, t->tid);
	if (now == VM_RUN_NS_UNKNOWN || now < t->run_ns)
		return false;
	*ran_ns = now - t->run_ns;
	return true;
}
