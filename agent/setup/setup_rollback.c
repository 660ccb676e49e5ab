// SPDX-License-Identifier: Apache-2.0
/*
 * setup_rollback.c - undoing what the journal (setup_journal.c) says this
 * run did, last change first.  A rollback only undoes what the journal
 * records, and checks before removing a link that it still is the link
 * setup made; every path is reached by the safe walk (safe_path.c).
 */
#include "agent/setup/setup_rollback.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#include "agent/setup/safe_path.h"
#include "common/cleanup.h"

static int undo_one(const struct vm_journal *j, const struct vm_change *c,
		    struct vm_error *err)
{
	_cleanup_free_ char *cur = NULL;
	int r;

	switch (c->kind) {
	case VM_CHANGE_MKDIR:
		r = vm_safe_rmdir(c->path, &j->guard, NULL);
		if (r < 0 && r != -ENOENT)
			return vm_error_errno(
				err, -r,
				"rollback: cannot remove the directory %s that setup created",
				c->path);
		return 0;
	case VM_CHANGE_SYMLINK:
		r = vm_safe_unlink_link(c->path, c->target, &j->guard, NULL);
		if (r < 0)
			return vm_error_errno(
				err, -r,
				"rollback: cannot remove the link %s that setup created",
				c->path);
		return 0;
	case VM_CHANGE_RETARGET:
	case VM_CHANGE_UNLINK:
		/* Only while it still is (RETARGET) or nothing is (UNLINK)
		 * what this run left there. */
		r = vm_safe_readlink(c->path, &j->guard, &cur, NULL);
		if (c->kind == VM_CHANGE_RETARGET &&
		    (r != 1 || strcmp(cur, c->target)))
			return 0;
		if (c->kind == VM_CHANGE_UNLINK && r != 0)
			return 0;
		r = vm_safe_symlink_replace(c->old, c->path, &j->guard, NULL);
		if (r < 0)
			return vm_error_errno(
				err, -r,
				"rollback: cannot restore the link %s -> %s",
				c->path, c->old);
		return 0;
	case VM_CHANGE_MOUNT:
		if (umount2(c->path, UMOUNT_NOFOLLOW) < 0 && errno != EINVAL)
			return vm_error_errno(
				err, errno,
				"rollback: cannot unmount the tools disk from %s",
				c->path);
		return 0;
	}
	return 0;
}

int vm_journal_rollback(struct vm_journal *j, struct vm_error *err)
{
	int first = 0;

	for (size_t i = j->n; i-- > 0;) {
		int r = undo_one(j, &j->changes[i], err);

		if (r < 0 && first == 0)
			first = r;
	}
	vm_journal_clear(j);
	return first;
}
