// SPDX-License-Identifier: Apache-2.0
/*
 * beneath.c - beneath.h: opening below a directory through openat2(), the
 * component walk, and the strict step the walk takes for the opener.
 *
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
 * with RESOLVE_NO_XDEV when asked) says the whole rule in one call that
 * the kernel resolves atomically, so it is what the opener uses
 * where the kernel has it (Linux 5.6 on; Debian 12 has 6.1): one system
 * call where the walk makes three a component (openat, fstat, close), a
 * few times faster on a path of four components, and no window between
 * the components for the tree to change in.  The walk is kept because
 * safe_path.c needs it whatever the kernel: it must follow the guest's
 * own symlinks (/lib -> usr/lib) and refuse only those into the tools
 * disk, which RESOLVE_NO_SYMLINKS cannot say.  Being there, it also
 * serves the opener on kernels without openat2() and under a seccomp
 * filter that answers ENOSYS, and the tests and the fuzzer hold the two
 * to the same answers (VM_BENEATH_WALK).
 *
 * So that the two agree, the opener first reduces the path to its plain
 * components (no "." and no empty ones, a trailing '/' or "." becoming
 * O_DIRECTORY) and refuses ".." itself, as RESOLVE_BENEATH would at the
 * root, and the walk's step opens each directory O_PATH | O_NOFOLLOW and
 * looks at what it got: a symlink is -ELOOP and anything else but a
 * directory -ENOTDIR, as openat2() answers.
 */
#include "common/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/fdio.h"

/*
 * The next component of the path at *p: skips the slashes before it,
 * points *name at it and returns its length (0 at the end), and moves *p
 * past it and the slashes after it, so **p is '\0' once it was the last.
 */
static size_t component(const char **p, const char **name)
{
	const char *e;

	while (**p == '/')
		(*p)++;
	*name = *p;
	e = strchrnul(*p, '/');
	*p = e;
	while (**p == '/')
		(*p)++;
	return (size_t)(e - *name);
}

static bool is_dots(const char *name, size_t n, size_t dots)
{
	return n == dots && !memcmp(name, "..", n);
}

int vm_beneath_walk(int root, const char *path, vm_beneath_step_fn step,
		    void *arg, const char **last)
{
	char prefix[PATH_MAX + 1], name[NAME_MAX + 1];
	const char *p = path, *c;
	size_t n, plen = 0;
	int dfd;

	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	/* Everything refused is refused before the first step. */
	for (n = component(&p, &c); *p; n = component(&p, &c)) {
		if (is_dots(c, n, 2))
			return -EXDEV;
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
	}
	dfd = fcntl(root, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	for (p = path;;) {
		int next;

		n = component(&p, &c);
		if (!*p) {
			*last = c;
			return dfd;
		}
		memcpy(name, c, n);
		name[n] = '\0';
		prefix[plen++] = '/';
		memcpy(prefix + plen, name, n + 1);
		plen += n;
		if (is_dots(c, n, 1))
			continue;
		next = step(dfd, name, prefix, arg);
		close(dfd);
		if (next < 0)
			return next;
		dfd = next;
	}
}

/* What the opener's walk holds every component to. */
struct strict {
	bool xdev; /* VM_BENEATH_NO_XDEV: on dev */
	dev_t dev;
};

/*
 * fd, just opened without following it, checked: on the filesystem asked
 * for and, for a directory on the way, a directory.  fd or -errno (closed).
 */
static int check(int fd, const struct strict *s, bool dir)
{
	struct stat st;
	int e;

	if (fd < 0)
		return -errno;
	if (!s->xdev && !dir)
		return fd;
	if (fstat(fd, &st) < 0)
		e = -errno;
	else if (s->xdev && st.st_dev != s->dev)
		e = -EXDEV;
	else if (dir && S_ISLNK(st.st_mode))
		e = -ELOOP;
	else if (dir && !S_ISDIR(st.st_mode))
		e = -ENOTDIR;
	else
		return fd;
	close(fd);
	return e;
}

static int strict_step(int dfd, const char *name, const char *prefix, void *arg)
{
	return check(openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC), arg,
		     true);
}

/* The walk for the opener: path is normalized (normalize()). */
static int walk_open(int root, const char *path, int flags, unsigned how)
{
	struct strict s = { .xdev = how & VM_BENEATH_NO_XDEV };
	_cleanup_close_ int dfd = -1;
	const char *last;
	struct stat st;

	if (s.xdev) {
		if (fstat(root, &st) < 0)
			return -errno;
		s.dev = st.st_dev;
	}
	dfd = vm_beneath_walk(root, path, strict_step, &s, &last);
	if (dfd < 0)
		return dfd;
	return check(openat(dfd, *last ? last : ".",
			    flags | O_NOFOLLOW | O_CLOEXEC),
		     &s, false);
}

/* openat2() with root as the root it may not leave; -ENOSYS before 5.6. */
static int open2(int root, const char *path, int flags, unsigned how)
{
	struct open_how oh = {
		.flags = (unsigned int)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (how & VM_BENEATH_NO_XDEV)
		oh.resolve |= RESOLVE_NO_XDEV;
	fd = syscall(SYS_openat2, root, *path ? path : ".", &oh, sizeof(oh));
	return fd < 0 ? -errno : (int)fd;
}

/*
 * path as its plain components joined by '/' into out (PATH_MAX bytes),
 * *flags getting O_DIRECTORY when it ends in '/' or "."; -EXDEV for a
 * "..", -ENAMETOOLONG.
 */
static int normalize(const char *path, char *out, int *flags)
{
	const char *p = path, *c;
	size_t n, len = 0;
	bool dir = false;

	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	out[0] = '\0';
	while ((n = component(&p, &c))) {
		dir = c[n] == '/' || is_dots(c, n, 1);
		if (is_dots(c, n, 1))
			continue;
		if (is_dots(c, n, 2))
			return -EXDEV;
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		if (len)
			out[len++] = '/';
		memcpy(out + len, c, n);
		len += n;
		out[len] = '\0';
	}
	if (dir && len)
		*flags |= O_DIRECTORY;
	return 0;
}

int vm_open_beneath(int root, const char *path, int flags, unsigned how)
{
	/* Once ENOSYS, always: the kernel does not change under us. */
	static atomic_bool no_openat2;
	char norm[PATH_MAX];
	int r = normalize(path, norm, &flags);

	if (r < 0)
		return r;
	if (!(how & VM_BENEATH_WALK) && !atomic_load(&no_openat2)) {
		r = open2(root, norm, flags, how);
		if (r != -ENOSYS)
			return r;
		atomic_store(&no_openat2, true);
	}
	return walk_open(root, norm, flags, how);
}

int vm_open_beneath_regular(int root, const char *path, unsigned how)
{
	return vm_keep_regular(
		vm_open_beneath(root, path, VM_OPEN_REGULAR_FLAGS, how));
}
