// SPDX-License-Identifier: Apache-2.0
/*
 * test_bpf_read.c - unit tests of agent/profile/bpf/bpf_read.c: the stack
 * cache reads each stack once, however often it is asked for, and treats
 * negative, out-of-range and unreadable stack ids as empty.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_read.h"

/* A fake stack map: stack id i has i + 1 frames 0x1000 * id + depth. */
static int fake_stack(void *ctx, int32_t id, uint64_t *ips)
{
	int *fails = ctx;

	if (id == *fails)
		return -ENOENT;
	for (int32_t d = 0; d <= id && d < PROFILE_MAX_STACK_DEPTH; d++)
		ips[d] = 0x1000 * (uint64_t)id + d + 1;
	return 0;
}

static void test_stack_cache(void **state)
{
	struct vm_stack_cache c;
	const uint64_t *ips, *again;
	int fails = 7;
	uint32_t n;

	(void)state;
	assert_int_equal(vm_stack_cache_init(&c, 300, fake_stack, &fails), 0);
	assert_int_equal(vm_stack_cache_get(&c, 3, &ips, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ips[0], 0x3001);
	assert_int_equal(ips[3], 0x3004);
	/* Read once, however often it is asked for. */
	assert_int_equal(vm_stack_cache_get(&c, 3, &again, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(again[3], 0x3004);
	assert_int_equal(c.reads, 1);
	/* Negative ids (-EEXIST, -EFAULT...) and ids out of range: none. */
	assert_int_equal(vm_stack_cache_get(&c, -17, &ips, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(vm_stack_cache_get(&c, 300, &ips, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(c.reads, 1);
	/* A stack that cannot be read is empty, and not asked for again. */
	assert_int_equal(vm_stack_cache_get(&c, 7, &ips, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(vm_stack_cache_get(&c, 7, &ips, &n), 0);
	assert_int_equal(c.reads, 2);
	/* Many stacks, the full depth: earlier ones stay right. */
	for (int32_t id = 8; id < 300; id++) {
		assert_int_equal(vm_stack_cache_get(&c, id, &ips, &n), 0);
		assert_int_equal(n, id < PROFILE_MAX_STACK_DEPTH ?
					    (uint32_t)id + 1 :
					    PROFILE_MAX_STACK_DEPTH);
		assert_int_equal(ips[n - 1], 0x1000 * (uint64_t)id + n);
	}
	assert_int_equal(vm_stack_cache_get(&c, 3, &ips, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ips[0], 0x3001);
	assert_int_equal(c.reads, 294);
	vm_stack_cache_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
