// SPDX-License-Identifier: Apache-2.0
/*
 * test_kallsyms.c - unit tests of agent/symbolize/kallsyms.c: parsing
 * /proc/kallsyms text (functions kept, data and garbage skipped, module
 * names), lookups, and -EPERM when kptr_restrict hides the addresses.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/symbolize/kallsyms.h"

static void test_kallsyms(void **state)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t do_one\n"
				   "ffffffff81000200 D some_data\n"
				   "ffffffff81000300 W weak_fn\n"
				   "ffffffffc0000000 t mod_fn\t[e1000]\n"
				   "garbage line\n"
				   "ffffffff81000050 T early_fn\n";
	struct vm_kallsyms k;
	const struct vm_ksym *s;
	char *copy = strdup(text);

	(void)state;
	assert_int_equal(vm_kallsyms_parse(copy, &k, NULL), 0);
	assert_int_equal(k.n, 5); /* no data symbol, no garbage */
	s = vm_kallsyms_lookup(&k, 0xffffffff81000120);
	assert_non_null(s);
	assert_string_equal(s->name, "do_one");
	s = vm_kallsyms_lookup(&k, 0xffffffff81000060);
	assert_string_equal(s->name, "early_fn");
	s = vm_kallsyms_lookup(&k, 0xffffffffc0000010);
	assert_string_equal(s->name, "mod_fn");
	assert_string_equal(s->module, "e1000");
	assert_null(vm_kallsyms_lookup(&k, 0x1000));
	vm_kallsyms_free(&k);

	/* kptr_restrict: every address reads 0. */
	copy = strdup("0000000000000000 T _stext\n0000000000000000 t x\n");
	assert_int_equal(vm_kallsyms_parse(copy, &k, NULL), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
