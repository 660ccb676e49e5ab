// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_sizing.c - unit tests of imagebuilder/sizing.c: sparse_super
 * groups, overhead, auto size bounds, --size parsing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "imagebuilder/sizing.h"

static void test_sparse_super_groups(void **state)
{
	const uint64_t with[] = { 0, 1, 3, 5, 7, 9, 25, 27, 49, 125, 343 };
	const uint64_t without[] = { 2, 4, 6, 8, 10, 15, 21, 26, 50 };

	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		assert_true(vm_group_has_super(with[i]));
	for (size_t i = 0; i < sizeof(without) / sizeof(without[0]); i++)
		assert_false(vm_group_has_super(without[i]));
}

static void test_overhead_one_group(void **state)
{
	/* 1 group: sb + 1 gdt + 2 bitmaps + 1024 inodes * 256 / 4096. */
	assert_int_equal(vm_size_overhead(1000, 1024), 1 + 1 + 2 + 64);
	/* Inodes round up to whole inode-table blocks. */
	assert_int_equal(vm_size_overhead(1000, 1), 1 + 1 + 2 + 1);
}

static void test_auto_size_holds_and_is_tight(void **state)
{
	const uint64_t datas[] = { 0, 1, 1000, 32768, 50000, 1000000 };

	for (size_t i = 0; i < sizeof(datas) / sizeof(datas[0]); i++) {
		struct vm_size_need need = { datas[i], 15000 };
		struct vm_geometry g;

		vm_size_auto(&need, &g);
		assert_true(g.inodes >= need.inodes);
		assert_true(g.blocks >=
			    need.data_blocks +
				    vm_size_overhead(g.blocks, g.inodes));
		/* Within 1.15x of the data plus fixed overhead. */
		assert_true(g.blocks <=
			    need.data_blocks * 115 / 100 +
				    vm_size_overhead(g.blocks, g.inodes) + 512);
	}
}

static void test_parse_size(void **state)
{
	uint64_t b = 1;

	assert_int_equal(vm_parse_size("auto", &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(vm_parse_size("4096", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(vm_parse_size("512M", &b), 0);
	assert_int_equal(b, 512ull << 20);
	assert_int_equal(vm_parse_size("2GiB", &b), 0);
	assert_int_equal(b, 2ull << 30);
	assert_int_equal(vm_parse_size("1k", &b), 0);
	assert_int_equal(b, 1024);
	assert_int_equal(vm_parse_size("", &b), -EINVAL);
	assert_int_equal(vm_parse_size("-1M", &b), -EINVAL);
	assert_int_equal(vm_parse_size("12X", &b), -EINVAL);
	assert_int_equal(vm_parse_size("1MM", &b), -EINVAL);
	assert_int_equal(vm_parse_size("99999999999999999999", &b), -EINVAL);
	assert_int_equal(vm_parse_size("17179869184T", &b), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_super_groups),
		cmocka_unit_test(test_overhead_one_group),
		cmocka_unit_test(test_auto_size_holds_and_is_tight),
		cmocka_unit_test(test_parse_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
