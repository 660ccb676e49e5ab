// SPDX-License-Identifier: Apache-2.0
/*
 * test_http_addr.c - unit tests of agent/serve/http_addr.c: the --listen
 * argument (IPv4, IPv6, an empty host) and whether it is loopback, and
 * the message for each malformed one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "agent/serve/http.h"

static void test_listen(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct vm_error err = { 0 };
	socklen_t len;

	assert_int_equal(
		vm_http_parse_listen("127.0.0.1:3080", &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(in4->sin_port), 3080);
	assert_int_equal(len, sizeof(*in4));
	assert_true(vm_http_is_loopback(&ss));

	assert_int_equal(vm_http_parse_listen("0.0.0.0:0", &ss, &len, &err), 0);
	assert_false(vm_http_is_loopback(&ss));
	assert_int_equal(vm_http_parse_listen("10.1.2.3:80", &ss, &len, &err),
			 0);
	assert_false(vm_http_is_loopback(&ss));

	assert_int_equal(vm_http_parse_listen(":3080", &ss, &len, &err), 0);
	assert_true(vm_http_is_loopback(&ss));

	assert_int_equal(vm_http_parse_listen("[::1]:8080", &ss, &len, &err),
			 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(in6->sin6_port), 8080);
	assert_true(vm_http_is_loopback(&ss));
	assert_int_equal(vm_http_parse_listen("[::]:8080", &ss, &len, &err), 0);
	assert_false(vm_http_is_loopback(&ss));

	static const char *const bad[] = {
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:65536",
		"127.0.0.1:-1",
		"127.0.0.1:80x",
		"localhost:3080",
		"::1:3080",
		"[::1]3080",
		"[127.0.0.1]:80",
		"1.2.3.4.5:80",
		"",
		"[::1]:",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vm_error_clear(&err);
		if (vm_http_parse_listen(bad[i], &ss, &len, &err) != -EINVAL)
			fail_msg("--listen '%s' was accepted", bad[i]);
		assert_non_null(strstr(err.msg, "ADDR:PORT"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
