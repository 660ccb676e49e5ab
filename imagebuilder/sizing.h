/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sizing.h - how big the image must be: pure arithmetic on the ext4
 * geometry the writer uses (4 KiB blocks, 32768 blocks and one inode
 * table per group, 256-byte inodes, sparse_super backups, no reserved GDT
 * blocks, no journal).  The writer checks the result against what
 * libext2fs actually lays out and grows it when the estimate fell short.
 */
#ifndef VMTOOLS_IMAGEBUILDER_SIZING_H
#define VMTOOLS_IMAGEBUILDER_SIZING_H

#include <stdint.h>

#define VM_BLOCK_SIZE 4096u
#define VM_BLOCKS_PER_GROUP 32768u
#define VM_INODE_SIZE 256u
#define VM_FIRST_INO 11u /* inodes 1..10 are reserved by ext4 */

struct vm_size_need {
	uint64_t data_blocks; /* file data, directories, slow symlinks, extent blocks */
	uint64_t inodes; /* inodes in use, reserved ones included */
};

struct vm_geometry {
	uint64_t blocks;
	uint64_t inodes;
};

/* Whether group g carries a superblock backup (sparse_super). */
int vm_group_has_super(uint64_t g);

/* Metadata blocks of a filesystem of `blocks` blocks with `inodes` inodes. */
uint64_t vm_size_overhead(uint64_t blocks, uint64_t inodes);

/* The smallest geometry holding `need`, with a small safety margin. */
void vm_size_auto(const struct vm_size_need *need, struct vm_geometry *out);

/*
 * Parse "auto" (*bytes = 0), a byte count, or a number with K/M/G/T
 * (powers of 1024, optional "iB"/"B").  -EINVAL on anything else.
 */
int vm_parse_size(const char *s, uint64_t *bytes);

#endif
