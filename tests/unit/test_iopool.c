// SPDX-License-Identifier: Apache-2.0
/*
 * test_iopool.c - unit tests of agent/iopool/iopool.c with jobs that hang
 * the way a read on a frozen mount does (a read of a pipe no one writes):
 * the caller gets -ETIMEDOUT on time and the job is freed once it ends;
 * a device a job is stuck on refuses the next job at once; when every
 * worker is stuck a job is refused (-EAGAIN) and none is lost; a quick
 * job's result comes back with the job; the guarded open and read of real
 * files; after vm_iopool_shutdown() nothing waits; one owner's jobs stuck
 * on half the workers get that owner refused, no one else.
 *
 * Another device is not refused meanwhile, and the stuck device is forgotten
 * once its job ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/iopool/iopool.h"

static int freed; /* jobs freed by the I/O pool or by the test */
/* The pool every test queues on, as the agent's context holds one. */
static struct vm_iopool *pool;

struct pipe_job {
	struct vm_iopool_job job;
	int fd; /* read until it has something */
	int value;
};

static int pipe_run(struct vm_iopool_job *job)
{
	struct pipe_job *p = vm_iopool_owner(job, struct pipe_job);
	char c;

	if (p->fd >= 0 && read(p->fd, &c, 1) != 1)
		return -EIO;
	return p->value;
}

static void pipe_free(struct vm_iopool_job *job)
{
	__atomic_add_fetch(&freed, 1, __ATOMIC_SEQ_CST);
	free(vm_iopool_owner(job, struct pipe_job));
}

static struct pipe_job *new_job(int fd, int value, uint64_t dev)
{
	struct pipe_job *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->job = (struct vm_iopool_job){ .run = pipe_run,
					 .free = pipe_free,
					 .dev = dev };
	p->fd = fd;
	p->value = value;
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait (at most 2 s) until the pool has freed want jobs in all. */
static void wait_freed(int want)
{
	for (int i = 0;
	     i < 200 && __atomic_load_n(&freed, __ATOMIC_SEQ_CST) < want; i++)
		usleep(10000);
	assert_int_equal(__atomic_load_n(&freed, __ATOMIC_SEQ_CST), want);
}

static void test_quick_job(void **state)
{
	struct pipe_job *p = new_job(-1, 42, 0);

	(void)state;
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	assert_int_equal(p->job.result, 42);
	pipe_free(&p->job);
}

static void test_hang_and_device(void **state)
{
	int fds[2], base = freed;
	struct pipe_job *p;
	uint64_t timed_out;
	unsigned stuck;
	double t;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	p = new_job(fds[0], 0, 0x0800001); /* 8:1 */
	t = now();
	assert_int_equal(vm_iopool_run(pool, &p->job, 200), -ETIMEDOUT);
	t = now() - t;
	assert_true(t >= 0.19 && t < 1.0);
	vm_iopool_stats(pool, &stuck, &timed_out);
	assert_int_equal(stuck, 1);
	assert_true(timed_out >= 1);

	/* The device it hangs on: the next job there is refused at once. */
	p = new_job(-1, 7, 0x0800001);
	t = now();
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), -ETIMEDOUT);
	assert_true(now() - t < 0.1);
	wait_freed(base + 1); /* refused: freed by the I/O pool */
	/* Another device is not. */
	p = new_job(-1, 7, 0x0800002);
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	pipe_free(&p->job);

	/* The mount thaws: the stuck job ends and is freed, the device too. */
	assert_int_equal(write(fds[1], "x", 1), 1);
	wait_freed(base + 3);
	vm_iopool_stats(pool, &stuck, &timed_out);
	assert_int_equal(stuck, 0);
	p = new_job(-1, 9, 0x0800001);
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	assert_int_equal(p->job.result, 9);
	pipe_free(&p->job);
	close(fds[0]);
	close(fds[1]);
}

static void test_all_stuck(void **state)
{
	int fds[2], base = freed, n = 0;
	struct pipe_job *p;
	unsigned stuck;
	uint64_t timed_out;
	int r;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	/* Jobs that hang until every worker is stuck. */
	do {
		p = new_job(fds[0], 0, 0);
		r = vm_iopool_run(pool, &p->job, 50);
		n++;
	} while (r == -ETIMEDOUT && n < 64);
	assert_int_equal(r, -EAGAIN);
	vm_iopool_stats(pool, &stuck, &timed_out);
	assert_int_equal(stuck, (unsigned)n - 1);
	assert_true(stuck >= 2 && stuck <= 16);
	wait_freed(base + 1); /* the refused one */
	/* They end: every one freed, and jobs run again. */
	for (int i = 0; i < n - 1; i++)
		assert_int_equal(write(fds[1], "x", 1), 1);
	wait_freed(base + n);
	p = new_job(-1, 1, 0);
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	pipe_free(&p->job);
	close(fds[0]);
	close(fds[1]);
}

