// SPDX-License-Identifier: Apache-2.0
/*
 * dirblocks.c - packs a directory's entries into linear ext4 blocks.
 *
 * Entries go in sorted order, first fit into the current block; when one
 * does not fit, the previous entry's rec_len is stretched to the end of the
 * block and a new block begins.  Names are never looked up: the tree is
 * already unique and sorted.  Directories are left linear (not htree): see
 * writer.c for why.
 */
#include "imagebuilder/dirblocks.h"

#include <errno.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <string.h>

size_t vm_dirent_len(size_t name_len)
{
	return (8 + name_len + 3) & ~(size_t)3;
}

static const char *entry_name(const struct vm_node *dir, size_t i)
{
	if (i == 0)
		return ".";
	if (i == 1)
		return "..";
	return dir->children[i - 2]->name;
}

uint64_t vm_dir_blocks(const struct vm_node *dir, size_t block_size)
{
	uint64_t blocks = 1;
	size_t used = 0;

	for (size_t i = 0; i < dir->n_children + 2; i++) {
		size_t len = vm_dirent_len(strlen(entry_name(dir, i)));

		if (used + len > block_size) {
			blocks++;
			used = 0;
		}
		used += len;
	}
	return blocks;
}

int vm_dirent_type(const struct vm_node *n)
{
	if (n->link_to)
		n = n->link_to;
	switch (n->type) {
	case VM_NODE_DIR:
		return EXT2_FT_DIR;
	case VM_NODE_REG:
		return EXT2_FT_REG_FILE;
	case VM_NODE_SYMLINK:
		return EXT2_FT_SYMLINK;
	case VM_NODE_CHR:
		return EXT2_FT_CHRDEV;
	case VM_NODE_BLK:
		return EXT2_FT_BLKDEV;
	case VM_NODE_FIFO:
		return EXT2_FT_FIFO;
	case VM_NODE_SOCK:
		return EXT2_FT_SOCK;
	}
	return EXT2_FT_UNKNOWN;
}

static void put_entry(char *at, uint32_t ino, const char *name, int type,
		      size_t rec_len)
{
	struct ext2_dir_entry *de = (struct ext2_dir_entry *)at;
	size_t len = strlen(name);

	de->inode = ext2fs_cpu_to_le32(ino);
	de->rec_len = ext2fs_cpu_to_le16((uint16_t)rec_len);
	ext2fs_dirent_set_name_len(de, (int)len);
	ext2fs_dirent_set_file_type(de, type);
	memcpy(de->name, name, len);
}

int vm_dir_fill(const struct vm_node *dir, uint32_t parent_ino, void *buf,
		size_t block_size)
{
	char *block = buf, *prev = NULL;
	size_t used = 0;

	/* rec_len of 4 KiB blocks fits 16 bits; larger blocks are not used. */
	if (block_size > 65535)
		return -EINVAL;
	memset(buf, 0, vm_dir_blocks(dir, block_size) * block_size);
	for (size_t i = 0; i < dir->n_children + 2; i++) {
		const struct vm_node *c = i >= 2 ? dir->children[i - 2] : NULL;
		const char *name = entry_name(dir, i);
		size_t len = vm_dirent_len(strlen(name));
		uint32_t ino;
		int type;

		if (used + len > block_size) {
			struct ext2_dir_entry *p =
				(struct ext2_dir_entry *)prev;

			p->rec_len = ext2fs_cpu_to_le16((
				uint16_t)(block_size - (size_t)(prev - block)));
			block += block_size;
			used = 0;
		}
		if (i == 0) {
			ino = dir->ino;
			type = EXT2_FT_DIR;
		} else if (i == 1) {
			ino = parent_ino;
			type = EXT2_FT_DIR;
		} else {
			ino = c->link_to ? c->link_to->ino : c->ino;
			type = vm_dirent_type(c);
		}
		put_entry(block + used, ino, name, type, len);
		prev = block + used;
		used += len;
	}
	((struct ext2_dir_entry *)prev)->rec_len = ext2fs_cpu_to_le16(
		(uint16_t)(block_size - (size_t)(prev - block)));
	return 0;
}
