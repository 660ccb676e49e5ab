// SPDX-License-Identifier: Apache-2.0
/*
 * test_beneath.c - unit tests of common/beneath.h, the one opener of a
 * path below a directory never through a symlink, on a hostile tree: a
 * symlink to a file and to a directory outside it, an absolute one, one
 * in the middle of a path, "..", a FIFO, a device, a file where a
 * directory is expected and a directory where a file is, a path and a
 * name too long, another filesystem.  Every answer is checked through
 * openat2() and through the walk, which must agree; then the walk with a
 * step of its own (what safe_path.c gives it).
 *
 * A symlink at a path's end is refused too (an O_PATH open gets the link
 * itself); .. is refused anywhere, even staying below; a FIFO is opened
 * without blocking and is no regular file; the device needs root; the path
 * is PATH_MAX long, the name over NAME_MAX; /proc is the other filesystem.
 * The walk with a step of its own gets the prefixes, and .. is refused
 * before the first step.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/beneath.h"

static char base[64];
static int root = -1; /* base/t, the tree */
static bool have_dev; /* base/t/dev is a character device */

static char *P(const char *rel)
{
	static char bufs[4][256];
	static int i;
	char *b = bufs[i++ % 4];

	snprintf(b, 256, "%s/%s", base, rel);
	return b;
}

