/* SPDX-License-Identifier: Apache-2.0 */
/*
 * safe_path.h - reaching the guest paths setup creates and removes without
 * being led elsewhere by a symlink.  The manifest and the tree of the
 * tools disk are input: a link setup made into the disk (or a symlink
 * inside it) must never be a directory that setup creates or removes
 * anything through, or `/lib/modules/REL/cfg/x` lands in /etc.
 *
 * Paths are walked one component at a time from "/" with directory file
 * descriptors, each component opened with O_NOFOLLOW, and the last one
 * acted on with the *at() calls, which never follow it.  A component that
 * is a symlink is followed only when it is the guest's own (Debian's
 * /lib -> usr/lib, /var/run -> /run): never when it points into the
 * mountpoint (setup made it, or it leads onto the disk), and never onto
 * the disk's filesystem (its device), whatever the way.  openat2()'s
 * RESOLVE_NO_SYMLINKS cannot say that (it refuses /lib -> usr/lib too),
 * so this is common/beneath.h's walk with a step of its own.
 */
#ifndef VMTOOLS_AGENT_SETUP_SAFE_PATH_H
#define VMTOOLS_AGENT_SETUP_SAFE_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/setup/setup_journal.h"
#include "common/error.h"

/*
 * Open (O_PATH) the directory that holds path's last component and point
 * *last at that component inside path.  With j, missing directories are
 * created (0755) and journalled; without, a missing one gives -ENOENT.
 * Returns the fd, or -errno with err saying which component was refused.
 */
int vm_safe_parent(const char *path, const struct vm_guard *g,
		   struct vm_journal *j, const char **last,
		   struct vm_error *err);

/*
 * Whether path is a symlink (1, with *current malloc'ed when current is
 * not NULL), or not / absent (0), reached safely; -errno when the way is
 * refused or unreadable.
 */
int vm_safe_readlink(const char *path, const struct vm_guard *g, char **current,
		     struct vm_error *err);

/* Create the symlink path -> target; the parents must exist. */
int vm_safe_symlink(const char *target, const char *path,
		    const struct vm_guard *g, struct vm_error *err);

/*
 * Remove the symlink at path when it still points at target (1 removed,
 * 0 not that link, -errno).
 */
int vm_safe_unlink_link(const char *path, const char *target,
			const struct vm_guard *g, struct vm_error *err);

/* Replace whatever link is at path by one to target, atomically. */
int vm_safe_symlink_replace(const char *target, const char *path,
			    const struct vm_guard *g, struct vm_error *err);

/* Whether target is owner itself or below it ("/a/b" is under "/a"). */
bool vm_path_is_under(const char *target, const char *owner);

/* Close and forget what g->cache keeps (the directory of the last walk). */
void vm_walk_cache_clear(struct vm_walk_cache *c);

/* rmdir path (0, or -errno: -ENOTEMPTY, -ENOENT...). */
int vm_safe_rmdir(const char *path, const struct vm_guard *g,
		  struct vm_error *err);

#endif
