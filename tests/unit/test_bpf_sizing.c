// SPDX-License-Identifier: Apache-2.0
/*
 * test_bpf_sizing.c - unit tests of agent/profile/bpf/bpf_sizing.c: the
 * sizes of the BPF maps from frequency, CPUs and seconds, and the kernel's
 * CPU list syntax.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_sizing.h"

static void test_map_sizes(void **state)
{
	struct vm_bpf_sizes sz;

	(void)state;
	vm_bpf_map_sizes(99, 2, 5, false, &sz);
	assert_int_equal(sz.expected_samples, 990);
	/* 198 records a second of ~2 KiB: the next power of two. */
	assert_int_equal(sz.records_ring, 512 << 10);
	assert_int_equal(sz.counts_bytes, 16 << 20); /* the floor */
	assert_int_equal(sz.seen, 1024); /* the floor */
	assert_int_equal(sz.pids, 1); /* no --pid: target_pids unused */
	assert_int_equal(sz.children, 16384);
	/* Off-CPU: half a second of 20,000 switches per CPU of 512 bytes. */
	assert_int_equal(sz.blocks_ring, 16 << 20);
	assert_int_equal(sz.blocked, 16384);
	vm_bpf_map_sizes(1000, 8, 10, true, &sz);
	assert_int_equal(sz.expected_samples, 80000);
	assert_int_equal(sz.records_ring, 16 << 20);
	assert_int_equal(sz.counts_bytes, 80000u << 10); /* 1 KiB a sample */
	assert_int_equal(sz.seen, 16384); /* capped */
	assert_int_equal(sz.pids, 65536); /* --pid targets and their children */
	vm_bpf_map_sizes(99, 2, 3, false, &sz);
	assert_int_equal(sz.seen, 1024); /* 594 samples: never more processes */
	vm_bpf_map_sizes(100, 4, 5, false, &sz);
	assert_int_equal(sz.seen, 2048);
	vm_bpf_map_sizes(1000, 64, 3600, false, &sz);
	assert_int_equal(sz.records_ring, 32 << 20); /* capped */
	assert_int_equal(sz.blocks_ring, 32 << 20); /* capped */
	assert_int_equal(sz.counts_bytes, 256 << 20); /* capped */
	vm_bpf_map_sizes(1, 0, 1, false, &sz); /* no CPU count: one */
	assert_int_equal(sz.expected_samples, 1);
}

static void test_cpu_list(void **state)
{
	int cpus[16];
	size_t n;

	(void)state;
	assert_int_equal(vm_parse_cpu_list("0-3,8,10-11\n", cpus, 16, &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[3], 3);
	assert_int_equal(cpus[4], 8);
	assert_int_equal(cpus[6], 11);
	assert_int_equal(vm_parse_cpu_list("0", NULL, 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(vm_parse_cpu_list("", cpus, 16, &n), -EINVAL);
	assert_int_equal(vm_parse_cpu_list("3-1", cpus, 16, &n), -EINVAL);
	assert_int_equal(vm_parse_cpu_list("a", cpus, 16, &n), -EINVAL);
	assert_int_equal(vm_parse_cpu_list("1;2", cpus, 16, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_sizes),
		cmocka_unit_test(test_cpu_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
