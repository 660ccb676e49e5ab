/* SPDX-License-Identifier: Apache-2.0 */
/*
 * links.h - which guest paths the agent must link to the mounted image so
 * that the image's symlinks resolve (Debian's lib/modules/REL/build ->
 * /usr/src/linux-headers-REL, the headers' scripts -> ../../lib/linux-kbuild).
 */
#ifndef VMTOOLS_IMAGEBUILDER_LINKS_H
#define VMTOOLS_IMAGEBUILDER_LINKS_H

#include <stddef.h>

#include "common/manifest.h"
#include "imagebuilder/tree.h"

/*
 * The "tree" a path belongs to: its shortest prefix that is not a standard
 * system directory (/, /usr, /usr/src, /lib/modules, ...).  Written to out
 * (PATH_MAX); returns 0, or -ENOENT when path is itself a system directory.
 */
int vm_link_tree_of(const char *path, char *out, size_t size);

/* Lexically normalize `path` (absolute) relative to dir when relative. */
int vm_link_normalize(const char *dir, const char *path, char *out,
		      size_t size);

/*
 * Check every symlink (refusing loops, naming them) and add to m the
 * trees that symlinks point into from another tree, plus
 * /lib/modules/<kernel_release>; sorted, unique, only existing trees.
 */
int vm_links_compute(struct vm_tree *t, const char *kernel_release,
		     struct vm_manifest *m, struct vm_error *err);

#endif
