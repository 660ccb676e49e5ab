// SPDX-License-Identifier: Apache-2.0
/*
 * test_perf_bound.c - unit tests of the bound on a perf profile's
 * perf.data (agent/profile/perf/perf_bound.c): room for every sample the
 * request's frequency and seconds can take on every CPU and what perf
 * writes besides, never more than the hard cap or a lower one given,
 * and no wrap at the extremes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/profile/perf/perf_bound.h"

#define MIB (1ull << 20)

static void test_room_for_every_sample(void **state)
{
	uint64_t dwarf = VM_PERF_SAMPLE_BYTES + VM_PERF_DWARF_STACK;

	(void)state;
	/* The default request: 5 s at 99 Hz on 2 CPUs. */
	assert_int_equal(vm_perf_data_bound(5, 99, 2, true, 0),
			 5 * (99 * 2 * dwarf + VM_PERF_DATA_PER_SECOND) +
				 VM_PERF_DATA_BASE);
	assert_int_equal(
		vm_perf_data_bound(5, 99, 2, false, 0),
		5 * (99 * 2 * VM_PERF_SAMPLE_BYTES + VM_PERF_DATA_PER_SECOND) +
			VM_PERF_DATA_BASE);
	/* More seconds, Hz or CPUs: more room; a dwarf sample takes more. */
	assert_true(vm_perf_data_bound(6, 99, 2, true, 0) >
		    vm_perf_data_bound(5, 99, 2, true, 0));
	assert_true(vm_perf_data_bound(5, 100, 2, true, 0) >
		    vm_perf_data_bound(5, 99, 2, true, 0));
	assert_true(vm_perf_data_bound(5, 99, 3, true, 0) >
		    vm_perf_data_bound(5, 99, 2, true, 0));
	assert_true(vm_perf_data_bound(5, 99, 2, true, 0) >
		    vm_perf_data_bound(5, 99, 2, false, 0));
	/* No CPU counted is one; a request of no seconds, the base. */
	assert_int_equal(vm_perf_data_bound(5, 99, 0, true, 0),
			 vm_perf_data_bound(5, 99, 1, true, 0));
	assert_int_equal(vm_perf_data_bound(0, 99, 2, true, 0),
			 VM_PERF_DATA_BASE);
}

static void test_capped(void **state)
{
	(void)state;
	/* The longest request at the highest frequency: ~2 GB, capped. */
	assert_int_equal(vm_perf_data_bound(60, 1000, 2, true, 0),
			 VM_PERF_DATA_MAX);
	assert_int_equal(vm_perf_data_bound(3600, 1000, 64, true, 0),
			 VM_PERF_DATA_MAX);
	/* A lower cap wins; a higher one never raises the hard cap. */
	assert_int_equal(vm_perf_data_bound(5, 99, 2, true, 4 * MIB), 4 * MIB);
	assert_int_equal(vm_perf_data_bound(60, 1000, 2, true, 1ull << 40),
			 VM_PERF_DATA_MAX);
	assert_int_equal(vm_perf_data_bound(1, 1, 1, false, 1ull << 40),
			 vm_perf_data_bound(1, 1, 1, false, 0));
	/* The extremes of every argument do not wrap. */
	assert_int_equal(vm_perf_data_bound(UINT32_MAX, UINT32_MAX, UINT32_MAX,
					    true, UINT64_MAX),
			 VM_PERF_DATA_MAX);
	assert_int_equal(vm_perf_data_bound(UINT32_MAX, 1, 1, false, 0),
			 VM_PERF_DATA_MAX);
	assert_int_equal(vm_perf_data_bound(1, UINT32_MAX, 1, false, 0),
			 VM_PERF_DATA_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_room_for_every_sample),
		cmocka_unit_test(test_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
