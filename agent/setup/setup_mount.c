// SPDX-License-Identifier: Apache-2.0
/*
 * setup_mount.c - mounting the tools disk read-only (ro,nodev,nosuid) at
 * the mountpoint, creating the mountpoint if needed, and finding what is
 * mounted where from /proc/self/mountinfo (so a second run sees that the
 * disk is already there).  Every change goes into the journal.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "common/cleanup.h"

static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
		    p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 +
				      (p[3] - '0'));
			p += 3;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
}

int vm_mountinfo_find(const char *text, const char *mnt, dev_t *dev)
{
	const char *p = text;
	int found = 0;

	while (*p) {
		const char *nl = strchrnul(p, '\n');
		_cleanup_free_ char *line = strndup(p, nl - p);
		char point[PATH_MAX];
		unsigned maj, min;

		p = *nl ? nl + 1 : nl;
		if (!line)
			return -ENOMEM;
		/* id parent major:minor root mountpoint options ... */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min,
			   point) != 3)
			continue;
		unescape_mountinfo(point);
		if (strcmp(point, mnt))
			continue;
		*dev = makedev(maj, min);
		found = 1;
	}
	return found;
}

int vm_setup_mounted_at(const char *mnt, dev_t *dev)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *text = NULL;
	size_t cap = 0;

	if (!f)
		return -errno;
	if (getdelim(&text, &cap, '\0', f) < 0 && !feof(f))
		return -errno;
	if (!text)
		return 0;
	return vm_mountinfo_find(text, mnt, dev);
}

/* The mountpoint, created (with its parents) when missing. */
static int make_mountpoint(struct vm_setup_ctx *c, struct vm_journal *j,
			   struct vm_error *err)
{
	const char *last;
	_cleanup_close_ int dfd =
		vm_safe_parent(c->mountpoint, &j->guard, j, &last, err);
	struct stat st;

	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, last, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISDIR(st.st_mode))
			return vm_error_set(
				err, ENOTDIR,
				"the mountpoint %s exists and is not a directory; remove it or pass another --mountpoint",
				c->mountpoint);
		return 0;
	}
	if (errno != ENOENT)
		return vm_error_errno(err, errno, "cannot use %s",
				      c->mountpoint);
	if (mkdirat(dfd, last, 0755) < 0)
		return vm_error_errno(err, errno,
				      "cannot create the mountpoint %s",
				      c->mountpoint);
	if (vm_journal_add(j, VM_CHANGE_MKDIR, c->mountpoint, NULL, NULL) < 0) {
		unlinkat(dfd, last, AT_REMOVEDIR);
		return -ENOMEM;
	}
	vm_setup_action(c->res, "created the mountpoint %s", c->mountpoint);
	return 0;
}

int vm_setup_mount(struct vm_setup_ctx *c, const char *device,
		   struct vm_journal *j, struct vm_error *err)
{
	struct stat dst;
	dev_t there;
	int r;

	if (stat(device, &dst) < 0)
		return vm_error_errno(err, errno, "cannot use %s", device);
	r = make_mountpoint(c, j, err);
	if (r < 0)
		return r;
	r = vm_setup_mounted_at(c->mountpoint, &there);
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	if (r == 1 && there == dst.st_rdev) {
		vm_setup_action(c->res, "%s is already mounted at %s", device,
				c->mountpoint);
		goto mounted;
	}
	if (r == 1)
		return vm_error_set(
			err, EBUSY,
			"another filesystem (device %u:%u) is mounted at %s; if it is an earlier tools disk run 'vmtools-agent setup --undo' first, else unmount it or pass another --mountpoint",
			major(there), minor(there), c->mountpoint);
	if (mount(device, c->mountpoint, "ext4",
		  MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0) {
		if (errno == EBUSY)
			return vm_error_set(
				err, EBUSY,
				"cannot mount %s at %s: the kernel says it is busy (the disk is mounted read-write elsewhere, or another mount of %s is being made); unmount it there (see /proc/self/mountinfo) or pass another --mountpoint",
				device, c->mountpoint, c->mountpoint);
		return vm_error_errno(
			err, errno,
			"cannot mount %s read-only at %s (is ext4 built into this kernel? see check-kernel)",
			device, c->mountpoint);
	}
	if (vm_journal_add(j, VM_CHANGE_MOUNT, c->mountpoint, device, NULL) <
	    0) {
		umount2(c->mountpoint, UMOUNT_NOFOLLOW);
		return -ENOMEM;
	}
	vm_setup_action(c->res, "mounted %s at %s (ro,nodev,nosuid)", device,
			c->mountpoint);
mounted:
	/* From here no walk may enter the disk (safe_path.h). */
	j->guard.dev = dst.st_rdev;
	j->guard.has_dev = true;
	return 0;
}

int vm_setup_unmount(struct vm_setup_ctx *c, struct vm_error *err)
{
	dev_t dev, first;
	int r = vm_setup_mounted_at(c->mountpoint, &first);

	if (r <= 0)
		return r;
	/* A mount stacked on another of the same disk goes too. */
	for (dev = first; r == 1 && dev == first;
	     r = vm_setup_mounted_at(c->mountpoint, &dev)) {
		if (umount2(c->mountpoint, UMOUNT_NOFOLLOW) < 0) {
			if (errno == EBUSY)
				return vm_error_errno(
					err, errno,
					"cannot unmount %s: a process still uses the tools disk (find it with: fuser -vm %s); stop it and run --undo again",
					c->mountpoint, c->mountpoint);
			return vm_error_errno(err, errno, "cannot unmount %s",
					      c->mountpoint);
		}
	}
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	vm_setup_action(c->res, "unmounted %s", c->mountpoint);
	return 1;
}
