// SPDX-License-Identifier: Apache-2.0
/*
 * test_offcpu.c - unit tests of agent/profile/bpf/bpf_blocks.c: blocks
 * counted with the last record their thread sent (weights, min_block, a
 * new record, blocks of a thread whose record was dropped or never came,
 * malformed records, the bound on threads), the blocks still going at the
 * end against a real `blocked` map (skipped without BPF); and, on this
 * process's own threads, that a thread sleeping throughout is told from
 * one that ran, and that one woken and running without a break since is
 * told, with its CPU time (the /proc files read by
 * agent/samples/proc_task.c, whose parsers test_proc.c tests).
 *
 * The thread woken and running: blocked at its snapshot, then spinning
 * under SCHED_FIFO (root and two CPUs; skipped otherwise), it counts as
 * running since, for the CPU time it has used (never more than the time
 * since its wake-up, at most 30 ms less).
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <errno.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_blocks.h"
#include "agent/profile/bpf/bpf_stack_counts.h"

/* A record of task with frames frames from base; its size. */
static size_t record(struct offcpu_record *r, uint64_t task, uint32_t tid,
		     uint16_t frames, uint64_t base)
{
	memset(r, 0, sizeof(*r));
	r->task = task;
	r->r.pid = (uint32_t)getpid();
	r->r.tid = tid;
	r->r.n_user = frames;
	for (uint16_t i = 0; i < frames; i++)
		r->r.ips[i] = base + i;
	return OFFCPU_RECORD_HEAD + frames * sizeof(__u64);
}

static int block(struct vm_offcpu_join *j, uint64_t task, uint64_t start,
		 uint64_t end)
{
	struct offcpu_block b = { task, start, end };

	return vm_offcpu_join_add(j, &b, sizeof(b));
}

/* The blocks counted so far, as the profile would have them. */
static void blocks(struct vm_stack_counts *c, struct vm_samples *out)
{
	memset(out, 0, sizeof(*out));
	assert_int_equal(vm_stack_counts_to_blocks(c, out), 0);
}

static void test_join(void **state)
{
	struct vm_stack_counts c;
	struct vm_offcpu_join j;
	struct offcpu_record r;
	struct vm_samples out;
	size_t n;

	(void)state;
	vm_stack_counts_init(&c, 1 << 20);
	vm_offcpu_join_init(&j, &c, 1000, 16);
	/* Two blocks of one thread on one record: one sample, 2 switches. */
	n = record(&r, 0xa0, 7, 3, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	assert_int_equal(block(&j, 0xa0, 10000, 14000), 0);
	/* Another thread blocks in between, with another record. */
	n = record(&r, 0xb0, 8, 2, 0x500000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	assert_int_equal(block(&j, 0xa0, 20000, 22500), 0);
	assert_int_equal(block(&j, 0xb0, 21000, 30000), 0);
	/* Shorter than min_block: left out. */
	assert_int_equal(block(&j, 0xb0, 40000, 40999), 0);
	/* A thread sends a new record: its blocks from then on have it. */
	n = record(&r, 0xb0, 8, 1, 0x600000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	assert_int_equal(block(&j, 0xb0, 41000, 43000), 0);
	assert_int_equal(block(&j, 0xb0, 44000, 45000), 0);
	blocks(&c, &out);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.v[0].tid, 7);
	assert_int_equal(out.v[0].count, 2);
	assert_int_equal(out.v[0].value, 4000 + 2500);
	assert_int_equal(out.v[0].n_user, 3);
	assert_int_equal(out.v[0].user_ips[2], 0x400002);
	assert_int_equal(out.v[1].tid, 8);
	assert_int_equal(out.v[1].count, 1);
	assert_int_equal(out.v[1].value, 9000);
	assert_int_equal(out.v[2].tid, 8);
	assert_int_equal(out.v[2].count, 2);
	assert_int_equal(out.v[2].value, 3000);
	assert_int_equal(out.v[2].user_ips[0], 0x600000);
	vm_samples_free(&out);
	vm_offcpu_join_free(&j);
	vm_stack_counts_free(&c);
}

static void test_join_dropped_and_malformed(void **state)
{
	struct vm_stack_counts c;
	struct vm_offcpu_join j;
	struct offcpu_record r;
	struct vm_samples out;
	size_t n;

	(void)state;
	vm_stack_counts_init(&c, 1 << 20);
	vm_offcpu_join_init(&j, &c, 0, 1);
	n = record(&r, 0xa0, 7, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	assert_int_equal(block(&j, 0xa0, 300, 350), 0);
	/* A second thread is past the bound of one: dropped, counted... */
	n = record(&r, 0xb0, 8, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), -E2BIG);
	assert_int_equal(c.dropped, 1);
	/* ...and so are its blocks, as those of a thread never seen. */
	assert_int_equal(block(&j, 0xb0, 400, 450), -ENOENT);
	assert_int_equal(block(&j, 0xc0, 400, 450), -ENOENT);
	assert_int_equal(c.dropped, 3);
	/* Sizes that disagree with the frame counts, or fit nothing. */
	n = record(&r, 0xa0, 7, 2, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n - 8), -EINVAL);
	assert_int_equal(vm_offcpu_join_add(&j, &r, 25), -EINVAL);
	assert_int_equal(vm_offcpu_join_add(&j, &r, 16), -EINVAL);
	r.r.n_user = STACK_MAX_DEPTH + 1;
	assert_int_equal(vm_offcpu_join_add(&j, &r, sizeof(r)), -EINVAL);
	assert_int_equal(c.malformed, 4);
	blocks(&c, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].value, 50);
	vm_samples_free(&out);
	vm_offcpu_join_free(&j);
	vm_stack_counts_free(&c);
}

