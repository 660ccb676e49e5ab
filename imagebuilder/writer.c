// SPDX-License-Identifier: Apache-2.0
/*
 * writer.c - the ext4 image, written with libext2fs in one pass.
 *
 * Layout choices, all for a read-only image that must be reproducible:
 *  - 4 KiB blocks, 256-byte inodes, features extents, filetype, flex_bg,
 *    sparse_super, large_file, huge_file, dir_nlink, extra_isize.
 *  - No journal: the image is attached read-only and never written after
 *    the build, so there is nothing to replay; a journal would cost 4-64 MiB
 *    of zeros per image.
 *  - No metadata_csum: the manifest's sha256 of every file is a stronger
 *    integrity check than crc32c of the metadata, and without it the UUID
 *    can be derived from the content at the very end.
 *  - No resize_inode and no reserved blocks: the image never grows.
 *  - Directories over one block are htree-indexed (dir_index), built in
 *    one pass by dirblocks.c; the hash seed comes from the tree's names,
 *    so it is known before the first directory is written.
 *  - Inode numbers follow a sorted pre-order walk; blocks are allocated
 *    with a moving goal, so each file is one contiguous extent unless it
 *    crosses group metadata.  Extents fitting in the inode (four) are
 *    written there directly; longer maps go through the extent API.
 *  - Every timestamp is the build epoch (mtime: the staged mtime clamped to
 *    it); the UUID and hash seed are taken from a digest of the content.
 * File data is written by datawrite.c, gathered into large writes, and
 * hashed on the way (by the read-ahead threads for most files).
 */
#include "imagebuilder/writer.h"

#include <endian.h>
#include <errno.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <ext2fs/ext3_extents.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/array.h"
#include "common/cleanup.h"
#include "imagebuilder/datawrite.h"
#include "imagebuilder/dirblocks.h"
#include "imagebuilder/ext2_error.h"
#include "imagebuilder/prefetch.h"
#include "imagebuilder/wbio.h"

/* What the writer reads at once of a file it streams: a page fault each
 * 4 KiB, once. */
#define IO_CHUNK (256u << 10)
#define MAX_INLINE_EXTENTS 4
#define MAX_EXTENT_LEN 32768u /* EXT_INIT_MAX_LEN */

struct writer {
	ext2_filsys fs;
	struct vm_tree *t;
	const struct vm_write_opts *opts;
	struct vm_error *err;
	struct vm_sha256 *digest;
	char *buf;
	blk64_t goal;
	struct vm_write_stats *stats;
	uint32_t seed[4]; /* directory hash seed */
	struct vm_prefetch *pf; /* reads files ahead, in a thread */
	struct vm_datawrite dw; /* file data, gathered into large writes */
};

struct extent {
	uint32_t lblk, len;
	blk64_t pblk;
};

struct extents {
	struct extent *v;
	size_t n, cap;
};

static void extents_free(struct extents *e)
{
	free(e->v);
}

/* --- planning ---------------------------------------------------------- */

struct plan {
	uint64_t next_ino, inodes, blocks;
	const uint32_t *seed;
};

static uint64_t file_blocks(const struct vm_node *n)
{
	uint64_t b = 0;

	if (!n->segs)
		return (n->size + VM_BLOCK_SIZE - 1) / VM_BLOCK_SIZE;
	for (size_t i = 0; i < n->n_segs; i++)
		b += n->segs[i].len / VM_BLOCK_SIZE;
	return b;
}

static int plan_node(struct vm_node *n, void *ctx)
{
	n->nlink = 0;
	n->ino = 0;
	return 0;
}

static int plan_count(struct vm_node *n, void *ctx)
{
	struct plan *p = ctx;
	uint64_t blocks = 0;

	if (n->link_to) {
		n->link_to->nlink++;
		return 0;
	}
	n->ino = n->parent ? (uint32_t)p->next_ino++ : EXT2_ROOT_INO;
	if (n->parent)
		p->inodes++;
	n->nlink++;
	switch (n->type) {
	case VM_NODE_DIR:
		n->nlink = 2;
		for (size_t i = 0; i < n->n_children; i++)
			if (n->children[i]->type == VM_NODE_DIR)
				n->nlink++;
		blocks = vm_dir_layout(n, VM_BLOCK_SIZE, p->seed, NULL);
		break;
	case VM_NODE_REG:
		blocks = n->reserve_blocks ? n->reserve_blocks : file_blocks(n);
		/* An extent block when the map may not fit in the inode. */
		if ((n->segs ? n->n_segs : 1) + blocks / MAX_EXTENT_LEN + 2 >
		    MAX_INLINE_EXTENTS)
			blocks++;
		break;
	case VM_NODE_SYMLINK:
		if (strlen(n->target) >=
		    sizeof(((struct ext2_inode *)0)->i_block))
			blocks = 1;
		break;
	default:
		break;
	}
	p->blocks += blocks;
	return 0;
}