/*
 * One owner's jobs stuck on half the workers: that owner's next job is
 * refused at once, another owner's and an unowned one still run, and the
 * owner's run again once its jobs end.
 */
static void test_owner_share(void **state)
{
	int fds[2], base = freed, n = 0;
	struct pipe_job *p;
	double t;
	int r;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	do {
		p = new_job(fds[0], 0, 0);
		p->job.owner = 65534;
		p->job.has_owner = true;
		r = vm_iopool_run(pool, &p->job, 50);
		n++;
	} while (r == -ETIMEDOUT && n < 64);
	assert_int_equal(r, -EAGAIN);
	assert_int_equal(n - 1, 4); /* half the workers, then refused */
	wait_freed(base + 1);

	p = new_job(-1, 3, 0);
	p->job.owner = 65534;
	p->job.has_owner = true;
	t = now();
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), -EAGAIN);
	assert_true(now() - t < 0.1);
	wait_freed(base + 2);
	p = new_job(-1, 5, 0);
	p->job.owner = 0;
	p->job.has_owner = true;
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	assert_int_equal(p->job.result, 5);
	pipe_free(&p->job);
	p = new_job(-1, 6, 0);
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	pipe_free(&p->job);

	for (int i = 0; i < n - 1; i++)
		assert_int_equal(write(fds[1], "x", 1), 1);
	wait_freed(base + 4 + n - 1);
	p = new_job(-1, 7, 0);
	p->job.owner = 65534;
	p->job.has_owner = true;
	assert_int_equal(vm_iopool_run(pool, &p->job, 1000), 0);
	pipe_free(&p->job);
	close(fds[0]);
	close(fds[1]);
}

/* A path under /proc/PID/ is owned by that process's user. */
static void test_owner_of_path(void **state)
{
	struct vm_iopool_job job = { 0 };
	char path[64];

	(void)state;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)getpid());
	vm_iopool_owner_path(&job, path);
	assert_true(job.has_owner);
	assert_int_equal(job.owner, (uint32_t)geteuid());
	job.has_owner = false;
	vm_iopool_owner_path(&job, "/proc/self/maps");
	assert_false(job.has_owner);
	vm_iopool_owner_path(&job, "/usr/lib/libc.so.6");
	assert_false(job.has_owner);
}

static void test_files(void **state)
{
	char dir[] = "/tmp/test_iopool.XXXXXX", path[64], buf[16];
	size_t len;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/PG_VERSION", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "17\n", 3), 3);
	close(fd);
	assert_int_equal(vm_iopool_read_small(pool, path, 0, buf, sizeof(buf),
					      &len, 1000),
			 0);
	assert_int_equal(len, 3);
	assert_string_equal(buf, "17\n");
	fd = vm_iopool_open_regular(pool, path, 0, 1000);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(vm_iopool_open_regular(pool, dir, 0, 1000), -EINVAL);
	assert_true(vm_iopool_link_dev("/proc/self/cwd") != 0);
	unlink(path);
	rmdir(dir);
	assert_int_equal(vm_iopool_read_small(pool, path, 0, buf, sizeof(buf),
					      &len, 1000),
			 -ENOENT);
}

static void test_shutdown(void **state)
{
	int fds[2];
	struct pipe_job *p;
	double t;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	vm_iopool_shutdown(pool);
	p = new_job(fds[0], 0, 0);
	t = now();
	assert_int_equal(vm_iopool_run(pool, &p->job, 5000), -ECANCELED);
	assert_true(now() - t < 0.1);
	close(fds[1]);
	close(fds[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quick_job),
		cmocka_unit_test(test_hang_and_device),
		cmocka_unit_test(test_owner_share),
		cmocka_unit_test(test_owner_of_path),
		cmocka_unit_test(test_all_stuck),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_shutdown),
	};

	int failed;

	pool = vm_iopool_new();
	if (!pool)
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* Freed by the last worker, once the stuck ones return. */
	vm_iopool_free(pool);
	return failed;
}