/*
 * At the end: the threads `blocked` has switched out count until then;
 * one running (0), one whose thread is gone, and one shorter than
 * min_block do not.
 */
static void test_join_finish(void **state)
{
	uint32_t me = (uint32_t)getpid(), gone = 0x7ffffffe;
	uint64_t k, v[2] = { 0, 0 }; /* offcpu.bpf.c's offcpu_thread */
	struct vm_stack_counts c;
	struct vm_offcpu_join j;
	struct offcpu_record r;
	struct vm_samples out;
	size_t n;
	int fd;

	(void)state;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "blocked", sizeof(__u64),
			    sizeof(v), 16, NULL);
	if (fd < 0)
		skip(); /* no BPF here (not root, or no bpf(2)) */
	vm_stack_counts_init(&c, 1 << 20);
	vm_offcpu_join_init(&j, &c, 100, 16);
	n = record(&r, 0xa0, me, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	n = record(&r, 0xb0, gone, 1, 0x500000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	n = record(&r, 0xc0, me, 1, 0x600000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	n = record(&r, 0xd0, me, 1, 0x700000);
	assert_int_equal(vm_offcpu_join_add(&j, &r, n), 0);
	k = 0xa0, v[0] = 1000;
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	k = 0xb0;
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	k = 0xc0, v[0] = 0; /* running */
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	k = 0xd0, v[0] = 1950; /* still going, but shorter than min_block */
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	assert_int_equal(vm_offcpu_join_finish(&j, fd, 2000, "/proc"), 0);
	close(fd);
	blocks(&c, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].tid, me);
	assert_int_equal(out.v[0].user_ips[0], 0x400000);
	assert_int_equal(out.v[0].value, 1000);
	vm_samples_free(&out);
	vm_offcpu_join_free(&j);
	vm_stack_counts_free(&c);
}

static int wake_fd[2];

static void *sleeper(void *arg)
{
	char c;

	(void)arg;
	return read(wake_fd[0], &c, 1) == 1 ? NULL : NULL;
}

static void test_slept_throughout(void **state)
{
	struct vm_thread_switches *v = NULL;
	size_t n = 0, cap = 0;
	uint32_t self = (uint32_t)getpid();
	pthread_t t;
	bool found_sleeper = false;
	char st;

	(void)state;
	assert_int_equal(pipe(wake_fd), 0);
	assert_int_equal(pthread_create(&t, NULL, sleeper, NULL), 0);
	usleep(100000);
	assert_int_equal(
		vm_bpf_snapshot_threads("/proc", &self, 1, &v, &n, &cap), 0);
	assert_true(n >= 2);
	usleep(50000);
	for (size_t i = 0; i < n; i++) {
		if (v[i].tid == self)
			continue; /* this thread runs: it is reading /proc */
		found_sleeper |= vm_bpf_slept_throughout("/proc", &v[i], &st);
	}
	assert_true(found_sleeper);
	assert_int_equal(write(wake_fd[1], "x", 1), 1);
	pthread_join(t, NULL);
	for (size_t i = 0; i < n; i++)
		if (v[i].tid != self)
			assert_false(
				vm_bpf_slept_throughout("/proc", &v[i], &st));
	free(v);
}

static int spin_fd[2];
static pid_t spinner_tid;

/*
 * Blocks on a pipe, then spins for 300 ms of its own CPU time, for each
 * byte written, until the pipe is closed.
 */
static void *spinner(void *arg)
{
	struct timespec t0, t;
	char c;

	(void)arg;
	spinner_tid = gettid();
	while (read(spin_fd[0], &c, 1) == 1) {
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
		do
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec -
			       t0.tv_nsec <
		       300000000L);
	}
	return NULL;
}

