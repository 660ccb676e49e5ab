// SPDX-License-Identifier: Apache-2.0
/*
 * test_binaries.c - unit tests of agent/binaries/binaries.c, the home of
 * what is known per binary: one entry per file identity (another inode,
 * size or mtime is another entry), facets of one entry shared by every
 * holder and filled once (a racing second fill freed), the bound evicting
 * entries no one holds and never those held, a facet over the bound
 * skipped, freed and listed, and the entries bounded in number.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/binaries/binaries.h"

static int freed;

static void count_free(void *data)
{
	freed++;
	free(data);
}

static struct vm_binary_key key(uint64_t ino)
{
	return (struct vm_binary_key){
		.dev = 8, .ino = ino, .size = 1000, .mtime_ns = 5
	};
}

static void one_entry_per_identity(void **state)
{
	struct vm_binaries *h = vm_binaries_new(NULL);
	struct vm_binary_key k = key(1), other = k;
	struct vm_binary *a, *b, *c;
	struct vm_binaries_stats st;

	a = vm_binaries_hold(h, &k);
	b = vm_binaries_hold(h, &k);
	assert_non_null(a);
	assert_ptr_equal(a, b);
	/* The same inode rewritten is another file. */
	other.mtime_ns++;
	c = vm_binaries_hold(h, &other);
	assert_ptr_not_equal(a, c);
	other = k;
	other.size++;
	vm_binaries_put(h, c);
	c = vm_binaries_hold(h, &other);
	assert_ptr_not_equal(a, c);
	vm_binaries_stats(h, &st);
	assert_int_equal(st.entries, 3);
	vm_binaries_put(h, a);
	vm_binaries_put(h, b);
	vm_binaries_put(h, c);
	vm_binaries_free(h);
}

static void facets_shared(void **state)
{
	struct vm_binaries *h = vm_binaries_new(NULL);
	struct vm_binary_key k = key(1);
	struct vm_binary *a = vm_binaries_hold(h, &k);
	struct vm_binary *b = vm_binaries_hold(h, &k);
	struct vm_binaries_stats st;
	void *mine = malloc(16), *theirs = malloc(16), *got;

	freed = 0;
	assert_false(vm_binary_facet(h, a, VM_BINARY_UNWIND, &got));
	assert_int_equal(vm_binary_fill(h, a, VM_BINARY_UNWIND, mine, 100,
					count_free, "table", "/bin/a", &got),
			 0);
	assert_ptr_equal(got, mine);
	/* A second fill that raced the first is freed; the first stays. */
	assert_int_equal(vm_binary_fill(h, b, VM_BINARY_UNWIND, theirs, 100,
					count_free, "table", "/bin/a", &got),
			 0);
	assert_ptr_equal(got, mine);
	assert_int_equal(freed, 1);
	assert_true(vm_binary_facet(h, b, VM_BINARY_UNWIND, &got));
	assert_ptr_equal(got, mine);
	/* Other facets are still to fill; none is an answer too. */
	assert_false(vm_binary_facet(h, b, VM_BINARY_SYMBOLS, &got));
	assert_int_equal(vm_binary_fill(h, b, VM_BINARY_PG, NULL, 0, NULL,
					"facts", "/bin/a", NULL),
			 0);
	assert_true(vm_binary_facet(h, a, VM_BINARY_PG, &got));
	assert_null(got);
	vm_binaries_stats(h, &st);
	assert_int_equal(st.bytes, 100);
	assert_int_equal(st.facet[VM_BINARY_UNWIND].filled, 1);
	assert_int_equal(st.facet[VM_BINARY_UNWIND].fills, 1);
	assert_int_equal(st.facet[VM_BINARY_UNWIND].hits, 1);
	assert_int_equal(st.facet[VM_BINARY_PG].filled, 0);
	vm_binaries_put(h, a);
	vm_binaries_put(h, b);
	vm_binaries_free(h);
	assert_int_equal(freed, 2);
}

/* Hold the entry of inode ino and fill its symbols with bytes. */
static struct vm_binary *filled(struct vm_binaries *h, uint64_t ino,
				size_t bytes, int *r)
{
	struct vm_binary_key k = key(ino);
	struct vm_binary *b = vm_binaries_hold(h, &k);

	assert_non_null(b);
	*r = vm_binary_fill(h, b, VM_BINARY_SYMBOLS, malloc(8), bytes,
			    count_free, "symbols", "/bin/x", NULL);
	return b;
}

