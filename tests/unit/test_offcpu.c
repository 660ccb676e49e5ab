// SPDX-License-Identifier: Apache-2.0
/*
 * test_offcpu.c - unit tests of the pure parts of
 * agent/profile/bpf/bpf_offcpu.c: a thread's state and context switches
 * from /proc/PID/task/TID/status, which tell a thread blocked for the
 * whole profile; and, on this process's own threads, that a thread
 * sleeping throughout is told from one that ran.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <errno.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_offcpu.h"

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
		cmocka_unit_test(test_parse_status),
		cmocka_unit_test(test_slept_throughout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
