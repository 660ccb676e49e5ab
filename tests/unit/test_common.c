// SPDX-License-Identifier: Apache-2.0
/*
 * test_common.c - unit tests of common/: error recording and SHA-256.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/error.h"
#include "common/sha256.h"

static void test_error_first_wins(void **state)
{
	struct vm_error err = { 0 };

	assert_int_equal(vm_error_set(&err, ENOENT, "no disk labelled %s",
				      "vm-tools"),
			 -ENOENT);
	assert_int_equal(vm_error_set(&err, -EIO, "later"), -EIO);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(vm_error_str(&err), "no disk labelled vm-tools");
	vm_error_clear(&err);
	assert_int_equal(err.code, 0);
	assert_string_equal(vm_error_str(&err), "no error");
}

static void test_error_errno_suffix(void **state)
{
	struct vm_error err = { 0 };

	vm_error_errno(&err, EACCES, "cannot open %s", "/x");
	assert_string_equal(err.msg, "cannot open /x: Permission denied");
	assert_int_equal(vm_error_set(NULL, 0, "ignored"), -EIO);
}

static void test_sha256_known_vectors(void **state)
{
	char hex[VM_SHA256_HEX_LEN];

	vm_sha256_hex("", 0, hex);
	assert_string_equal(
		hex,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	vm_sha256_hex("abc", 3, hex);
	assert_string_equal(
		hex,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_sha256_file(void **state)
{
	char path[] = "/tmp/vmtools-sha-XXXXXX", hex[VM_SHA256_HEX_LEN];
	struct vm_error err = { 0 };
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	assert_int_equal(vm_sha256_file(path, hex, &err), 0);
	assert_string_equal(
		hex,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	unlink(path);
	assert_int_equal(vm_sha256_file(path, hex, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_first_wins),
		cmocka_unit_test(test_error_errno_suffix),
		cmocka_unit_test(test_sha256_known_vectors),
		cmocka_unit_test(test_sha256_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
