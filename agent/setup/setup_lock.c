// SPDX-License-Identifier: Apache-2.0
/*
 * setup_lock.c - one `setup` (or `--undo`) at a time per state file: a
 * boot script and a manual run must not roll back each other's links.
 * The lock is flock() on <state file>.lock, opened without following a
 * symlink in any component (safe_path.h).  Each run removes the lock file
 * while it still holds it, so none is left behind; a run that was waiting
 * on the removed file notices (its inode is no longer the one at the
 * path) and takes the new one.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "common/cleanup.h"

int vm_setup_lock(struct vm_setup_ctx *c, struct vm_journal *j,
		  struct vm_error *err)
{
	char path[sizeof(c->state_file) + 8];
	const char *last;

	snprintf(path, sizeof(path), "%s.lock", c->state_file);
	c->lock_fd = c->lock_dir = -1;
	for (;;) {
		_cleanup_close_ int dfd = -1, fd = -1;
		struct vm_error e = { 0 };
		struct stat held, there;

		dfd = vm_safe_parent(path, &c->guard, j, &last, &e);
		if (dfd == -ENOENT && !j)
			return 0; /* undo with no state directory: no state */
		if (dfd < 0)
			return vm_error_set(err, e.code, "%s", e.msg);
		fd = openat(dfd, last,
			    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
				    O_NOCTTY | O_NONBLOCK,
			    0600);
		if (fd < 0)
			return vm_error_errno(err, errno,
					      "cannot open the lock file %s",
					      path);
		if (fstat(fd, &held) < 0 || !S_ISREG(held.st_mode))
			return vm_error_set(
				err, EINVAL,
				"the lock file %s is not a regular file; remove it",
				path);
		while (flock(fd, LOCK_EX) < 0)
			if (errno != EINTR)
				return vm_error_errno(err, errno,
						      "cannot lock %s", path);
		if (fstatat(dfd, last, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
		    there.st_dev == held.st_dev &&
		    there.st_ino == held.st_ino) {
			c->lock_fd = TAKE_FD(fd);
			c->lock_dir = TAKE_FD(dfd);
			snprintf(c->lock_name, sizeof(c->lock_name), "%s",
				 last);
			c->lock_removed = false;
			return 0;
		}
		/* Removed by the run that held it: take the new one. */
	}
}

void vm_setup_lock_remove(struct vm_setup_ctx *c)
{
	if (c->lock_fd < 0 || c->lock_removed)
		return;
	unlinkat(c->lock_dir, c->lock_name, 0);
	c->lock_removed = true;
}

void vm_setup_unlock(struct vm_setup_ctx *c)
{
	if (c->lock_fd < 0)
		return;
	vm_setup_lock_remove(c);
	close(c->lock_fd);
	close(c->lock_dir);
	c->lock_fd = c->lock_dir = -1;
}
