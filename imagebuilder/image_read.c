// SPDX-License-Identifier: Apache-2.0
/*
 * image_read.c - opens an image read-only with libext2fs and walks it:
 * directories with ext2fs_dir_iterate2 (one pass, no per-path lookups),
 * file contents with ext2fs_file_read.  The image is untrusted: names are
 * bounded, directory loops are cut by a depth limit, and the manifest goes
 * through the validating parser.
 */
#include "imagebuilder/image_read.h"

#include <errno.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/sha256.h"
#include "imagebuilder/ext2_error.h"

#define MAX_DEPTH 64

struct vm_image {
	ext2_filsys fs;
	char *path;
};

int vm_image_open(const char *path, struct vm_image **out, struct vm_error *err)
{
	struct vm_image *img;
	errcode_t e;

	*out = NULL;
	initialize_ext2_error_table();
	img = calloc(1, sizeof(*img));
	if (!img || !(img->path = strdup(path))) {
		free(img);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	e = ext2fs_open(path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			&img->fs);
	if (e) {
		free(img->path);
		free(img);
		return vm_error_set(
			err, EINVAL,
			"cannot open %s as an ext4 image: %s; is it a vmtools image?",
			path, error_message(e));
	}
	*out = img;
	return 0;
}

void vm_image_close(struct vm_image *img)
{
	if (!img)
		return;
	ext2fs_close_free(&img->fs);
	free(img->path);
	free(img);
}

void vm_image_info(struct vm_image *img, struct vm_image_info *info)
{
	struct ext2_super_block *sb = img->fs->super;

	memset(info, 0, sizeof(*info));
	memcpy(info->label, sb->s_volume_name, 16);
	for (int i = 0, o = 0; i < 16; i++)
		o += snprintf(info->uuid + o, sizeof(info->uuid) - (size_t)o,
			      "%s%02x",
			      i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
			      sb->s_uuid[i]);
	info->blocks = ext2fs_blocks_count(sb);
	info->free_blocks = ext2fs_free_blocks_count(sb);
	info->inodes = sb->s_inodes_count;
	info->free_inodes = sb->s_free_inodes_count;
	info->block_size = img->fs->blocksize;
}

/* Read a whole file of at most `max` bytes. */
static int read_file(struct vm_image *img, ext2_ino_t ino, const char *what,
		     size_t max, char **out, size_t *len, struct vm_error *err)
{
	ext2_file_t f;
	__u64 size = 0;
	unsigned int got;
	char *buf;
	errcode_t e;

	e = ext2fs_file_open(img->fs, ino, 0, &f);
	if (e)
		return vm_ext2_error(err, e, "cannot open", what);
	e = ext2fs_file_get_lsize(f, &size);
	if (e || size > max) {
		ext2fs_file_close(f);
		return vm_error_set(err, EFBIG, "%s in %s is too large", what,
				    img->path);
	}
	buf = malloc(size + 1);
	if (!buf) {
		ext2fs_file_close(f);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	e = ext2fs_file_read(f, buf, (unsigned int)size, &got);
	ext2fs_file_close(f);
	if (e || got != size) {
		free(buf);
		return vm_ext2_error(err, e ? e : EXT2_ET_SHORT_READ,
				     "cannot read", what);
	}
	buf[size] = '\0';
	*out = buf;
	*len = size;
	return 0;
}

int vm_image_manifest(struct vm_image *img, struct vm_manifest **out,
		      struct vm_error *err)
{
	_cleanup_free_ char *buf = NULL;
	ext2_ino_t ino;
	size_t len = 0;
	errcode_t e;
	int r;

	*out = NULL;
	e = ext2fs_namei(img->fs, EXT2_ROOT_INO, EXT2_ROOT_INO,
			 VM_MANIFEST_PATH, &ino);
	if (e)
		return vm_error_set(
			err, ENOENT,
			"%s has no %s (%s); it was not built by vmtools-image",
			img->path, VM_MANIFEST_PATH, error_message(e));
	r = read_file(img, ino, VM_MANIFEST_PATH, VM_MANIFEST_MAX_BYTES, &buf,
		      &len, err);
	if (r < 0)
		return r;
	r = vm_manifest_parse(buf, len, out, err);
	return r;
}

struct walk {
	struct vm_image *img;
	const struct vm_manifest *m;
	int hash;
	FILE *report;
	struct vm_verify_result *res;
	struct vm_error *err;
	unsigned char *seen; /* per manifest file */
	char *buf;
	char path[PATH_MAX];
	size_t path_len;
	int depth;
	int r;
};

static void problem(struct walk *w, const char *fmt, const char *path)
{
	w->res->bad++;
	if (w->report) {
		fprintf(w->report, fmt, path);
		fputc('\n', w->report);
	}
}

static int hash_file(struct walk *w, ext2_ino_t ino, char hex[65])
{
	struct vm_sha256 *h = vm_sha256_new();
	ext2_file_t f;
	unsigned int got;
	errcode_t e;

	if (!h)
		return -ENOMEM;
	e = ext2fs_file_open(w->img->fs, ino, 0, &f);
	if (e) {
		vm_sha256_free(h);
		return vm_ext2_error(w->err, e, "cannot open", w->path);
	}
	for (;;) {
		e = ext2fs_file_read(f, w->buf, 1 << 20, &got);
		if (e || got == 0)
			break;
		vm_sha256_update(h, w->buf, got);
		w->res->bytes += got;
	}
	ext2fs_file_close(f);
	if (e) {
		vm_sha256_free(h);
		return vm_ext2_error(w->err, e, "cannot read", w->path);
	}
	vm_sha256_final_hex(h, hex);
	return 0;
}

static int walk_dir(struct walk *w, ext2_ino_t dir);

static int entry_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		    int offset, int blocksize, char *buf, void *priv)
{
	struct walk *w = priv;
	int len = ext2fs_dirent_name_len(de);
	size_t saved = w->path_len;
	struct ext2_inode inode;
	errcode_t e;

	(void)dir;
	(void)offset;
	(void)blocksize;
	(void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE ||
	    !de->inode)
		return 0;
	if (w->path_len + 1 + (size_t)len + 1 > sizeof(w->path)) {
		problem(w, "%s: path too long, skipped", w->path);
		return 0;
	}
	w->path[w->path_len] = '/';
	memcpy(w->path + w->path_len + 1, de->name, (size_t)len);
	w->path_len += 1 + (size_t)len;
	w->path[w->path_len] = '\0';
	e = ext2fs_read_inode(w->img->fs, de->inode, &inode);
	if (e) {
		w->r = vm_ext2_error(w->err, e, "cannot read the inode of",
				     w->path);
		return DIRENT_ABORT;
	}
	if (LINUX_S_ISDIR(inode.i_mode)) {
		w->res->dirs++;
		if (w->depth >= MAX_DEPTH) {
			problem(w, "%s: directories nested too deep, skipped",
				w->path);
		} else {
			w->depth++;
			w->r = walk_dir(w, de->inode);
			w->depth--;
		}
	} else if (LINUX_S_ISLNK(inode.i_mode)) {
		w->res->symlinks++;
	} else if (LINUX_S_ISREG(inode.i_mode) &&
		   strcmp(w->path, VM_MANIFEST_PATH)) {
		const struct vm_manifest_file *f =
			vm_manifest_find_file(w->m, w->path);
		char hex[VM_SHA256_HEX_LEN];

		w->res->regular++;
		if (!f) {
			problem(w, "%s: not listed in the manifest", w->path);
		} else {
			w->seen[f - w->m->files] = 1;
			if (!w->hash) {
				w->res->bytes += EXT2_I_SIZE(&inode);
			} else if ((w->r = hash_file(w, de->inode, hex)) == 0) {
				if (strcmp(hex, f->sha256))
					problem(w,
						"%s: content differs from the manifest (sha256 mismatch)",
						w->path);
				else
					w->res->checked++;
			}
		}
	}
	w->path_len = saved;
	w->path[saved] = '\0';
	return w->r < 0 ? DIRENT_ABORT : 0;
}

static int walk_dir(struct walk *w, ext2_ino_t dir)
{
	errcode_t e =
		ext2fs_dir_iterate2(w->img->fs, dir, 0, NULL, entry_cb, w);

	if (w->r < 0)
		return w->r;
	if (e)
		return vm_ext2_error(w->err, e, "cannot read the directory",
				     w->path_len ? w->path : "/");
	return 0;
}

int vm_image_verify(struct vm_image *img, const struct vm_manifest *m, int hash,
		    FILE *report, struct vm_verify_result *res,
		    struct vm_error *err)
{
	struct walk w = { .img = img,
			  .m = m,
			  .hash = hash,
			  .report = report,
			  .res = res,
			  .err = err };
	int r;

	memset(res, 0, sizeof(*res));
	w.seen = calloc(m->n_files + 1, 1);
	w.buf = malloc(1 << 20);
	if (!w.seen || !w.buf) {
		free(w.seen);
		free(w.buf);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	r = walk_dir(&w, EXT2_ROOT_INO);
	for (size_t i = 0; r == 0 && i < m->n_files; i++)
		if (!w.seen[i])
			problem(&w,
				"%s: listed in the manifest but missing from the image",
				m->files[i].path);
	free(w.seen);
	free(w.buf);
	return r;
}
