// SPDX-License-Identifier: Apache-2.0
/*
 * iopool.c - jobs that may hang, on worker threads waited for with a
 * timeout (iopool.h).  A pool's lock guards its queue, its counts and
 * the devices jobs are stuck on; a worker takes a job off the queue, runs
 * it unlocked, and either wakes its caller or, when the caller gave up,
 * frees it.  Workers are made as needed, up to MAX_WORKERS, and wait for
 * the next job once done; a stuck one stays stuck, counted.  A pool is
 * held by its owner and by each of its workers, and freed by the last to
 * let go: a worker stuck on a frozen mount keeps it until it returns.
 */
#include "agent/iopool/iopool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fdio.h"

#define MAX_WORKERS 8
#define MAX_HUNG 8 /* devices remembered; more are not */
/* The most workers one owner's jobs may have stuck. */
#define MAX_OWNER_STUCK (MAX_WORKERS / 2)

struct vm_iopool {
	pthread_mutex_t lock;
	pthread_cond_t work, done; /* a job queued; a job finished */
	struct vm_iopool_job *queue, **queue_tail;
	unsigned n_workers, n_idle, n_queued, n_stuck;
	uint64_t n_timed_out;
	bool closing;
	/* Its owner and each worker: the last to let go frees it. */
	unsigned refs;
	int nice; /* each worker's, set as it starts; 0: the agent's */
	struct {
		uint64_t dev;
		unsigned jobs; /* stuck on it */
	} hung[MAX_HUNG];
	struct {
		uint32_t owner;
		unsigned jobs; /* stuck, of its */
	} owners[MAX_WORKERS];
};

struct vm_iopool *vm_iopool_new(void)
{
	return vm_iopool_new_nice(0);
}

struct vm_iopool *vm_iopool_new_nice(int nice)
{
	struct vm_iopool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->nice = nice;
	pthread_mutex_init(&p->lock, NULL);
	vm_cond_init_monotonic(&p->done);
	pthread_cond_init(&p->work, NULL);
	p->queue_tail = &p->queue;
	p->refs = 1;
	return p;
}

/* One holder fewer (under the lock, which this releases). */
static void let_go(struct vm_iopool *p)
{
	bool last = --p->refs == 0;

	pthread_mutex_unlock(&p->lock);
	if (!last)
		return;
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static bool is_hung(struct vm_iopool *p, uint64_t dev)
{
	for (size_t i = 0; dev && i < MAX_HUNG; i++)
		if (p->hung[i].jobs && p->hung[i].dev == dev)
			return true;
	return false;
}

/* One more (delta 1) or one fewer (-1) job stuck on dev. */
static void mark_hung(struct vm_iopool *p, uint64_t dev, int delta)
{
	size_t free_slot = MAX_HUNG;

	if (!dev)
		return;
	for (size_t i = 0; i < MAX_HUNG; i++) {
		if (p->hung[i].jobs && p->hung[i].dev == dev) {
			p->hung[i].jobs += delta;
			return;
		}
		if (!p->hung[i].jobs && free_slot == MAX_HUNG)
			free_slot = i;
	}
	if (delta > 0 && free_slot < MAX_HUNG)
		p->hung[free_slot] = (typeof(p->hung[0])){ dev, 1 };
}

/*
 * The count of stuck jobs of job's owner: its slot, or with make a free
 * one taken for it; NULL when the job has no owner or nothing was found.
 */
static unsigned *owner_stuck(struct vm_iopool *p,
			     const struct vm_iopool_job *job, bool make)
{
	size_t free_slot = MAX_WORKERS;

	if (!job->has_owner)
		return NULL;
	for (size_t i = 0; i < MAX_WORKERS; i++) {
		if (p->owners[i].jobs && p->owners[i].owner == job->owner)
			return &p->owners[i].jobs;
		if (!p->owners[i].jobs && free_slot == MAX_WORKERS)
			free_slot = i;
	}
	if (!make || free_slot == MAX_WORKERS)
		return NULL;
	p->owners[free_slot].owner = job->owner;
	return &p->owners[free_slot].jobs;
}

/* A job of an owner that has its share of the workers stuck already. */
static bool owner_full(struct vm_iopool *p, const struct vm_iopool_job *job)
{
	const unsigned *n = owner_stuck(p, job, false);

	return n && *n >= MAX_OWNER_STUCK;
}

static void *worker(void *arg)
{
	struct vm_iopool *p = arg;

	/* Nice is a thread's own on Linux. */
	if (p->nice)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), p->nice);

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct vm_iopool_job *job;
		int r;

		while (!p->queue && !p->closing) {
			p->n_idle++;
			pthread_cond_wait(&p->work, &p->lock);
			p->n_idle--;
		}
		if (!p->queue)
			break; /* the pool is let go: so is this worker */
		job = p->queue;
		p->queue = job->next;
		if (!p->queue)
			p->queue_tail = &p->queue;
		p->n_queued--;
		job->started = true;
		pthread_mutex_unlock(&p->lock);
		r = job->run(job);
		pthread_mutex_lock(&p->lock);
		job->result = r;
		job->finished = true;
		if (job->abandoned) {
			unsigned *n = owner_stuck(p, job, false);

			p->n_stuck--;
			if (n)
				--*n;
			mark_hung(p,
				  __atomic_load_n(&job->dev, __ATOMIC_RELAXED),
				  -1);
			pthread_mutex_unlock(&p->lock);
			job->free(job);
			pthread_mutex_lock(&p->lock);
		} else {
			pthread_cond_broadcast(&p->done);
		}
	}
	p->n_workers--;
	let_go(p);
	return NULL;
}

