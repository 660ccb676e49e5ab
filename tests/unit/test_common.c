// SPDX-License-Identifier: Apache-2.0
/*
 * test_common.c - unit tests of common/: error recording, SHA-256 and
 * libraries opened at run time.
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

#include "common/dl.h"
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

static void test_sha256_equal(void **state)
{
	char a[VM_SHA256_HEX_LEN], b[VM_SHA256_HEX_LEN];

	(void)state;
	assert_int_equal(vm_sha256_hex("token", 5, a), 0);
	assert_int_equal(vm_sha256_hex("token", 5, b), 0);
	assert_true(vm_sha256_hex_equal(a, b));
	assert_int_equal(vm_sha256_hex("tokeN", 5, b), 0);
	assert_false(vm_sha256_hex_equal(a, b));
	/* A digest that was not computed never matches, itself included. */
	b[0] = '\0';
	assert_false(vm_sha256_hex_equal(b, b));
}

static const char *(*fake_version)(void);
static void *fake_missing;

static void test_dl_load(void **state)
{
	const struct vm_dl_func zlib_funcs[] = {
		VM_DL_FUNC(zlibVersion, fake_version),
	};
	const struct vm_dl_func partial_funcs[] = {
		VM_DL_FUNC(zlibVersion, fake_version),
		VM_DL_FUNC(vm_no_such_function, fake_missing),
	};
	const struct vm_dl_func none[] = { 0 };
	struct vm_dl zlib = { .soname = "libz.so.1",
			      .funcs = zlib_funcs,
			      .n_funcs = 1 };
	struct vm_dl partial = { .soname = "libz.so.1",
				 .funcs = partial_funcs,
				 .n_funcs = 2 };
	struct vm_dl absent = { .soname = "libvmtools-absent.so.0",
				.funcs = none,
				.n_funcs = 0 };
	struct vm_error err = { 0 };

	(void)state;
	assert_int_equal(vm_dl_load(&zlib, &err), 0);
	assert_non_null(fake_version);
	assert_int_equal(fake_version()[0], '1'); /* "1.2.13" */
	assert_int_equal(vm_dl_load(&zlib, &err), 0); /* once, then quickly */

	/* All or nothing: no pointer is left half resolved. */
	fake_version = NULL;
	assert_int_equal(vm_dl_load(&partial, &err), -ENOENT);
	assert_null(fake_version);
	assert_null(fake_missing);
	assert_non_null(strstr(vm_error_str(&err), "vm_no_such_function"));

	memset(&err, 0, sizeof(err));
	assert_int_equal(vm_dl_load(&absent, &err), -ENOENT);
	assert_non_null(strstr(vm_error_str(&err), "libvmtools-absent.so.0"));
	/* The answer is kept. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(vm_dl_load(&absent, &err), -ENOENT);
	assert_non_null(strstr(vm_error_str(&err), "install"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_first_wins),
		cmocka_unit_test(test_error_errno_suffix),
		cmocka_unit_test(test_sha256_known_vectors),
		cmocka_unit_test(test_sha256_file),
		cmocka_unit_test(test_sha256_equal),
		cmocka_unit_test(test_dl_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
