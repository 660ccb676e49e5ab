// SPDX-License-Identifier: Apache-2.0
/*
 * test_offcpu.c - unit tests of agent/profile/bpf/bpf_offcpu.c: blocks
 * joined from the starts, repeated starts and ends the off-CPU program
 * sends (weights, min_block, ends lost or never started, repeats of a
 * record dropped, malformed records, the bound on threads), the blocks still going at the end against a real `blocked`
 * map (skipped without BPF); a thread's state and context switches from
 * /proc/PID/task/TID/status, which tell a thread blocked for the whole
 * profile; and, on this process's own threads, that a thread sleeping
 * throughout is told from one that ran.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <errno.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_offcpu.h"
#include "agent/profile/bpf/bpf_read.h"

/* A block's start of task with frames frames from base; its size. */
static size_t start(struct offcpu_start *s, uint64_t task, uint64_t ns,
		    uint32_t tid, uint16_t frames, uint64_t base)
{
	memset(s, 0, sizeof(*s));
	s->task = task;
	s->ns = ns;
	s->r.pid = (uint32_t)getpid();
	s->r.tid = tid;
	s->r.n_user = frames;
	for (uint16_t i = 0; i < frames; i++)
		s->r.ips[i] = base + i;
	return OFFCPU_START_HEAD + frames * sizeof(__u64);
}

static int end(struct vm_offcpu_join *j, uint64_t task, uint64_t ns)
{
	struct offcpu_end e = { task, ns };

	return vm_offcpu_join_add(j, &e, sizeof(e));
}