/* A worker for a job to be queued, made when none is free: 0 or -errno. */
static int find_worker(struct vm_iopool *p)
{
	pthread_attr_t a;
	pthread_t t;
	int r;

	if (p->n_idle > p->n_queued)
		return 0;
	if (p->n_workers >= MAX_WORKERS)
		/* Busy ones will come back; stuck ones will not. */
		return p->n_workers > p->n_stuck ? 0 : -EAGAIN;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256 << 10);
	r = pthread_create(&t, &a, worker, p);
	pthread_attr_destroy(&a);
	if (r)
		return p->n_workers > p->n_stuck ? 0 : -r;
	p->n_workers++;
	p->refs++;
	return 0;
}

static void dequeue(struct vm_iopool *p, struct vm_iopool_job *job)
{
	struct vm_iopool_job **pp = &p->queue;

	while (*pp && *pp != job)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = job->next;
	if (p->queue_tail == &job->next)
		p->queue_tail = pp;
	p->n_queued--;
}

int vm_iopool_run(struct vm_iopool *p, struct vm_iopool_job *job,
		  unsigned timeout_ms)
{
	uint64_t until =
		vm_clock_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000;
	unsigned *owner;
	int r;

	job->next = NULL;
	job->started = job->finished = job->abandoned = false;
	if (!p) {
		job->free(job);
		return -ECANCELED;
	}
	pthread_mutex_lock(&p->lock);
	r = p->closing		 ? -ECANCELED :
	    is_hung(p, job->dev) ? -ETIMEDOUT :
	    owner_full(p, job)	 ? -EAGAIN :
				   find_worker(p);
	if (r < 0) {
		pthread_mutex_unlock(&p->lock);
		job->free(job);
		return r;
	}
	*p->queue_tail = job;
	p->queue_tail = &job->next;
	p->n_queued++;
	pthread_cond_signal(&p->work);
	while (!job->finished && !p->closing &&
	       vm_cond_wait_until(&p->done, &p->lock, until) != ETIMEDOUT)
		;
	if (job->finished) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	r = p->closing ? -ECANCELED : -ETIMEDOUT;
	if (!job->started) {
		/* Never began: every worker is busy.  Nothing is stuck. */
		dequeue(p, job);
		pthread_mutex_unlock(&p->lock);
		job->free(job);
		return r;
	}
	job->abandoned = true;
	p->n_stuck++;
	p->n_timed_out++;
	owner = owner_stuck(p, job, true);
	if (owner)
		++*owner;
	mark_hung(p, __atomic_load_n(&job->dev, __ATOMIC_RELAXED), 1);
	pthread_mutex_unlock(&p->lock);
	return r;
}

int vm_iopool_step(struct vm_iopool *p, struct vm_iopool_job *job,
		   int (*run)(struct vm_iopool_job *job), unsigned timeout_ms)
{
	int r;

	job->run = run;
	r = vm_iopool_run(p, job, timeout_ms);
	if (r < 0)
		return r; /* the pool frees it */
	if (job->result < 0) {
		r = job->result;
		job->free(job);
	}
	return r;
}

void vm_iopool_shutdown(struct vm_iopool *p)
{
	/* Every wait ends: now, and at once for a job queued later. */
	if (p) {
		pthread_mutex_lock(&p->lock);
		p->closing = true;
		pthread_cond_broadcast(&p->done);
		pthread_mutex_unlock(&p->lock);
	}
}

void vm_iopool_free(struct vm_iopool *p)
{
	if (!p)
		return;
	vm_iopool_shutdown(p);
	pthread_mutex_lock(&p->lock);
	pthread_cond_broadcast(&p->work); /* idle workers leave */
	let_go(p);
}

