// SPDX-License-Identifier: Apache-2.0
/*
 * disk_open.c - disk_open.h: openat2() beneath the mountpoint, the walk
 * for kernels without it, and the reason a listed file is refused.
 */
#include "agent/setup/disk_open.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "common/cleanup.h"

/* openat2() with the disk as the root it may not leave; -ENOSYS before 5.6. */
static int open_beneath(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (unsigned int)(flags | O_NOFOLLOW | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd;

	/* RESOLVE_BENEATH refuses an absolute path: make it relative. */
	while (*path == '/')
		path++;
	fd = syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* One component opened below dfd (not following it), on the disk or not. */
static int open_component(int dfd, const char *name, size_t n, int flags,
			  dev_t dev, mode_t want)
{
	char buf[NAME_MAX + 1];
	struct stat st;
	int fd, e;

	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	if (n == 2 && !memcmp(name, "..", 2))
		return -EXDEV; /* as RESOLVE_BENEATH would at the root */
	memcpy(buf, name, n);
	buf[n] = '\0';
	fd = openat(dfd, buf, flags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		e = -errno;
	else if (st.st_dev != dev)
		e = -EXDEV;
	else if (want && S_ISLNK(st.st_mode))
		e = -ELOOP;
	else if (want && (st.st_mode & S_IFMT) != want)
		e = -ENOTDIR;
	else
		return fd;
	close(fd);
	return e;
}

/*
 * The walk for kernels without openat2(): each directory opened O_PATH
 * without following it, and checked to be a directory on the disk, the
 * last component opened with flags, not followed either.
 */
static int walk_beneath(int root, dev_t dev, const char *path, int flags)
{
	_cleanup_close_ int dfd = fcntl(root, F_DUPFD_CLOEXEC, 0);
	const char *p = path;

	if (dfd < 0)
		return -errno;
	for (;;) {
		const char *name;
		size_t n = vm_path_component(&p, &name);
		int fd;

		if (!n) /* "/" itself */
			return open_component(dfd, ".", 1, flags, dev, 0);
		if (!*p)
			return open_component(dfd, name, n, flags, dev, 0);
		fd = open_component(dfd, name, n, O_PATH, dev, S_IFDIR);
		if (fd < 0)
			return fd;
		close(dfd);
		dfd = fd;
	}
}

int vm_disk_open(int root, dev_t dev, const char *path, int flags, bool walk)
{
	/* Setup is one thread: once ENOSYS, always ENOSYS. */
	static bool no_openat2;
	int fd;

	if (!walk && !no_openat2) {
		fd = open_beneath(root, path, flags);
		if (fd != -ENOSYS)
			return fd;
		no_openat2 = true;
	}
	return walk_beneath(root, dev, path, flags);
}

/* What path is, opened O_PATH the same way: for the reason only. */
static mode_t kind(int root, dev_t dev, const char *path)
{
	_cleanup_close_ int fd = vm_disk_open(root, dev, path, O_PATH, false);
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 ? st.st_mode & S_IFMT : 0;
}

int vm_disk_open_file(int root, dev_t dev, const char *path, const char **why)
{
	int fd = vm_disk_open(root, dev, path, O_RDONLY | O_NONBLOCK | O_NOCTTY,
			      false);
	struct stat st;
	mode_t k;

	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_dev == dev)
			return fd;
		close(fd);
		*why = "is not a regular file";
		return -EINVAL;
	}
	switch (fd) {
	case -ENOENT:
	case -ENOTDIR:
		*why = "is missing";
		return fd;
	case -EXDEV:
		*why = "leads off the disk through another mount";
		return fd;
	case -ELOOP:
		/* The last component, opened as itself, tells which. */
		*why = kind(root, dev, path) == S_IFLNK ?
			       "is a symlink" :
			       "leads out of the disk through a symlink";
		return fd;
	}
	/* A device node on the nodev mount gives EACCES, for one. */
	k = kind(root, dev, path);
	*why = k && k != S_IFREG ? "is not a regular file" : "cannot be read";
	return fd;
}

int vm_disk_open_root(const char *mountpoint, dev_t dev, struct vm_error *err)
{
	int root = open(mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (root < 0)
		return vm_error_errno(err, errno,
				      "cannot open the tools disk at %s",
				      mountpoint);
	if (fstat(root, &st) < 0 || st.st_dev != dev) {
		close(root);
		return vm_error_set(
			err, EXDEV,
			"%s is no longer the tools disk (something was mounted over it); run setup again",
			mountpoint);
	}
	return root;
}

int vm_disk_load_manifest(const char *mountpoint, dev_t dev,
			  struct vm_manifest **out, struct vm_error *err)
{
	_cleanup_close_ int root = vm_disk_open_root(mountpoint, dev, err);
	_cleanup_close_ int fd = -1;
	const char *why = NULL;

	*out = NULL;
	if (root < 0)
		return root;
	fd = vm_disk_open_file(root, dev, VM_MANIFEST_PATH, &why);
	if (fd < 0)
		return vm_error_set(
			err, -fd,
			"the tools disk's manifest %s %s; rebuild the image or attach a good copy",
			VM_MANIFEST_PATH, why);
	return vm_manifest_load_fd(fd, VM_MANIFEST_PATH, out, err);
}
