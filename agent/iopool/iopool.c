// SPDX-License-Identifier: Apache-2.0
/*
 * iopool.c - jobs that may hang, on worker threads waited for with a
 * timeout (iopool.h).  One lock guards the queue, the counts and the
 * devices jobs are stuck on; a worker takes a job off the queue, runs it
 * unlocked, and either wakes its caller or, when the caller gave up,
 * frees it.  Workers are made as needed, up to MAX_WORKERS, and wait for
 * the next job once done; a stuck one stays stuck, counted.
 */
#include "agent/iopool/iopool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdio.h"

#define MAX_WORKERS 8
#define MAX_HUNG 8 /* devices remembered; more are not */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_cond_t work, done; /* a job queued; a job finished */
static struct vm_iopool_job *queue, **queue_tail = &queue;
static unsigned n_workers, n_idle, n_queued, n_stuck;
static uint64_t n_timed_out;
static bool closing;
static struct {
	uint64_t dev;
	unsigned jobs; /* stuck on it */
} hung[MAX_HUNG];

static void init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&done, &a);
	pthread_cond_init(&work, NULL);
	pthread_condattr_destroy(&a);
}

static bool is_hung(uint64_t dev)
{
	for (size_t i = 0; dev && i < MAX_HUNG; i++)
		if (hung[i].jobs && hung[i].dev == dev)
			return true;
	return false;
}

/* One more (delta 1) or one fewer (-1) job stuck on dev. */
static void mark_hung(uint64_t dev, int delta)
{
	size_t free_slot = MAX_HUNG;

	if (!dev)
		return;
	for (size_t i = 0; i < MAX_HUNG; i++) {
		if (hung[i].jobs && hung[i].dev == dev) {
			hung[i].jobs += delta;
			return;
		}
		if (!hung[i].jobs && free_slot == MAX_HUNG)
			free_slot = i;
	}
	if (delta > 0 && free_slot < MAX_HUNG)
		hung[free_slot] = (typeof(hung[0])){ dev, 1 };
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct vm_iopool_job *job;
		int r;

		while (!queue) {
			n_idle++;
			pthread_cond_wait(&work, &lock);
			n_idle--;
		}
		job = queue;
		queue = job->next;
		if (!queue)
			queue_tail = &queue;
		n_queued--;
		job->started = true;
		pthread_mutex_unlock(&lock);
		r = job->run(job);
		pthread_mutex_lock(&lock);
		job->result = r;
		job->finished = true;
		if (job->abandoned) {
			n_stuck--;
			mark_hung(__atomic_load_n(&job->dev, __ATOMIC_RELAXED),
				  -1);
			pthread_mutex_unlock(&lock);
			job->free(job);
			pthread_mutex_lock(&lock);
		} else {
			pthread_cond_broadcast(&done);
		}
	}
	return NULL;
}

/* A worker for a job to be queued, made when none is free: 0 or -errno. */
static int find_worker(void)
{
	pthread_attr_t a;
	pthread_t t;
	int r;

	if (n_idle > n_queued)
		return 0;
	if (n_workers >= MAX_WORKERS)
		/* Busy ones will come back; stuck ones will not. */
		return n_workers > n_stuck ? 0 : -EAGAIN;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256 << 10);
	r = pthread_create(&t, &a, worker, NULL);
	pthread_attr_destroy(&a);
	if (r)
		return n_workers > n_stuck ? 0 : -r;
	n_workers++;
	return 0;
}

static void dequeue(struct vm_iopool_job *job)
{
	struct vm_iopool_job **pp = &queue;

	while (*pp && *pp != job)
		pp = &(*pp)->next;
	if (!*pp)
		return;
	*pp = job->next;
	if (queue_tail == &job->next)
		queue_tail = pp;
	n_queued--;
}

int vm_iopool_run(struct vm_iopool_job *job, unsigned timeout_ms)
{
	struct timespec until;
	int r;

	pthread_once(&once, init);
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	job->next = NULL;
	job->started = job->finished = job->abandoned = false;
	pthread_mutex_lock(&lock);
	r = closing	      ? -ECANCELED :
	    is_hung(job->dev) ? -ETIMEDOUT :
				find_worker();
	if (r < 0) {
		pthread_mutex_unlock(&lock);
		job->free(job);
		return r;
	}
	*queue_tail = job;
	queue_tail = &job->next;
	n_queued++;
	pthread_cond_signal(&work);
	while (!job->finished && !closing &&
	       pthread_cond_timedwait(&done, &lock, &until) != ETIMEDOUT)
		;
	if (job->finished) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	r = closing ? -ECANCELED : -ETIMEDOUT;
	if (!job->started) {
		/* Never began: every worker is busy.  Nothing is stuck. */
		dequeue(job);
		pthread_mutex_unlock(&lock);
		job->free(job);
		return r;
	}
	job->abandoned = true;
	n_stuck++;
	n_timed_out++;
	mark_hung(__atomic_load_n(&job->dev, __ATOMIC_RELAXED), 1);
	pthread_mutex_unlock(&lock);
	return r;
}

int vm_iopool_step(struct vm_iopool_job *job,
		   int (*run)(struct vm_iopool_job *job), unsigned timeout_ms)
{
	int r;

	job->run = run;
	r = vm_iopool_run(job, timeout_ms);
	if (r < 0)
		return r; /* the pool frees it */
	if (job->result < 0) {
		r = job->result;
		job->free(job);
	}
	return r;
}

void vm_iopool_shutdown(void)
{
	pthread_once(&once, init);
	pthread_mutex_lock(&lock);
	closing = true;
	pthread_cond_broadcast(&done);
	pthread_mutex_unlock(&lock);
}

void vm_iopool_stats(unsigned *stuck, uint64_t *timed_out)
{
	pthread_mutex_lock(&lock);
	*stuck = n_stuck;
	*timed_out = n_timed_out;
	pthread_mutex_unlock(&lock);
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

int vm_iopool_open_regular(const char *path, uint64_t dev, unsigned timeout_ms)
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
	r = vm_iopool_run(&o->job, timeout_ms);
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

int vm_iopool_read_small(const char *path, uint64_t dev, char *buf, size_t size,
			 size_t *len, unsigned timeout_ms)
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
	r = vm_iopool_run(&o->job, timeout_ms);
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
