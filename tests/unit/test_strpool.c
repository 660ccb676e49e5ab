// SPDX-License-Identifier: Apache-2.0
/*
 * test_strpool.c - unit tests of interned strings (common/strpool.c):
 * equal strings give one pointer, distinct ones distinct pointers, among
 * 20,000 of them; the count and the bytes held; long strings in
 * chunks of their own; the empty string; a freed pool usable again.
 *
 * The bytes held are the strings', not a malloc header each; strings of
 * 100,000 bytes differing in their last byte are kept apart, the chunk being
 * filled going on after them.  Each case runs again in a hashed pool
 * (json-c's table): the same answers, at most 128 bytes a name beyond its
 * own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strpool.h"

#define N 20000

/* The state, when given, says the pool is hashed. */
static bool hashed(void **state)
{
	return *state && *(const bool *)*state;
}

static const bool yes = true;

static void same_pointer_for_equal_strings(void **state)
{
	struct vm_strpool p = { .hashed = hashed(state) };
	const char **kept = calloc(N, sizeof(*kept));
	char buf[32];

	assert_non_null(kept);
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "fn_%d", i);
		kept[i] = vm_strpool_intern(&p, buf);
		assert_non_null(kept[i]);
		assert_string_equal(kept[i], buf);
		assert_ptr_not_equal(kept[i], buf);
	}
	assert_int_equal(p.count, N);
	/* Asked again, once all are held: the same copies. */
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof(buf), "fn_%d", i);
		assert_ptr_equal(vm_strpool_intern(&p, buf), kept[i]);
	}
	assert_int_equal(p.count, N);
	/*
	 * At least the strings' bytes, and not a malloc header each; a
	 * hash table's entries (40 bytes, at most two thirds used) more.
	 */
	assert_true(p.bytes >= (size_t)N * 6);
	assert_true(p.bytes < (size_t)N * (p.hashed ? 128 : 64));
	vm_strpool_free(&p);
	assert_int_equal(p.count, 0);
	assert_int_equal(p.bytes, 0);
	free(kept);
}

static void long_and_empty_strings(void **state)
{
	struct vm_strpool p = { .hashed = hashed(state) };
	size_t len = 100000;
	char *big = malloc(len + 1);
	const char *a, *b, *e, *small;

	assert_non_null(big);
	memset(big, 'x', len);
	big[len] = '\0';
	small = vm_strpool_intern(&p, "small");
	a = vm_strpool_intern(&p, big);
	big[len - 1] = 'y'; /* differs only in its last byte */
	b = vm_strpool_intern(&p, big);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal(strlen(a), len);
	assert_int_equal(a[len - 1], 'x');
	assert_int_equal(b[len - 1], 'y');
	/* The chunk being filled goes on after a long string's own. */
	assert_ptr_equal(vm_strpool_intern(&p, "small"), small);
	assert_true(vm_strpool_intern(&p, "small2") - small < 4096);
	e = vm_strpool_intern(&p, "");
	assert_non_null(e);
	assert_string_equal(e, "");
	assert_ptr_equal(vm_strpool_intern(&p, ""), e);
	assert_int_equal(p.count, 5);
	assert_true(p.bytes >= 2 * len);
	vm_strpool_free(&p);
	/* Usable again after free. */
	assert_string_equal(vm_strpool_intern(&p, "again"), "again");
	assert_int_equal(p.count, 1);
	vm_strpool_free(&p);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_pointer_for_equal_strings),
		cmocka_unit_test(long_and_empty_strings),
		cmocka_unit_test_prestate(same_pointer_for_equal_strings,
					  (void *)&yes),
		cmocka_unit_test_prestate(long_and_empty_strings, (void *)&yes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
