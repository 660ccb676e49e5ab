// SPDX-License-Identifier: Apache-2.0
/*
 * setup_journal.c - recording and rolling back setup's changes to the
 * guest.  A rollback only undoes what the journal says this run did, and
 * checks before removing a link that it still is the link we made.
 */
#include "agent/setup/setup_journal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "common/cleanup.h"

int vm_journal_add(struct vm_journal *j, enum vm_change_kind kind,
		   const char *path, const char *target, const char *old)
{
	struct vm_change c = { .kind = kind };

	if (j->n == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		void *n = realloc(j->changes, cap * sizeof(c));

		if (!n)
			return -ENOMEM;
		j->changes = n;
		j->cap = cap;
	}
	c.path = strdup(path);
	c.target = target ? strdup(target) : NULL;
	c.old = old ? strdup(old) : NULL;
	if (!c.path || (target && !c.target) || (old && !c.old)) {
		free(c.path);
		free(c.target);
		free(c.old);
		return -ENOMEM;
	}
	j->changes[j->n++] = c;
	return 0;
}

void vm_journal_clear(struct vm_journal *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->changes[i].path);
		free(j->changes[i].target);
		free(j->changes[i].old);
	}
	free(j->changes);
	j->changes = NULL;
	j->n = j->cap = 0;
}

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
