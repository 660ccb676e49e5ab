// SPDX-License-Identifier: Apache-2.0
/*
 * test_http_access.c - unit tests of agent/serve/http_access.c: root and
 * the agent's own user may use the API, others only through
 * --allow-user (a uid or a name), and the refusal says who may and how to
 * let the user in.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "agent/serve/http.h"

static void test_allows(void **state)
{
	struct vm_http_access a = { .self = 0 };
	struct vm_error err = { 0 };
	char name[32];

	assert_true(vm_http_access_allows(&a, 0));
	assert_false(vm_http_access_allows(&a, 65534));
	a.self = 1000;
	assert_true(vm_http_access_allows(&a, 1000));
	assert_true(vm_http_access_allows(&a, 0));
	assert_false(vm_http_access_allows(&a, 1001));

	assert_int_equal(vm_http_access_add_user(&a, "65534", &err), 0);
	assert_true(vm_http_access_allows(&a, 65534));
	assert_int_equal(vm_http_access_add_user(&a, "root", &err), 0);
	assert_int_equal(a.allowed[1], 0);

	assert_int_equal(vm_http_access_add_user(&a, "no-such-user-c27", &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "'no-such-user-c27' is not a user"));
	vm_error_clear(&err);
	assert_int_equal(vm_http_access_add_user(&a, "-1", &err), -ENOENT);
	vm_error_clear(&err);
	while (a.n_allowed < VM_HTTP_MAX_ALLOWED_USERS) {
		snprintf(name, sizeof(name), "%zu", 2000 + a.n_allowed);
		assert_int_equal(vm_http_access_add_user(&a, name, &err), 0);
	}
	assert_int_equal(vm_http_access_add_user(&a, "3000", &err), -E2BIG);
}

static void test_refusal(void **state)
{
	struct vm_http_access a = { .self = 0 };
	struct vm_error err = { 0 };

	vm_http_access_refusal(&a, 65534, &err);
	assert_string_equal(
		err.msg,
		"from inside this machine, only root may use this agent, and this connection is from uid 65534: send the request as root (e.g. with sudo), or let this user in with `vmtools-agent serve --allow-user 65534`");
	a.n_allowed = 1;
	vm_error_clear(&err);
	vm_http_access_refusal(&a, 7, &err);
	assert_non_null(strstr(
		err.msg, "only root and the users of --allow-user may use"));
	a.self = 1000;
	vm_error_clear(&err);
	vm_http_access_refusal(&a, 7, &err);
	assert_non_null(strstr(
		err.msg,
		"only root, uid 1000 (the agent's own user) and the users of --allow-user may use this agent, and this connection is from uid 7"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allows),
		cmocka_unit_test(test_refusal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
