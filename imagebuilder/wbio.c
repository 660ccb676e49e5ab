// SPDX-License-Identifier: Apache-2.0
/*
 * wbio.c - a write-back io manager for libext2fs over unix_io.
 *
 * libext2fs writes metadata a block at a time: every inode written reads
 * and rewrites its inode-table block, and unix_io's eight-block cache
 * writes each one out as soon as eight others were touched.  With direct
 * I/O each of those is a synchronous 4 KiB write, and an image of
 * thousands of files makes hundreds of them.  This manager keeps small
 * writes in memory, indexed by block, until flush or close, then writes
 * them in block order with each run of consecutive blocks as one write
 * (the inode tables of a flex group are one run).  Everything else is
 * unix_io's.
 */
#include "imagebuilder/wbio.h"

#include <errno.h>
#include <ext2fs/ext2fs.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SHIFT 10 /* blocks per index chunk: 1024 */
#define CHUNK (1u << CHUNK_SHIFT)
#define RUN_MAX 256u /* blocks per write at flush: 1 MiB */

struct wbio {
	io_channel inner;
	char ***chunks; /* chunks[b >> CHUNK_SHIFT][b & (CHUNK - 1)] */
	size_t n_chunks;
	size_t kept; /* bytes */
	char *run; /* RUN_MAX blocks, aligned for direct I/O */
};

static struct wbio *priv(io_channel ch)
{
	return ch->private_data;
}

static char **slot(struct wbio *p, unsigned long long b, int create)
{
	size_t c = (size_t)(b >> CHUNK_SHIFT);

	if (c >= p->n_chunks) {
		size_t n = p->n_chunks ? p->n_chunks : 64;
		char ***v;

		if (!create)
			return NULL;
		while (n <= c)
			n *= 2;
		v = realloc(p->chunks, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + p->n_chunks, 0, (n - p->n_chunks) * sizeof(*v));
		p->chunks = v;
		p->n_chunks = n;
	}
	if (!p->chunks[c]) {
		if (!create)
			return NULL;
		p->chunks[c] = calloc(CHUNK, sizeof(char *));
		if (!p->chunks[c])
			return NULL;
	}
	return &p->chunks[c][b & (CHUNK - 1)];
}

static char *kept_block(struct wbio *p, unsigned long long b)
{
	char **s = slot(p, b, 0);

	return s ? *s : NULL;
}

static void drop(struct wbio *p, unsigned long long b, size_t bs)
{
	char **s = slot(p, b, 0);

	if (s && *s) {
		free(*s);
		*s = NULL;
		p->kept -= bs;
	}
}

/* Write every kept block, in order, consecutive ones together. */
static errcode_t write_back(io_channel ch)
{
	struct wbio *p = priv(ch);
	size_t bs = (size_t)ch->block_size;
	errcode_t e = 0;

	for (size_t c = 0; c < p->n_chunks && p->kept; c++) {
		if (!p->chunks[c])
			continue;
		for (size_t i = 0; i < CHUNK;) {
			unsigned long long start =
				((unsigned long long)c << CHUNK_SHIFT) + i;
			unsigned n = 0;

			while (i < CHUNK && p->chunks[c][i] && n < RUN_MAX) {
				memcpy(p->run + n * bs, p->chunks[c][i], bs);
				free(p->chunks[c][i]);
				p->chunks[c][i] = NULL;
				p->kept -= bs;
				n++;
				i++;
			}
			if (!n) {
				i++;
				continue;
			}
			if (!e)
				e = io_channel_write_blk64(p->inner, start,
							   (int)n, p->run);
		}
		free(p->chunks[c]);
		p->chunks[c] = NULL;
	}
	return e;
}

static errcode_t alloc_run(struct wbio *p, int blksize)
{
	free(p->run);
	p->run = aligned_alloc(4096,
			       ((size_t)blksize * RUN_MAX + 4095) & ~4095ul);
	return p->run ? 0 : EXT2_ET_NO_MEMORY;
}

static errcode_t wb_open(const char *name, int flags, io_channel *out)
{
	io_channel ch = NULL;
	struct wbio *p = NULL;
	errcode_t e;

	*out = NULL;
	if (ext2fs_get_memzero(sizeof(*ch), &ch) ||
	    ext2fs_get_memzero(sizeof(*p), &p)) {
		ext2fs_free_mem(&ch);
		return EXT2_ET_NO_MEMORY;
	}
	e = unix_io_manager->open(name, flags, &p->inner);
	if (!e) {
		e = alloc_run(p, p->inner->block_size);
		if (e)
			io_channel_close(p->inner);
	}
	if (e) {
		free(p->run);
		ext2fs_free_mem(&p);
		ext2fs_free_mem(&ch);
		return e;
	}
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = vm_wbio_manager;
	ch->name = p->inner->name;
	ch->block_size = p->inner->block_size;
	ch->flags = p->inner->flags;
	ch->align = p->inner->align;
	ch->refcount = 1;
	ch->private_data = p;
	*out = ch;
	return 0;
}

