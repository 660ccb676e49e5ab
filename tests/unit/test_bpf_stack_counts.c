// SPDX-License-Identifier: Apache-2.0
/*
 * test_bpf_stack_counts.c - unit tests of
 * agent/profile/bpf/bpf_stack_counts.c: identical stack records are
 * counted once with their weights summed, records that differ in any field
 * or frame stay apart, malformed records (sizes that disagree with their
 * frame counts) are refused and counted, and a new record past the memory
 * bound is dropped and counted while known ones still count.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_stack_counts.h"

/* A record of pid/tid with nu user frames and nk kernel frames from base. */
static size_t make(struct stack_record *r, uint32_t tid, uint16_t nu,
		   uint16_t nk, uint64_t base)
{
	memset(r, 0, sizeof(*r));
	r->pid = 10;
	r->tid = tid;
	r->weight = 1;
	strcpy(r->comm, "postgres");
	r->n_user = nu;
	r->n_kernel = nk;
	for (int i = 0; i < nu + nk; i++)
		r->ips[i] = base + i;
	return STACK_RECORD_HEAD + (nu + nk) * sizeof(r->ips[0]);
}

static void test_counts(void **state)
{
	struct vm_stack_counts c;
	struct vm_samples s = { 0 };
	struct stack_record r;
	size_t len;

	(void)state;
	vm_stack_counts_init(&c, 1 << 20);
	len = make(&r, 11, 3, 2, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	r.weight = 4;
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	/* Another thread, another frame, the same frames split otherwise. */
	make(&r, 12, 3, 2, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	make(&r, 11, 3, 2, 0x400000);
	r.ips[4] = 0xffffffff81000000;
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	len = make(&r, 11, 2, 3, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.records, 5);

	assert_int_equal(vm_stack_counts_to_samples(&c, &s), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.v[0].count, 5);
	assert_int_equal(s.v[0].tid, 11);
	assert_int_equal(s.v[0].n_user, 3);
	assert_int_equal(s.v[0].n_kernel, 2);
	assert_int_equal(s.v[0].user_ips[2], 0x400002);
	assert_int_equal(s.v[0].kernel_ips[0], 0x400003);
	assert_string_equal(s.v[0].comm, "postgres");
	assert_int_equal(s.v[2].kernel_ips[1], 0xffffffff81000000);
	assert_int_equal(s.v[3].n_user, 2);
	assert_int_equal(s.v[3].n_kernel, 3);
	vm_samples_free(&s);

	vm_stack_counts_free(&c);
}

static void test_malformed(void **state)
{
	struct vm_stack_counts c;
	struct stack_record r;
	size_t len;

	(void)state;
	vm_stack_counts_init(&c, 1 << 20);
	len = make(&r, 11, 3, 2, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len - 8), -EINVAL);
	assert_int_equal(vm_stack_counts_add(&c, &r, 8), -EINVAL);
	assert_int_equal(vm_stack_counts_add(&c, &r, sizeof(r) + 8), -EINVAL);
	r.n_user = STACK_MAX_DEPTH + 1;
	r.n_kernel = 0;
	assert_int_equal(vm_stack_counts_add(&c, &r,
					     STACK_RECORD_HEAD +
						     (STACK_MAX_DEPTH + 1) * 8),
			 -EINVAL);
	assert_int_equal(c.malformed, 4);
	assert_int_equal(c.n, 0);
	vm_stack_counts_free(&c);
}

static void test_bound(void **state)
{
	struct vm_stack_counts c;
	struct stack_record r;
	size_t len;

	(void)state;
	len = make(&r, 11, 10, 0, 0x400000);
	/* Room for two records of ten frames, not three. */
	vm_stack_counts_init(&c, 2 * (len + 16) + 8);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	make(&r, 12, 10, 0, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	make(&r, 13, 10, 0, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), -E2BIG);
	assert_int_equal(c.dropped, 1);
	/* A record already held still counts. */
	make(&r, 11, 10, 0, 0x400000);
	assert_int_equal(vm_stack_counts_add(&c, &r, len), 0);
	assert_int_equal(c.n, 2);
	assert_true(c.bytes <= c.max_bytes);
	vm_stack_counts_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
