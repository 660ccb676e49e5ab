// SPDX-License-Identifier: Apache-2.0
/*
 * test_ui_files.c - unit tests of agent/serve/ui_files.c, how the web UI's
 * files are read from a directory the agent does not trust: which paths
 * may be asked for, the content type of each, which are cached for good,
 * and reading in a temporary directory holding what a hostile tools disk
 * could (symlinks to files and directories outside, a FIFO, a directory
 * where a file is asked for, an oversized file); the UI's directory found
 * below a mountpoint, not through a symlink.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/serve/ui_files.h"

static void test_paths(void **state)
{
	static const char *const allowed[] = {
		"",
		"index.html",
		"ui.js",
		"speedscope/index.html",
		"speedscope/speedscope-Y2522XSH.js",
		"a/b/c/d.css",
	};
	static const char *const refused[] = {
		"..",
		"../etc/passwd",
		"speedscope/../../x.js",
		".built",
		"speedscope/.x.js",
		"/index.html",
		"a//b.js",
		"a/",
		"a/b/c/d/e.js",
		"a b.js",
		"a%2e.js",
		"a\\b.js",
		"\xc3\xa9.js",
		"a:b.js",
		"./a.js",
	};
	char longname[260];

	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		assert_true(vm_ui_path_allowed(allowed[i]));
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (vm_ui_path_allowed(refused[i]))
			fail_msg("%s was allowed", refused[i]);
	}
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_false(vm_ui_path_allowed(longname));
}

static void test_types(void **state)
{
	assert_string_equal(vm_ui_content_type(""), "text/html; charset=utf-8");
	assert_string_equal(vm_ui_content_type("speedscope/index.html"),
			    "text/html; charset=utf-8");
	assert_string_equal(vm_ui_content_type("ui.js"),
			    "text/javascript; charset=utf-8");
	assert_string_equal(vm_ui_content_type("a.woff2"), "font/woff2");
	assert_string_equal(vm_ui_content_type("a.wasm"), "application/wasm");
	assert_null(vm_ui_content_type("LICENSE"));
	assert_null(vm_ui_content_type("a.sh"));
	assert_null(vm_ui_content_type("a.html.bak"));
	assert_null(vm_ui_content_type("dir.js/file"));
	assert_true(vm_ui_immutable("speedscope/speedscope-Y2522XSH.js"));
	assert_true(vm_ui_immutable("favicon-16x16-VSI62OPJ.png"));
	assert_false(vm_ui_immutable("index.html"));
	assert_false(vm_ui_immutable("ui.js"));
	assert_false(vm_ui_immutable("speedscope/speedscope-y2522xsh.js"));
	assert_false(vm_ui_immutable("-Y2522XSH.js"));
}

static char dir[64];

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int read_rel(int fd, const char *rel, char **text)
{
	struct vm_error err = { 0 };
	void *data = NULL;
	size_t len = 0;
	int r;

	r = vm_ui_read(fd, rel, &data, &len, &err);
	if (r == 0) {
		*text = strndup(data, len);
		free(data);
	} else {
		assert_true(err.msg[0] != '\0');
	}
	return r;
}

static void test_read_hostile_dir(void **state)
{
	char path[256], *text = NULL, cmd[300];
	struct vm_error err = { 0 };
	int fd;

	strcpy(dir, "/tmp/test_ui_files.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ui", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/outside", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put("outside/secret.js", "secret");
	put("ui/index.html", "<p>page</p>");
	snprintf(path, sizeof(path), "%s/ui/speedscope", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put("ui/speedscope/a.js", "a");
	snprintf(path, sizeof(path), "%s/ui/link.js", dir);
	assert_int_equal(symlink("../outside/secret.js", path), 0);
	snprintf(path, sizeof(path), "%s/ui/dir", dir);
	assert_int_equal(symlink("../outside", path), 0);
	snprintf(path, sizeof(path), "%s/ui/fifo.js", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/ui/sub.js", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/ui/big.js", dir);
	assert_int_equal(truncate(path, 0) == 0 || errno == ENOENT, 1);
	{
		int bfd = open(path, O_CREAT | O_WRONLY, 0644);

		assert_true(bfd >= 0);
		assert_int_equal(ftruncate(bfd, VM_UI_FILE_MAX + 1), 0);
		close(bfd);
	}

	snprintf(path, sizeof(path), "%s/ui", dir);
	assert_int_equal(vm_ui_open_dir(path, NULL, NULL, &fd, &err), 0);
	assert_int_equal(read_rel(fd, "", &text), 0);
	assert_string_equal(text, "<p>page</p>");
	free(text);
	assert_int_equal(read_rel(fd, "speedscope/a.js", &text), 0);
	assert_string_equal(text, "a");
	free(text);
	assert_int_equal(read_rel(fd, "link.js", &text), -ENOENT);
	assert_int_equal(read_rel(fd, "dir/secret.js", &text), -ENOENT);
	assert_int_equal(read_rel(fd, "fifo.js", &text), -ENOENT);
	assert_int_equal(read_rel(fd, "sub.js", &text), -ENOENT);
	assert_int_equal(read_rel(fd, "big.js", &text), -ENOENT);
	assert_int_equal(read_rel(fd, "../outside/secret.js", &text), -ENOENT);
	assert_int_equal(read_rel(fd, "missing.js", &text), -ENOENT);
	close(fd);

	/* Below a mountpoint: found at usr/share/vmtools/ui... */
	snprintf(
		cmd, sizeof(cmd),
		"mkdir -p %s/mnt/usr/share/vmtools && cp -r %s/ui %s/mnt/usr/share/vmtools/ && mkdir -p %s/mnt2/usr/share && ln -s %s/mnt/usr/share/vmtools %s/mnt2/usr/share/vmtools",
		dir, dir, dir, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/mnt", dir);
	assert_int_equal(
		vm_ui_open_dir(NULL, "/nonexistent/ui", path, &fd, &err), 0);
	assert_int_equal(read_rel(fd, "index.html", &text), 0);
	free(text);
	close(fd);
	/* ... but not through a symlink on the disk. */
	snprintf(path, sizeof(path), "%s/mnt2", dir);
	assert_int_equal(vm_ui_open_dir(NULL, "/nonexistent/ui", path, &fd,
					&err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "web UI is not installed"));
	/* --ui-dir that is not there: named. */
	vm_error_clear(&err);
	assert_int_equal(vm_ui_open_dir("/nonexistent/ui", NULL, NULL, &fd,
					&err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/ui"));

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_read_hostile_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
