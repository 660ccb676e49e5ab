/* SPDX-License-Identifier: Apache-2.0 */
/*
 * iopool.h - reads of a target's files that cannot hang the agent
 * (iopool.c).  A process the agent profiles names the files it reads: its
 * executable, the files it maps, its working directory, debug files under
 * its root.  On a frozen FUSE mount or a dead NFS server an open() or a
 * page of a read waits for ever, and no flag makes it not: O_NONBLOCK
 * does not reach a lookup.  So such work runs as a job on a worker thread
 * the caller waits for at most a timeout; past it the caller goes on
 * without the result (frames unnamed, labels left out) and the job is the
 * worker's, freed whenever the kernel lets it finish.  A process that
 * exits kills its workers, however stuck (FUSE waits are killable).
 *
 * Workers are few and bounded: when all of them are stuck, jobs are
 * refused at once (-EAGAIN) rather than more threads made.  A device
 * (st_dev) on which a job timed out is remembered until that job
 * finishes, and jobs on it are refused at once (-ETIMEDOUT), so a frozen
 * mount costs one timeout, not one per file.  One owner (the user whose
 * process named the files) may have at most half the workers stuck: past
 * that, that owner's jobs are refused at once (-EAGAIN), and everyone
 * else's still run, however many mounts (devices) the owner froze.
 */
#ifndef VMTOOLS_AGENT_IOPOOL_H
#define VMTOOLS_AGENT_IOPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a caller waits for one open, one small read. */
#define VM_IOPOOL_OPEN_MS 1000
/* How long for one binary's symbols (a large binary, read from disk). */
#define VM_IOPOOL_READ_MS 5000

/* A job: embed it in the caller's struct (container_of). */
struct vm_iopool_job {
	int (*run)(struct vm_iopool_job *job); /* on a worker */
	void (*free)(struct vm_iopool_job *job); /* when no one needs it */
	/*
	 * The device the job touches, when known: given by the caller
	 * (e.g. from /proc/PID/maps), or set by run once it has stat'ed
	 * the file, so a timeout marks it.
	 */
	uint64_t dev;
	/*
	 * The user whose process named the files, when known (has_owner):
	 * set by the caller (vm_iopool_owner_pid), or by the pool from a
	 * /proc/PID/ path.
	 */
	uint32_t owner;
	bool has_owner;
	/* The pool's. */
	struct vm_iopool_job *next; /* in the queue */
	int result;
	bool started, finished, abandoned;
};

struct vm_iopool;

/*
 * A pool of its own, for the agent's context (agent/profile/context.h)
 * or a test; NULL when out of memory.
 */
struct vm_iopool *vm_iopool_new(void);
/*
 * A pool whose workers give themselves nice (setpriority) as they start:
 * a background reader's, whose reads yield to everyone else's; NULL when
 * out of memory.
 */
struct vm_iopool *vm_iopool_new_nice(int nice);

/*
 * Every wait on p ends at once (as vm_iopool_shutdown), and p is let go:
 * freed once its last worker has returned (a stuck one may not, until
 * the process ends).  Call when no one queues jobs on it any more.
 */
void vm_iopool_free(struct vm_iopool *p);

/* The caller's struct type holding job as its member `job`. */
#define vm_iopool_owner(ptr, type) ((type *)((char *)(ptr)-offsetof(type, job)))

/*
 * Run job on a worker and wait at most timeout_ms.  0: it finished, run's
 * return value is in job->result, and the caller owns job again (frees
 * it).  Else the pool owns the job (it calls job->free, whether it ran
 * or not): -ETIMEDOUT, it did not finish in time, or job->dev is a device
 * a job is stuck on; -EAGAIN, every worker is stuck; -ECANCELED, the
 * agent is stopping (or there is no pool: p NULL).
 */
int vm_iopool_run(struct vm_iopool *p, struct vm_iopool_job *job,
		  unsigned timeout_ms);

/*
 * One step of a job run again with another run (open, then read): run on
 * a worker, waited for at most timeout_ms.  0: it succeeded and the
 * caller owns job again; else job is freed, by the pool or here, and the
 * pool's error or run's negative return comes back.
 */
int vm_iopool_step(struct vm_iopool *p, struct vm_iopool_job *job,
		   int (*run)(struct vm_iopool_job *job), unsigned timeout_ms);

/*
 * The owner of process pid (the user of its /proc/PID, which procfs
 * answers without waiting) into job: the owner of the jobs that read its
 * files.  False when the process is gone.
 */
bool vm_iopool_owner_pid(struct vm_iopool_job *job, uint32_t pid);

/* The owner of a job reading path: its process's, for /proc/PID/... */
void vm_iopool_owner_path(struct vm_iopool_job *job, const char *path);

/*
 * vm_open_regular(path) (common/fdio.h) through the pool, dev the
 * file's device when known (0: not): the descriptor or a negative errno.
 * A path under /proc/PID/ is owned by that process's user (here and in
 * vm_iopool_read_small).
 */
int vm_iopool_open_regular(struct vm_iopool *p, const char *path, uint64_t dev,
			   unsigned timeout_ms);

/*
 * The regular file path read whole into buf (at most size - 1 bytes,
 * NUL-terminated, *len of them) through the pool, dev its device when
 * known: 0 or a negative errno.
 */
int vm_iopool_read_small(struct vm_iopool *p, const char *path, uint64_t dev,
			 char *buf, size_t size, size_t *len,
			 unsigned timeout_ms);

/*
 * The device of what the magic link /proc/PID/cwd (or .../root, .../exe)
 * points at, from the attributes the kernel has cached
 * (AT_STATX_DONT_SYNC: no request to a FUSE or NFS server, which may not
 * answer); 0 when unknown.
 */
uint64_t vm_iopool_link_dev(const char *link);

/* Jobs stuck now, and jobs that timed out since start (for /healthz). */
void vm_iopool_stats(struct vm_iopool *p, unsigned *stuck, uint64_t *timed_out);

/*
 * The agent is stopping (SIGTERM): every wait, now and later, ends at
 * once with -ECANCELED, so no session waits on a stuck read to stop.
 */
void vm_iopool_shutdown(struct vm_iopool *p);

#endif
