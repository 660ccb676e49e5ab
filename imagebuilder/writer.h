/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer.h - writes a struct vm_tree into an ext4 image file with
 * libext2fs: no root, no loop device, no mount.
 */
#ifndef VMTOOLS_IMAGEBUILDER_WRITER_H
#define VMTOOLS_IMAGEBUILDER_WRITER_H

#include <stdint.h>

#include "imagebuilder/prefetch.h"
#include "imagebuilder/sizing.h"
#include "imagebuilder/tree.h"

struct vm_write_opts {
	const char *label; /* at most 16 bytes */
	int64_t epoch; /* every timestamp is this, or older (clamped mtime) */
	uint64_t size_bytes; /* 0: auto */
	/* What messages call the image (--output), NULL: the path written. */
	const char *name;
	/*
	 * Called once everything else is written: `late` must give the
	 * VM_LATE nodes their source and size (at most their reserve), then
	 * `finish`, with every other sha256 filled in, the VM_LAST nodes their
	 * data, with exactly the size announced beforehand.
	 */
	int (*late)(void *ctx, struct vm_error *err);
	int (*finish)(void *ctx, struct vm_error *err);
	void *ctx;
	/* Reading ahead since vm_writer_prefetch, or NULL: read inline. */
	struct vm_prefetch *prefetch;
};

struct vm_write_stats {
	uint64_t blocks, inodes, files, dirs, symlinks, data_bytes;
};

/*
 * Start reading (and hashing) the files of `t` in a thread, in the order
 * vm_writer_write will want them, so the reading overlaps whatever comes
 * before the write.  The tree's files must not change until the write.
 * *pf is NULL if the thread could not start; stop it with
 * vm_prefetch_stop after the write.
 */
void vm_writer_prefetch(struct vm_tree *t, struct vm_prefetch **pf);

/* Write the image to `path`, which must exist (empty) and is overwritten. */
int vm_writer_write(struct vm_tree *t, const char *path,
		    const struct vm_write_opts *opts,
		    struct vm_write_stats *stats, struct vm_error *err);

#endif