/*
 * A file's link count is 16 bits on disk, and e2fsck takes no more than
 * EXT2_LINK_MAX (65,000) for one that is not a directory (directories
 * past it count 1, dir_nlink): more names than that cannot be written.
 */
static int find_many_links(struct vm_node *n, void *ctx)
{
	if (n->type == VM_NODE_DIR || n->link_to || n->nlink <= EXT2_LINK_MAX)
		return 0;
	*(struct vm_node **)ctx = n;
	return 1;
}

static int many_links_error(const struct vm_node *n, struct vm_error *err)
{
	_cleanup_free_ char *path = vm_node_path(n);

	return vm_error_set(
		err, EMLINK,
		"%s has %u names (hard links) in the staged tree; ext4 keeps at most %d for a file: copy it under some of the names instead of linking them all",
		path ? path : n->name, n->nlink, EXT2_LINK_MAX);
}

static int seed_cb(struct vm_node *n, void *ctx)
{
	uint32_t meta[2] = { 0, htole32((uint32_t)n->type) };

	for (const struct vm_node *c = n; c->parent; c = c->parent)
		meta[0]++;
	meta[0] = htole32(meta[0]);
	vm_sha256_update(ctx, meta, sizeof(meta));
	vm_sha256_update(ctx, n->name, strlen(n->name) + 1);
	return 0;
}

/*
 * The directory hash seed of t: derived from its names and types only, so
 * it is known before anything is written (the htree indexes need it).
 */
static void vm_writer_hash_seed(struct vm_tree *t, uint32_t seed[4])
{
	struct vm_sha256 *h = vm_sha256_new();
	char hex[VM_SHA256_HEX_LEN];

	memset(seed, 0, 16);
	if (!h)
		return;
	vm_sha256_update(h, "vmtools hash seed", 17);
	vm_tree_walk(t->root, seed_cb, h);
	vm_sha256_final_hex(h, hex);
	for (int i = 0; i < 16; i++) {
		unsigned v;

		sscanf(hex + 2 * i, "%2x", &v);
		((unsigned char *)seed)[i] = (unsigned char)v;
	}
}

/*
 * The geometry `t` needs.  Fills *need (for messages) and *geo: the auto
 * size, or the explicit one after checking it is large enough.
 */
static int vm_writer_plan(struct vm_tree *t, const uint32_t seed[4],
			  uint64_t size_bytes, struct vm_size_need *need,
			  struct vm_geometry *geo, struct vm_error *err)
{
	struct plan p = { .next_ino = VM_FIRST_INO,
			  .inodes = VM_FIRST_INO - 1,
			  .seed = seed };

	struct vm_node *many = NULL;

	vm_tree_walk(t->root, plan_node, &p);
	vm_tree_walk(t->root, plan_count, &p);
	if (vm_tree_walk(t->root, find_many_links, &many))
		return many_links_error(many, err);
	need->data_blocks = p.blocks;
	need->inodes = p.inodes;
	vm_size_auto(need, geo);
	if (size_bytes) {
		if (size_bytes % VM_BLOCK_SIZE)
			return vm_error_set(
				err, EINVAL,
				"--size %llu is not a multiple of 4096 bytes",
				(unsigned long long)size_bytes);
		if (size_bytes / VM_BLOCK_SIZE < geo->blocks)
			return vm_error_set(
				err, ENOSPC,
				"--size %llu bytes is too small: this content needs at least %llu bytes (%llu MiB); use --size auto or a larger size",
				(unsigned long long)size_bytes,
				(unsigned long long)geo->blocks * VM_BLOCK_SIZE,
				(unsigned long long)(geo->blocks *
							     VM_BLOCK_SIZE +
						     (1 << 20) - 1) >>
					20);
		geo->blocks = size_bytes / VM_BLOCK_SIZE;
	}
	return 0;
}

/* --- filesystem setup ---------------------------------------------------- */

