/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dirblocks.h - ext4 directory blocks built straight from a sorted child
 * list: no per-entry lookup, so a directory of n names costs O(n) instead
 * of the O(n^2) of ext2fs_link() in a loop (what makes `mke2fs -d` slow on
 * the 6,447-file include/ directories of Debian's headers).
 */
#ifndef VMTOOLS_IMAGEBUILDER_DIRBLOCKS_H
#define VMTOOLS_IMAGEBUILDER_DIRBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "imagebuilder/tree.h"

/* On-disk size of an entry with a name of `len` bytes. */
size_t vm_dirent_len(size_t name_len);

/* Blocks of `block_size` bytes that dir's entries ("." ".." too) fill. */
uint64_t vm_dir_blocks(const struct vm_node *dir, size_t block_size);

/* ext2 file type (EXT2_FT_*) of a node. */
int vm_dirent_type(const struct vm_node *n);

/*
 * Fill buf (vm_dir_blocks() * block_size bytes) with the entries of dir:
 * ".", "..", then the children in order; each entry uses the inode number
 * in node->ino (or link_to->ino).  The last entry of a block stretches to
 * its end, as ext4 requires.
 */
int vm_dir_fill(const struct vm_node *dir, uint32_t parent_ino, void *buf,
		size_t block_size);

#endif
