// SPDX-License-Identifier: Apache-2.0
/*
 * test_http_auth.c - unit tests of agent/serve/http_auth.c: the Bearer
 * token check, the Basic password check, and the token file (trimmed,
 * too loose a mode noticed, empty, malformed or missing files refused with
 * their path, a FIFO or a directory refused at once).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/serve/http.h"

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static void test_token_file(void **state)
{
	char dir[] = "/tmp/test_http_auth.XXXXXX", path[128];
	struct vm_error err = { 0 };
	char *token = NULL;
	bool loose;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);

	write_file(path, "  abc123\n", 0600);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err), 0);
	assert_string_equal(token, "abc123");
	assert_false(loose);
	free(token);
	token = NULL;

	write_file(path, "abc123", 0644);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err), 0);
	assert_true(loose);
	free(token);
	token = NULL;

	write_file(path, "\n \n", 0600);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "is empty"));

	vm_error_clear(&err);
	write_file(path, "two words", 0600);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "blank or control"));

	vm_error_clear(&err);
	unlink(path);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, path));
	assert_null(token);
	rmdir(dir);
}

/*
 * A FIFO is refused at once: opening it for reading must not wait for a
 * writer (alarm() ends the test as a failure if it does).
 */
static void test_token_fifo(void **state)
{
	char dir[] = "/tmp/test_http_auth.XXXXXX", path[128];
	struct vm_error err = { 0 };
	char *token = NULL;
	bool loose;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -EINVAL);
	alarm(0);
	assert_non_null(strstr(err.msg, "is not a regular file"));
	assert_non_null(strstr(err.msg, path));
	assert_null(token);

	vm_error_clear(&err);
	assert_int_equal(vm_http_load_token(dir, &token, &loose, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "is not a regular file"));
	unlink(path);
	rmdir(dir);
}

static void test_bearer(void **state)
{
	assert_true(vm_http_check_bearer("Bearer s3cret", "s3cret"));
	assert_true(vm_http_check_bearer("bearer s3cret", "s3cret"));
	assert_true(vm_http_check_bearer("Bearer   s3cret", "s3cret"));
	assert_false(vm_http_check_bearer(NULL, "s3cret"));
	assert_false(vm_http_check_bearer("", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer ", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer s3cre", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer s3crett", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer S3cret", "s3cret"));
	assert_false(vm_http_check_bearer("Basic czNjcmV0", "s3cret"));
	assert_false(vm_http_check_bearer("s3cret", "s3cret"));
}

/* A browser's Basic password (libmicrohttpd decodes the header). */
static void test_password(void **state)
{
	assert_true(vm_http_check_password("s3cret", "s3cret"));
	assert_false(vm_http_check_password(NULL, "s3cret"));
	assert_false(vm_http_check_password("", "s3cret"));
	assert_false(vm_http_check_password("s3cre", "s3cret"));
	assert_false(vm_http_check_password("s3cret ", "s3cret"));
	assert_false(vm_http_check_password("S3CRET", "s3cret"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_password),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_token_fifo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
