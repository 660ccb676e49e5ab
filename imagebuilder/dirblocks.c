// SPDX-License-Identifier: Apache-2.0
/*
 * dirblocks.c - packs a directory's entries into linear ext4 blocks.
 *
 * Entries go in sorted order, first fit into the current block; when one
 * does not fit, the previous entry's rec_len is stretched to the end of the
 * block and a new block begins.  Names are never looked up: the tree is
 * already unique and sorted.
 *
 * Larger directories are indexed (htree, one level): block 0 holds "." and
 * ".." followed by dx_root_info and the dx entries, blocks 1..n the leaves,
 * each a linear block of entries in hash order.  The dx entry of a leaf is
 * the first hash in it, with the low bit set when the previous leaf ends
 * with the same hash (a collision continued).  Hashes use the filesystem's
 * half-MD4 (unsigned) and hash seed, as the kernel and e2fsck compute them.
 * One level indexes up to 508 leaves, some 50,000 names of the length a
 * kernel tree has; its largest directory (Debian's headers, 6,447 names)
 * takes 60.  A directory beyond that stays linear: valid ext4 that e2fsck
 * accepts, only its lookups scan.  A second level was not worth its code
 * for trees that do not exist here.
 */
#include "imagebuilder/dirblocks.h"

#include <errno.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <stdlib.h>
#include <string.h>

/* On-disk size of an entry with a name of name_len bytes. */
static size_t vm_dirent_len(size_t name_len)
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

/* ext2 file type (EXT2_FT_*) of a node. */
static int vm_dirent_type(const struct vm_node *n)
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

size_t vm_dir_htree_limit(size_t block_size)
{
	/* After ".", ".." (12 bytes each) and dx_root_info (8). */
	return (block_size - 32) / sizeof(struct ext2_dx_entry);
}

struct hentry {
	ext2_dirhash_t hash, minor;
	const struct vm_node *n;
};

static int cmp_hentry(const void *a, const void *b)
{
	const struct hentry *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->minor != y->minor)
		return x->minor < y->minor ? -1 : 1;
	return strcmp(x->n->name, y->n->name);
}

/* Children sorted by hash; NULL on allocation failure. */
static struct hentry *hash_children(const struct vm_node *dir,
				    const uint32_t *seed)
{
	struct hentry *e = calloc(dir->n_children + 1, sizeof(*e));

	if (!e)
		return NULL;
	for (size_t i = 0; i < dir->n_children; i++) {
		const char *name = dir->children[i]->name;

		e[i].n = dir->children[i];
		if (ext2fs_dirhash2(EXT2_HASH_HALF_MD4_UNSIGNED, name,
				    (int)strlen(name), NULL, 0, seed,
				    &e[i].hash, &e[i].minor)) {
			free(e);
			return NULL;
		}
	}
	qsort(e, dir->n_children, sizeof(*e), cmp_hentry);
	return e;
}

/* Leaf index of each entry (first fit in hash order); returns the count. */
static size_t pack_leaves(const struct hentry *e, size_t n, size_t block_size,
			  size_t *leaf_of)
{
	size_t leaves = 1, used = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = vm_dirent_len(strlen(e[i].n->name));

		if (used + len > block_size) {
			leaves++;
			used = 0;
		}
		used += len;
		if (leaf_of)
			leaf_of[i] = leaves - 1;
	}
	return leaves;
}

uint64_t vm_dir_layout(const struct vm_node *dir, size_t block_size,
		       const uint32_t *seed, int *indexed)
{
	uint64_t linear = vm_dir_blocks(dir, block_size);
	struct hentry *e;
	size_t leaves;

	if (indexed)
		*indexed = 0;
	if (!seed || linear <= 1)
		return linear;
	e = hash_children(dir, seed);
	if (!e)
		return linear;
	leaves = pack_leaves(e, dir->n_children, block_size, NULL);
	free(e);
	if (leaves > vm_dir_htree_limit(block_size))
		return linear; /* would need a second index level */
	if (indexed)
		*indexed = 1;
	return 1 + leaves;
}

static uint32_t child_ino(const struct vm_node *c)
{
	return c->link_to ? c->link_to->ino : c->ino;
}

int vm_dir_fill_layout(const struct vm_node *dir, uint32_t parent_ino,
		       const uint32_t *seed, void *buf, size_t block_size)
{
	struct ext2_dx_root_info *info;
	struct ext2_dx_countlimit *cl;
	struct ext2_dx_entry *dx;
	struct hentry *e;
	size_t *leaf_of, leaves, prev_leaf = (size_t)-1;
	char *leaf = NULL, *prev = NULL;
	size_t used = 0;
	int indexed;
	uint64_t blocks = vm_dir_layout(dir, block_size, seed, &indexed);

	if (!indexed)
		return vm_dir_fill(dir, parent_ino, buf, block_size);
	e = hash_children(dir, seed);
	leaf_of = calloc(dir->n_children + 1, sizeof(*leaf_of));
	if (!e || !leaf_of) {
		free(e);
		free(leaf_of);
		return -ENOMEM;
	}
	leaves = pack_leaves(e, dir->n_children, block_size, leaf_of);
	memset(buf, 0, blocks * block_size);
	/* Block 0: ".", ".." spanning the block, then the index. */
	put_entry(buf, dir->ino, ".", EXT2_FT_DIR, 12);
	put_entry((char *)buf + 12, parent_ino, "..", EXT2_FT_DIR,
		  block_size - 12);
	info = (struct ext2_dx_root_info *)((char *)buf + 24);
	info->hash_version = EXT2_HASH_HALF_MD4;
	info->info_length = sizeof(*info);
	cl = (struct ext2_dx_countlimit *)((char *)buf + 32);
	dx = (struct ext2_dx_entry *)cl;
	cl->limit =
		ext2fs_cpu_to_le16((uint16_t)vm_dir_htree_limit(block_size));
	cl->count = ext2fs_cpu_to_le16((uint16_t)leaves);
	dx[0].block = ext2fs_cpu_to_le32(1);
	for (size_t i = 0; i < dir->n_children; i++) {
		size_t len = vm_dirent_len(strlen(e[i].n->name));

		if (leaf_of[i] != prev_leaf) {
			if (prev)
				((struct ext2_dir_entry *)prev)->rec_len =
					ext2fs_cpu_to_le16(
						(uint16_t)(block_size -
							   (size_t)(prev -
								    leaf)));
			prev_leaf = leaf_of[i];
			leaf = (char *)buf + (1 + prev_leaf) * block_size;
			used = 0;
			if (prev_leaf > 0) {
				uint32_t h = e[i].hash;

				if (e[i].hash == e[i - 1].hash)
					h |= 1; /* continued collision */
				dx[prev_leaf].hash = ext2fs_cpu_to_le32(h);
				dx[prev_leaf].block = ext2fs_cpu_to_le32(
					(uint32_t)(1 + prev_leaf));
			}
		}
		put_entry(leaf + used, child_ino(e[i].n), e[i].n->name,
			  vm_dirent_type(e[i].n), len);
		prev = leaf + used;
		used += len;
	}
	if (prev)
		((struct ext2_dir_entry *)prev)->rec_len = ext2fs_cpu_to_le16(
			(uint16_t)(block_size - (size_t)(prev - leaf)));
	free(e);
	free(leaf_of);
	return 0;
}
