// SPDX-License-Identifier: Apache-2.0
/*
 * test_intern.c - unit tests of the intern table (common/intern.c): a
 * zeroed one holds C strings, found again by an equal copy with the key
 * and value added; one of another kind holds what its hash and equality
 * say, colliding keys kept apart; nothing is allocated until the first
 * add, and the bytes each add reports sum to what the table takes;
 * freeing hands every key to the caller's free and leaves the table
 * usable again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/intern.h"

#define N 20000

static void strings(void **state)
{
	struct vm_intern t = { 0 };
	char a[] = "PostgresMain", b[] = "PostgresMain";
	unsigned long h = 0;
	void *v = NULL;
	long grew;

	(void)state;
	assert_int_equal(vm_intern_bytes(&t), 0);
	assert_null(vm_intern_find(&t, a, &h, &v));
	assert_int_equal(vm_intern_bytes(&t), 0); /* a lookup makes nothing */
	grew = vm_intern_add(&t, a, (void *)(uintptr_t)7, h);
	assert_true(grew > 0);
	assert_int_equal((size_t)grew, vm_intern_bytes(&t));
	/* An equal string elsewhere finds the key added, and its value. */
	assert_ptr_equal(vm_intern_find(&t, b, &h, &v), a);
	assert_int_equal((uintptr_t)v, 7);
	assert_ptr_equal(vm_intern_find(&t, b, &h, NULL), a);
	assert_null(vm_intern_find(&t, "PostgresMai", &h, NULL));
	assert_null(vm_intern_find(&t, "", &h, NULL));
	/* The hash find leaves is the one the add takes. */
	assert_int_equal(vm_intern_add(&t, "", NULL, h), 0);
	assert_string_equal(vm_intern_find(&t, "", &h, NULL), "");
	vm_intern_free(&t, NULL);
	assert_int_equal(vm_intern_bytes(&t), 0);
	assert_null(vm_intern_find(&t, a, &h, NULL));
}

struct key {
	uint32_t id;
	uint64_t a, b;
};

/* Every key hashes alike: equality alone tells them apart. */
static unsigned long hash_badly(const void *k)
{
	return ((const struct key *)k)->a & 1;
}

static int eq_key(const void *x, const void *y)
{
	const struct key *p = x, *q = y;

	return p->a == q->a && p->b == q->b;
}

static size_t freed;

static void free_key(void *k)
{
	freed++;
	free(k);
}

static void other_kinds(void **state)
{
	struct vm_intern t;
	unsigned long h;
	size_t sum = 0;

	(void)state;
	vm_intern_init(&t, 4, hash_badly, eq_key);
	for (uint32_t i = 0; i < 2000; i++) {
		struct key probe = { .a = i / 10, .b = i % 10 }, *k;
		long grew;

		assert_null(vm_intern_find(&t, &probe, &h, NULL));
		k = malloc(sizeof(*k));
		assert_non_null(k);
		*k = probe;
		k->id = i;
		grew = vm_intern_add(&t, k, NULL, h);
		assert_true(grew >= 0);
		sum += (size_t)grew;
	}
	/* Made at 4 entries, then doubled: counted add by add. */
	assert_int_equal(sum, vm_intern_bytes(&t));
	for (uint32_t i = 0; i < 2000; i++) {
		struct key probe = { .id = UINT32_MAX,
				     .a = i / 10,
				     .b = i % 10 };
		const struct key *k = vm_intern_find(&t, &probe, &h, NULL);

		assert_non_null(k);
		assert_int_equal(k->id, i);
	}
	freed = 0;
	vm_intern_free(&t, free_key);
	assert_int_equal(freed, 2000);
	/* Usable again, of the same kind. */
	{
		struct key k = { .a = 1, .b = 2 }, probe = k;

		assert_null(vm_intern_find(&t, &probe, &h, NULL));
		assert_true(vm_intern_add(&t, &k, NULL, h) > 0);
		probe.id = 9;
		assert_ptr_equal(vm_intern_find(&t, &probe, &h, NULL), &k);
		vm_intern_free(&t, NULL);
	}
}

/* Many strings: each found again, as itself, after the table has grown. */
static void many_strings(void **state)
{
	struct vm_intern t = { 0 };
	char(*names)[16] = calloc(N, sizeof(*names));
	char buf[16];
	unsigned long h;

	(void)state;
	assert_non_null(names);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "fn_%d", i);
		assert_null(vm_intern_find(&t, names[i], &h, NULL));
		assert_true(vm_intern_add(&t, names[i],
					  (void *)(uintptr_t)(i + 1), h) >= 0);
	}
	for (int i = 0; i < N; i++) {
		void *v;

		snprintf(buf, sizeof(buf), "fn_%d", i);
		assert_ptr_equal(vm_intern_find(&t, buf, &h, &v), names[i]);
		assert_int_equal((uintptr_t)v, i + 1);
	}
	/* Two thirds full at most: more entries than strings. */
	assert_true(vm_intern_bytes(&t) > (size_t)N * sizeof(void *));
	vm_intern_free(&t, NULL);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strings),
		cmocka_unit_test(other_kinds),
		cmocka_unit_test(many_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
