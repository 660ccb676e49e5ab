// SPDX-License-Identifier: Apache-2.0
/*
 * test_manifest.c - unit tests of common/manifest.c: round trip, stable
 * bytes, refusal of malformed or hostile manifests, and the size bound.
 *
 * Names that are not UTF-8 are written as base64: and read back byte for
 * byte, raw ones and non-canonical spellings refused; text fields that are
 * not UTF-8 are refused.
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

#include "common/manifest.h"
#include "common/utf8.h"

#define HEX_A "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HEX_B "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static struct vm_manifest *sample(void)
{
	struct vm_manifest *m = vm_manifest_new();
	const char *libs[] = { "/lib/vmtools/perf/lib/libc.so.6",
			       "/lib/vmtools/perf/lib/ld-linux-x86-64.so.2" };

	assert_non_null(m);
	assert_int_equal(vm_manifest_set_info(m, "6.1.0-56-cloud-amd64",
					      "x86_64", 1700000000, "vm-tools",
					      "vmtools-image 0.1.0"),
			 0);
	assert_int_equal(vm_manifest_add_tool(m, "perf", "/bin/perf",
					      "/lib/vmtools/perf/perf", libs,
					      2),
			 0);
	assert_int_equal(
		vm_manifest_add_link(m, "/lib/modules/6.1.0-56-cloud-amd64",
				     "/lib/modules/6.1.0-56-cloud-amd64"),
		0);
	/* Out of order on purpose: serializing sorts. */
	assert_int_equal(vm_manifest_add_file(m, "/usr/b", HEX_B), 0);
	assert_int_equal(vm_manifest_add_file(m, "/lib/a", HEX_A), 0);
	return m;
}

static void test_round_trip(void **state)
{
	_cleanup_manifest_ struct vm_manifest *m = sample(), *back = NULL;
	struct vm_error err = { 0 };
	char *json = NULL, *again = NULL;
	size_t len, len2;

	assert_int_equal(vm_manifest_serialize(m, &json, &len, &err), 0);
	assert_true(strstr(json, "\"format_version\": 1") != NULL);
	assert_true(strstr(json, "/lib/a") < strstr(json, "/usr/b"));
	assert_int_equal(vm_manifest_parse(json, len, &back, &err), 0);
	assert_string_equal(back->kernel_release, "6.1.0-56-cloud-amd64");
	assert_string_equal(back->arch, "x86_64");
	assert_int_equal(back->build_time, 1700000000);
	assert_int_equal(back->n_tools, 1);
	assert_string_equal(back->tools[0].binary, "/lib/vmtools/perf/perf");
	assert_int_equal(back->tools[0].n_libraries, 2);
	assert_int_equal(back->n_links, 1);
	assert_int_equal(back->n_files, 2);
	assert_string_equal(vm_manifest_find_file(back, "/usr/b")->sha256,
			    HEX_B);
	assert_null(vm_manifest_find_file(back, "/usr/c"));
	assert_int_equal(vm_manifest_serialize(back, &again, &len2, &err), 0);
	assert_int_equal(len, len2);
	assert_memory_equal(json, again, len);
	free(json);
	free(again);
}

static void expect_refused(const char *json, const char *words)
{
	struct vm_manifest *m = (struct vm_manifest *)1;
	struct vm_error err = { 0 };

	assert_true(vm_manifest_parse(json, strlen(json), &m, &err) < 0);
	assert_null(m);
	if (!strstr(err.msg, words))
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg,
			 words);
}

#define HEAD                                                                  \
	"{\"format_version\":1,\"kernel_release\":\"r\",\"arch\":\"x86_64\"," \
	"\"build_time\":0,\"label\":\"l\",\"generator\":\"g\","

