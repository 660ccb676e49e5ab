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

#include "common/cleanup.h"

int vm_journal_add(struct vm_journal *j, enum vm_change_kind kind,
		   const char *path, const char *target, const char *old)
{
	struct vm_change c = { .kind = kind };
	void *n;

	c.path = strdup(path);
	c.target = target ? strdup(target) : NULL;
	c.old = old ? strdup(old) : NULL;
	n = realloc(j->changes, (j->n + 1) * sizeof(c));
	if (!c.path || (target && !c.target) || (old && !c.old) || !n) {
		free(c.path);
		free(c.target);
		free(c.old);
		if (n)
			j->changes = n;
		return -ENOMEM;
	}
	j->changes = n;
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
	j->n = 0;
}

int vm_symlink_replace(const char *target, const char *path)
{
	_cleanup_free_ char *tmp = NULL;

	if (asprintf(&tmp, "%s.vmtools-new.%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	unlink(tmp);
	if (symlink(target, tmp) < 0)
		return -errno;
	if (rename(tmp, path) < 0) {
		int r = -errno;

		unlink(tmp);
		return r;
	}
	return 0;
}

/* Is path a symlink whose content is exactly target? */
static int is_link_to(const char *path, const char *target)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0)
		return 0;
	buf[n] = '\0';
	return !strcmp(buf, target);
}

static int undo_one(const struct vm_change *c, struct vm_error *err)
{
	int r;

	switch (c->kind) {
	case VM_CHANGE_MKDIR:
		if (rmdir(c->path) < 0 && errno != ENOENT)
			return vm_error_errno(
				err, errno,
				"rollback: cannot remove the directory %s that setup created",
				c->path);
		return 0;
	case VM_CHANGE_SYMLINK:
		if (!is_link_to(c->path, c->target))
			return 0; /* no longer ours: leave it */
		if (unlink(c->path) < 0)
			return vm_error_errno(
				err, errno,
				"rollback: cannot remove the link %s that setup created",
				c->path);
		return 0;
	case VM_CHANGE_RETARGET:
	case VM_CHANGE_UNLINK:
		if (c->kind == VM_CHANGE_RETARGET &&
		    !is_link_to(c->path, c->target))
			return 0;
		r = vm_symlink_replace(c->old, c->path);
		if (r < 0)
			return vm_error_errno(
				err, -r,
				"rollback: cannot restore the link %s -> %s",
				c->path, c->old);
		return 0;
	case VM_CHANGE_MOUNT:
		if (umount2(c->path, 0) < 0 && errno != EINVAL)
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
		int r = undo_one(&j->changes[i], err);

		if (r < 0 && first == 0)
			first = r;
	}
	vm_journal_clear(j);
	return first;
}