static errcode_t wb_close(io_channel ch)
{
	struct wbio *p = priv(ch);
	errcode_t e, e2;

	if (--ch->refcount > 0)
		return 0;
	e = write_back(ch);
	e2 = io_channel_close(p->inner);
	free(p->chunks);
	free(p->run);
	ext2fs_free_mem(&p);
	ext2fs_free_mem(&ch);
	return e ? e : e2;
}

static errcode_t wb_set_blksize(io_channel ch, int blksize)
{
	struct wbio *p = priv(ch);
	errcode_t e = 0;

	if (blksize == ch->block_size)
		return 0;
	/* Kept blocks are numbered in the old size: write them first. */
	if (p->kept)
		e = write_back(ch);
	if (!e)
		e = io_channel_set_blksize(p->inner, blksize);
	if (!e)
		e = alloc_run(p, blksize);
	if (e)
		return e;
	ch->block_size = blksize;
	ch->align = p->inner->align;
	return 0;
}

static errcode_t wb_read_blk64(io_channel ch, unsigned long long block,
			       int count, void *data)
{
	struct wbio *p = priv(ch);
	size_t bs = (size_t)ch->block_size;
	char *out = data;
	unsigned long long i = 0, n;

	if (count < 0 && p->kept) {
		/* A byte count (the superblock): read what is written. */
		errcode_t e = write_back(ch);

		if (e)
			return e;
	}
	if (count < 0 || !p->kept)
		return io_channel_read_blk64(p->inner, block, count, data);
	n = (unsigned long long)count;
	while (i < n) {
		char *k = kept_block(p, block + i);
		unsigned long long j = i;
		errcode_t e;

		if (k) {
			memcpy(out + i * bs, k, bs);
			i++;
			continue;
		}
		while (j < n && !kept_block(p, block + j))
			j++;
		e = io_channel_read_blk64(p->inner, block + i, (int)(j - i),
					  out + i * bs);
		if (e)
			return e;
		i = j;
	}
	return 0;
}

static errcode_t wb_read_blk(io_channel ch, unsigned long block, int count,
			     void *data)
{
	return wb_read_blk64(ch, block, count, data);
}

static errcode_t wb_write_blk64(io_channel ch, unsigned long long block,
				int count, const void *data)
{
	struct wbio *p = priv(ch);
	size_t bs = (size_t)ch->block_size;
	errcode_t e;

	if (count < 0) {
		/* A byte count (the superblock): no block of it may linger. */
		e = write_back(ch);
		return e ? e :
			   io_channel_write_blk64(p->inner, block, count, data);
	}
	if (count > VM_WBIO_SMALL) {
		for (int i = 0; i < count; i++)
			drop(p, block + (unsigned)i, bs);
		return io_channel_write_blk64(p->inner, block, count, data);
	}
	for (int i = 0; i < count; i++) {
		char **s = slot(p, block + (unsigned)i, 1);

		if (!s)
			return EXT2_ET_NO_MEMORY;
		if (!*s) {
			*s = malloc(bs);
			if (!*s)
				return EXT2_ET_NO_MEMORY;
			p->kept += bs;
		}
		memcpy(*s, (const char *)data + (size_t)i * bs, bs);
	}
	return p->kept > VM_WBIO_MAX_KEPT ? write_back(ch) : 0;
}

static errcode_t wb_write_blk(io_channel ch, unsigned long block, int count,
			      const void *data)
{
	return wb_write_blk64(ch, block, count, data);
}

static errcode_t wb_flush(io_channel ch)
{
	errcode_t e = write_back(ch);

	return e ? e : io_channel_flush(priv(ch)->inner);
}

static errcode_t wb_set_option(io_channel ch, const char *option,
			       const char *arg)
{
	struct wbio *p = priv(ch);

	return p->inner->manager->set_option(p->inner, option, arg);
}

static errcode_t wb_get_stats(io_channel ch, io_stats *stats)
{
	struct wbio *p = priv(ch);

	return p->inner->manager->get_stats(p->inner, stats);
}

static errcode_t wb_discard(io_channel ch, unsigned long long block,
			    unsigned long long count)
{
	struct wbio *p = priv(ch);

	for (unsigned long long i = 0; i < count && p->kept; i++)
		drop(p, block + i, (size_t)ch->block_size);
	return io_channel_discard(p->inner, block, count);
}

static errcode_t wb_zeroout(io_channel ch, unsigned long long block,
			    unsigned long long count)
{
	struct wbio *p = priv(ch);

	for (unsigned long long i = 0; i < count && p->kept; i++)
		drop(p, block + i, (size_t)ch->block_size);
	return io_channel_zeroout(p->inner, block, count);
}

static struct struct_io_manager manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "vmtools write-back I/O manager",
	.open = wb_open,
	.close = wb_close,
	.set_blksize = wb_set_blksize,
	.read_blk = wb_read_blk,
	.write_blk = wb_write_blk,
	.flush = wb_flush,
	.set_option = wb_set_option,
	.get_stats = wb_get_stats,
	.read_blk64 = wb_read_blk64,
	.write_blk64 = wb_write_blk64,
	.discard = wb_discard,
	.zeroout = wb_zeroout,
};

io_manager vm_wbio_manager = &manager;