static void test_refuses_bad_input(void **state)
{
	expect_refused("", "JSON ends early");
	expect_refused("{\"format_version\":1", "JSON ends early");
	expect_refused("[1]", "top level");
	expect_refused("{\"format_version\":2}", "format_version 2");
	expect_refused("{\"format_version\":\"1\"}", "format_version");
	expect_refused(HEAD
		       "\"tools\":[],\"links\":[],\"files\":{\"a\":\"" HEX_A
		       "\"}}",
		       "files key \"a\"");
	expect_refused(
		HEAD "\"tools\":[],\"links\":[],\"files\":{\"/a/../b\":\"" HEX_A
		     "\"}}",
		"/a/../b");
	expect_refused(HEAD
		       "\"tools\":[],\"links\":[],\"files\":{\"/a\":\"ABC\"}}",
		       "sha256");
	expect_refused(
		HEAD
		"\"tools\":[],\"links\":[{\"path\":\"/\",\"target\":\"/x\"}],\"files\":{}}",
		"must not be /");
	expect_refused(
		HEAD
		"\"tools\":[{\"name\":\"../x\",\"path\":\"/bin/x\","
		"\"binary\":\"/b\",\"libraries\":[]}],\"links\":[],\"files\":{}}",
		"plain file name");
	expect_refused(HEAD "\"tools\":[],\"links\":[],\"files\":{}} x",
		       "after the JSON");
	expect_refused(
		"{\"format_version\":1,\"kernel_release\":\"a\\u0000b\"}",
		"NUL");
}

static void test_minimal_accepted(void **state)
{
	const char *json = HEAD "\"tools\":[],\"links\":[],\"files\":{}}\n";
	_cleanup_manifest_ struct vm_manifest *m = NULL;
	struct vm_error err = { 0 };

	assert_int_equal(vm_manifest_parse(json, strlen(json), &m, &err), 0);
	assert_int_equal(m->n_files, 0);
	assert_null(vm_manifest_find_file(m, "/x"));
}

static void test_path_rules(void **state)
{
	assert_true(vm_manifest_path_valid("/"));
	assert_true(vm_manifest_path_valid("/lib/modules/x/.foo"));
	assert_false(vm_manifest_path_valid("lib"));
	assert_false(vm_manifest_path_valid("/lib/"));
	assert_false(vm_manifest_path_valid("/lib//x"));
	assert_false(vm_manifest_path_valid("/lib/./x"));
	assert_false(vm_manifest_path_valid("/.."));
	assert_true(vm_manifest_sha256_valid(HEX_A));
	assert_false(vm_manifest_sha256_valid("e3b0"));
}

