// SPDX-License-Identifier: Apache-2.0
/*
 * test_perf_locate.c - unit tests of finding the perf binary
 * (agent/profile/perf/perf_locate.c): --perf first and only, then the
 * tools image's manifest under the mountpoint, then PATH, and a clear
 * error naming where we looked.  Real files in a temporary directory; the manifest is written
 * with the project's own writer (common/manifest.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/profile/engine.h"
#include "common/manifest.h"

static char root[256];

static void make_exe(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0755);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
}

static void write_manifest(const char *mnt)
{
	struct vm_manifest *m = vm_manifest_new();
	char path[1024], *json = NULL;
	size_t len = 0;
	FILE *f;

	assert_non_null(m);
	assert_int_equal(vm_manifest_set_info(m, "6.1.0-test", "x86_64", 1,
					      "vm-tools", "test"),
			 0);
	assert_int_equal(vm_manifest_add_tool(m, "perf", "/bin/perf",
					      "/lib/vmtools/perf/perf", NULL,
					      0),
			 0);
	assert_int_equal(vm_manifest_serialize(m, &json, &len, NULL), 0);
	snprintf(path, sizeof(path), "%s/.vmtools", mnt);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s%s", mnt, VM_MANIFEST_PATH);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(json, 1, len, f), len);
	fclose(f);
	free(json);
	vm_manifest_free(m);
}

static int setup(void **state)
{
	char path[512];

	snprintf(root, sizeof(root), "/tmp/vmtools-locate.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(path, sizeof(path), "%s/mnt", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/mnt/bin", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/pathdir", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/empty", root);
	mkdir(path, 0755);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_override_only(void **state)
{
	struct vm_error err = { 0 };
	char path[512], *out = NULL;

	char empty[400],
		*saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;

	snprintf(empty, sizeof(empty), "%s/empty", root);
	setenv("PATH", empty, 1);
	snprintf(path, sizeof(path), "%s/mine", root);
	assert_int_equal(vm_perf_locate(path, empty, &out, &err), -ENOENT);
	assert_null(out);
	assert_non_null(strstr(err.msg, "--perf"));
	assert_non_null(strstr(err.msg, path));
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	make_exe(path);
	assert_int_equal(vm_perf_locate(path, NULL, &out, NULL), 0);
	assert_string_equal(out, path);
	free(out);
}

static void test_manifest_then_path(void **state)
{
	struct vm_error err = { 0 };
	char mnt[400], dir[400], want[600], empty[400], *out = NULL;
	char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;

	snprintf(mnt, sizeof(mnt), "%s/mnt", root);
	snprintf(dir, sizeof(dir), "%s/pathdir", root);
	snprintf(empty, sizeof(empty), "%s/empty", root);
	setenv("PATH", dir, 1);

	/* Nothing anywhere: the error says where we looked. */
	assert_int_equal(vm_perf_locate(NULL, empty, &out, &err), -ENOENT);
	assert_non_null(strstr(err.msg, empty));
	assert_non_null(strstr(err.msg, "PATH"));

	/* On PATH only. */
	snprintf(want, sizeof(want), "%s/perf", dir);
	make_exe(want);
	assert_int_equal(vm_perf_locate(NULL, mnt, &out, NULL), 0);
	assert_string_equal(out, want);
	free(out);

	/* The image's launcher wins over PATH. */
	write_manifest(mnt);
	snprintf(want, sizeof(want), "%s/bin/perf", mnt);
	make_exe(want);
	assert_int_equal(vm_perf_locate(NULL, mnt, &out, NULL), 0);
	assert_string_equal(out, want);
	free(out);

	/* A bare name or a missing --perf path is no choice: same search. */
	snprintf(want, sizeof(want), "%s/bin/perf", mnt);
	assert_int_equal(vm_perf_locate("perf", mnt, &out, NULL), 0);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(vm_perf_locate("/nonexistent/perf", mnt, &out, NULL),
			 0);
	assert_string_equal(out, want);
	free(out);

	/* A launcher that is not executable is skipped. */
	chmod(want, 0644);
	assert_int_equal(vm_perf_locate(NULL, mnt, &out, NULL), 0);
	snprintf(want, sizeof(want), "%s/perf", dir);
	assert_string_equal(out, want);
	free(out);

	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_override_only),
		cmocka_unit_test(test_manifest_then_path),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
