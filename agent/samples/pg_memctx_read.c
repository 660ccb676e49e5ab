// SPDX-License-Identifier: Apache-2.0
/*
 * pg_memctx_read.c - the memory-context walk (pg_memctx.c) over a live
 * process: its reads are process_vm_readv calls, many iovecs each, which
 * neither stop the target nor write to it (no ptrace, no signal), and the
 * whole walk runs as one job of the I/O pool, waited for with a deadline,
 * because a page of the target backed by a mount that stopped answering
 * blocks the read like a read of the file would.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "agent/samples/pg_memctx.h"
#include "agent/samples/pg_memctx_read.h"
#include "common/clock.h"

/* Whom the reads are of, and until when the walk may read. */
struct reader {
	pid_t pid;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
};

/*
 * The kernel stops at the first iovec it cannot read whole and says how
 * many bytes it read: the one it stopped in gets what it read, and the
 * call goes on from the one after.
 */
static int read_pid(void *arg, struct vm_memctx_iov *v, size_t n)
{
	const struct reader *rd = arg;
	struct iovec local[VM_MEMCTX_BATCH], remote[VM_MEMCTX_BATCH];
	size_t i = 0;

	if (vm_clock_ns(CLOCK_MONOTONIC) >= rd->deadline_ns)
		return -ETIME;

	while (i < n) {
		size_t k = n - i < VM_MEMCTX_BATCH ? n - i : VM_MEMCTX_BATCH;
		ssize_t got;

		for (size_t j = 0; j < k; j++) {
			local[j] = (struct iovec){ v[i + j].buf, v[i + j].len };
			remote[j] = (struct iovec){
				(void *)(uintptr_t)v[i + j].addr, v[i + j].len
			};
			v[i + j].got = 0;
		}
		got = process_vm_readv(rd->pid, local, k, remote, k, 0);
		if (got < 0) {
			if (errno == ESRCH || errno == EPERM || errno == ENOMEM)
				return -errno;
			/* EFAULT: the first iovec is not readable at all. */
			i++;
			continue;
		}
		size_t j = 0;

		while (j < k && (size_t)got >= v[i + j].len) {
			v[i + j].got = v[i + j].len;
			got -= (ssize_t)v[i + j].len;
			j++;
		}
		if (j < k) {
			v[i + j].got = (size_t)got;
			j++;
		}
		i += j;
	}
	return 0;
}

struct walk_job {
	struct vm_iopool_job job;
	uint32_t pid;
	const struct vm_memctx_tags *tags;
	uint64_t top_ptr;
	uint64_t budget_ns; /* the walk's own time, within the wait's */
	struct vm_memctx_limits lim;
	struct vm_memctx_tree tree;
};

static int walk_run(struct vm_iopool_job *job)
{
	struct walk_job *w = vm_iopool_owner(job, struct walk_job);
	struct reader rd = { (pid_t)w->pid,
			     vm_clock_ns(CLOCK_MONOTONIC) + w->budget_ns };

	return vm_memctx_walk(w->tags, w->top_ptr, read_pid, &rd, &w->lim,
			      &w->tree);
}

static void walk_free(struct vm_iopool_job *job)
{
	struct walk_job *w = vm_iopool_owner(job, struct walk_job);

	vm_memctx_tree_free(&w->tree);
	free(w);
}

int vm_pg_memctx_read(struct vm_iopool *pool, uint32_t pid,
		      const struct vm_memctx_tags *tags, uint64_t top_ptr,
		      const struct vm_memctx_limits *lim, unsigned timeout_ms,
		      struct vm_memctx_tree *out)
{
	struct walk_job *w = calloc(1, sizeof(*w));
	int err;

	memset(out, 0, sizeof(*out));
	if (!w)
		return -ENOMEM;
	w->job.run = walk_run;
	w->job.free = walk_free;
	w->pid = pid;
	vm_iopool_owner_pid(&w->job, pid);
	w->tags = tags;
	w->top_ptr = top_ptr;
	/*
	 * The walk stops reading at four fifths of the wait, so that what
	 * it read reaches the caller (partial) before the caller gives up.
	 */
	w->budget_ns = (uint64_t)timeout_ms * 1000000 / 5 * 4;
	if (lim)
		w->lim = *lim;
	err = vm_iopool_run(pool, &w->job, timeout_ms);
	if (err < 0)
		return err; /* the pool frees the job */
	*out = w->tree;
	err = w->job.result;
	free(w);
	return err;
}