static void test_load_missing_file_names_path(void **state)
{
	struct vm_manifest *m = NULL;
	struct vm_error err = { 0 };

	assert_int_equal(vm_manifest_load("/nonexistent/manifest.json", &m,
					  &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/manifest.json"));
}

/* A FIFO where the manifest should be is refused, not waited on. */
static void test_load_fifo_refused(void **state)
{
	char dir[] = "/tmp/vmtools-manifest-XXXXXX", path[64];
	struct vm_manifest *m = NULL;
	struct vm_error err = { 0 };

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(vm_manifest_load(path, &m, &err), -EINVAL);
	assert_null(m);
	assert_non_null(strstr(err.msg, "not a regular file"));
	unlink(path);
	rmdir(dir);
}

/*
 * The bound reserved before the hashes exist holds the manifest once they
 * are listed, and wastes at most 8 bytes a file and 65 more, whatever the
 * paths hold (quotes, backslashes and control characters are escaped).
 */
/*
 * A name that is not UTF-8 (Latin-1 "caf\xe9") is written as base64 and
 * read back byte for byte; the JSON is UTF-8 throughout; a raw one, a
 * base64 spelling of a UTF-8 name and bad base64 are refused.
 */
static void test_names_not_utf8(void **state)
{
	_cleanup_manifest_ struct vm_manifest *m = sample(), *back = NULL;
	struct vm_error err = { 0 };
	char *json = NULL;
	size_t len, bound;

	assert_int_equal(vm_manifest_add_file(m, "/lib/caf\xe9", HEX_A), 0);
	assert_int_equal(vm_manifest_add_file(m, "/lib/ok-\xc3\xa9", HEX_B), 0);
	assert_int_equal(
		vm_manifest_add_link(m, "/usr/src/x\xff", "/usr/src/x\xff"), 0);
	assert_int_equal(vm_manifest_serialized_bound(m, 0, 0, &bound, &err),
			 0);
	assert_int_equal(vm_manifest_serialize(m, &json, &len, &err), 0);
	assert_true(len <= bound);
	assert_true(vm_utf8_valid(json, len));
	assert_non_null(strstr(json, "\"base64:L2xpYi9jYWbp\""));
	assert_non_null(strstr(json, "\"/lib/ok-\xc3\xa9\""));
	assert_int_equal(vm_manifest_parse(json, len, &back, &err), 0);
	assert_non_null(vm_manifest_find_file(back, "/lib/caf\xe9"));
	assert_string_equal(back->links[1].path, "/usr/src/x\xff");
	assert_int_equal(vm_manifest_escaped_len("/lib/caf\xe9"),
			 strlen("base64:L2xpYi9jYWbp"));
	free(json);

	expect_refused(
		HEAD "\"tools\":[],\"links\":[],\"files\":{\"/a\xe9\":\"" HEX_A
		     "\"}}",
		"invalid JSON");
	/* "/abc" in base64: UTF-8 names are written as they are. */
	expect_refused(
		HEAD
		"\"tools\":[],\"links\":[],\"files\":{\"base64:L2FiYw==\":\"" HEX_A
		"\"}}",
		"not the base64 of a name that is not UTF-8");
	expect_refused(
		HEAD
		"\"tools\":[],\"links\":[{\"path\":\"base64:!!!!\",\"target\":\"/a\"}],\"files\":{}}",
		"links[0].path");

	/* Text that is not a path is refused rather than written raw. */
	assert_int_equal(
		vm_manifest_set_info(m, "r", "x86_64", 0, "l\xff", "g"), 0);
	assert_int_equal(vm_manifest_serialize(m, &json, &len, &err), -EILSEQ);
	assert_non_null(strstr(err.msg, "label is not UTF-8"));
}

static void test_serialized_bound(void **state)
{
	static const char *paths[] = {
		"/a",
		"/lib/modules/x/kernel/fs/xfs.ko",
		"/odd/\"quoted\"",
		"/odd/back\\slash",
		"/odd/tab\there",
		"/odd/\x01ctl",
		"/odd/utf8-\xc3\xa9",
	};
	struct vm_manifest *m = sample();
	struct vm_error err = { 0 };
	size_t bytes = 0, bound, len, n = sizeof(paths) / sizeof(paths[0]);
	char *json;

	(void)state;
	for (size_t i = 0; i < m->n_files; i++)
		free(m->files[i].path);
	m->n_files = 0;
	for (size_t i = 0; i < n; i++)
		bytes += vm_manifest_escaped_len(paths[i]);
	assert_int_equal(vm_manifest_escaped_len("a\"b"), 4);
	assert_int_equal(vm_manifest_escaped_len("\x01"), 6);
	assert_int_equal(
		vm_manifest_serialized_bound(m, n, bytes, &bound, &err), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(vm_manifest_add_file(m, paths[i], HEX_A), 0);
	assert_int_equal(vm_manifest_serialize(m, &json, &len, &err), 0);
	assert_true(len <= bound);
	assert_true(bound - len <= 8 * n + 64 + 1); /* + the last comma */
	free(json);
	vm_manifest_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refuses_bad_input),
		cmocka_unit_test(test_minimal_accepted),
		cmocka_unit_test(test_path_rules),
		cmocka_unit_test(test_load_missing_file_names_path),
		cmocka_unit_test(test_load_fifo_refused),
		cmocka_unit_test(test_serialized_bound),
		cmocka_unit_test(test_names_not_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
