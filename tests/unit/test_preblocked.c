// SPDX-License-Identifier: Apache-2.0
/*
 * test_preblocked.c - unit tests of agent/profile/bpf/bpf_preblocked.c:
 * a thread's state from /proc/PID/task/TID/stat (a command name holding
 * ") " included), its user pc from .../syscall, its kernel stack from
 * .../stack resolved against a kallsyms table (or none), and on this process's own
 * threads that a sleeping one is listed with its pc; 30,000 threads found
 * by id once sorted.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_preblocked.h"
#include "agent/samples/proc.h"
#include "agent/symbolize/kallsyms.h"

static void test_parse_stat(void **state)
{
	(void)state;
	assert_int_equal(vm_parse_task_stat_state("42 (postgres) S 1 42 42 0"),
			 'S');
	assert_int_equal(vm_parse_task_stat_state("42 (a) R (b)) D 1 2 3"),
			 'D');
	assert_int_equal(vm_parse_task_stat_state("42 (postgres)"), 0);
	assert_int_equal(vm_parse_task_stat_state(""), 0);
	assert_int_equal(vm_parse_task_stat_state("42 (x) SS 1"), 0);
}

static void test_parse_syscall(void **state)
{
	(void)state;
	assert_int_equal(
		vm_parse_task_syscall_pc(
			"232 0x5 0x7ffc1 0x1 0xffffffff 0x0 0x8 0x7ffc0 0x7f12a4\n"),
		0x7f12a4);
	assert_int_equal(vm_parse_task_syscall_pc("-1 0x7ffc0 0x55aa10\n"),
			 0x55aa10);
	assert_int_equal(vm_parse_task_syscall_pc("running\n"), 0);
	assert_int_equal(vm_parse_task_syscall_pc(""), 0);
	assert_int_equal(vm_parse_task_syscall_pc("1 0x12zz\n"), 0);
}

/* The table vm_pre_blocked_resolve() looks names up in, as the agent's. */
static struct vm_kallsyms table;

static int table_addrs(void *arg, const char *const *names, size_t n,
		       uint64_t *addrs)
{
	vm_kallsyms_addrs(&table, names, n, addrs);
	return 0;
}

static int no_table(void *arg, const char *const *names, size_t n,
		    uint64_t *addrs)
{
	(void)names;
	(void)n;
	(void)addrs;
	return -ENOENT;
}

static void parse_stack(struct vm_pre_blocked_set *set)
{
	set->v = calloc(1, sizeof(*set->v));
	assert_non_null(set->v);
	set->n = set->cap = 1;
	assert_int_equal(vm_parse_task_stack("[<0>] ep_poll+0x2a4/0x3f0\n"
					     "[<0>] do_syscall_64+0x71/0x280\n"
					     "[<0>] nowhere+0x1/0x2\n"
					     "[<0>] ext4_foo+0x3/0x10\n"
					     "[<0>] ep_poll+0x10/0x3f0\n",
					     &set->v[0]),
			 0);
	assert_int_equal(set->v[0].n_kernel, 5);
}

static void test_stack_resolved(void **state)
{
	struct vm_pre_blocked_set set = { 0 };
	struct vm_error err = { 0 };
	struct vm_pre_blocked *p;

	(void)state;
	assert_int_equal(
		vm_kallsyms_parse(
			strdup("ffffffff81000000 T _text\n"
			       "ffffffff81100000 t ep_poll\n"
			       "ffffffff81200000 T do_syscall_64\n"
			       "ffffffffc0001000 t ext4_foo\t[ext4]\n"),
			&table, &err),
		0);
	parse_stack(&set);
	p = &set.v[0];
	vm_pre_blocked_resolve(&set, table_addrs, NULL);
	/* The frame not found ends the stack. */
	assert_int_equal(p->n_kernel, 2);
	assert_int_equal(p->kernel_ips[0], 0xffffffff811002a4ULL);
	assert_int_equal(p->kernel_ips[1], 0xffffffff81200071ULL);
	vm_pre_blocked_free(&set);

	/* No table: no kernel stack, rather than an unresolved one. */
	parse_stack(&set);
	vm_pre_blocked_resolve(&set, no_table, NULL);
	assert_int_equal(set.v[0].n_kernel, 0);
	vm_pre_blocked_free(&set);
	vm_kallsyms_free(&table);
}

static void *sleeper(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static void test_scan_self(void **state)
{
	struct vm_pre_blocked_set set = { 0 };
	bool found = false;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, sleeper, NULL), 0);
	usleep(100000);
	assert_int_equal(
		vm_pre_blocked_scan(&set, "/proc", (uint32_t)getpid(), 0), 0);
	for (size_t i = 0; i < set.n; i++) {
		assert_int_equal(set.v[i].pid, getpid());
		assert_true(set.v[i].state == 'S' || set.v[i].state == 'D');
		if (set.v[i].tid != (uint32_t)getpid())
			found = found || set.v[i].user_pc != 0;
	}
	assert_true(found);
	vm_pre_blocked_free(&set);
	assert_int_equal(pthread_cancel(t), 0);
	pthread_join(t, NULL);
}

/* 30,000 threads, in the order /proc lists them: each found, once sorted. */
static void test_find(void **state)
{
	struct vm_pre_blocked_set set = { 0 };
	const size_t n = 30000;

	(void)state;
	assert_null(vm_pre_blocked_find(&set, 1));
	set.v = calloc(n, sizeof(*set.v));
	assert_non_null(set.v);
	set.n = set.cap = n;
	for (size_t i = 0; i < n; i++) {
		set.v[i].tid = (uint32_t)((i * 7919) % n) * 2 + 2;
		set.v[i].pid = set.v[i].tid / 2;
	}
	vm_pre_blocked_sort(&set);
	for (uint32_t tid = 2; tid <= 2 * n; tid += 2) {
		const struct vm_pre_blocked *p = vm_pre_blocked_find(&set, tid);

		assert_non_null(p);
		assert_int_equal(p->tid, tid);
		assert_int_equal(p->pid, tid / 2);
	}
	assert_null(vm_pre_blocked_find(&set, 3));
	assert_null(vm_pre_blocked_find(&set, 2 * n + 2));
	vm_pre_blocked_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_stat),
		cmocka_unit_test(test_parse_syscall),
		cmocka_unit_test(test_stack_resolved),
		cmocka_unit_test(test_scan_self),
		cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