static void bound_evicts_unheld(void **state)
{
	struct vm_binaries_limits lim = { .max_bytes = 1000 };
	struct vm_binaries *h = vm_binaries_new(&lim);
	struct vm_binary *a, *b, *c, *again;
	struct vm_binaries_stats st;
	void *got;
	int r;

	freed = 0;
	a = filled(h, 1, 400, &r);
	assert_int_equal(r, 0);
	b = filled(h, 2, 400, &r);
	assert_int_equal(r, 0);
	vm_binaries_put(h, a); /* a is the older one unheld */
	vm_binaries_put(h, b);
	b = vm_binaries_hold(h, &(struct vm_binary_key){ 8, 2, 1000, 5 });
	c = filled(h, 3, 400, &r);
	assert_int_equal(r, 0);
	assert_int_equal(freed, 1); /* a's */
	vm_binaries_stats(h, &st);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.bytes, 800);
	/* b and c held: the next does not fit, and nothing of theirs goes. */
	again = filled(h, 4, 400, &r);
	assert_int_equal(r, -EFBIG);
	assert_int_equal(freed, 2); /* the one skipped */
	assert_false(vm_binary_facet(h, again, VM_BINARY_SYMBOLS, &got));
	assert_true(vm_binary_facet(h, b, VM_BINARY_SYMBOLS, &got));
	assert_true(vm_binary_facet(h, c, VM_BINARY_SYMBOLS, &got));
	vm_binaries_put(h, again);
	vm_binaries_put(h, b);
	vm_binaries_put(h, c);
	vm_binaries_free(h);
}

static void over_bound_skipped_and_listed(void **state)
{
	struct vm_binaries_limits lim = { .max_bytes = 1000 };
	struct vm_binaries *h = vm_binaries_new(&lim);
	struct vm_binary_key k = key(1);
	struct vm_binary *b = vm_binaries_hold(h, &k);
	struct vm_binaries_skip skip[4];
	struct vm_binaries_stats st;
	size_t n;

	freed = 0;
	assert_int_equal(vm_binary_fill(h, b, VM_BINARY_UNWIND, malloc(8), 2000,
					count_free, "unwind table", "/opt/big",
					NULL),
			 -EFBIG);
	assert_int_equal(freed, 1);
	vm_binaries_skip(h, VM_BINARY_SYMBOLS, "/opt/other", "too many");
	vm_binaries_skipped(h, VM_BINARY_FACETS, skip, 4, &n);
	assert_int_equal(n, 2);
	assert_string_equal(skip[0].file, "/opt/other"); /* newest first */
	assert_string_equal(skip[1].file, "/opt/big");
	assert_non_null(strstr(skip[1].reason, "unwind table (2000 bytes)"));
	vm_binaries_skipped(h, VM_BINARY_UNWIND, skip, 4, &n);
	assert_int_equal(n, 1);
	assert_string_equal(skip[0].file, "/opt/big");
	vm_binaries_stats(h, &st);
	assert_int_equal(st.facet[VM_BINARY_UNWIND].skipped, 1);
	assert_int_equal(st.facet[VM_BINARY_SYMBOLS].skipped, 1);
	assert_int_equal(st.bytes, 0);
	/* What is left for a reader that stops at a bound. */
	assert_int_equal(vm_binaries_room(h, 5000), 1000);
	vm_binaries_put(h, b);
	vm_binaries_free(h);
}

static void entries_bounded(void **state)
{
	struct vm_binaries_limits lim = { .max_entries = 2 };
	struct vm_binaries *h = vm_binaries_new(&lim);
	struct vm_binary_key k1 = key(1), k2 = key(2), k3 = key(3);
	struct vm_binary *a = vm_binaries_hold(h, &k1);
	struct vm_binary *b = vm_binaries_hold(h, &k2);
	struct vm_binaries_stats st;

	/* Both held: no room for a third. */
	assert_null(vm_binaries_hold(h, &k3));
	vm_binaries_put(h, a);
	a = vm_binaries_hold(h, &k3);
	assert_non_null(a);
	vm_binaries_stats(h, &st);
	assert_int_equal(st.entries, 2);
	vm_binaries_put(h, a);
	vm_binaries_put(h, b);
	vm_binaries_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_entry_per_identity),
		cmocka_unit_test(facets_shared),
		cmocka_unit_test(bound_evicts_unheld),
		cmocka_unit_test(over_bound_skipped_and_listed),
		cmocka_unit_test(entries_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