/* A block of task starts with the record of its last start again. */
static int again(struct vm_offcpu_join *j, uint64_t task, uint64_t ns)
{
	struct offcpu_again a = { task, ns, 0x1234 };

	return vm_offcpu_join_add(j, &a, sizeof(a));
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
	struct offcpu_start s;
	struct vm_samples out;
	size_t n;

	(void)state;
	vm_stack_counts_init(&c, 1 << 20);
	vm_offcpu_join_init(&j, &c, 1000, 16);
	/* Two blocks of one thread on one stack: one sample, 2 switches. */
	n = start(&s, 0xa0, 10000, 7, 3, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	assert_int_equal(end(&j, 0xa0, 14000), 0);
	/* The second starts with the same record again. */
	assert_int_equal(again(&j, 0xa0, 20000), 0);
	/* Another thread blocks in between, on another stack. */
	n = start(&s, 0xb0, 21000, 8, 2, 0x500000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	assert_int_equal(end(&j, 0xa0, 22500), 0);
	assert_int_equal(end(&j, 0xb0, 30000), 0);
	/* Shorter than min_block: left out. */
	assert_int_equal(again(&j, 0xb0, 40000), 0);
	assert_int_equal(end(&j, 0xb0, 40999), 0);
	/* A thread sends a new record: its blocks from then on have it. */
	n = start(&s, 0xb0, 41000, 8, 1, 0x600000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	assert_int_equal(end(&j, 0xb0, 43000), 0);
	assert_int_equal(again(&j, 0xb0, 44000), 0);
	assert_int_equal(end(&j, 0xb0, 45000), 0);
	/* An end whose start never came, and a second one: ignored. */
	assert_int_equal(end(&j, 0xc0, 50000), 0);
	assert_int_equal(end(&j, 0xa0, 50000), 0);
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
	assert_int_equal(j.unended, 0);
	vm_samples_free(&out);
	vm_offcpu_join_free(&j);
	vm_stack_counts_free(&c);
}

static void test_join_lost_and_malformed(void **state)
{
	struct vm_stack_counts c;
	struct vm_offcpu_join j;
	struct offcpu_start s;
	struct vm_samples out;
	size_t n;

	(void)state;
	vm_stack_counts_init(&c, 1 << 20);
	vm_offcpu_join_init(&j, &c, 0, 1);
	/* The end of the first block was lost: only the second counts. */
	n = start(&s, 0xa0, 100, 7, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	n = start(&s, 0xa0, 300, 7, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	assert_int_equal(end(&j, 0xa0, 350), 0);
	assert_int_equal(j.unended, 1);
	/* A second thread is past the bound of one: dropped, counted. */
	n = start(&s, 0xb0, 400, 8, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), -E2BIG);
	assert_int_equal(c.dropped, 1);
	/* A repeat of that thread's record, which is not here: dropped. */
	assert_int_equal(again(&j, 0xb0, 450), -ENOENT);
	assert_int_equal(c.dropped, 2);
	/* Sizes that disagree with the frame counts, or fit nothing. */
	n = start(&s, 0xa0, 500, 7, 2, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n - 8), -EINVAL);
	assert_int_equal(vm_offcpu_join_add(&j, &s, 17), -EINVAL);
	s.r.n_user = STACK_MAX_DEPTH + 1;
	assert_int_equal(vm_offcpu_join_add(&j, &s, sizeof(s)), -EINVAL);
	assert_int_equal(c.malformed, 3);
	blocks(&c, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].value, 50);
	vm_samples_free(&out);
	vm_offcpu_join_free(&j);
	vm_stack_counts_free(&c);
}

/*
 * At the end: a block still going per `blocked` counts until then, one
 * whose thread ran since (its end lost) or whose thread is gone does not.
 */
static void test_join_finish(void **state)
{
	uint32_t me = (uint32_t)getpid(), gone = 0x7ffffffe;
	struct vm_stack_counts c;
	struct vm_offcpu_join j;
	struct offcpu_start s;
	struct vm_samples out;
	uint64_t k, v[2] = { 0, 0 }; /* offcpu.bpf.c's offcpu_thread */
	size_t n;
	int fd;

	(void)state;
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "blocked", sizeof(__u64),
			    sizeof(v), 16, NULL);
	if (fd < 0)
		skip(); /* no BPF here (not root, or no bpf(2)) */
	vm_stack_counts_init(&c, 1 << 20);
	vm_offcpu_join_init(&j, &c, 100, 16);
	n = start(&s, 0xa0, 1000, me, 1, 0x400000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	n = start(&s, 0xb0, 1000, gone, 1, 0x500000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	n = start(&s, 0xc0, 1000, me, 1, 0x600000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	n = start(&s, 0xd0, 1950, me, 1, 0x700000);
	assert_int_equal(vm_offcpu_join_add(&j, &s, n), 0);
	k = 0xa0, v[0] = 1000;
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	k = 0xb0;
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	k = 0xc0, v[0] = 0; /* switched in: its end was lost */
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	k = 0xd0, v[0] = 1950; /* still going, but shorter than min_block */
	assert_int_equal(bpf_map_update_elem(fd, &k, v, BPF_ANY), 0);
	assert_int_equal(vm_offcpu_join_finish(&j, fd, 2000, "/proc"), 0);
	close(fd);
	assert_int_equal(j.unended, 1);
	blocks(&c, &out);
	assert_int_equal(out.n, 1);
	assert_int_equal(out.v[0].tid, me);
	assert_int_equal(out.v[0].user_ips[0], 0x400000);
	assert_int_equal(out.v[0].value, 1000);
	vm_samples_free(&out);
	vm_offcpu_join_free(&j);
	vm_stack_counts_free(&c);
}

static void test_parse_status(void **state)
{
	const char text[] = "Name:\tpostgres\nState:\tS (sleeping)\nTgid:\t42\n"
			    "voluntary_ctxt_switches:\t120\n"
			    "nonvoluntary_ctxt_switches:\t3\n";
	uint64_t switches;
	char st;

	(void)state;
	assert_int_equal(vm_parse_task_status(text, &st, &switches), 0);
	assert_int_equal(st, 'S');
	assert_int_equal(switches, 123);
	assert_int_equal(vm_parse_task_status("State:\tR (running)\n", &st,
					      &switches),
			 -EINVAL);
	assert_int_equal(vm_parse_task_status("", &st, &switches), -EINVAL);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_join_lost_and_malformed),
		cmocka_unit_test(test_join_finish),
		cmocka_unit_test(test_parse_status),
		cmocka_unit_test(test_slept_throughout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