void vm_iopool_stats(struct vm_iopool *p, unsigned *stuck, uint64_t *timed_out)
{
	*stuck = 0;
	*timed_out = 0;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	*stuck = p->n_stuck;
	*timed_out = p->n_timed_out;
	pthread_mutex_unlock(&p->lock);
}

/* vm_iopool_open_regular's job. */
struct open_job {
	struct vm_iopool_job job;
	int fd;
	char path[];
};

static int open_run(struct vm_iopool_job *job)
{
	struct open_job *o = vm_iopool_owner(job, struct open_job);

	o->fd = vm_open_regular(o->path);
	return o->fd < 0 ? o->fd : 0;
}

static void open_free(struct vm_iopool_job *job)
{
	struct open_job *o = vm_iopool_owner(job, struct open_job);

	if (o->fd >= 0)
		close(o->fd);
	free(o);
}

bool vm_iopool_owner_pid(struct vm_iopool_job *job, uint32_t pid)
{
	char dir[32];
	struct stat st;

	snprintf(dir, sizeof(dir), "/proc/%u", pid);
	if (stat(dir, &st) < 0)
		return false;
	job->owner = (uint32_t)st.st_uid;
	job->has_owner = true;
	return true;
}

void vm_iopool_owner_path(struct vm_iopool_job *job, const char *path)
{
	unsigned long pid;
	char *end;

	if (strncmp(path, "/proc/", 6) || path[6] < '1' || path[6] > '9')
		return;
	pid = strtoul(path + 6, &end, 10);
	if (*end == '/' && pid <= UINT32_MAX)
		vm_iopool_owner_pid(job, (uint32_t)pid);
}

int vm_iopool_open_regular(struct vm_iopool *p, const char *path, uint64_t dev,
			   unsigned timeout_ms)
{
	size_t len = strlen(path) + 1;
	struct open_job *o = malloc(sizeof(*o) + len);
	int r, fd;

	if (!o)
		return -ENOMEM;
	memcpy(o->path, path, len);
	o->fd = -1;
	o->job = (struct vm_iopool_job){ .run = open_run,
					 .free = open_free,
					 .dev = dev };
	vm_iopool_owner_path(&o->job, path);
	r = vm_iopool_run(p, &o->job, timeout_ms);
	if (r < 0)
		return r;
	fd = o->job.result < 0 ? o->job.result : o->fd;
	o->fd = -1;
	open_free(&o->job);
	return fd;
}

/* vm_iopool_read_small's job. */
struct read_job {
	struct vm_iopool_job job;
	size_t size, len;
	char *buf;
	char path[];
};

static int read_run(struct vm_iopool_job *job)
{
	struct read_job *o = vm_iopool_owner(job, struct read_job);
	_cleanup_close_ int fd = vm_open_regular(o->path);
	long long n;

	if (fd < 0)
		return fd;
	n = vm_read_all(fd, o->buf, o->size - 1);
	if (n < 0)
		return (int)n;
	o->len = (size_t)n;
	o->buf[n] = '\0';
	return 0;
}

static void read_free(struct vm_iopool_job *job)
{
	struct read_job *o = vm_iopool_owner(job, struct read_job);

	free(o->buf);
	free(o);
}

int vm_iopool_read_small(struct vm_iopool *p, const char *path, uint64_t dev,
			 char *buf, size_t size, size_t *len,
			 unsigned timeout_ms)
{
	size_t plen = strlen(path) + 1;
	struct read_job *o;
	int r;

	if (size == 0)
		return -EINVAL;
	o = calloc(1, sizeof(*o) + plen);
	if (!o || !(o->buf = malloc(size))) {
		free(o);
		return -ENOMEM;
	}
	memcpy(o->path, path, plen);
	o->size = size;
	o->job = (struct vm_iopool_job){ .run = read_run,
					 .free = read_free,
					 .dev = dev };
	vm_iopool_owner_path(&o->job, path);
	r = vm_iopool_run(p, &o->job, timeout_ms);
	if (r < 0)
		return r;
	r = o->job.result;
	if (r == 0) {
		memcpy(buf, o->buf, o->len + 1);
		if (len)
			*len = o->len;
	}
	read_free(&o->job);
	return r;
}

uint64_t vm_iopool_link_dev(const char *link)
{
	struct statx stx;

	if (statx(AT_FDCWD, link, AT_STATX_DONT_SYNC, STATX_INO, &stx))
		return 0;
	return makedev(stx.stx_dev_major, stx.stx_dev_minor);
}
