// SPDX-License-Identifier: Apache-2.0
/*
 * test_smaps.c - unit tests of agent/samples/smaps.c: smaps_rollup's
 * totals in bytes, with and without the Pss split of Linux 5.8; smaps
 * summed by kind of mapping (heap, anonymous, stack, shared memory,
 * files, the rest), a last mapping cut short, text that is not smaps.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "agent/samples/smaps.h"

static void test_rollup(void **state)
{
	static const char text[] =
		"55d1e7a00000-7ffd4a1f1000 ---p 00000000 00:00 0                          [rollup]\n"
		"Rss:              130996 kB\n"
		"Pss:               20419 kB\n"
		"Pss_Anon:           1224 kB\n"
		"Pss_File:           2871 kB\n"
		"Pss_Shmem:         16324 kB\n"
		"Shared_Clean:       9612 kB\n"
		"Anonymous:          1236 kB\n"
		"Swap:                  0 kB\n";
	struct vm_smaps_rollup r;

	(void)state;
	assert_int_equal(vm_smaps_rollup_parse(text, &r), 0);
	assert_true(r.split);
	assert_int_equal(r.rss, 130996ull * 1024);
	assert_int_equal(r.pss, 20419ull * 1024);
	assert_int_equal(r.pss_anon, 1224ull * 1024);
	assert_int_equal(r.pss_file, 2871ull * 1024);
	assert_int_equal(r.pss_shmem, 16324ull * 1024);
	assert_int_equal(r.anonymous, 1236ull * 1024);
	assert_int_equal(vm_smaps_rollup_parse("Rss: 4 kB\nPss: 4 kB\n", &r),
			 0);
	assert_false(r.split);
	assert_int_equal(vm_smaps_rollup_parse("Rss: 4 kB\n", &r), -EINVAL);
	assert_int_equal(vm_smaps_rollup_parse("", &r), -EINVAL);
}

static void test_kinds(void **state)
{
	static const char text[] =
		"55d1e7a00000-55d1e7a21000 r--p 00000000 08:01 1234   /usr/lib/postgresql/15/bin/postgres\n"
		"Pss:                 100 kB\n"
		"VmFlags: rd mr mw me\n"
		"55d1e9000000-55d1e9100000 rw-p 00000000 00:00 0      [heap]\n"
		"Pss:                  10 kB\n"
		"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
		"Pss:                   1 kB\n"
		"7f0000100000-7f0000200000 rw-p 00000000 00:00 0\n"
		"Pss:                   2 kB\n"
		"7f0000200000-7f0000300000 rw-s 00000000 00:01 77     /dev/zero (deleted)\n"
		"Pss:                1000 kB\n"
		"7f0000300000-7f0000400000 rw-s 00000000 00:01 78     /SYSV0052e2c1 (deleted)\n"
		"Pss:                   3 kB\n"
		"7ffd4a1d0000-7ffd4a1f1000 rw-p 00000000 00:00 0      [stack]\n"
		"Pss:                  20 kB\n"
		"7ffd4a1f1000-7ffd4a1f3000 r-xp 00000000 00:00 0      [vdso]\n"
		"Pss:                   4 kB\n"
		"7f0000400000-7f0000500000 r--p 00000000 08:01 99     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
		"Pss:                  50";
	struct vm_smaps_kinds k;

	(void)state;
	vm_smaps_parse(text, strlen(text), &k);
	assert_int_equal(k.mappings, 9);
	assert_int_equal(k.pss[VM_SMAPS_FILE], 150 * 1024);
	assert_int_equal(k.pss[VM_SMAPS_HEAP], 10 * 1024);
	assert_int_equal(k.pss[VM_SMAPS_ANON], 3 * 1024);
	assert_int_equal(k.pss[VM_SMAPS_SHMEM], 1003 * 1024);
	assert_int_equal(k.pss[VM_SMAPS_STACK], 20 * 1024);
	assert_int_equal(k.pss[VM_SMAPS_OTHER], 4 * 1024);
	assert_string_equal(vm_smaps_kind_frame(VM_SMAPS_ANON),
			    "[anonymous mappings]");

	vm_smaps_parse("not smaps\nPss: 12 kB\n", 22, &k);
	assert_int_equal(k.mappings, 0);
	vm_smaps_parse("", 0, &k);
	assert_int_equal(k.mappings, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rollup),
		cmocka_unit_test(test_kinds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