/*
 * A thread blocked at its snapshot, then woken and running without a
 * break (SCHED_FIFO at the top priority, and kept on one CPU: no task of
 * this machine preempts it, and no migration between CPUs, which counts
 * as a switch, moves it): running since, for about the CPU time it has
 * used.  Needs root (SCHED_FIFO) and a second CPU for this thread to look
 * while it spins.  One task still preempts it: the soft-lockup watchdog's
 * stopper, every 4 s on each CPU, a switch that rightly ends "running
 * since"; so the look is tried up to three times, from a new snapshot.
 */
static void test_running_since(void **state)
{
	struct sched_param sp = { .sched_priority =
					  sched_get_priority_max(SCHED_FIFO) };
	struct vm_thread_switches *v = NULL, *me = NULL;
	size_t n = 0, cap = 0;
	uint32_t self = (uint32_t)getpid();
	pthread_attr_t attr;
	cpu_set_t cpus, one;
	uint64_t ran = 0, elapsed;
	struct timespec w0, w1;
	pthread_t t;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 ||
	    sched_getaffinity(0, sizeof(cpus), &cpus) || CPU_COUNT(&cpus) < 2)
		skip();
	CPU_ZERO(&one);
	for (int c = CPU_SETSIZE - 1; c >= 0; c--)
		if (CPU_ISSET(c, &cpus)) {
			CPU_SET(c, &one);
			break;
		}
	assert_int_equal(pipe(spin_fd), 0);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &sp);
	if (pthread_create(&t, &attr, spinner, NULL)) {
		pthread_attr_destroy(&attr);
		skip(); /* not allowed SCHED_FIFO here */
	}
	pthread_attr_destroy(&attr);
	for (int tries = 0;; tries++) {
		bool running;

		usleep(tries ? 400000 : 100000); /* asleep again */
		n = 0;
		me = NULL;
		assert_int_equal(vm_bpf_snapshot_threads("/proc", &self, 1, &v,
							 &n, &cap),
				 0);
		for (size_t i = 0; i < n; i++)
			if (v[i].tid == (uint32_t)spinner_tid)
				me = &v[i];
		assert_non_null(me);
		assert_int_not_equal(me->run_ns, VM_RUN_NS_UNKNOWN);
		/* Asleep: not running since. */
		assert_false(vm_bpf_running_since("/proc", me, &ran));
		clock_gettime(CLOCK_MONOTONIC, &w0);
		assert_int_equal(write(spin_fd[1], "x", 1), 1);
		usleep(100000);
		running = vm_bpf_running_since("/proc", me, &ran);
		clock_gettime(CLOCK_MONOTONIC, &w1);
		if (running)
			break;
		assert_true(tries < 2);
	}
	/*
	 * It has spun since the write, all of the time since but the
	 * wake-up and what the scheduler's last tick has not counted yet
	 * (10 ms at 100 Hz): never more, and not much less.
	 */
	elapsed = (uint64_t)((w1.tv_sec - w0.tv_sec) * 1000000000L +
			     w1.tv_nsec - w0.tv_nsec);
	assert_true(ran <= elapsed);
	assert_true(ran + 30000000 >= elapsed);
	close(spin_fd[1]);
	pthread_join(t, NULL);
	close(spin_fd[0]);
	/* Gone: not running. */
	assert_false(vm_bpf_running_since("/proc", me, &ran));
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_join_dropped_and_malformed),
		cmocka_unit_test(test_join_finish),
		cmocka_unit_test(test_running_since),
		cmocka_unit_test(test_slept_throughout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