static int fs_create(struct writer *w, const char *path, const char *name,
		     const struct vm_geometry *geo)
{
	struct ext2_super_block param;
	errcode_t e;

	/* A sparse file of the final size: unwritten blocks read as zeros,
	 * which is what the inode tables must start as. */
	if (truncate(path, 0) < 0 ||
	    truncate(path, (off_t)(geo->blocks * VM_BLOCK_SIZE)) < 0)
		return vm_error_errno(
			w->err, errno,
			"cannot make the image %s %llu bytes large (its filesystem's limit?)",
			name, (unsigned long long)geo->blocks * VM_BLOCK_SIZE);
	memset(&param, 0, sizeof(param));
	ext2fs_blocks_count_set(&param, geo->blocks);
	param.s_log_block_size = 2; /* 1024 << 2 = 4 KiB */
	param.s_inodes_count = (uint32_t)geo->inodes;
	param.s_rev_level = EXT2_DYNAMIC_REV;
	param.s_inode_size = VM_INODE_SIZE;
	param.s_log_groups_per_flex = 4;
	param.s_blocks_per_group = VM_BLOCKS_PER_GROUP;
	param.s_feature_incompat = EXT2_FEATURE_INCOMPAT_FILETYPE |
				   EXT3_FEATURE_INCOMPAT_EXTENTS |
				   EXT4_FEATURE_INCOMPAT_FLEX_BG;
	param.s_feature_ro_compat = EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER |
				    EXT2_FEATURE_RO_COMPAT_LARGE_FILE |
				    EXT4_FEATURE_RO_COMPAT_HUGE_FILE |
				    EXT4_FEATURE_RO_COMPAT_DIR_NLINK |
				    EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE;
	/* dir_index: directories over one block carry an htree index. */
	param.s_feature_compat = EXT2_FEATURE_COMPAT_DIR_INDEX;
	param.s_min_extra_isize = param.s_want_extra_isize =
		sizeof(struct ext2_inode_large) - EXT2_GOOD_OLD_INODE_SIZE;
	/*
	 * Direct I/O: the image goes straight to the file instead of
	 * through freshly allocated page-cache pages, which cost more than
	 * the device's own writing and were the largest part of a build.
	 * Filesystems without O_DIRECT get buffered I/O.
	 */
	e = ext2fs_initialize(
		path, EXT2_FLAG_64BITS | EXT2_FLAG_RW | EXT2_FLAG_DIRECT_IO,
		&param, vm_wbio_manager, &w->fs);
	if (e)
		e = ext2fs_initialize(path, EXT2_FLAG_64BITS | EXT2_FLAG_RW,
				      &param, vm_wbio_manager, &w->fs);
	if (e)
		return vm_ext2_error(w->err, e,
				     "cannot create the filesystem in", name);
	w->fs->now = (time_t)w->opts->epoch;
	/* The indexes are hashed with these: set before any directory. */
	memcpy(w->fs->super->s_hash_seed, w->seed, 16);
	w->fs->super->s_def_hash_version = EXT2_HASH_HALF_MD4;
	w->fs->super->s_flags |= EXT2_FLAGS_UNSIGNED_HASH;
	w->fs->super->s_flags &= ~EXT2_FLAGS_SIGNED_HASH;
	e = ext2fs_allocate_tables(w->fs);
	if (e)
		return vm_ext2_error(w->err, e,
				     "cannot lay out the metadata of", name);
	return 0;
}

static void fs_finish_super(struct writer *w, const unsigned char d[32])
{
	struct ext2_super_block *sb = w->fs->super;
	uint32_t t = (uint32_t)w->opts->epoch;

	memcpy(sb->s_uuid, d, 16);
	sb->s_uuid[6] = (sb->s_uuid[6] & 0x0f) | 0x50; /* name-based */
	sb->s_uuid[8] = (sb->s_uuid[8] & 0x3f) | 0x80;
	memset(sb->s_volume_name, 0, sizeof(sb->s_volume_name));
	memcpy(sb->s_volume_name, w->opts->label,
	       strnlen(w->opts->label, sizeof(sb->s_volume_name)));
	sb->s_mkfs_time = sb->s_wtime = sb->s_lastcheck = t;
	sb->s_mtime = 0;
	sb->s_max_mnt_count = -1;
	sb->s_checkinterval = 0;
	sb->s_r_blocks_count = 0;
	sb->s_state = EXT2_VALID_FS;
	sb->s_creator_os = EXT2_OS_LINUX;
	ext2fs_mark_super_dirty(w->fs);
}

/* --- blocks and extents ---------------------------------------------------- */

static int alloc_run(struct writer *w, uint32_t lblk, uint64_t count,
		     struct extents *ex, const char *path)
{
	while (count) {
		blk64_t pblk, plen;
		errcode_t e = ext2fs_new_range(
			w->fs, 0, w->goal,
			count < MAX_EXTENT_LEN ? count : MAX_EXTENT_LEN, NULL,
			&pblk, &plen);

		if (e)
			return vm_error_set(
				w->err, ENOSPC,
				"the image is full while adding %s (%s); use --size auto or a larger --size",
				path, error_message(e));
		if (plen > count)
			plen = count;
		if (plen > MAX_EXTENT_LEN)
			plen = MAX_EXTENT_LEN;
		ext2fs_block_alloc_stats_range(w->fs, pblk, (blk_t)plen, +1);
		w->goal = pblk + plen;
		if (ex->n &&
		    ex->v[ex->n - 1].pblk + ex->v[ex->n - 1].len == pblk &&
		    ex->v[ex->n - 1].lblk + ex->v[ex->n - 1].len == lblk &&
		    ex->v[ex->n - 1].len + plen <= MAX_EXTENT_LEN) {
			ex->v[ex->n - 1].len += (uint32_t)plen;
		} else {
			if (vm_grow(ex->v, &ex->cap, ex->n + 1) < 0)
				return vm_error_set(w->err, ENOMEM,
						    "out of memory");
			ex->v[ex->n++] =
				(struct extent){ lblk, (uint32_t)plen, pblk };
		}
		lblk += (uint32_t)plen;
		count -= plen;
	}
	return 0;
}

