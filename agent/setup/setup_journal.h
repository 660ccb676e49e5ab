/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup_journal.h - the changes one `setup` run made to the guest, in
 * order, so that a failure part-way rolls all of them back
 * (setup_rollback.h): directories created, symlinks created or
 * retargeted, the image mounted.
 */
#ifndef VMTOOLS_AGENT_SETUP_JOURNAL_H
#define VMTOOLS_AGENT_SETUP_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

enum vm_change_kind {
	VM_CHANGE_MKDIR, /* path created as a directory */
	VM_CHANGE_SYMLINK, /* path created as a symlink to target */
	VM_CHANGE_RETARGET, /* our stale link at path moved from old to target */
	VM_CHANGE_UNLINK, /* our stale link at path (to old) removed */
	VM_CHANGE_MOUNT, /* the image mounted at path */
};

struct vm_change {
	enum vm_change_kind kind;
	char *path;
	char *target;
	char *old; /* RETARGET, UNLINK: the previous link target */
};

/*
 * What a walk to a guest path must not enter (safe_path.h): links into
 * owner (the mountpoint), and the filesystem dev of the disk mounted there.
 */
struct vm_guard {
	const char *owner;
	dev_t dev; /* when has_dev */
	bool has_dev;
	/* The directory the last walk reached, reused by the next walk to
	 * the same one (a manifest lists thousands of links per directory);
	 * NULL: none.  vm_walk_cache_clear() closes it. */
	struct vm_walk_cache *cache;
};

struct vm_walk_cache {
	char *dir; /* the path walked, without its last component */
	int fd; /* O_PATH, as the walk opened it; -1 when empty */
};

struct vm_journal {
	struct vm_change *changes;
	size_t n, cap;
	/* How rollback reaches the paths; set before the first change. */
	struct vm_guard guard;
};

int vm_journal_add(struct vm_journal *j, enum vm_change_kind kind,
		   const char *path, const char *target, const char *old);
void vm_journal_clear(struct vm_journal *j);

#endif
