// SPDX-License-Identifier: Apache-2.0
/*
 * test_memo.c - unit tests of the direct-mapped memo (common/memo.c): a
 * value put is found again until another key takes its slot, a lookup
 * never answers another key's value (100,000 keys in 1,024 slots, keys
 * differing in one word only), 0 is never stored, a memo without slots
 * (no memory) finds nothing and takes nothing.
 *
 * The content key (vm_memo_bytes_key) is the same for the same bytes
 * wherever they are, and another for other bytes or lengths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/memo.h"

#define N 100000

/* The value the tests put for key i: never 0. */
static uint64_t value_of(uint64_t i)
{
	return i * 7 + 1;
}

static void found_until_replaced(void **state)
{
	struct vm_memo m;
	uint64_t v = 0;

	(void)state;
	assert_int_equal(vm_memo_init(&m, 10), 0);
	assert_false(vm_memo_get(&m, 1, 2, 3, &v));
	vm_memo_put(&m, 1, 2, 3, 42);
	assert_true(vm_memo_get(&m, 1, 2, 3, &v));
	assert_int_equal(v, 42);
	/* Each word of the key counts. */
	assert_false(vm_memo_get(&m, 0, 2, 3, &v));
	assert_false(vm_memo_get(&m, 1, 0, 3, &v));
	assert_false(vm_memo_get(&m, 1, 2, 0, &v));
	vm_memo_put(&m, 1, 2, 3, 43);
	assert_true(vm_memo_get(&m, 1, 2, 3, &v));
	assert_int_equal(v, 43);
	/* 0 means empty: never stored. */
	vm_memo_put(&m, 5, 5, 5, 0);
	assert_false(vm_memo_get(&m, 5, 5, 5, &v));
	vm_memo_free(&m);
	vm_memo_free(&m);
}

static void never_another_keys_value(void **state)
{
	struct vm_memo m;
	size_t found = 0;
	uint64_t v;

	(void)state;
	assert_int_equal(vm_memo_init(&m, 10), 0);
	/* Far more keys than slots, alike but for one word each. */
	for (uint64_t i = 0; i < N; i++) {
		vm_memo_put(&m, 7, i, i & 1, value_of(i));
		assert_true(vm_memo_get(&m, 7, i, i & 1, &v));
		assert_int_equal(v, value_of(i));
	}
	for (uint64_t i = 0; i < N; i++) {
		if (!vm_memo_get(&m, 7, i, i & 1, &v))
			continue;
		assert_int_equal(v, value_of(i));
		found++;
	}
	/* At most one key a slot survives, and the hash spreads them. */
	assert_true(found <= 1024);
	assert_true(found > 512);
	assert_false(vm_memo_get(&m, 7, 3, 0, &v));
	vm_memo_free(&m);
}

static void no_slots_no_answers(void **state)
{
	struct vm_memo m = { 0 };
	uint64_t v = 0;

	(void)state;
	vm_memo_put(&m, 1, 2, 3, 4);
	assert_false(vm_memo_get(&m, 1, 2, 3, &v));
	assert_int_equal(v, 0);
	vm_memo_free(&m);
}

/* The same bytes give the same key wherever they are; others another. */
static void bytes_keys(void **state)
{
	char a[] = "PostgresMain", b[] = "PostgresMain";

	(void)state;
	assert_true(vm_memo_bytes_key(a, strlen(a)) ==
		    vm_memo_bytes_key(b, strlen(b)));
	assert_true(vm_memo_bytes_key(a, strlen(a)) !=
		    vm_memo_bytes_key("PostgresMaim", strlen(a)));
	assert_true(vm_memo_bytes_key(a, strlen(a)) !=
		    vm_memo_bytes_key(a, strlen(a) - 1));
	assert_true(vm_memo_bytes_key("", 0) != vm_memo_bytes_key("\0", 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(found_until_replaced),
		cmocka_unit_test(never_another_keys_value),
		cmocka_unit_test(no_slots_no_answers),
		cmocka_unit_test(bytes_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
