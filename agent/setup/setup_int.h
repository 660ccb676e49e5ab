/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup_int.h - what the files of `setup` share.  They form a stack, each
 * calling only files below it:
 *
 *   setup.c (the steps in order)       setup_undo.c (--undo)
 *   setup_plan.c (the links a manifest asks for)
 *   setup_mount.c (mounting, /proc/self/mountinfo), setup_verify.c
 *     (re-hashing the image)
 *   setup_ctx.c (the run's context, what it prints)
 *   setup_lock.c (one run at a time), setup_state.c (the state file)
 *   setup_links.c (checking and applying a plan), setup_rollback.c
 *   safe_path.c (the walk to guest paths), disk_open.c (the disk's
 *     files), blockdev.c (finding the disk)
 *   setup_journal.c (the record of changes)
 *
 * Internal to the agent; the public interface is setup.h.
 */
#ifndef VMTOOLS_AGENT_SETUP_INT_H
#define VMTOOLS_AGENT_SETUP_INT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "agent/setup/setup_links.h"
#include "agent/setup/setup.h"
#include "agent/setup/setup_journal.h"
#include "common/error.h"
#include "common/manifest.h"

/* The options with defaults filled in and paths made absolute. */
struct vm_setup_ctx {
	const char *label;
	char mountpoint[PATH_MAX];
	const char *bindir;
	const char *root;
	char state_file[PATH_MAX + 16];
	char release[256];
	char machine[65];
	const struct vm_setup_options *o;
	struct vm_setup_result *res;
	/* What walks to guest paths must not enter (safe_path.h). */
	struct vm_guard guard;
	struct vm_walk_cache cache; /* guard's; vm_setup_ctx_clear() */
	/* setup_lock.c: the lock held, and the directory it is in. */
	int lock_fd, lock_dir;
	char lock_name[NAME_MAX + 1];
	bool lock_removed;
};

int vm_setup_ctx_init(struct vm_setup_ctx *c, const struct vm_setup_options *o,
		      struct vm_setup_result *res, struct vm_error *err);
/* Release the lock (if held) and what the walks keep open. */
void vm_setup_ctx_clear(struct vm_setup_ctx *c);
/*
 * Wait for and take the lock of c->state_file (<state file>.lock), its
 * missing directories made through j, or with j NULL (undo) no lock when
 * the directory is missing.  vm_setup_lock_remove() removes the lock file
 * (before the directories it is in), vm_setup_unlock() also releases.
 */
int vm_setup_lock(struct vm_setup_ctx *c, struct vm_journal *j,
		  struct vm_error *err);
void vm_setup_lock_remove(struct vm_setup_ctx *c);
void vm_setup_unlock(struct vm_setup_ctx *c);

/* setup_ctx.c.  Append one sentence to what the command prints. */
void vm_setup_action(struct vm_setup_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vm_setup_set_str(char **dst, const char *src);
void vm_setup_manifest_freep(struct vm_manifest **m);

/*
 * setup_plan.c.  The links for manifest m: its "links", a bindir entry per tool, and (when
 * alias) the running release's modules directory if it differs from the
 * image's.  Refuses links outside the expected places.
 */
int vm_setup_plan(struct vm_setup_ctx *c, const struct vm_manifest *m,
		  bool alias, struct vm_link_plan *p, struct vm_error *err);

/*
 * In a /proc/self/mountinfo text, what is mounted at mnt (the topmost
 * mount): 1 with *dev set, 0 when nothing, -ENOMEM.
 */
int vm_mountinfo_find(const char *text, const char *mnt, dev_t *dev);
/* The same for this process's mount table. */
int vm_setup_mounted_at(const char *mnt, dev_t *dev);
/* Mount device read-only at the mountpoint unless it already is. */
int vm_setup_mount(struct vm_setup_ctx *c, const char *device,
		   struct vm_journal *j, struct vm_error *err);
/*
 * Unmount the mountpoint, every mount of the disk stacked there: 1 done,
 * 0 nothing mounted, -errno.
 */
int vm_setup_unmount(struct vm_setup_ctx *c, struct vm_error *err);

/*
 * Re-hash every file the manifest lists on the disk (device disk) mounted
 * at the mountpoint; err names the first that differs.
 */
int vm_setup_verify(struct vm_setup_ctx *c, const struct vm_manifest *m,
		    dev_t disk, struct vm_error *err);

#endif
