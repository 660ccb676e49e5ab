/* SPDX-License-Identifier: Apache-2.0 */
/*
 * walk.h - reading a staged root from the host into a struct vm_tree.
 */
#ifndef VMTOOLS_IMAGEBUILDER_WALK_H
#define VMTOOLS_IMAGEBUILDER_WALK_H

#include "imagebuilder/tree.h"

struct vm_walk_opts {
	int keep_owner; /* keep the staged uid/gid instead of 0:0 */
	/*
	 * vm_walk_into(): a directory already in the image takes the entries
	 * of the host's directory of that name (a file already there is still
	 * an error naming it), so several --debug-dir trees join.
	 */
	int merge_dirs;
};

/*
 * Read everything under `root` into t (whose root takes root's mode).
 * Refuses names over 255 bytes, symlink targets over 4095 bytes and
 * unreadable directories, naming the path.  Hardlinked files (same device
 * and inode inside the root) become one inode; sparse files keep their
 * holes (SEEK_DATA/SEEK_HOLE).
 */
int vm_walk(const char *root, const struct vm_walk_opts *opts,
	    struct vm_tree *t, struct vm_error *err);

/*
 * Read everything under the host directory dir into the image at
 * image_path (made, with its parents, when missing), as vm_walk() reads
 * a root: how the web UI joins the tools disk.
 */
int vm_walk_into(const char *dir, const char *image_path,
		 const struct vm_walk_opts *opts, struct vm_tree *t,
		 struct vm_error *err);

#endif