static void put(const char *rel, const char *text)
{
	int fd = open(P(rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup_tree(void **state)
{
	strcpy(base, "/tmp/vmtools-beneath-XXXXXX");
	if (!mkdtemp(base))
		return -1;
	if (mkdir(P("t"), 0755) || mkdir(P("t/d"), 0755) ||
	    mkdir(P("t/d/e"), 0755) || mkdir(P("out"), 0755) ||
	    mkdir(P("out/dir"), 0755))
		return -1;
	put("t/d/f", "ok");
	put("t/d/e/g", "deep");
	put("out/secret", "secret");
	put("out/dir/x", "outside");
	if (symlink("../out/secret", P("t/lf")) || /* to a file outside */
	    symlink("../out/dir", P("t/ld")) || /* to a directory outside */
	    symlink("/etc", P("t/labs")) || /* absolute */
	    symlink("d", P("t/in")) || /* inside, in the middle of a path */
	    symlink("f", P("t/d/lf")) || /* inside, at the end */
	    mkfifo(P("t/fifo"), 0644))
		return -1;
	/* /dev/null's numbers; only root may make it. */
	have_dev = mknod(P("t/dev"), S_IFCHR | 0644, makedev(1, 3)) == 0;
	root = open(P("t"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	return root < 0 ? -1 : 0;
}

static int teardown_tree(void **state)
{
	char cmd[128];

	if (root >= 0)
		close(root);
	root = -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * vm_open_beneath(root, path, flags) through openat2() and through the
 * walk: both give want (an errno, or 0 for an fd), and the same file.
 * Returns the fd (walk's) for the caller to look at, or -1.
 */
static int both(const char *path, int flags, unsigned how, int want)
{
	int a = vm_open_beneath(root, path, flags, how);
	int b = vm_open_beneath(root, path, flags, how | VM_BENEATH_WALK);
	struct stat sa, sb;

	if (want) {
		if (a != -want || b != -want)
			fail_msg("%s: openat2 %d, walk %d, want %d", path, a, b,
				 -want);
		return -1;
	}
	if (a < 0 || b < 0)
		fail_msg("%s: openat2 %d, walk %d, want an fd", path, a, b);
	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_true(sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev);
	close(a);
	return b;
}

static mode_t kind_of(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	return st.st_mode & S_IFMT;
}

static void test_plain_paths(void **state)
{
	char buf[8];
	int fd;

	fd = both("d/f", O_RDONLY, 0, 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 2);
	close(fd);
	/* Leading, doubled and trailing slashes, "." components. */
	assert_int_equal(kind_of(both("//d//./e/g", O_RDONLY, 0, 0)), S_IFREG);
	assert_int_equal(kind_of(both("/d/e/", O_PATH, 0, 0)), S_IFDIR);
	assert_int_equal(kind_of(both("d/.", O_PATH, 0, 0)), S_IFDIR);
	/* "", "/" and "." are root itself. */
	assert_int_equal(kind_of(both("", O_PATH, 0, 0)), S_IFDIR);
	assert_int_equal(kind_of(both("/", O_PATH, 0, 0)), S_IFDIR);
	assert_int_equal(kind_of(both("./.", O_PATH, 0, 0)), S_IFDIR);
	both("d/nope", O_RDONLY, 0, ENOENT);
	both("nope/f", O_RDONLY, 0, ENOENT);
}

static void test_symlinks_refused(void **state)
{
	/* To a file and to a directory outside, absolute, inside. */
	both("lf", O_RDONLY, 0, ELOOP);
	both("ld/x", O_RDONLY, 0, ELOOP);
	/* Asked for a directory, a symlink is none (open(2) says so too). */
	both("ld", O_RDONLY | O_DIRECTORY, 0, ENOTDIR);
	both("labs/passwd", O_RDONLY, 0, ELOOP);
	both("in/f", O_RDONLY, 0, ELOOP); /* in the middle */
	both("d/lf", O_RDONLY, 0, ELOOP); /* at the end */
	/* O_PATH opens a last symlink itself, never what it points at. */
	assert_int_equal(kind_of(both("lf", O_PATH, 0, 0)), S_IFLNK);
	assert_int_equal(kind_of(both("ld", O_PATH, 0, 0)), S_IFLNK);
	/* A trailing '/' would follow it: a directory is asked for. */
	both("ld/", O_PATH, 0, ENOTDIR);
}

static void test_dotdot_refused(void **state)
{
	both("..", O_PATH, 0, EXDEV);
	both("../out/secret", O_RDONLY, 0, EXDEV);
	/* Even when it would stay below root. */
	both("d/../d/f", O_RDONLY, 0, EXDEV);
	both("d/e/..", O_PATH, 0, EXDEV);
}

static void test_special_files(void **state)
{
	int fd;

	/* A FIFO opens without blocking, and is no regular file. */
	fd = both("fifo", O_RDONLY | O_NONBLOCK, 0, 0);
	assert_int_equal(kind_of(fd), S_IFIFO);
	assert_int_equal(vm_open_beneath_regular(root, "fifo", 0), -EINVAL);
	assert_int_equal(vm_open_beneath_regular(root, "fifo", VM_BENEATH_WALK),
			 -EINVAL);
	/* A FIFO or a file where a directory is expected. */
	both("fifo/x", O_RDONLY, 0, ENOTDIR);
	both("d/f/x", O_RDONLY, 0, ENOTDIR);
	both("d/f/", O_RDONLY, 0, ENOTDIR);
	/* A directory where a file is expected. */
	assert_int_equal(vm_open_beneath_regular(root, "d", 0), -EINVAL);
	assert_int_equal(vm_open_beneath_regular(root, "d/e", VM_BENEATH_WALK),
			 -EINVAL);
	fd = vm_open_beneath_regular(root, "d/f", 0);
	assert_true(fd >= 0);
	close(fd);
	if (!have_dev) {
		skip(); /* mknod needs root */
		return;
	}
	/* A device: refused, whether it opens (then is no regular file)
	 * or not (a nodev mount). */
	fd = vm_open_beneath_regular(root, "dev", 0);
	assert_true(fd == -EINVAL || fd == -EACCES);
	assert_int_equal(vm_open_beneath_regular(root, "dev", VM_BENEATH_WALK),
			 fd);
}

static void test_too_long(void **state)
{
	char name[NAME_MAX + 2], path[PATH_MAX + 8];

	memset(name, 'a', NAME_MAX + 1);
	name[NAME_MAX + 1] = '\0';
	both(name, O_RDONLY, 0, ENAMETOOLONG);
	snprintf(path, sizeof(path), "d/%s/f", name);
	both(path, O_RDONLY, 0, ENAMETOOLONG);
	/* "./" repeated, then d/f: PATH_MAX - 1 bytes is a path ... */
	for (size_t i = 0; i < PATH_MAX - 4; i += 2)
		memcpy(path + i, "./", 2);
	strcpy(path + PATH_MAX - 4, "d/f");
	assert_int_equal(strlen(path), PATH_MAX - 1);
	assert_int_equal(kind_of(both(path, O_RDONLY, 0, 0)), S_IFREG);
	/* ... and one byte more is too long. */
	strcpy(path + PATH_MAX - 4, "d/ff");
	both(path, O_RDONLY, 0, ENAMETOOLONG);
}

/* VM_BENEATH_NO_XDEV: /proc is another filesystem than /. */
static void test_other_filesystem(void **state)
{
	struct stat a, b;
	int slash = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	assert_true(slash >= 0);
	if (stat("/", &a) || stat("/proc", &b) || a.st_dev == b.st_dev) {
		close(slash);
		skip(); /* no /proc mounted here */
		return;
	}
	for (unsigned w = 0; w <= VM_BENEATH_WALK; w += VM_BENEATH_WALK) {
		assert_int_equal(vm_open_beneath(slash, "proc", O_PATH,
						 VM_BENEATH_NO_XDEV | w),
				 -EXDEV);
		assert_int_equal(vm_open_beneath(slash, "proc/version",
						 O_RDONLY,
						 VM_BENEATH_NO_XDEV | w),
				 -EXDEV);
		fd = vm_open_beneath(slash, "proc/version", O_RDONLY, w);
		assert_true(fd >= 0);
		close(fd);
		/* /proc/self is a symlink, /proc/self/root a magic link. */
		assert_int_equal(vm_open_beneath(slash, "proc/self/root",
						 O_PATH, w),
				 -ELOOP);
	}
	close(slash);
}

/* A step that records the prefixes it was given and opens like openat. */
struct steps {
	char seen[8][64];
	int n;
};

static int record_step(int dfd, const char *name, const char *prefix, void *arg)
{
	struct steps *s = arg;
	int fd;

	snprintf(s->seen[s->n++ % 8], 64, "%s", prefix);
	fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void test_walk_with_a_step(void **state)
{
	struct steps s = { 0 };
	const char *last;
	int fd;

	/* The step decides: this one follows the symlink "in". */
	fd = vm_beneath_walk(root, "/in/./e//g", record_step, &s, &last);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(last, "g");
	assert_int_equal(s.n, 2);
	assert_string_equal(s.seen[0], "/in");
	assert_string_equal(s.seen[1], "/in/./e");
	/* The last component is the caller's to judge, as written. */
	s.n = 0;
	fd = vm_beneath_walk(root, "d/..", record_step, &s, &last);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(last, "..");
	fd = vm_beneath_walk(root, "/", record_step, &s, &last);
	assert_true(fd >= 0 && fd != root);
	close(fd);
	assert_string_equal(last, "");
	/* A ".." on the way is refused before the first step. */
	s.n = 0;
	assert_int_equal(vm_beneath_walk(root, "d/e/../f", record_step, &s,
					 &last),
			 -EXDEV);
	assert_int_equal(s.n, 0);
	/* A step's refusal ends the walk with it. */
	assert_int_equal(vm_beneath_walk(root, "d/nope/f", record_step, &s,
					 &last),
			 -ENOENT);
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_plain_paths),	  T(test_symlinks_refused),
		T(test_dotdot_refused),	  T(test_special_files),
		T(test_too_long),	  T(test_other_filesystem),
		T(test_walk_with_a_step),
	};

	return cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}
