// SPDX-License-Identifier: Apache-2.0
/*
 * test_proc.c - unit tests of the pure parsing in agent/samples/proc.c
 * and proc_task.c: /proc/PID/maps lines, process titles from
 * /proc/PID/cmdline, and a thread's state, context switches and CPU time
 * from /proc/PID/task/TID/status and schedstat.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "agent/samples/proc.h"

static void test_maps_line(void **state)
{
	char l1[] =
		"55d0c8a00000-55d0c8e00000 r-xp 00123000 fd:01 1234567                    /usr/lib/postgresql/15/bin/postgres\n";
	char l2[] =
		"7ffd1a1f3000-7ffd1a1f5000 r-xp 00000000 00:00 0                          [vdso]\n";
	char l3[] =
		"55d0c8a00000-55d0c8e00000 rw-p 00000000 fd:01 1234567 /x\n";
	char l4[] = "zz-yy r-xp";
	char l5[] = "7f0000000000-7f0000001000 r-xp 00000000 00:00 0\n";
	struct vm_mapping m;
	uint64_t dev, ino;

	(void)state;
	assert_int_equal(vm_proc_parse_maps_line(l1, &m, &dev, &ino), 1);
	assert_int_equal(m.start, 0x55d0c8a00000);
	assert_int_equal(m.end, 0x55d0c8e00000);
	assert_int_equal(m.pgoff, 0x123000);
	assert_string_equal(m.path, "/usr/lib/postgresql/15/bin/postgres");
	assert_int_equal(dev, (uint64_t)0xfd << 32 | 1);
	assert_int_equal(ino, 1234567);
	assert_int_equal(vm_proc_parse_maps_line(l2, &m, &dev, &ino), 1);
	assert_string_equal(m.path, "[vdso]");
	assert_int_equal(vm_proc_parse_maps_line(l3, &m, &dev, &ino), 0);
	assert_int_equal(vm_proc_parse_maps_line(l4, &m, &dev, &ino), -EINVAL);
	assert_int_equal(vm_proc_parse_maps_line(l5, &m, &dev, &ino), 1);
	assert_null(m.path);
}

static void test_title(void **state)
{
	static const char cmd[] = "/usr/bin/postgres\0-D\0/data\0";
	static const char pg[] = "postgres: checkpointer   \0\0\0";
	char *t;

	(void)state;
	t = vm_proc_title_from_cmdline(cmd, sizeof(cmd) - 1);
	assert_string_equal(t, "/usr/bin/postgres -D /data");
	free(t);
	t = vm_proc_title_from_cmdline(pg, sizeof(pg) - 1);
	assert_string_equal(t, "postgres: checkpointer");
	free(t);
	assert_null(vm_proc_title_from_cmdline("\0\0", 2));
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

/* schedstat: "CPU_NS WAIT_NS TIMESLICES"; the first is what counts. */
static void test_parse_schedstat(void **state)
{
	uint64_t ns = 7;

	(void)state;
	assert_int_equal(vm_parse_task_schedstat("123456789 42 7\n", &ns), 0);
	assert_int_equal(ns, 123456789);
	assert_int_equal(vm_parse_task_schedstat("0 0 0\n", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(vm_parse_task_schedstat("", &ns), -EINVAL);
	assert_int_equal(vm_parse_task_schedstat("x 1 2\n", &ns), -EINVAL);
	assert_int_equal(vm_parse_task_schedstat("12x 1 2\n", &ns), -EINVAL);
	assert_int_equal(vm_parse_task_schedstat("-5 1 2\n", &ns), -EINVAL);
	assert_int_equal(
		vm_parse_task_schedstat("99999999999999999999999 1 2\n", &ns),
		-EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_line),
		cmocka_unit_test(test_title),
		cmocka_unit_test(test_parse_status),
		cmocka_unit_test(test_parse_schedstat),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