/* Map the inode's blocks; *inode must already be on disk when > 4 extents. */
static int map_extents(struct writer *w, ext2_ino_t ino,
		       struct ext2_inode_large *inode, const struct extents *ex,
		       const char *path)
{
	struct ext3_extent_header *h =
		(struct ext3_extent_header *)inode->i_block;
	ext2_extent_handle_t handle;
	errcode_t e;

	inode->i_flags |= EXT4_EXTENTS_FL;
	memset(inode->i_block, 0, sizeof(inode->i_block));
	h->eh_magic = ext2fs_cpu_to_le16(EXT3_EXT_MAGIC);
	h->eh_max = ext2fs_cpu_to_le16(MAX_INLINE_EXTENTS);
	if (ex->n <= MAX_INLINE_EXTENTS) {
		struct ext3_extent *x = (struct ext3_extent *)(h + 1);

		h->eh_entries = ext2fs_cpu_to_le16((uint16_t)ex->n);
		for (size_t i = 0; i < ex->n; i++) {
			x[i].ee_block = ext2fs_cpu_to_le32(ex->v[i].lblk);
			x[i].ee_len =
				ext2fs_cpu_to_le16((uint16_t)ex->v[i].len);
			x[i].ee_start = ext2fs_cpu_to_le32(
				(uint32_t)(ex->v[i].pblk & 0xffffffff));
			x[i].ee_start_hi = ext2fs_cpu_to_le16(
				(uint16_t)(ex->v[i].pblk >> 32));
		}
		return 0;
	}
	/* Needs an extent tree block: let the library build it. */
	e = ext2fs_write_inode_full(w->fs, ino, (struct ext2_inode *)inode,
				    sizeof(*inode));
	if (!e)
		e = ext2fs_extent_open2(w->fs, ino, (struct ext2_inode *)inode,
					&handle);
	if (e)
		return vm_ext2_error(w->err, e, "cannot map the blocks of",
				     path);
	for (size_t i = 0; i < ex->n && !e; i++)
		for (uint32_t b = 0; b < ex->v[i].len && !e; b++)
			e = ext2fs_extent_set_bmap(handle, ex->v[i].lblk + b,
						   ex->v[i].pblk + b, 0);
	ext2fs_extent_free(handle);
	if (!e)
		e = ext2fs_read_inode_full(
			w->fs, ino, (struct ext2_inode *)inode, sizeof(*inode));
	if (e)
		return vm_ext2_error(w->err, e, "cannot map the blocks of",
				     path);
	return 0;
}

/*
 * Write `nblocks` blocks of buf at logical block lblk through the map;
 * `kept`: see vm_dw_write.
 */
