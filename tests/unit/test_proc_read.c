// SPDX-License-Identifier: Apache-2.0
/*
 * test_proc_read.c - unit tests of the readers of /proc/PID/comm and
 * /proc/PID/cmdline in agent/samples/proc.c, the one place both backends
 * and the target scan read them: on a made-up /proc in a temporary
 * directory (a title's trimming, a comm's newline, a process that is
 * gone), and on this process's own.  And the mapped files opened by
 * their path in the process's root (no map_files there): one whose path
 * shows another file than the one mapped is not given to another process
 * that maps the one /proc/PID/maps names.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/proc.h"
#include "agent/samples/sample.h"

static char root[] = "/tmp/vmtools-proc-XXXXXX";

/* path holding len bytes of data. */
static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* root/PID/NAME holding len bytes of data. */
static void put(unsigned pid, const char *name, const char *data, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/%s", root, pid, name);
	write_file(path, data, len);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_comm(void **state)
{
	char comm[VM_COMM_LEN];

	(void)state;
	put(10, "comm", "postgres\n", 9);
	assert_int_equal(vm_proc_read_comm(root, 10, comm), 0);
	assert_string_equal(comm, "postgres");
	/* The kernel's longest name, and more than it ever gives. */
	put(11, "comm", "fifteen-chars-x\n", 16);
	assert_int_equal(vm_proc_read_comm(root, 11, comm), 0);
	assert_string_equal(comm, "fifteen-chars-x");
	put(12, "comm", "more-than-fifteen\n", 18);
	assert_int_equal(vm_proc_read_comm(root, 12, comm), 0);
	assert_string_equal(comm, "more-than-fifte");
	assert_int_equal(strlen(comm), VM_COMM_LEN - 1);
	put(13, "comm", "", 0);
	assert_int_equal(vm_proc_read_comm(root, 13, comm), 0);
	assert_string_equal(comm, "");
	/* Gone. */
	assert_int_equal(vm_proc_read_comm(root, 99, comm), -ESRCH);
}

static void test_title(void **state)
{
	static const char pg[] = "postgres: checkpointer \0\0\0";
	static const char args[] = "postgres\0-D\0/var/lib/pg\0";
	static const char blanks[] = "  \0 \0";
	char big[6000], *t;

	(void)state;
	/* PostgreSQL pads its title: trailing NULs and blanks go. */
	put(20, "cmdline", pg, sizeof(pg) - 1);
	assert_int_equal(vm_proc_read_title(root, 20, &t), 0);
	assert_string_equal(t, "postgres: checkpointer");
	free(t);
	/* Arguments are separated by blanks, as ps shows them. */
	put(21, "cmdline", args, sizeof(args) - 1);
	assert_int_equal(vm_proc_read_title(root, 21, &t), 0);
	assert_string_equal(t, "postgres -D /var/lib/pg");
	free(t);
	/* A kernel thread or a zombie: no title, no error. */
	put(22, "cmdline", "", 0);
	assert_int_equal(vm_proc_read_title(root, 22, &t), 0);
	assert_null(t);
	put(23, "cmdline", blanks, sizeof(blanks) - 1);
	assert_int_equal(vm_proc_read_title(root, 23, &t), 0);
	assert_null(t);
	/* A long command line is cut, never overrun. */
	memset(big, 'x', sizeof(big));
	put(24, "cmdline", big, sizeof(big));
	assert_int_equal(vm_proc_read_title(root, 24, &t), 0);
	assert_int_equal(strlen(t), 4095);
	free(t);
	/* Gone: the caller marks the process exited. */
	t = (char *)"untouched";
	assert_int_equal(vm_proc_read_title(root, 99, &t), -ESRCH);
	assert_null(t);
}

static void test_self(void **state)
{
	char comm[VM_COMM_LEN], *t;

	(void)state;
	assert_int_equal(vm_proc_read_comm("/proc", getpid(), comm), 0);
	assert_string_equal(comm, "test_proc_read");
	assert_int_equal(vm_proc_read_title("/proc", getpid(), &t), 0);
	assert_non_null(strstr(t, "test_proc_read"));
	free(t);
}

/* root/PID/root/lib/x.so, a copy of (or, link: a link to) root/x.so. */
static void put_mapped(unsigned pid, bool link)
{
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/%u/root/lib && %s %s/x.so %s/%u/root/lib/x.so",
		 root, pid, link ? "ln" : "cp", root, root, pid);
	assert_int_equal(system(cmd), 0);
}

/* The inode of the file a mapping of pid's was opened as. */
static uint64_t opened_ino(const struct vm_samples *s, unsigned pid)
{
	const struct vm_process *p = vm_samples_find_process(s, pid);
	struct stat st;

	assert_non_null(p);
	assert_int_equal(p->n_maps, 1);
	assert_non_null(p->maps[0].open_path);
	assert_int_equal(stat(p->maps[0].open_path, &st), 0);
	return st.st_ino;
}

static void test_opened_by_path(void **state)
{
	struct vm_proc_files files = { .iopool = vm_iopool_new() };
	struct vm_samples s = { 0 };
	char path[PATH_MAX], maps[256];
	struct stat real;
	int n;

	(void)state;
	assert_non_null(files.iopool);
	snprintf(path, sizeof(path), "%s/x.so", root);
	write_file(path, "the mapped file", 15);
	assert_int_equal(stat(path, &real), 0);
	n = snprintf(
		maps, sizeof(maps),
		"00400000-00401000 r-xp 00000000 %02x:%02x %llu /lib/x.so\n",
		major(real.st_dev), minor(real.st_dev),
		(unsigned long long)real.st_ino);
	/* 1's path shows a copy (another inode), 2's the mapped file. */
	for (unsigned pid = 1; pid <= 2; pid++) {
		char status[64];
		int len = snprintf(status, sizeof(status),
				   "Name:\tx\nTgid:\t%u\n", pid);

		put(pid, "status", status, len);
		put(pid, "maps", maps, n);
		put_mapped(pid, pid == 2);
	}
	assert_int_equal(vm_proc_capture(&s, &files, 1, root, NULL), 0);
	assert_int_equal(vm_proc_capture(&s, &files, 2, root, NULL), 0);
	assert_true(opened_ino(&s, 1) != real.st_ino);
	assert_int_equal(opened_ino(&s, 2), real.st_ino);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
	vm_iopool_free(files.iopool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_title),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_opened_by_path),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
