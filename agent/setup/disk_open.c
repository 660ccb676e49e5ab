// SPDX-License-Identifier: Apache-2.0
/*
 * disk_open.c - disk_open.h's opener: the tools disk's rule (nothing but the disk) on
 * common/beneath.h's opener, and the reason a listed file is refused.
 */
#include "agent/setup/disk_open.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/beneath.h"
#include "common/cleanup.h"

/* root is still the disk's directory: 0, or -EXDEV. */
static int on_disk(int root, dev_t dev)
{
	struct stat st;

	if (fstat(root, &st) < 0)
		return -errno;
	return st.st_dev == dev ? 0 : -EXDEV;
}

int vm_disk_open(int root, dev_t dev, const char *path, int flags, bool walk)
{
	int r = on_disk(root, dev);

	if (r < 0)
		return r;
	return vm_open_beneath(root, path, flags,
			       VM_BENEATH_NO_XDEV |
				       (walk ? VM_BENEATH_WALK : 0));
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
	int fd = on_disk(root, dev);
	mode_t k;

	if (fd == 0)
		fd = vm_open_beneath_regular(root, path, VM_BENEATH_NO_XDEV);
	if (fd >= 0)
		return fd;
	switch (fd) {
	case -EINVAL:
		*why = "is not a regular file";
		return fd;
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
