/* SPDX-License-Identifier: Apache-2.0 */
/*
 * datawrite.h - file data into the image: consecutive blocks gathered into
 * one vectored direct write.
 */
#ifndef VMTOOLS_IMAGEBUILDER_DATAWRITE_H
#define VMTOOLS_IMAGEBUILDER_DATAWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/error.h"

#define VM_DW_BLOCKS 2048u /* at most 8 MiB in one write */
#define VM_DW_IOV 256

struct vm_datawrite {
	int fd;
	size_t block_size;
	uint64_t start; /* first block of what is pending */
	size_t blocks; /* pending */
	struct iovec iov[VM_DW_IOV];
	int n_iov;
	char *copy; /* VM_DW_BLOCKS blocks for data that is not kept */
	size_t copied; /* blocks of it in use */
	/* Called after each write: referenced data may be reused now. */
	void (*written)(void *ctx);
	void *ctx;
	const char *name; /* the image, as messages call it: path, or set */
};

/* Open `path` for writing data, with direct I/O where the filesystem has it. */
int vm_dw_open(struct vm_datawrite *dw, const char *path, size_t block_size,
	       struct vm_error *err);

/*
 * Write `count` blocks of buf at block `pblk`.  With `kept`, buf stays
 * valid and unchanged until the next `written` call and is written from
 * where it is, else it is copied.  Writes at consecutive blocks are
 * gathered; anything else writes what was gathered first.
 */
int vm_dw_write(struct vm_datawrite *dw, uint64_t pblk, size_t count,
		const char *buf, int kept, struct vm_error *err);

/* Write what is gathered (nothing to do when nothing is). */
int vm_dw_flush(struct vm_datawrite *dw, struct vm_error *err);

/* Close; what is still gathered is dropped (flush first). */
void vm_dw_close(struct vm_datawrite *dw);

#endif
