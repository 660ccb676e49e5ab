/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dirblocks.h - ext4 directory blocks built straight from a sorted child
 * list: no per-entry lookup, so a directory of n names costs O(n) instead
 * of the O(n^2) of ext2fs_link() in a loop (what makes `mke2fs -d` slow on
 * the 6,447-file include/ directories of Debian's headers).  Directories
 * of more than one block get an htree index, built here in one pass from
 * the names sorted by hash: no insertion, no rebalancing.
 */
#ifndef VMTOOLS_IMAGEBUILDER_DIRBLOCKS_H
#define VMTOOLS_IMAGEBUILDER_DIRBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "imagebuilder/tree.h"

/* Blocks of `block_size` bytes that dir's entries ("." ".." too) fill. */
uint64_t vm_dir_blocks(const struct vm_node *dir, size_t block_size);

/* Most leaf blocks one htree root block indexes (4 KiB blocks: 508). */
size_t vm_dir_htree_limit(size_t block_size);

/*
 * The layout the writer uses: a directory of more than one block gets an
 * htree index (dx_root in block 0, leaves sorted by the half-MD4 hash of
 * `seed`) when one index block suffices, else stays linear.  Returns the
 * blocks; *indexed (may be NULL) says whether it is an htree.  seed NULL:
 * always linear.
 */
uint64_t vm_dir_layout(const struct vm_node *dir, size_t block_size,
		       const uint32_t *seed, int *indexed);

/*
 * Fill buf (vm_dir_blocks() * block_size bytes) with the entries of dir:
 * ".", "..", then the children in order; each entry uses the inode number
 * in node->ino (or link_to->ino).  The last entry of a block stretches to
 * its end, as ext4 requires.
 */
int vm_dir_fill(const struct vm_node *dir, uint32_t parent_ino, void *buf,
		size_t block_size);

/* Fill buf (vm_dir_layout() blocks) in that layout. */
int vm_dir_fill_layout(const struct vm_node *dir, uint32_t parent_ino,
		       const uint32_t *seed, void *buf, size_t block_size);

#endif