static int write_logical(struct writer *w, const struct extents *ex,
			 uint64_t lblk, uint64_t nblocks, const char *buf,
			 int kept, const char *path)
{
	for (size_t i = 0; i < ex->n && nblocks; i++) {
		const struct extent *x = &ex->v[i];
		uint64_t start, end;
		int r;

		if (lblk >= (uint64_t)x->lblk + x->len ||
		    lblk + nblocks <= x->lblk)
			continue;
		start = lblk > x->lblk ? lblk : x->lblk;
		end = lblk + nblocks < (uint64_t)x->lblk + x->len ?
			      lblk + nblocks :
			      (uint64_t)x->lblk + x->len;
		r = vm_dw_write(&w->dw, x->pblk + (start - x->lblk),
				(size_t)(end - start),
				buf + (start - lblk) * VM_BLOCK_SIZE, kept,
				w->err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- inodes ---------------------------------------------------------------- */

static uint16_t ext2_mode(const struct vm_node *n)
{
	static const uint16_t type[] = {
		[VM_NODE_DIR] = LINUX_S_IFDIR,
		[VM_NODE_REG] = LINUX_S_IFREG,
		[VM_NODE_SYMLINK] = LINUX_S_IFLNK,
		[VM_NODE_CHR] = LINUX_S_IFCHR,
		[VM_NODE_BLK] = LINUX_S_IFBLK,
		[VM_NODE_FIFO] = LINUX_S_IFIFO,
		[VM_NODE_SOCK] = LINUX_S_IFSOCK,
	};

	return (uint16_t)(type[n->type] | (n->mode & 07777));
}

static void inode_init(struct writer *w, const struct vm_node *n,
		       struct ext2_inode_large *inode)
{
	uint32_t t = (uint32_t)w->opts->epoch;
	int64_t m = n->mtime < w->opts->epoch ? n->mtime : w->opts->epoch;

	memset(inode, 0, sizeof(*inode));
	inode->i_mode = ext2_mode(n);
	inode->i_uid = (uint16_t)n->uid;
	inode->osd2.linux2.l_i_uid_high = (uint16_t)(n->uid >> 16);
	inode->i_gid = (uint16_t)n->gid;
	inode->osd2.linux2.l_i_gid_high = (uint16_t)(n->gid >> 16);
	inode->i_atime = inode->i_ctime = inode->i_crtime = t;
	inode->i_mtime = (uint32_t)(m < 0 ? 0 : m);
	inode->i_links_count = n->type == VM_NODE_DIR &&
					       n->nlink >= EXT2_LINK_MAX ?
				       1 :
				       (uint16_t)n->nlink;
	inode->i_extra_isize =
		sizeof(struct ext2_inode_large) - EXT2_GOOD_OLD_INODE_SIZE;
}

static int put_inode(struct writer *w, const struct vm_node *n,
		     struct ext2_inode_large *inode, const char *path)
{
	errcode_t e = ext2fs_write_inode_full(
		w->fs, n->ino, (struct ext2_inode *)inode, sizeof(*inode));

	if (e)
		return vm_ext2_error(w->err, e, "cannot write the inode of",
				     path);
	ext2fs_inode_alloc_stats2(w->fs, n->ino, +1, n->type == VM_NODE_DIR);
	return 0;
}

static int set_blocks(struct writer *w, struct ext2_inode_large *inode,
		      uint64_t size, uint64_t blocks, const char *path)
{
	errcode_t e =
		ext2fs_inode_size_set(w->fs, (struct ext2_inode *)inode, size);

	if (!e)
		e = ext2fs_iblk_set(w->fs, (struct ext2_inode *)inode, blocks);
	if (e)
		return vm_ext2_error(w->err, e, "cannot size", path);
	return 0;
}

/* --- content ------------------------------------------------------------- */

static int read_full(int fd, char *buf, size_t len, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t r = read(fd, buf + *got, len - *got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

/* Is logical block b inside one of the file's data segments? */
static int in_segments(const struct vm_node *n, uint64_t b)
{
	uint64_t off = b * VM_BLOCK_SIZE;

	if (!n->segs)
		return 1;
	for (size_t i = 0; i < n->n_segs; i++)
		if (off >= n->segs[i].off &&
		    off < n->segs[i].off + n->segs[i].len)
			return 1;
	return 0;
}

/*
 * Write the first len bytes of w->buf as the file's blocks from b0 on,
 * the last block padded with zeros; blocks in the file's holes stay
 * unwritten (they are not allocated).
 */
static int write_chunk(struct writer *w, const struct vm_node *n,
		       const struct extents *ex, uint64_t b0, size_t len,
		       const char *path)
{
	uint64_t nb = (len + VM_BLOCK_SIZE - 1) / VM_BLOCK_SIZE;
	int r = 0;

	memset(w->buf + len, 0, nb * VM_BLOCK_SIZE - len);
	if (!n->segs)
		return write_logical(w, ex, b0, nb, w->buf, 0, path);
	for (uint64_t b = 0; b < nb && r == 0; b++)
		if (in_segments(n, b0 + b))
			r = write_logical(w, ex, b0 + b, 1,
					  w->buf + b * VM_BLOCK_SIZE, 0, path);
	return r;
}

/* In-memory content (the manifest, the launcher), hashed here. */
static int write_memory(struct writer *w, struct vm_node *n,
			const struct extents *ex, const char *path)
{
	size_t len = (size_t)n->size;
	int r;

	vm_sha256_hex(n->data, len, n->sha256);
	for (uint64_t off = 0; off < len; off += IO_CHUNK) {
		size_t c = len - off < IO_CHUNK ? len - off : IO_CHUNK;

		memcpy(w->buf, (const char *)n->data + off, c);
		r = write_chunk(w, n, ex, off / VM_BLOCK_SIZE, c, path);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Content the read-ahead threads read and hashed: written from their
 * ring without a copy, and given back once dw has written it (dw's mark
 * is the number of files taken and all given to it).
 */
static int write_prefetched(struct writer *w, struct vm_node *n,
			    const struct extents *ex, const char *path)
{
	const char *data;
	int r;

	/*
	 * The file may need ring room that only what dw gathered gives
	 * back: hand that over before waiting for the readers; and so when
	 * the device has nothing to do while we wait.  (Otherwise it keeps
	 * gathering, into fewer and larger writes.)
	 */
	if (!vm_prefetch_fits(w->pf, w->dw.handed_mark) ||
	    (!vm_prefetch_ready(w->pf) && vm_dw_idle(&w->dw))) {
		r = vm_dw_flush(&w->dw, w->err);
		if (r < 0)
			return r;
	}
	r = vm_prefetch_take(w->pf, n, &data, w->err);
	if (r == 0 && n->size)
		r = write_logical(w, ex, 0,
				  (n->size + VM_BLOCK_SIZE - 1) / VM_BLOCK_SIZE,
				  data, 1, path);
	if (r == 0)
		w->dw.mark = vm_prefetch_taken(w->pf);
	return r;
}

/*
 * Read want bytes of n at pos into w->buf, refusing a file whose size
 * changed since the walk: the last read asks one byte more, which must
 * not come.
 */
static int read_chunk(struct writer *w, int fd, const struct vm_node *n,
		      uint64_t pos, size_t want)
{
	size_t got;
	int r = read_full(fd, w->buf, pos + want == n->size ? want + 1 : want,
			  &got);

	if (r < 0)
		return vm_error_errno(w->err, r, "cannot read %s", n->source);
	if (got > want)
		return vm_error_set(
			w->err, EAGAIN,
			"%s grew while the image was being built; rebuild from a stable tree",
			n->source);
	if (got < want)
		return vm_error_set(
			w->err, EAGAIN,
			"%s shrank while the image was being built; rebuild from a stable tree",
			n->source);
	return 0;
}

/* A file not read ahead (sparse, large, or no readers): read and hash it. */
static int write_read(struct writer *w, struct vm_node *n,
		      const struct extents *ex, const char *path)
{
	_cleanup_close_ int fd =
		vm_source_open(n, AT_FDCWD, n->source, 1, w->err);
	struct vm_sha256 *h;
	uint64_t pos = 0;
	int r = 0;

	if (fd < 0)
		return fd;
	h = vm_sha256_new();
	if (!h)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	while (pos < n->size && r == 0) {
		size_t want = n->size - pos < IO_CHUNK ?
				      (size_t)(n->size - pos) :
				      IO_CHUNK;

		r = read_chunk(w, fd, n, pos, want);
		if (r == 0) {
			vm_sha256_update(h, w->buf, want);
			r = write_chunk(w, n, ex, pos / VM_BLOCK_SIZE, want,
					path);
		}
		pos += want;
	}
	if (r < 0) {
		vm_sha256_free(h);
		return r;
	}
	vm_sha256_final_hex(h, n->sha256);
	return 0;
}

/* The file's data through its map, and its sha256 into n->sha256. */
static int write_content(struct writer *w, struct vm_node *n,
			 const struct extents *ex, const char *path)
{
	if (!n->source)
		return write_memory(w, n, ex, path);
	if (w->pf && vm_prefetch_wanted(n))
		return write_prefetched(w, n, ex, path);
	return write_read(w, n, ex, path);
}

static int write_regular(struct writer *w, struct vm_node *n, const char *path)
{
	struct extents ex = { 0 };
	struct ext2_inode_large inode;
	uint64_t blocks = 0;
	int r = 0;

	if (n->segs) {
		for (size_t i = 0; i < n->n_segs && r == 0; i++) {
			r = alloc_run(
				w, (uint32_t)(n->segs[i].off / VM_BLOCK_SIZE),
				n->segs[i].len / VM_BLOCK_SIZE, &ex, path);
			blocks += n->segs[i].len / VM_BLOCK_SIZE;
		}
	} else if (n->size) {
		blocks = (n->size + VM_BLOCK_SIZE - 1) / VM_BLOCK_SIZE;
		r = alloc_run(w, 0, blocks, &ex, path);
	}
	if (r == 0)
		r = write_content(w, n, &ex, path);
	inode_init(w, n, &inode);
	if (r == 0)
		r = set_blocks(w, &inode, n->size, blocks, path);
	if (r == 0)
		r = map_extents(w, n->ino, &inode, &ex, path);
	if (r == 0)
		r = put_inode(w, n, &inode, path);
	extents_free(&ex);
	w->stats->files++;
	w->stats->data_bytes += n->size;
	return r;
}

static int write_dir(struct writer *w, struct vm_node *n, const char *path)
{
	int indexed;
	uint64_t blocks = vm_dir_layout(n, VM_BLOCK_SIZE, w->seed, &indexed);
	_cleanup_free_ char *buf = malloc(blocks * VM_BLOCK_SIZE);
	struct extents ex = { 0 };
	struct ext2_inode_large inode;
	int r;

	if (!buf)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	r = vm_dir_fill_layout(n, n->parent ? n->parent->ino : n->ino, w->seed,
			       buf, VM_BLOCK_SIZE);
	if (r < 0)
		return vm_error_set(w->err, -r, "out of memory indexing %s",
				    path);
	r = alloc_run(w, 0, blocks, &ex, path);
	if (r == 0)
		r = write_logical(w, &ex, 0, blocks, buf, 0, path);
	inode_init(w, n, &inode);
	if (indexed)
		inode.i_flags |= EXT2_INDEX_FL;
	if (r == 0)
		r = set_blocks(w, &inode, blocks * VM_BLOCK_SIZE, blocks, path);
	if (r == 0)
		r = map_extents(w, n->ino, &inode, &ex, path);
	if (r == 0)
		r = put_inode(w, n, &inode, path);
	extents_free(&ex);
	w->stats->dirs++;
	return r;
}

static int write_symlink(struct writer *w, struct vm_node *n, const char *path)
{
	struct ext2_inode_large inode;
	size_t len = strlen(n->target);
	int r;

	inode_init(w, n, &inode);
	w->stats->symlinks++;
	if (len < sizeof(inode.i_block)) {
		/* Fast symlink: the target lives in the inode. */
		memcpy(inode.i_block, n->target, len);
		r = set_blocks(w, &inode, len, 0, path);
	} else {
		struct extents ex = { 0 };

		memset(w->buf, 0, VM_BLOCK_SIZE);
		memcpy(w->buf, n->target, len);
		r = alloc_run(w, 0, 1, &ex, path);
		if (r == 0)
			r = write_logical(w, &ex, 0, 1, w->buf, 0, path);
		if (r == 0)
			r = set_blocks(w, &inode, len, 1, path);
		if (r == 0)
			r = map_extents(w, n->ino, &inode, &ex, path);
		extents_free(&ex);
	}
	if (r == 0)
		r = put_inode(w, n, &inode, path);
	return r;
}

static int write_special(struct writer *w, struct vm_node *n, const char *path)
{
	struct ext2_inode_large inode;
	unsigned ma = major(n->rdev), mi = minor(n->rdev);

	inode_init(w, n, &inode);
	if (n->type == VM_NODE_CHR || n->type == VM_NODE_BLK) {
		if (ma < 256 && mi < 256)
			inode.i_block[0] = ext2fs_cpu_to_le32(ma * 256 + mi);
		else
			inode.i_block[1] =
				ext2fs_cpu_to_le32((mi & 0xff) | (ma << 8) |
						   ((mi & ~0xffu) << 12));
	}
	return put_inode(w, n, &inode, path);
}

/* Feed what identifies a node into the content digest (UUID, hash seed). */
static void digest_node(struct writer *w, const struct vm_node *n,
			const char *path)
{
	/* Fixed width, little-endian: the same bytes on every host. */
	uint64_t meta[7] = {
		htole64((uint64_t)n->type),
		htole64(n->mode),
		htole64(n->uid),
		htole64(n->gid),
		htole64(n->size),
		htole64(n->ino),
		htole64(n->nlink),
	};

	vm_sha256_update(w->digest, path, strlen(path) + 1);
	vm_sha256_update(w->digest, meta, sizeof(meta));
	if (n->type == VM_NODE_REG)
		vm_sha256_update(w->digest, n->sha256, VM_SHA256_HEX_LEN);
	if (n->type == VM_NODE_SYMLINK)
		vm_sha256_update(w->digest, n->target, strlen(n->target));
}

static int write_node(struct writer *w, struct vm_node *n, int deferred_pass)
{
	_cleanup_free_ char *path = NULL;
	int r;

	if (vm_interrupted)
		return vm_error_set(w->err, EINTR, "interrupted by signal %d",
				    (int)vm_interrupted);
	if (n->link_to || n->deferred != deferred_pass)
		return 0;
	path = vm_node_path(n);
	if (!path)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	switch (n->type) {
	case VM_NODE_DIR:
		r = write_dir(w, n, path);
		break;
	case VM_NODE_REG:
		r = write_regular(w, n, path);
		break;
	case VM_NODE_SYMLINK:
		r = write_symlink(w, n, path);
		break;
	default:
		r = write_special(w, n, path);
		break;
	}
	return r;
}

struct walk_ctx {
	struct writer *w;
	int deferred_pass;
};

static int write_cb(struct vm_node *n, void *ctx)
{
	struct walk_ctx *c = ctx;

	return write_node(c->w, n, c->deferred_pass);
}

struct collect {
	struct vm_node **v;
	size_t n, cap;
};

static int collect_cb(struct vm_node *n, void *ctx)
{
	struct collect *c = ctx;

	if (!vm_prefetch_wanted(n))
		return 0;
	if (vm_grow(c->v, &c->cap, c->n + 1) < 0)
		return -ENOMEM;
	c->v[c->n++] = n;
	return 0;
}

/* Start the reader thread on the files of the first pass, in its order. */
void vm_writer_prefetch(struct vm_tree *t, struct vm_prefetch **pf)
{
	struct collect c = { 0 };

	*pf = NULL;
	if (vm_tree_walk(t->root, collect_cb, &c) == 0 && c.n)
		vm_prefetch_start(c.v, c.n, pf); /* else: read inline */
	free(c.v);
}

static int digest_cb(struct vm_node *n, void *ctx)
{
	struct writer *w = ctx;
	_cleanup_free_ char *path = vm_node_path(n);

	if (!path)
		return -ENOMEM;
	digest_node(w, n->link_to ? n->link_to : n, path);
	return 0;
}

/*
 * Called by dw's thread: the first `taken` files taken from the readers
 * are written, and their ring room may be read into again.
 */
static void release_prefetched(void *ctx, size_t taken)
{
	struct writer *w = ctx;

	vm_prefetch_release(w->pf, taken);
}

int vm_writer_write(struct vm_tree *t, const char *path,
		    const struct vm_write_opts *opts,
		    struct vm_write_stats *stats, struct vm_error *err)
{
	struct writer w = {
		.t = t, .opts = opts, .err = err, .stats = stats, .dw.fd = -1
	};
	const char *name = opts->name ? opts->name : path;
	struct vm_size_need need;
	struct vm_geometry geo;
	struct walk_ctx wc = { &w, 0 };
	unsigned char d[32];
	char hex[VM_SHA256_HEX_LEN];
	errcode_t e;
	int r;

	memset(stats, 0, sizeof(*stats));
	initialize_ext2_error_table();
	vm_writer_hash_seed(t, w.seed);
	r = vm_writer_plan(t, w.seed, opts->size_bytes, &need, &geo, err);
	if (r < 0)
		return r;
	w.buf = aligned_alloc(VM_BLOCK_SIZE, IO_CHUNK + VM_BLOCK_SIZE);
	w.digest = vm_sha256_new();
	if (!w.buf || !w.digest) {
		r = vm_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	r = fs_create(&w, path, name, &geo);
	if (r == 0)
		r = vm_dw_open(&w.dw, path, VM_BLOCK_SIZE, err);
	if (r < 0)
		goto out;
	w.dw.name = name;
	w.dw.written = release_prefetched;
	w.dw.ctx = &w;
	if (ext2fs_free_blocks_count(w.fs->super) < need.data_blocks) {
		r = vm_error_set(
			err, ENOSPC,
			"%s: %llu blocks of %llu are free for %llu blocks of content; use a larger --size",
			name,
			(unsigned long long)ext2fs_free_blocks_count(
				w.fs->super),
			(unsigned long long)geo.blocks,
			(unsigned long long)need.data_blocks);
		goto out;
	}
	/* What ext4 reserves: the bad-blocks inode and inodes 3..10. */
	ext2fs_inode_alloc_stats2(w.fs, EXT2_BAD_INO, +1, 0);
	for (ext2_ino_t i = EXT2_ROOT_INO + 1; i < VM_FIRST_INO; i++)
		ext2fs_inode_alloc_stats2(w.fs, i, +1, 0);
	w.goal = 0;
	w.pf = opts->prefetch;
	r = vm_tree_walk(t->root, write_cb, &wc);
	if (r == 0 && opts->late)
		r = opts->late(opts->ctx, err);
	wc.deferred_pass = VM_LATE;
	if (r == 0)
		r = vm_tree_walk(t->root, write_cb, &wc);
	if (r == 0 && opts->finish)
		r = opts->finish(opts->ctx, err);
	wc.deferred_pass = VM_LAST;
	if (r == 0)
		r = vm_tree_walk(t->root, write_cb, &wc);
	if (r == 0)
		r = vm_dw_sync(&w.dw, err);
	if (r == 0)
		r = vm_tree_walk(t->root, digest_cb, &w);
	if (r < 0)
		goto out;
	vm_sha256_final_hex(w.digest, hex);
	w.digest = NULL;
	for (int i = 0; i < 32; i++) {
		unsigned v;

		sscanf(hex + 2 * i, "%2x", &v);
		d[i] = (unsigned char)v;
	}
	fs_finish_super(&w, d);
	stats->blocks = ext2fs_blocks_count(w.fs->super);
	stats->inodes = w.fs->super->s_inodes_count;
	e = ext2fs_close_free(&w.fs);
	if (e)
		r = vm_ext2_error(err, e, "cannot finish writing", name);
out:
	if (w.fs)
		ext2fs_free(w.fs);
	vm_sha256_free(w.digest);
	free(w.buf);
	vm_dw_close(&w.dw);
	return r;
}
