// SPDX-License-Identifier: Apache-2.0
/*
 * test_http_framing.c - unit tests of agent/serve/http_framing.c: the
 * request target (control bytes raw or percent-encoded) and the headers
 * that frame a body (one Content-Length of digits, Transfer-Encoding
 * chunked alone, never both, no control byte in a name or a value), each
 * refusal with the status it becomes and a sentence naming the header.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/serve/http_framing.h"

#define H(name, value)                                           \
	{                                                        \
		name, sizeof(name) - 1, value, sizeof(value) - 1 \
	}

static int check(const struct vm_http_header *h, size_t n,
		 struct vm_http_framing *f, struct vm_error *err)
{
	vm_error_clear(err);
	return vm_http_check_headers(h, n, f, err);
}

static int target(const char *t, struct vm_error *err)
{
	vm_error_clear(err);
	return vm_http_check_target(t, strlen(t), err);
}

static void test_target(void **state)
{
	struct vm_error err = { 0 };

	assert_int_equal(target("/profile/cpu", &err), 0);
	assert_int_equal(target("/debug/pprof/profile?seconds=2", &err), 0);
	assert_int_equal(target("/x%ff%20y%2F%", &err), 0);
	assert_int_equal(target("/profile/cpu%00x", &err), -EBADMSG);
	assert_non_null(
		strstr(err.msg, "control character (byte 0x00) at byte 12"));
	assert_int_equal(target("/x%0a2026Z", &err), -EBADMSG);
	assert_int_equal(target("/x%1B[31m", &err), -EBADMSG);
	assert_int_equal(target("/x%7f", &err), -EBADMSG);
	assert_int_equal(target("/?seconds=%09", &err), -EBADMSG);
	assert_int_equal(target("/x\x01y", &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "byte 0x01"));
	/* A percent sign without two hex digits is not an escape. */
	assert_int_equal(target("/%0", &err), 0);
	assert_int_equal(target("/%g0", &err), 0);
}

static void test_lengths(void **state)
{
	struct vm_http_header one[] = { H("Host", "x"),
					H("Content-Length", " 42 ") };
	struct vm_http_header two[] = { H("Content-Length", "2"),
					H("content-length", "60") };
	struct vm_http_header same[] = { H("Content-Length", "2"),
					 H("Content-Length", "2") };
	struct vm_http_header list[] = { H("Content-Length", "2, 2") };
	struct vm_http_header sign[] = { H("Content-Length", "+2") };
	struct vm_http_header empty[] = { H("Content-Length", "") };
	struct vm_http_header huge[] = { H("Content-Length",
					   "99999999999999999999999") };
	struct vm_http_framing f;
	struct vm_error err = { 0 };

	assert_int_equal(check(one, 2, &f, &err), 0);
	assert_true(f.has_length);
	assert_int_equal(f.length, 42);
	assert_false(f.chunked);
	assert_int_equal(check(one, 1, &f, &err), 0);
	assert_false(f.has_length);

	assert_int_equal(check(two, 2, &f, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "more than one Content-Length"));
	assert_int_equal(check(same, 2, &f, &err), -EBADMSG);
	assert_int_equal(check(list, 1, &f, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "(digits only); got '2, 2'"));
	assert_int_equal(check(sign, 1, &f, &err), -EBADMSG);
	assert_int_equal(check(empty, 1, &f, &err), -EBADMSG);
	/* Over any limit, not wrapped round to a small one. */
	assert_int_equal(check(huge, 1, &f, &err), 0);
	assert_int_equal(f.length, UINT64_MAX);
}

static void test_codings(void **state)
{
	struct vm_http_header chunked[] = { H("Transfer-Encoding", "Chunked") };
	struct vm_http_header gzip[] = { H("Transfer-Encoding", "gzip") };
	struct vm_http_header both[] = { H("Transfer-Encoding",
					   "gzip, chunked") };
	struct vm_http_header twice[] = { H("Transfer-Encoding", "chunked"),
					  H("Transfer-Encoding", "chunked") };
	struct vm_http_header mixed[] = { H("Transfer-Encoding", "chunked"),
					  H("Content-Length", "5") };
	struct vm_http_framing f;
	struct vm_error err = { 0 };

	assert_int_equal(check(chunked, 1, &f, &err), 0);
	assert_true(f.chunked);
	assert_int_equal(check(gzip, 1, &f, &err), -EOPNOTSUPP);
	assert_non_null(strstr(err.msg, "'gzip' is not implemented"));
	assert_int_equal(check(both, 1, &f, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "'gzip, chunked' combines codings"));
	assert_int_equal(check(twice, 2, &f, &err), -EBADMSG);
	assert_int_equal(check(mixed, 2, &f, &err), -EBADMSG);
	assert_non_null(
		strstr(err.msg, "both Content-Length and Transfer-Encoding"));
}

static void test_controls(void **state)
{
	struct vm_http_header tab[] = { H("X-A", "a\tb") };
	struct vm_http_header esc[] = { H("X-A", "a\x1b[31m") };
	struct vm_http_header nul[] = { H("X-A", "a\0b") };
	struct vm_http_header name[] = { H("X\x01"
					   "A",
					   "a") };
	struct vm_http_framing f;
	struct vm_error err = { 0 };

	assert_int_equal(check(tab, 1, &f, &err), 0);
	assert_int_equal(check(esc, 1, &f, &err), -EBADMSG);
	assert_non_null(
		strstr(err.msg, "X-A has a control character (byte 0x1b)"));
	assert_int_equal(check(nul, 1, &f, &err), -EBADMSG);
	assert_int_equal(check(name, 1, &f, &err), -EBADMSG);
	/* The name is quoted back escaped: the message stays one line. */
	assert_non_null(strstr(err.msg, "'X\\x01A'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_codings),
		cmocka_unit_test(test_controls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
